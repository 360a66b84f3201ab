package builtin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/tool"
)

type fetched struct {
	URL         string `json:"url"`
	Status      int    `json:"status"`
	ContentType string `json:"contentType"`
	Body        string `json:"body"`
	Truncated   bool   `json:"truncated"`
}

// newSite serves a few pages on 127.0.0.1, the address tests reach through
// the allow list.
func newSite(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "hello, world")
	})
	mux.HandleFunc("GET /big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, strings.Repeat("ab", 100))
	})
	mux.HandleFunc("GET /image", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte{0x89, 'P', 'N', 'G', 0, 1, 2})
	})
	mux.HandleFunc("GET /missing", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such page", http.StatusNotFound)
	})
	// /to?u=<url> redirects anywhere: the open redirect an attacker would use.
	mux.HandleFunc("GET /to", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
	})
	mux.HandleFunc("GET /loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPGetFetches(t *testing.T) {
	t.Parallel()
	srv := newSite(t)
	r := setup(t, Config{HTTPGet: HTTPGetConfig{Allow: []string{"127.0.0.1"}, MaxBytes: 50}})

	tests := []struct {
		name       string
		path       string
		wantStatus tool.Status
		check      func(t *testing.T, out fetched, res tool.Result)
	}{
		{"text", "/hello", tool.StatusSuccess, func(t *testing.T, out fetched, res tool.Result) {
			if out.Status != 200 || out.Body != "hello, world" || !strings.HasPrefix(out.ContentType, "text/plain") {
				t.Fatalf("output %+v", out)
			}
			if !strings.Contains(res.Content, "HTTP 200") || !strings.Contains(res.Content, "hello, world") {
				t.Fatalf("Content %q", res.Content)
			}
		}},
		{"truncated", "/big", tool.StatusPartial, func(t *testing.T, out fetched, _ tool.Result) {
			if !out.Truncated || !strings.HasPrefix(out.Body, strings.Repeat("ab", 25)+"\n[truncated") {
				t.Fatalf("output %+v", out)
			}
		}},
		{"binary not shown", "/image", tool.StatusSuccess, func(t *testing.T, out fetched, _ tool.Result) {
			if out.Body != "[7 bytes of image/png content, not shown]" {
				t.Fatalf("body %q", out.Body)
			}
		}},
		{"404 is a fetched page", "/missing", tool.StatusSuccess, func(t *testing.T, out fetched, _ tool.Result) {
			if out.Status != 404 || !strings.Contains(out.Body, "no such page") {
				t.Fatalf("output %+v", out)
			}
		}},
		{"allowed redirect", "/to?u=/hello", tool.StatusSuccess, func(t *testing.T, out fetched, _ tool.Result) {
			if out.Body != "hello, world" || !strings.HasSuffix(out.URL, "/hello") {
				t.Fatalf("output %+v", out)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := call(t, r, "http_get", map[string]any{"url": srv.URL + tt.path})
			if res.Status != tt.wantStatus {
				t.Fatalf("Status %s, want %s: %+v", res.Status, tt.wantStatus, res)
			}
			var out fetched
			if err := json.Unmarshal(res.Output, &out); err != nil {
				t.Fatal(err)
			}
			tt.check(t, out, res)
		})
	}
}

func TestHTTPGetRefuses(t *testing.T) {
	t.Parallel()
	srv := newSite(t)
	port := mustPort(t, srv.URL)
	// Only the test server's exact address is allowed; every other local
	// destination must still be refused.
	allowed := setup(t, Config{HTTPGet: HTTPGetConfig{Allow: []string{"127.0.0.1/32"}}})
	strict := setup(t, Config{})

	redirect := func(target string) string { return srv.URL + "/to?u=" + url.QueryEscape(target) }
	tests := []struct {
		name string
		r    *tool.Registry
		url  string
		want string
	}{
		{"loopback", strict, srv.URL + "/hello", "destination 127.0.0.1 is not allowed (loopback address)"},
		{"private 10/8", strict, "http://10.1.2.3/", "10.1.2.3 is not allowed (private address)"},
		{"private 192.168", strict, "http://192.168.0.1:8080/", "(private address)"},
		{"cloud metadata", strict, "http://169.254.169.254/latest/meta-data/", "169.254.169.254 is not allowed (link-local address)"},
		{"IPv6 loopback", strict, "http://[::1]:" + port + "/", "::1 is not allowed (loopback address)"},
		{"IPv4-mapped IPv6 loopback", strict, "http://[::ffff:127.0.0.1]:" + port + "/", "127.0.0.1 is not allowed (loopback"},
		{"unspecified", strict, "http://0.0.0.0:" + port + "/", "(unspecified address)"},
		{"CGNAT", strict, "http://100.64.1.1/", "(carrier-grade NAT address)"},
		{"hostname resolving to loopback", strict, "http://localhost:" + port + "/hello", "(loopback address)"},
		{"redirect from allowed host to other loopback", allowed, redirect("http://127.0.0.2:" + port + "/hello"), "127.0.0.2 is not allowed (loopback address)"},
		{"redirect to IPv6 loopback", allowed, redirect("http://[::1]:" + port + "/hello"), "::1 is not allowed (loopback address)"},
		{"redirect to metadata", allowed, redirect("http://169.254.169.254/"), "(link-local address)"},
		{"redirect to file", allowed, redirect("file:///etc/passwd"), "refused (only http and https)"},
		{"redirect loop", allowed, srv.URL + "/loop", "stopped after 5 redirects"},
		{"file scheme", strict, "file:///etc/passwd", `only http and https URLs can be fetched, not "file:"`},
		{"gopher scheme", strict, "gopher://127.0.0.1/", "only http and https"},
		{"no host", strict, "http:///x", "no host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := call(t, tt.r, "http_get", map[string]any{"url": tt.url})
			if res.Status != tool.StatusFailure || !strings.Contains(res.Error, tt.want) {
				t.Fatalf("result %+v\nwant failure containing %q", res, tt.want)
			}
		})
	}
}

func TestHTTPGetAllowByName(t *testing.T) {
	t.Parallel()
	srv := newSite(t)
	r := setup(t, Config{HTTPGet: HTTPGetConfig{Allow: []string{"LocalHost"}}})
	res := call(t, r, "http_get", map[string]any{"url": "http://localhost:" + mustPort(t, srv.URL) + "/hello"})
	if res.Status != tool.StatusSuccess || !strings.Contains(res.Content, "hello, world") {
		t.Fatalf("result %+v", res)
	}
}

func TestGuardCheck(t *testing.T) {
	t.Parallel()
	g, err := newGuard([]string{"192.168.7.0/24", "fd12::5"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		addr string
		want string // empty: allowed
	}{
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"2606:4700:4700::1111", ""},
		{"192.168.7.9", ""}, // allowed range
		{"fd12::5", ""},     // allowed address
		{"192.168.8.1", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"172.32.0.1", ""},
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"::1", "loopback"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"0.1.2.3", "this-network"},
		{"169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"fd00:ec2::254", "unique-local"}, // AWS IMDS over IPv6
		{"fc00::1", "unique-local"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.127.255.255", "carrier-grade NAT"},
		{"100.128.0.1", ""},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "reserved"},
		{"::ffff:10.0.0.1", "private"},
		{"64:ff9b::7f00:1", "loopback (NAT64)"},
		{"64:ff9b::808:808", ""},
		{"2002:a9fe:a9fe::1", "link-local (6to4)"},
		{"::127.0.0.1", "IPv4-compatible"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			err := g.check(netip.MustParseAddr(tt.addr))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("check(%s) = %v, want allowed", tt.addr, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "("+tt.want+" address)") {
				t.Fatalf("check(%s) = %v, want refusal as %s", tt.addr, err, tt.want)
			}
		})
	}
}

func mustPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}
