package httpapi_test

import (
	"io"
	"strings"
	"testing"
)

func TestConsoleIsServedAtRoot(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	resp := e.send(req{method: "GET", path: "/"})
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(body), "/console/js/app.js") {
		t.Fatalf("GET /: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	// Unknown paths stay JSON 404s, the console does not swallow them.
	e.apiError(req{method: "GET", path: "/nothing"}, 404, "not_found")
	e.apiError(req{method: "GET", path: "/console/nothing.js"}, 404, "not_found")
}

func TestMe(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	me := e.call(req{method: "GET", path: "/v1/me", token: alice}, 200)
	if me["tenant"] != "acme" || me["user"] != "alice" {
		t.Errorf("me %v", me)
	}
	e.apiError(req{method: "GET", path: "/v1/me"}, 401, "unauthorized")
}
