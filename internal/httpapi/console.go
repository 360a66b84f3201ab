package httpapi

import (
	"net/http"

	"github.com/agentchat/agentchat/internal/auth"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/web"
)

// consoleRoutes serves the embedded web console (package web) at "/" and its
// assets, and GET /v1/me, which tells a client (the console's sign-in) whom
// its token names.
func (s *Server) consoleRoutes() {
	console := web.HandlerWith(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, s.log, notFound(errcode.NotFound, "route"))
	}), s.tokenEndpoints)
	s.mux.Handle("GET /{$}", console)
	s.mux.Handle("GET "+web.Prefix, console)
	s.mux.Handle("GET /v1/me", s.authenticate(s.wrap("GET /v1/me", s.me), false))
	s.mux.Handle("GET /v1/auth/providers", s.wrap("GET /v1/auth/providers", s.authProviders))
}

// authProviders lists the OpenID providers the console offers to sign in
// with (the authorization-code flow with PKCE, run by the browser). It
// needs no token: it is what a person sees before signing in, and it holds
// nothing secret (public client ids and the providers' public endpoints).
func (s *Server) authProviders(w http.ResponseWriter, r *http.Request) error {
	ps := s.auth.Providers()
	if ps == nil {
		ps = []auth.Provider{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"providers": ps})
	return nil
}

// tokenEndpoints are the origins the console's policy lets it post a code to.
func (s *Server) tokenEndpoints() []string {
	var out []string
	for _, p := range s.auth.Providers() {
		out = append(out, p.TokenEndpoint)
	}
	return out
}

// me answers the principal of the request's token: its tenant, user and
// role (admin or member), so a client can offer what the role may do.
func (s *Server) me(w http.ResponseWriter, r *http.Request) error {
	sc := scopeOf(r.Context())
	writeJSON(w, http.StatusOK, map[string]string{"tenant": sc.Tenant, "user": sc.User, "role": sc.RoleName()})
	return nil
}
