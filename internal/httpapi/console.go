package httpapi

import (
	"net/http"

	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/web"
)

// consoleRoutes serves the embedded web console (package web) at "/" and its
// assets, and GET /v1/me, which tells a client (the console's sign-in) whom
// its token names.
func (s *Server) consoleRoutes() {
	console := web.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, s.log, notFound(errcode.NotFound, "route"))
	}))
	s.mux.Handle("GET /{$}", console)
	s.mux.Handle("GET "+web.Prefix, console)
	s.mux.Handle("GET /v1/me", s.authenticate(s.wrap("GET /v1/me", s.me), false))
}

// me answers the principal of the request's token: its tenant, user and
// role (admin or member), so a client can offer what the role may do.
func (s *Server) me(w http.ResponseWriter, r *http.Request) error {
	sc := scopeOf(r.Context())
	writeJSON(w, http.StatusOK, map[string]string{"tenant": sc.Tenant, "user": sc.User, "role": sc.RoleName()})
	return nil
}
