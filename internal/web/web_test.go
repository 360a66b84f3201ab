package web_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/web"
)

func serve(t *testing.T, path string, header map[string]string) *http.Response {
	t.Helper()
	h := web.Handler(http.NotFoundHandler())
	r := httptest.NewRequest(http.MethodGet, path, nil)
	for k, v := range header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func TestAssetsAndHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path, ctype string
		status      int
	}{
		{"/", "text/html", 200},
		{"/console/app.css", "text/css", 200},
		{"/console/js/app.js", "javascript", 200},
		{"/console/favicon.svg", "image/svg+xml", 200},
		{"/console/index.html", "", 404},
		{"/console/nope.js", "", 404},
		{"/console/../web.go", "", 404},
	}
	for _, tt := range tests {
		resp := serve(t, tt.path, nil)
		if resp.StatusCode != tt.status {
			t.Errorf("%s: status %d, want %d", tt.path, resp.StatusCode, tt.status)
			continue
		}
		if tt.status != 200 {
			continue
		}
		if !strings.Contains(resp.Header.Get("Content-Type"), tt.ctype) {
			t.Errorf("%s: content type %q", tt.path, resp.Header.Get("Content-Type"))
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP %q", tt.path, csp)
		}
		if resp.Header.Get("Cache-Control") != "no-cache" || resp.Header.Get("ETag") == "" {
			t.Errorf("%s: caching %q %q", tt.path, resp.Header.Get("Cache-Control"), resp.Header.Get("ETag"))
		}
		again := serve(t, tt.path, map[string]string{"If-None-Match": resp.Header.Get("ETag")})
		if again.StatusCode != http.StatusNotModified {
			t.Errorf("%s: revalidation status %d", tt.path, again.StatusCode)
		}
	}
}

// The CSP allows no inline script or style; the files must not need any,
// and every asset and module they name must exist (a missing one is a
// console error in the browser).
func TestNoInlineCodeAndNoMissingAssets(t *testing.T) {
	t.Parallel()
	root := os.DirFS("static")
	index, err := fs.ReadFile(root, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	html := string(index)
	if regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`).MatchString(html) || strings.Contains(html, "<style") ||
		regexp.MustCompile(`\sstyle=|\son[a-z]+=`).MatchString(html) {
		t.Error("index.html has inline script, style or event handler attributes")
	}
	for _, m := range regexp.MustCompile(`(?:src|href)="(/[^"]*)"`).FindAllStringSubmatch(html, -1) {
		if resp := serve(t, m[1], nil); resp.StatusCode != 200 {
			t.Errorf("index.html names %s, which answers %d", m[1], resp.StatusCode)
		}
	}
	importRE := regexp.MustCompile(`(?m)^import .* from '(\.\.?/[^']+)';`)
	err = fs.WalkDir(root, "js", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		src, _ := fs.ReadFile(root, p)
		if regexp.MustCompile(`\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|\beval\(|new Function\(`).Match(src) {
			t.Errorf("%s builds markup from strings or evaluates code", p)
		}
		for _, m := range importRE.FindAllStringSubmatch(string(src), -1) {
			target := "/console/" + filepath.ToSlash(filepath.Join(filepath.Dir(p), m[1]))
			resp := serve(t, target, nil)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || len(body) == 0 {
				t.Errorf("%s imports %s, which answers %d", p, target, resp.StatusCode)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
