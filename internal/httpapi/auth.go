package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentchat/agentchat/internal/config"
	"github.com/agentchat/agentchat/internal/store"
)

// Authenticator turns a bearer token into a principal. Static tokens are
// compared as SHA-256 digests in constant time, every one of them every time,
// so neither timing nor length says which token was close.
type Authenticator struct {
	static    []staticToken
	jwtSecret []byte
	now       func() time.Time
}

type staticToken struct {
	digest [sha256.Size]byte
	scope  store.Scope
}

// NewAuthenticator builds an authenticator from static tokens and an HS256 secret.
func NewAuthenticator(tokens []config.Token, jwtSecret string) *Authenticator {
	a := &Authenticator{jwtSecret: []byte(jwtSecret), now: time.Now}
	for _, t := range tokens {
		a.static = append(a.static, staticToken{sha256.Sum256([]byte(t.Token)), store.Scope{Tenant: t.Tenant, User: t.User}})
	}
	return a
}

var errBadToken = errors.New("bad token")

// Authenticate returns the principal of a token.
func (a *Authenticator) Authenticate(token string) (store.Scope, error) {
	if token == "" {
		return store.Scope{}, errBadToken
	}
	d := sha256.Sum256([]byte(token))
	var found store.Scope
	match := 0
	for _, t := range a.static {
		eq := subtle.ConstantTimeCompare(d[:], t.digest[:])
		if eq == 1 {
			found = t.scope
		}
		match |= eq
	}
	if match == 1 {
		return found, nil
	}
	if len(a.jwtSecret) == 0 || strings.Count(token, ".") != 2 {
		return store.Scope{}, errBadToken
	}
	var claims struct {
		Tenant string `json:"tenant"`
		jwt.RegisteredClaims
	}
	_, err := jwt.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return a.jwtSecret, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired(), jwt.WithTimeFunc(a.now), jwt.WithLeeway(30*time.Second))
	if err != nil || claims.Subject == "" || claims.Tenant == "" {
		return store.Scope{}, errBadToken
	}
	return store.Scope{Tenant: claims.Tenant, User: claims.Subject}, nil
}

type scopeKey struct{}

// scopeOf is the authenticated principal of a request.
func scopeOf(ctx context.Context) store.Scope {
	s, _ := ctx.Value(scopeKey{}).(store.Scope)
	return s
}

// authenticate wraps h: a bearer token (or, for streams a browser opens with
// EventSource, ?access_token=) must name a principal, and the tenant header,
// when sent, must name the principal's tenant.
func (s *Server) authenticate(h http.Handler, queryToken bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			token, ok = strings.CutPrefix(r.Header.Get("Authorization"), "bearer ")
		}
		if !ok && queryToken && r.Method == http.MethodGet {
			token = r.URL.Query().Get("access_token")
		}
		sc, err := s.auth.Authenticate(strings.TrimSpace(token))
		if err != nil {
			writeError(w, r, s.log, apiErr(http.StatusUnauthorized, "unauthorized", "a valid bearer token is required"))
			return
		}
		if t := r.Header.Get(s.tenantHeader); t != "" && t != sc.Tenant {
			writeError(w, r, s.log, apiErr(http.StatusForbidden, "tenant_forbidden", "this token may not act for tenant %q", t))
			return
		}
		setLogTenant(r.Context(), sc.Tenant)
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), scopeKey{}, sc)))
	})
}
