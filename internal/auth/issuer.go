package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/store"
)

// Claim-mapping defaults of a trusted issuer.
const (
	DefaultUserClaim   = "sub"
	DefaultTenantClaim = "tenant"
	DefaultRoleClaim   = "role"
	DefaultAdminValue  = "admin"
	DefaultClockSkew   = 30 * time.Second
)

// asymmetric are the signature algorithms an issuer's tokens may use. No
// HMAC algorithm is here, so a token "signed" with an issuer's public key
// as an HS256 secret (algorithm confusion) and alg "none" are refused
// before any key is looked at.
var asymmetric = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Issuer is one OpenID provider (or JWKS publisher) whose tokens are
// trusted, with its own audience and claim mapping.
type Issuer struct {
	// Name is shown on the console's sign-in button; default the issuer's host.
	Name string `json:"name,omitempty"`
	// Issuer is the exact "iss" its tokens carry. With no JWKSURL, its
	// discovery document (Issuer + "/.well-known/openid-configuration")
	// gives the key-set URL.
	Issuer  string `json:"issuer"`
	JWKSURL string `json:"jwksUrl,omitempty"`
	// Audience must be in every token's "aud".
	Audience string `json:"audience"`
	// UserClaim names the user; default "sub".
	UserClaim string `json:"userClaim,omitempty"`
	// TenantClaim names the tenant; default "tenant". Tenant, when set,
	// is the tenant of every token of this issuer instead.
	TenantClaim string `json:"tenantClaim,omitempty"`
	Tenant      string `json:"tenant,omitempty"`
	// RoleClaim is a string or a list of strings; the principal is an
	// admin when it is, or contains, AdminValue (default "admin"), and a
	// member otherwise.
	RoleClaim  string `json:"roleClaim,omitempty"`
	AdminValue string `json:"adminValue,omitempty"`
	// ClientID, when set, offers the console's "Sign in with Name" (the
	// authorization-code flow with PKCE; a public client, no secret).
	ClientID string `json:"clientId,omitempty"`
	// Scopes asked for at sign-in; default "openid profile email".
	Scopes string `json:"scopes,omitempty"`
}

// Check says what is wrong with an issuer's settings, if anything.
func (is Issuer) Check() error {
	u, err := url.Parse(is.Issuer)
	if is.Issuer == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("issuer %q is not an http(s) URL", is.Issuer)
	}
	if is.JWKSURL != "" {
		if u, err := url.Parse(is.JWKSURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("issuer %s: JWKS URL %q is not an http(s) URL", is.Issuer, is.JWKSURL)
		}
	}
	if is.Audience == "" {
		return fmt.Errorf("issuer %s: an audience is required (the \"aud\" its tokens carry for agentchat)", is.Issuer)
	}
	return nil
}

// ClaimError is a verified token that maps to no principal: it names the
// claim that is missing or unusable, never the token.
type ClaimError struct {
	Claim  string
	Reason string
}

func (e *ClaimError) Error() string {
	return fmt.Sprintf("the token's %q claim %s", e.Claim, e.Reason)
}

// trusted is a configured issuer with its keys.
type trusted struct {
	Issuer
	keys *keySet
	skew time.Duration
	now  func() time.Time
}

// verify checks a token of this issuer and maps its claims to a principal.
func (t *trusted) verify(ctx context.Context, token string) (chat.Scope, error) {
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(token, claims, func(tok *jwt.Token) (any, error) {
		kid, _ := tok.Header["kid"].(string)
		alg := tok.Method.Alg()
		// Several keys may share a kid (or the token names none):
		// golang-jwt tries each key of a VerificationKeySet.
		var set jwt.VerificationKeySet
		for _, k := range t.keys.keysFor(ctx, kid) {
			if (k.Algorithm == "" || k.Algorithm == alg) && keyFits(k.Key, alg) {
				set.Keys = append(set.Keys, k.Key)
			}
		}
		if len(set.Keys) == 0 {
			return nil, errors.New("no key of the issuer fits the token")
		}
		return set, nil
	},
		jwt.WithValidMethods(asymmetric),
		jwt.WithIssuer(t.Issuer.Issuer),
		jwt.WithAudience(t.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(t.skew),
		jwt.WithTimeFunc(t.now),
	)
	if err != nil {
		return chat.Scope{}, ErrBadToken
	}
	return t.principal(token, claims)
}

// keyFits reports whether key is of the family alg signs with, so a key is
// never used with an algorithm it was not made for.
func keyFits(key any, alg string) bool {
	switch k := key.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case *ecdsa.PublicKey:
		switch alg {
		case "ES256":
			return k.Curve == elliptic.P256()
		case "ES384":
			return k.Curve == elliptic.P384()
		case "ES512":
			return k.Curve == elliptic.P521()
		}
	case ed25519.PublicKey:
		return alg == "EdDSA"
	}
	return false
}

// principal maps a verified token's claims to a tenant, a user and a role.
func (t *trusted) principal(token string, claims jwt.MapClaims) (chat.Scope, error) {
	// The payload's raw JSON is checked as a request body is: decoding has
	// already mended invalid UTF-8.
	parts := strings.Split(token, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || dialect.CheckJSONText(payload) != nil {
		return chat.Scope{}, ErrBadToken
	}
	userClaim := orDefault(t.UserClaim, DefaultUserClaim)
	user, err := single(claims, userClaim, "user")
	if err != nil {
		return chat.Scope{}, err
	}
	tenant := t.Tenant
	if tenant == "" {
		if tenant, err = single(claims, orDefault(t.TenantClaim, DefaultTenantClaim), "tenant"); err != nil {
			return chat.Scope{}, err
		}
	}
	role := chat.Member
	admin := orDefault(t.AdminValue, DefaultAdminValue)
	switch v := claimValue(claims, orDefault(t.RoleClaim, DefaultRoleClaim)).(type) {
	case string:
		if v == admin {
			role = chat.Admin
		}
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok && s == admin {
				role = chat.Admin
			}
		}
	}
	return chat.Scope{Tenant: tenant, User: user, Role: role}, nil
}

// single reads a claim that names one key (a user or a tenant): a string,
// or a list of exactly one string (a Keycloak group, say).
func single(claims jwt.MapClaims, name, what string) (string, error) {
	v := claimValue(claims, name)
	if l, ok := v.([]any); ok && len(l) == 1 {
		v = l[0]
	}
	var s string
	switch x := v.(type) {
	case nil:
		return "", &ClaimError{Claim: name, Reason: "is missing, so the token names no " + what}
	case string:
		s = x
	case json.Number:
		s = x.String()
	case float64:
		s = fmt.Sprint(x)
	case []any:
		return "", &ClaimError{Claim: name, Reason: fmt.Sprintf("names %d values; one %s is needed", len(x), what)}
	default:
		return "", &ClaimError{Claim: name, Reason: "is not a string, so it names no " + what}
	}
	s = strings.TrimPrefix(s, "/") // Keycloak's group paths: "/acme"
	if s == "" || !chat.ValidText(s) || len(s) > store.MaxKeyBytes {
		return "", &ClaimError{Claim: name, Reason: "is empty or not a usable " + what + " name"}
	}
	return s, nil
}

// claimValue reads a claim by its exact name (Auth0's namespaced claims
// have dots: "https://example.com/tenant"), else by a dotted path into
// nested objects (Clerk's "o.id").
func claimValue(claims jwt.MapClaims, name string) any {
	if v, ok := claims[name]; ok {
		return v
	}
	var cur any = map[string]any(claims)
	for _, p := range strings.Split(name, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		if cur, ok = m[p]; !ok {
			return nil
		}
	}
	return cur
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// unverifiedIssuer reads a JWT's "iss" without checking anything, only to
// pick the issuer whose keys and rules then check the whole token.
func unverifiedIssuer(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || len(parts[1]) > 64<<10 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var c struct {
		Iss string `json:"iss"`
	}
	if json.Unmarshal(payload, &c) != nil {
		return ""
	}
	return c.Iss
}

// Provider is an issuer offered for the console's browser sign-in.
type Provider struct {
	Name                  string `json:"name"`
	Issuer                string `json:"issuer"`
	ClientID              string `json:"clientId"`
	Scopes                string `json:"scopes"`
	Audience              string `json:"audience"`
	AuthorizationEndpoint string `json:"authorizationEndpoint"`
	TokenEndpoint         string `json:"tokenEndpoint"`
	// Token is the token the console keeps: "id_token" when the audience
	// is the client itself, else "access_token".
	Token string `json:"token"`
}

// KeyOptions tune the key sets; the zero value is production's.
type KeyOptions struct {
	Client *http.Client
	// UnknownKIDInterval is the least time between two refreshes caused
	// by unknown kids; default UnknownKIDInterval.
	UnknownKIDInterval time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// ClockSkew is the leeway for exp, nbf and iat (serve's default is
	// DefaultClockSkew; zero here is none).
	ClockSkew time.Duration
}
