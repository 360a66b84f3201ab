package httpapi

import (
	"net/http"

	"github.com/agentchat/agentchat/internal/cors"
	"github.com/agentchat/agentchat/internal/errcode"
)

// handleCORS applies the CORS policy (package cors); true means it has
// answered and the route must not run.
func (s *Server) handleCORS(w http.ResponseWriter, r *http.Request) bool {
	return s.cors.Handle(w, r, s.methodsOf, func(why cors.Refusal) {
		if why == cors.NoRoute {
			writeError(w, r, s.log, notFound(errcode.NotFound, "route"))
			return
		}
		writeError(w, r, s.log, apiErr(http.StatusForbidden, errcode.OriginNotAllowed,
			"pages on this origin may not call this server; list it in AGENTCHAT_CORS_ORIGINS"))
	})
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
