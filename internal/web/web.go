// Package web is agentchat's console: plain HTML, CSS and JavaScript modules
// embedded in the binary, so running the server needs no build step and no
// network, and the assets served are always the ones the binary was built
// with (there is no build output to go stale).
//
// Invariants: every response carries a strict Content-Security-Policy (only
// this origin's scripts, styles, images and connections; no inline script or
// style, no frames, no plugins), so an injected string can never run; assets
// are revalidated on every load (Cache-Control: no-cache with an ETag of their
// content), so an upgraded server never serves a mix of old and new files.
// The console talks to the API with fetch and a bearer token it keeps in
// sessionStorage; the token never appears in a URL. The libraries it uses
// (Markdown, sanitising, highlighting, charts) are the unchanged ES modules
// of their npm packages under static/vendor, so they too are served from
// this origin under the same policy (static/vendor/README.md).
package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
)

//go:embed static
var static embed.FS

// CSP is the Content-Security-Policy of every console response. Images may
// also be blob: URLs: attached images are fetched with the token in a
// header and shown from a blob the page made, since an <img> cannot send
// the header and the token never goes in a URL.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' blob:; font-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Prefix is the path under which the console's assets are served.
const Prefix = "/console/"

// policy is CSP with connect-src widened to the origins of connect's URLs.
func policy(connect func() []string) string {
	if connect == nil {
		return CSP
	}
	var extra []string
	for _, raw := range connect() {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.ContainsAny(u.Host, " ;,'\"") {
			continue
		}
		if o := u.Scheme + "://" + u.Host; !slices.Contains(extra, o) {
			extra = append(extra, o)
		}
	}
	if len(extra) == 0 {
		return CSP
	}
	return strings.Replace(CSP, "connect-src 'self'", "connect-src 'self' "+strings.Join(extra, " "), 1)
}

type asset struct {
	body  []byte
	etag  string
	ctype string
}

// Handler serves the console: index.html at "/" and the assets under Prefix.
// A path it does not know goes to notFound.
func Handler(notFound http.Handler) http.Handler { return HandlerWith(notFound, nil) }

// HandlerWith is Handler whose policy also lets the console connect to the
// origins connect returns: the token endpoints of the OpenID providers it
// signs in with (the code exchange is the browser's own request).
func HandlerWith(notFound http.Handler, connect func() []string) http.Handler {
	assets := map[string]asset{}
	root, _ := fs.Sub(static, "static")
	_ = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ctype := mime.TypeByExtension(path.Ext(p))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		assets[p] = asset{body: b, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, ctype: ctype}
		return nil
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := "index.html"
		if r.URL.Path != "/" {
			name = strings.TrimPrefix(r.URL.Path, Prefix)
		}
		a, ok := assets[name]
		if !ok || name == "index.html" && r.URL.Path != "/" {
			notFound.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", policy(connect))
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", a.etag)
		h.Set("Content-Type", a.ctype)
		if match := r.Header.Get("If-None-Match"); match == a.etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(a.body)
	})
}
