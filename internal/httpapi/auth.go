package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/agentchat/agentchat/internal/auth"
	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/errcode"
)

// bearerToken reads an Authorization header of the Bearer scheme (its name
// is case-insensitive, RFC 9110 §11.1). Any other header carries no token:
// a bare token is not taken for one.
func bearerToken(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
}

type scopeKey struct{}

// scopeOf is the authenticated principal of a request.
func scopeOf(ctx context.Context) chat.Scope {
	s, _ := ctx.Value(scopeKey{}).(chat.Scope)
	return s
}

// authenticate wraps h: a bearer token (or, for streams a browser opens with
// EventSource, ?access_token=) must name a principal, and the tenant header,
// when sent, must name the principal's tenant.
func (s *Server) authenticate(h http.Handler, queryToken bool) http.Handler {
	// The closure stays small: a stream's handler runs under it for the
	// stream's life (see sseStream).
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ctx, ok := s.principal(w, r, queryToken); ok {
			h.ServeHTTP(w, r.WithContext(ctx))
		}
	})
}

// principal is r's context with the principal its token names, or false
// once the refusal is written.
func (s *Server) principal(w http.ResponseWriter, r *http.Request, queryToken bool) (context.Context, bool) {
	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok && queryToken && r.Method == http.MethodGet && r.Header.Get("Authorization") == "" {
		token = r.URL.Query().Get("access_token")
	}
	sc, err := s.auth.AuthenticateContext(r.Context(), strings.TrimSpace(token))
	if err != nil {
		// A verified token that maps to no principal says which claim
		// is missing (never the token); any other failure says nothing.
		var ce *auth.ClaimError
		if errors.As(err, &ce) {
			writeError(w, r, s.log, apiErr(http.StatusUnauthorized, errcode.Unauthorized, "%s", ce.Error()))
			return nil, false
		}
		writeError(w, r, s.log, apiErr(http.StatusUnauthorized, errcode.Unauthorized, "a valid bearer token is required"))
		return nil, false
	}
	if t := r.Header.Get(s.tenantHeader); t != "" && t != sc.Tenant {
		writeError(w, r, s.log, apiErr(http.StatusForbidden, errcode.TenantForbidden, "this token may not act for tenant %q", t))
		return nil, false
	}
	setLogTenant(r.Context(), sc.Tenant)
	return context.WithValue(r.Context(), scopeKey{}, sc), true
}
