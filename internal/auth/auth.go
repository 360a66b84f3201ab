// Package auth says who a bearer token names: a static token from the
// configuration, an HS256 JWT whose claims name a tenant and a user, or a
// JWT of a trusted OpenID provider (RS256, ES256, EdDSA, … verified with
// the keys its JWKS publishes; issuer.go, keyset.go), and the principal's
// role there (chat.Admin or chat.Member).
//
// Roles: a static token is a member's unless its entry names it admin; a
// JWT is an admin's when its "role" claim is "admin", a member's when the
// claim is "member" or absent, and refused with any other value, so an
// issuer's typo never silently grants or drops a right.
//
// Security invariants: static tokens are compared as SHA-256 digests in
// constant time, every one of them on every call, so neither timing nor
// length tells which token was close; a JWT must be HS256, unexpired and
// carry an expiry, and its tenant and subject must be text the store can
// hold as keys. No token is ever logged or kept in clear.
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/store"
)

// Authenticator turns a bearer token into a principal. Static tokens are
// compared as SHA-256 digests in constant time, every one of them every time,
// so neither timing nor length says which token was close.
type Authenticator struct {
	static    []staticToken
	jwtSecret []byte
	issuers   []*trusted
	now       func() time.Time
}

type staticToken struct {
	digest [sha256.Size]byte
	scope  chat.Scope
}

// Token is one static bearer token and the principal it names.
type Token struct {
	Token, Tenant, User string
	// Role is the principal's role; empty is a member.
	Role chat.Role
}

// New builds an authenticator from static tokens and an HS256 secret.
func New(tokens []Token, jwtSecret string) *Authenticator {
	a := &Authenticator{jwtSecret: []byte(jwtSecret), now: time.Now}
	for _, t := range tokens {
		role, _ := chat.ParseRole(string(t.Role))
		a.static = append(a.static, staticToken{sha256.Sum256([]byte(t.Token)), chat.Scope{Tenant: t.Tenant, User: t.User, Role: role}})
	}
	return a
}

// ErrBadToken: the token names no principal.
var ErrBadToken = errors.New("bad token")

// Authenticate returns the principal of a token.
func (a *Authenticator) Authenticate(token string) (chat.Scope, error) {
	return a.AuthenticateContext(context.Background(), token)
}

// AuthenticateContext returns the principal of a token; ctx bounds a key
// refresh the token may cause (a kid the issuer's cached keys lack). A
// verified token that maps to no principal is a *ClaimError.
func (a *Authenticator) AuthenticateContext(ctx context.Context, token string) (chat.Scope, error) {
	if token == "" {
		return chat.Scope{}, ErrBadToken
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
	if strings.Count(token, ".") != 2 {
		return chat.Scope{}, ErrBadToken
	}
	if len(a.issuers) > 0 {
		iss := unverifiedIssuer(token)
		for _, t := range a.issuers {
			if iss != "" && iss == t.Issuer.Issuer {
				return t.verify(ctx, token)
			}
		}
	}
	if len(a.jwtSecret) == 0 {
		return chat.Scope{}, ErrBadToken
	}
	var claims struct {
		Tenant string `json:"tenant"`
		Role   string `json:"role"`
		jwt.RegisteredClaims
	}
	_, err := jwt.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return a.jwtSecret, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired(), jwt.WithTimeFunc(a.now), jwt.WithLeeway(30*time.Second))
	if err != nil || claims.Subject == "" || claims.Tenant == "" || !validClaims(token, claims.Tenant, claims.Subject) {
		return chat.Scope{}, ErrBadToken
	}
	role, ok := chat.ParseRole(claims.Role)
	if !ok {
		return chat.Scope{}, ErrBadToken
	}
	return chat.Scope{Tenant: claims.Tenant, User: claims.Subject, Role: role}, nil
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
		if !chat.ValidText(s) || len(s) > store.MaxKeyBytes {
			return false
		}
	}
	return true
}

// Trust adds OpenID providers whose tokens are accepted. Their keys are
// fetched on first use and kept fresh by Run.
func (a *Authenticator) Trust(issuers []Issuer, opt KeyOptions) error {
	for _, is := range issuers {
		if err := is.Check(); err != nil {
			return err
		}
		for _, t := range a.issuers {
			if t.Issuer.Issuer == is.Issuer {
				return fmt.Errorf("issuer %s is listed twice", is.Issuer)
			}
		}
		now := func() time.Time { return a.now() }
		if opt.Now != nil {
			now = opt.Now
		}
		a.issuers = append(a.issuers, &trusted{Issuer: is, skew: opt.ClockSkew, now: now,
			keys: newKeySet(is.Issuer, is.JWKSURL, opt.Client, now, opt.UnknownKIDInterval)})
	}
	return nil
}

// Run fetches every trusted issuer's keys and refreshes them in the
// background as their cache headers say, until ctx ends.
func (a *Authenticator) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, t := range a.issuers {
		wg.Go(func() { t.keys.run(ctx) })
	}
	wg.Wait()
}

// Refresh fetches every trusted issuer's keys now (serve calls it once at
// start, so the first token needs no fetch).
func (a *Authenticator) Refresh(ctx context.Context) {
	var wg sync.WaitGroup
	for _, t := range a.issuers {
		wg.Go(func() { t.keys.refresh(ctx) })
	}
	wg.Wait()
}

// KeyStatus reports each trusted issuer's keys, for /readyz.
func (a *Authenticator) KeyStatus() []KeyStatus {
	var out []KeyStatus
	for _, t := range a.issuers {
		out = append(out, t.keys.status(t.Issuer.Issuer))
	}
	return out
}

// Providers are the trusted issuers the console offers to sign in with
// (those with a client id whose discovery has answered).
func (a *Authenticator) Providers() []Provider {
	var out []Provider
	for _, t := range a.issuers {
		if t.ClientID == "" {
			continue
		}
		t.keys.mu.RLock()
		ep := t.keys.endpoints
		t.keys.mu.RUnlock()
		if ep.Authorization == "" || ep.Token == "" {
			continue
		}
		name := t.Name
		if name == "" {
			if u, err := url.Parse(t.Issuer.Issuer); err == nil {
				name = u.Host
			}
		}
		tok := "access_token"
		if t.Audience == t.ClientID {
			tok = "id_token"
		}
		out = append(out, Provider{Name: name, Issuer: t.Issuer.Issuer, ClientID: t.ClientID, Scopes: orDefault(t.Scopes, "openid profile email"),
			Audience: t.Audience, AuthorizationEndpoint: ep.Authorization, TokenEndpoint: ep.Token, Token: tok})
	}
	return out
}
