// Package cors answers browsers on other origins (AGENTCHAT_CORS_ORIGINS):
// preflights, the allow and expose headers, and refusals.
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
package cors

import (
	"net/http"
	"strings"
)

// Policy is the set of origins allowed to call the server.
type Policy struct {
	any     bool
	origins map[string]bool
	// allowHeaders is the preflight's Access-Control-Allow-Headers.
	allowHeaders string
}

// ExposedHeaders are the response headers browser clients must read: the
// run id of a started run, the AI SDK's stream marker, and the request id
// for support.
const ExposedHeaders = "X-Run-ID, X-Conversation-ID, X-Request-ID, x-vercel-ai-ui-message-stream"

// New returns the policy allowing origins (exact, or "*" for any); a
// preflight allows the headers agentchat's clients send and tenantHeader.
func New(origins []string, tenantHeader string) *Policy {
	p := &Policy{origins: map[string]bool{},
		allowHeaders: "Authorization, Content-Type, Accept, Last-Event-ID, X-Request-ID, " + tenantHeader}
	for _, o := range origins {
		if o == "*" {
			p.any = true
			continue
		}
		p.origins[strings.ToLower(o)] = true
	}
	return p
}

// Refusal says why Handle answered a request itself.
type Refusal int

// Refusals.
const (
	// OriginNotAllowed: a cross-origin request from an origin not allowed (403).
	OriginNotAllowed Refusal = iota + 1
	// NoRoute: a preflight for a path no method serves (404).
	NoRoute
)

// Handle applies the policy to a request. It returns true when it has
// answered (a preflight, or a refusal it wrote with refuse) and the route
// must not run. methods lists the methods a request's path is served with.
func (p *Policy) Handle(w http.ResponseWriter, r *http.Request, methods func(*http.Request) []string, refuse func(Refusal)) bool {
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
	switch {
	case p.any:
		h.Set("Access-Control-Allow-Origin", "*")
	case p.origins[strings.ToLower(origin)]:
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
	default:
		refuse(OriginNotAllowed)
		return true
	}
	if !preflight {
		h.Set("Access-Control-Expose-Headers", ExposedHeaders)
		return false
	}
	probe := r.Clone(r.Context())
	probe.Method = r.Header.Get("Access-Control-Request-Method")
	allowed := methods(probe)
	if len(allowed) == 0 {
		// No such route: the preflight fails and the browser never sends
		// the request, which would only have been a 404.
		h.Del("Access-Control-Allow-Origin")
		h.Del("Access-Control-Allow-Credentials")
		refuse(NoRoute)
		return true
	}
	h.Set("Access-Control-Allow-Methods", strings.Join(allowed, ", "))
	h.Set("Access-Control-Allow-Headers", p.allowHeaders)
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
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
