package builtin

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentchat/agentchat/internal/tool"
)

// http_get defaults.
const (
	DefaultHTTPGetMaxBytes     = 256 << 10
	DefaultHTTPGetTimeout      = 20 * time.Second
	DefaultHTTPGetMaxRedirects = 5
)

// HTTPGetConfig configures http_get.
type HTTPGetConfig struct {
	// MaxBytes is how much of a response body is read; the rest is dropped
	// and the result marked truncated. Default 256 KiB.
	MaxBytes int64
	// Timeout bounds the whole fetch, redirects included. Default 20s.
	Timeout time.Duration
	// MaxRedirects is how many redirects are followed. Default 5.
	MaxRedirects int
	// Allow exempts destinations from the SSRF guard: IPs ("127.0.0.1"),
	// CIDRs ("10.20.0.0/16") or hostnames ("wiki.internal"). Empty (the
	// default) reaches public addresses only.
	Allow []string
}

func (c HTTPGetConfig) validate() error {
	if c.MaxBytes < 0 {
		return fmt.Errorf("builtin tools: HTTPGet.MaxBytes is negative (%d)", c.MaxBytes)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("builtin tools: HTTPGet.Timeout is negative (%s)", c.Timeout)
	}
	if c.MaxRedirects < 0 {
		return fmt.Errorf("builtin tools: HTTPGet.MaxRedirects is negative (%d)", c.MaxRedirects)
	}
	_, err := newGuard(c.Allow)
	return err
}

// httpGet is http_get.
type httpGet struct {
	client   *http.Client
	maxBytes int64
	timeout  time.Duration
}

func newHTTPGet(cfg HTTPGetConfig) (*httpGet, error) {
	client, err := GuardedClient(cfg)
	if err != nil {
		return nil, err
	}
	return &httpGet{client: client, maxBytes: cmp.Or(cfg.MaxBytes, DefaultHTTPGetMaxBytes), timeout: cmp.Or(cfg.Timeout, DefaultHTTPGetTimeout)}, nil
}

// GuardedClient is http_get's HTTP client: no proxy, redirects bounded and
// kept to http and https, and every connection vetted by the SSRF guard
// (loopback, private, link-local and other internal addresses refused,
// unless cfg.Allow exempts them). Whatever fetches a URL a client or a
// model chose uses it: the file service fetching attachments does.
func GuardedClient(cfg HTTPGetConfig) (*http.Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	g, err := newGuard(cfg.Allow)
	if err != nil {
		return nil, err
	}
	timeout := cmp.Or(cfg.Timeout, DefaultHTTPGetTimeout)
	maxRedirects := cmp.Or(cfg.MaxRedirects, DefaultHTTPGetMaxRedirects)
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	transport := &http.Transport{
		// No proxy, ever: through a proxy the guard would vet the proxy's
		// address, and the proxy would reach whatever the model asked for.
		Proxy:                  nil,
		DialContext:            g.dialContext(dialer),
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 64 << 10,
		// Fetches are one-offs to arbitrary hosts: pooling connections buys
		// little and keeps sockets and goroutines alive for nothing.
		DisableKeepAlives: true,
	}
	client := &http.Client{
		Transport: transport,
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			// The destination's address is vetted when it is dialled; only
			// the scheme is checked here.
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to a %s: URL refused (only http and https)", req.URL.Scheme)
			}
			return nil
		},
	}
	return client, nil
}

func (h *httpGet) Spec() tool.Spec {
	return tool.Spec{
		Name: "http_get",
		Description: "Fetch a public web page or API over HTTP GET and return its status, content type and body as text " +
			"(long bodies are truncated). Private and local network addresses cannot be reached.",
		Parameters: json.RawMessage(`{
			"type": "object",
			"properties": {
				"url": {"type": "string", "description": "Absolute http:// or https:// URL."}
			},
			"required": ["url"],
			"additionalProperties": false
		}`),
		Confirm: tool.ConfirmNever,
		// A little beyond the fetch's own limit, so the fetch reports its
		// own, more precise, timeout first.
		Timeout: h.timeout + 5*time.Second,
		Source:  "builtin",
	}
}

func (h *httpGet) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct {
		URL string `json:"url"`
	}
	if err := decodeArgs(args, &in); err != nil {
		return tool.Result{}, err
	}
	u, err := url.Parse(strings.TrimSpace(in.URL))
	if err != nil {
		return tool.Result{}, fmt.Errorf("invalid URL: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return tool.Result{}, fmt.Errorf("only http and https URLs can be fetched, not %q", u.Scheme+":")
	}
	if u.Hostname() == "" {
		return tool.Result{}, errors.New("invalid URL: no host")
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return tool.Result{}, fmt.Errorf("invalid URL: %v", err)
	}
	req.Header.Set("User-Agent", "agentchat-http_get/1")
	req.Header.Set("Accept", "text/html, application/json, text/plain;q=0.9, */*;q=0.5")
	resp, err := h.client.Do(req)
	if err != nil {
		return tool.Result{}, h.explain(ctx, err)
	}
	defer resp.Body.Close()

	// Read one byte past the limit to learn whether there was more. Go's
	// transport decompresses gzip before this, so the limit is on what we
	// keep, and a compression bomb stops at MaxBytes too.
	data, err := io.ReadAll(io.LimitReader(resp.Body, h.maxBytes+1))
	if err != nil {
		return tool.Result{}, h.explain(ctx, err)
	}
	truncated := int64(len(data)) > h.maxBytes
	if truncated {
		data = data[:h.maxBytes]
	}
	body := bodyText(data, resp.Header.Get("Content-Type"))
	if truncated {
		body += fmt.Sprintf("\n[truncated: only the first %d bytes were read]", h.maxBytes)
	}
	status := tool.StatusSuccess
	if truncated {
		status = tool.StatusPartial
	}
	out := struct {
		URL         string `json:"url"` // after redirects
		Status      int    `json:"status"`
		ContentType string `json:"contentType"`
		Body        string `json:"body"`
		Truncated   bool   `json:"truncated,omitempty"`
	}{resp.Request.URL.String(), resp.StatusCode, resp.Header.Get("Content-Type"), body, truncated}
	content := fmt.Sprintf("HTTP %d (%s) from %s\n\n%s", out.Status, cmp.Or(out.ContentType, "no content type"), out.URL, body)
	return jsonResult(status, content, out)
}

// explain turns transport errors into sentences for the model, and never
// echoes a guard refusal as a generic network failure: the model should
// learn that retrying will not help.
func (h *httpGet) explain(ctx context.Context, err error) error {
	if b, ok := asBlocked(err); ok {
		return fmt.Errorf("refused: %v; http_get only reaches public internet addresses", b)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// Name the host, not the resolver: the DNS server's address is this
	// network's business.
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		if dnsErr.IsNotFound {
			return fmt.Errorf("fetch failed: host %s not found", dnsErr.Name)
		}
		return fmt.Errorf("fetch failed: could not resolve host %s", dnsErr.Name)
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue.Timeout() {
		return fmt.Errorf("fetch timed out after %s", h.timeout)
	}
	if errors.As(err, &ue) {
		return fmt.Errorf("fetch failed: %v", ue.Err)
	}
	return fmt.Errorf("fetch failed: %v", err)
}

// bodyText returns the body as text, or a note when it is not text: the
// model cannot use raw image bytes and they would only eat its context.
func bodyText(data []byte, contentType string) string {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt != "" && !isTextual(mt) {
		return fmt.Sprintf("[%d bytes of %s content, not shown]", len(data), mt)
	}
	// A cut at the byte limit may split the last character; drop the
	// partial rune rather than call the whole body binary.
	for i := 0; i < utf8.UTFMax && len(data) > 0 && !utf8.Valid(data); i++ {
		data = data[:len(data)-1]
	}
	if !utf8.Valid(data) {
		return fmt.Sprintf("[%d bytes of non-UTF-8 content, not shown]", len(data))
	}
	return string(data)
}

func isTextual(mt string) bool {
	if strings.HasPrefix(mt, "text/") {
		return true
	}
	for _, suffix := range []string{"json", "xml", "javascript", "ecmascript", "yaml", "csv", "x-www-form-urlencoded", "graphql"} {
		if strings.HasSuffix(mt, suffix) || strings.HasSuffix(mt, "+"+suffix) {
			return true
		}
	}
	return false
}
