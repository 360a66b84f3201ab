package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

const (
	appOrigin   = "http://localhost:3000"
	otherOrigin = "http://evil.example"
)

func TestCORSPreflight(t *testing.T) {
	t.Parallel()
	e := setup(t, options{corsOrigins: []string{appOrigin}})
	tests := []struct {
		name, path, method, origin string
		status                     int
		methods                    string // Access-Control-Allow-Methods, "" when refused
	}{
		{"chat", "/v1/agent/chat?format=vercel-ai", "POST", appOrigin, 204, "POST"},
		{"conversation", "/v1/conversations/c1", "PATCH", appOrigin, 204, "GET, PATCH, DELETE"},
		{"resume", "/v1/agent/chat/c1/stream", "GET", appOrigin, 204, "GET"},
		{"agui", "/api/v1/agent/runs", "POST", appOrigin, 204, "POST"},
		{"confirmation", "/v1/agent/confirmations/x", "POST", appOrigin, 204, "POST"},
		{"unknown route", "/v1/nothing", "GET", appOrigin, 404, ""},
		{"other origin", "/v1/agent/chat", "POST", otherOrigin, 403, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.send(req{method: "OPTIONS", path: tt.path, header: map[string]string{
				"Origin": tt.origin, "Access-Control-Request-Method": tt.method,
				"Access-Control-Request-Headers": "authorization,content-type,last-event-id,x-tenant-id",
			}})
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			h := resp.Header
			if tt.methods == "" {
				if h.Get("Access-Control-Allow-Origin") != "" || h.Get("Access-Control-Allow-Methods") != "" {
					t.Errorf("a refused preflight allows: %v", h)
				}
				if !strings.Contains(string(body), `"code"`) {
					t.Errorf("a refused preflight answers no JSON error: %s", body)
				}
				return
			}
			if h.Get("Access-Control-Allow-Origin") != tt.origin || h.Get("Access-Control-Allow-Credentials") != "true" {
				t.Errorf("allow origin %q credentials %q", h.Get("Access-Control-Allow-Origin"), h.Get("Access-Control-Allow-Credentials"))
			}
			if got := h.Get("Access-Control-Allow-Methods"); got != tt.methods {
				t.Errorf("methods %q, want %q", got, tt.methods)
			}
			allowed := strings.ToLower(h.Get("Access-Control-Allow-Headers"))
			for _, want := range []string{"authorization", "content-type", "last-event-id", "x-tenant-id"} {
				if !strings.Contains(allowed, want) {
					t.Errorf("allowed headers %q lack %s", allowed, want)
				}
			}
			if !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
				t.Errorf("no Vary: Origin: %v", h.Values("Vary"))
			}
		})
	}
}

func TestCORSRequests(t *testing.T) {
	t.Parallel()
	e := setup(t, options{corsOrigins: []string{appOrigin}})
	e.call(req{method: "POST", path: "/v1/conversations", token: alice, body: map[string]string{"title": "mine"}}, 200)

	t.Run("allowed origin reads and sees the exposed headers", func(t *testing.T) {
		resp := e.send(req{method: "GET", path: "/v1/conversations", token: alice, header: map[string]string{"Origin": appOrigin}})
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != appOrigin {
			t.Fatalf("status %d, allow origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
		exposed := strings.ToLower(resp.Header.Get("Access-Control-Expose-Headers"))
		for _, want := range []string{"x-run-id", "x-vercel-ai-ui-message-stream"} {
			if !strings.Contains(exposed, want) {
				t.Errorf("exposed headers %q lack %s", exposed, want)
			}
		}
	})
	t.Run("allowed origin still needs a token", func(t *testing.T) {
		resp := e.send(req{method: "GET", path: "/v1/conversations", header: map[string]string{"Origin": appOrigin}})
		resp.Body.Close()
		if resp.StatusCode != 401 || resp.Header.Get("Access-Control-Allow-Origin") != appOrigin {
			t.Fatalf("status %d, allow origin %q: the client cannot read why it failed", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	})
	t.Run("other origin is refused and changes nothing", func(t *testing.T) {
		for _, r := range []req{
			{method: "GET", path: "/v1/conversations", token: alice},
			{method: "POST", path: "/v1/conversations", token: alice, body: map[string]string{"title": "planted"}},
		} {
			r.header = map[string]string{"Origin": otherOrigin}
			resp := e.send(r)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("%s: status %d, allow origin %q", r.method, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
			}
			if strings.Contains(string(body), "mine") || !strings.Contains(string(body), "origin_not_allowed") {
				t.Errorf("%s: body %s", r.method, body)
			}
		}
		list := e.call(req{method: "GET", path: "/v1/conversations", token: alice}, 200)
		if n := len(list["conversations"].([]any)); n != 1 {
			t.Errorf("%d conversations after a refused create, want 1", n)
		}
	})
	t.Run("same origin and no origin pass without CORS headers", func(t *testing.T) {
		behindProxy := map[string]string{"Origin": "https://chat.example.com", "X-Forwarded-Host": "chat.example.com"}
		for _, header := range []map[string]string{nil, {"Origin": e.url}, behindProxy} {
			r := req{method: "POST", path: "/v1/conversations", token: alice, body: map[string]string{}, header: header}
			origin := header["Origin"]
			resp := e.send(r)
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("origin %q: status %d, allow origin %q", origin, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
			}
		}
	})
}

func TestCORSNoneByDefaultAndWildcard(t *testing.T) {
	t.Parallel()
	closed := setup(t, options{})
	resp := closed.send(req{method: "OPTIONS", path: "/v1/agent/chat", header: map[string]string{"Origin": appOrigin, "Access-Control-Request-Method": "POST"}})
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("default: preflight status %d, allow origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}

	open := setup(t, options{corsOrigins: []string{"*"}})
	for _, method := range []string{"OPTIONS", "GET"} {
		r := req{method: method, path: "/v1/conversations", token: alice, header: map[string]string{"Origin": otherOrigin}}
		if method == "OPTIONS" {
			r.header["Access-Control-Request-Method"] = "GET"
			r.token = ""
		}
		resp := open.send(r)
		resp.Body.Close()
		if resp.StatusCode >= 300 || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("wildcard %s: status %d, allow origin %q", method, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
		if resp.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("wildcard %s allows credentials", method)
		}
	}
}
