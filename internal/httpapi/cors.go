package httpapi

import (
	"net/http"
	"strings"
)

// cors answers browsers on other origins (AGENTCHAT_CORS_ORIGINS).
//
// Invariants:
//   - A request without an Origin header (curl, servers, SDKs in Node) and a
//     same-origin request (the console) pass untouched.
//   - A cross-origin request from an origin not on the list is refused with
//     403 before any route runs: a browser would hide the answer anyway, but
//     a refused request also does nothing (no run started, nothing deleted).
//   - A preflight (OPTIONS with Access-Control-Request-Method) from an allowed
//     origin is answered here, before authentication, since browsers never
//     send credentials on a preflight. It names the methods the path serves
//     and the headers agentchat's clients send.
//   - Credentials are allowed only for an exact origin, never with "*".
//     agentchat authenticates by bearer token, not cookies, so clients need
//     no credentials; the header is there for fetch wrappers that set
//     credentials: "include" anyway.
type cors struct {
	any     bool
	origins map[string]bool
	// allowHeaders is the preflight's Access-Control-Allow-Headers.
	allowHeaders string
}

// exposedHeaders are the response headers browser clients must read: the
// run id of a started run, the AI SDK's stream marker, and the request id
// for support.
const exposedHeaders = "X-Run-ID, X-Conversation-ID, X-Request-ID, x-vercel-ai-ui-message-stream"

func newCORS(origins []string, tenantHeader string) *cors {
	c := &cors{origins: map[string]bool{},
		allowHeaders: "Authorization, Content-Type, Accept, Last-Event-ID, X-Request-ID, " + tenantHeader}
	for _, o := range origins {
		if o == "*" {
			c.any = true
			continue
		}
		c.origins[strings.ToLower(o)] = true
	}
	return c
}

// handle applies CORS to a request. It returns true when it has answered
// (a preflight, or a refused origin) and the route must not run.
func (s *Server) handleCORS(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || sameOrigin(origin, r) {
		return false
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
	if preflight {
		h.Add("Vary", "Access-Control-Request-Method")
		h.Add("Vary", "Access-Control-Request-Headers")
	}
	c := s.cors
	switch {
	case c.any:
		h.Set("Access-Control-Allow-Origin", "*")
	case c.origins[strings.ToLower(origin)]:
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
	default:
		writeError(w, r, s.log, apiErr(http.StatusForbidden, "origin_not_allowed",
			"pages on this origin may not call this server; list it in AGENTCHAT_CORS_ORIGINS"))
		return true
	}
	if !preflight {
		h.Set("Access-Control-Expose-Headers", exposedHeaders)
		return false
	}
	probe := r.Clone(r.Context())
	probe.Method = r.Header.Get("Access-Control-Request-Method")
	methods := s.methodsOf(probe)
	if len(methods) == 0 {
		// No such route: the preflight fails and the browser never sends
		// the request, which would only have been a 404.
		h.Del("Access-Control-Allow-Origin")
		h.Del("Access-Control-Allow-Credentials")
		writeError(w, r, s.log, notFound("not_found", "route"))
		return true
	}
	h.Set("Access-Control-Allow-Methods", strings.Join(methods, ", "))
	h.Set("Access-Control-Allow-Headers", c.allowHeaders)
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// methodsOf lists the methods the request's path is served with.
func (s *Server) methodsOf(r *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, p := s.mux.Handler(probe); p != "" {
			out = append(out, m)
		}
	}
	return out
}

// sameOrigin reports whether origin names the host the request was sent to,
// as the console's own requests do. The scheme is not compared: behind a TLS
// proxy the browser's https origin reaches us as plain http. A proxy that
// rewrites Host says the original in X-Forwarded-Host; trusting it gives a
// page on another origin nothing, since a browser sends a header it sets
// itself only after a preflight, which names that page's origin.
func sameOrigin(origin string, r *http.Request) bool {
	_, hostPart, ok := strings.Cut(origin, "://")
	if !ok {
		return false
	}
	if strings.EqualFold(hostPart, r.Host) {
		return true
	}
	fwd, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Host"), ",")
	return fwd != "" && strings.EqualFold(hostPart, strings.TrimSpace(fwd))
}
