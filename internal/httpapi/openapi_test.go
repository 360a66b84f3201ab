package httpapi_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/paths"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/agentchat/agentchat/internal/httpapi"
)

// The OpenAPI document, parsed once for every test. The validator keeps
// caches that are not documented as safe for concurrent use, so calls
// through it are serialised.
var spec struct {
	once  sync.Once
	mu    sync.Mutex
	v     validator.Validator
	model *v3.Document
	err   error
}

func openAPI(t testing.TB) (validator.Validator, *v3.Document) {
	t.Helper()
	spec.once.Do(func() {
		doc, err := libopenapi.NewDocument(httpapi.OpenAPI)
		if err != nil {
			spec.err = err
			return
		}
		m, err := doc.BuildV3Model()
		if err != nil {
			spec.err = err
			return
		}
		spec.model = &m.Model
		v, errs := validator.NewValidator(doc)
		if len(errs) > 0 {
			spec.err = errors.Join(errs...)
			return
		}
		spec.v = v
	})
	if spec.err != nil {
		t.Fatalf("openapi.json: %v", spec.err)
	}
	return spec.v, spec.model
}

// validating is the test client's transport: every request the HTTP tests
// send and every response they get is checked against the OpenAPI
// document, so a response that drifts from it fails the test that saw it.
//
//   - A request the document calls invalid must be refused by the server
//     (4xx): tests send bad input on purpose, but the server must not
//     accept what the document says it refuses.
//   - A JSON response must match the documented response of its status.
//   - A stream must be a documented text/event-stream response with the SSE
//     headers; its frames are described in components.schemas.
type validating struct {
	t    testing.TB
	base http.RoundTripper
}

func (vt validating) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := vt.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if req.Method == http.MethodOptions && req.Header.Get("Access-Control-Request-Method") != "" {
		// A CORS preflight is the browser asking permission, not a call of
		// an API operation: the CORS layer answers it before any route runs
		// (cors.go), for every path alike, so the document does not list
		// OPTIONS operations and preflights are not checked against it.
		return resp, nil
	}
	v, model := openAPI(vt.t)
	probe := func() *http.Request {
		c := req.Clone(req.Context())
		c.Body = io.NopCloser(bytes.NewReader(body))
		if len(body) > 0 && c.Header.Get("Content-Type") == "" {
			// The server reads bodies as JSON whatever their type (curl -d
			// sends form encoding); the document describes them as JSON.
			c.Header.Set("Content-Type", "application/json")
		}
		return c
	}
	where := req.Method + " " + req.URL.RequestURI()

	spec.mu.Lock()
	defer spec.mu.Unlock()
	if ok, errs := v.ValidateHttpRequest(probe()); !ok && resp.StatusCode < 400 {
		vt.t.Errorf("openapi: %s answered %d to a request the document refuses: %s", where, resp.StatusCode, describe(errs))
	}
	item, _, _ := paths.FindPath(probe(), model, nil)
	if item == nil {
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			vt.t.Errorf("openapi: %s answered %d but the document has no such route", where, resp.StatusCode)
		}
		return resp, nil
	}
	if item.GetOperations().GetOrZero(strings.ToLower(req.Method)) == nil {
		if resp.StatusCode != http.StatusMethodNotAllowed {
			vt.t.Errorf("openapi: %s answered %d but the document has no such operation", where, resp.StatusCode)
		}
		return resp, nil
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct == "text/event-stream" {
		vt.checkStream(where, item, req.Method, resp)
		return resp, nil
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	if err != nil {
		return resp, nil // the test sees the broken body itself
	}
	copied := *resp
	copied.Body = io.NopCloser(bytes.NewReader(raw))
	if ok, errs := v.ValidateHttpResponse(probe(), &copied); !ok {
		vt.t.Errorf("openapi: %s → %d does not match the document: %s\nbody: %.500s", where, resp.StatusCode, describe(errs), raw)
	}
	return resp, nil
}

// checkStream checks a stream's status, content type and headers against
// the operation's documented responses (the body is the test's to read).
func (vt validating) checkStream(where string, item *v3.PathItem, method string, resp *http.Response) {
	op := item.GetOperations().GetOrZero(strings.ToLower(method))
	if op == nil || op.Responses == nil {
		vt.t.Errorf("openapi: %s streams but the document has no such operation", where)
		return
	}
	r := op.Responses.Codes.GetOrZero(fmt.Sprint(resp.StatusCode))
	if r == nil || r.Content.GetOrZero("text/event-stream") == nil {
		vt.t.Errorf("openapi: %s streams with %d but the document does not say it does", where, resp.StatusCode)
		return
	}
	if resp.Header.Get("X-Accel-Buffering") != "no" || resp.Header.Get("Cache-Control") != "no-cache" {
		vt.t.Errorf("openapi: %s stream lacks its SSE headers: %v", where, resp.Header)
	}
}

func describe(errs []*verrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "\n  - %s: %s", e.Message, e.Reason)
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n      %s: %s", f.FieldPath, f.Reason)
		}
	}
	return b.String()
}

// TestOpenAPIServed checks the document is served, unauthenticated, and is
// the embedded one.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	resp := e.send(req{method: "GET", path: "/openapi.json"})
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !bytes.Equal(raw, httpapi.OpenAPI) {
		t.Fatalf("GET /openapi.json: %d, %d bytes", resp.StatusCode, len(raw))
	}
	v, _ := openAPI(t)
	if ok, errs := v.ValidateDocument(); !ok {
		t.Fatalf("the document is not valid OpenAPI: %s", describe(errs))
	}
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the base transport.
func (vt validating) CloseIdleConnections() {
	if c, ok := vt.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
