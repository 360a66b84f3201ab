package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/config"
	"github.com/agentchat/agentchat/internal/dialect"
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
	scope  chat.Scope
}

// NewAuthenticator builds an authenticator from static tokens and an HS256 secret.
func NewAuthenticator(tokens []config.Token, jwtSecret string) *Authenticator {
	a := &Authenticator{jwtSecret: []byte(jwtSecret), now: time.Now}
	for _, t := range tokens {
		a.static = append(a.static, staticToken{sha256.Sum256([]byte(t.Token)), chat.Scope{Tenant: t.Tenant, User: t.User}})
	}
	return a
}

var errBadToken = errors.New("bad token")

// Authenticate returns the principal of a token.
func (a *Authenticator) Authenticate(token string) (chat.Scope, error) {
	if token == "" {
		return chat.Scope{}, errBadToken
	}
	d := sha256.Sum256([]byte(token))
	var found chat.Scope
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
		return chat.Scope{}, errBadToken
	}
	var claims struct {
		Tenant string `json:"tenant"`
		jwt.RegisteredClaims
	}
	_, err := jwt.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return a.jwtSecret, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired(), jwt.WithTimeFunc(a.now), jwt.WithLeeway(30*time.Second))
	if err != nil || claims.Subject == "" || claims.Tenant == "" || !validClaims(token, claims.Tenant, claims.Subject) {
		return chat.Scope{}, errBadToken
	}
	return chat.Scope{Tenant: claims.Tenant, User: claims.Subject}, nil
}

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

// validClaims checks the principal a verified JWT names: text a store holds
// and keys it can index. The payload's raw JSON is checked as a request
// body is, because decoding has already mended invalid UTF-8.
func validClaims(token, tenant, subject string) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || dialect.CheckJSONText(payload) != nil {
		return false
	}
	for _, s := range []string{tenant, subject} {
		if !store.ValidText(s) || len(s) > store.MaxKeyBytes {
			return false
		}
	}
	return true
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
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok && queryToken && r.Method == http.MethodGet && r.Header.Get("Authorization") == "" {
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
