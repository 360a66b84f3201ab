package auth_test

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentchat/agentchat/internal/auth"
	"github.com/agentchat/agentchat/internal/auth/oidctest"
	"github.com/agentchat/agentchat/internal/chat"
)

const aud = "agentchat-api"

func trust(t *testing.T, p *oidctest.Provider, is auth.Issuer, opt auth.KeyOptions) *auth.Authenticator {
	t.Helper()
	if is.Issuer == "" {
		is.Issuer = p.URL
	}
	if is.Audience == "" {
		is.Audience = aud
	}
	a := auth.New(nil, "")
	if err := a.Trust([]auth.Issuer{is}, opt); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestOIDCTokensOfEveryAlgorithm(t *testing.T) {
	p := oidctest.New()
	defer p.Close()
	rs := p.Published()[0]
	es, ed := p.AddKey("ES256"), p.AddKey("EdDSA")
	p.Publish(rs, es.ID, ed.ID)
	a := trust(t, p, auth.Issuer{}, auth.KeyOptions{}) // discovery gives the JWKS
	for _, kid := range []string{rs, es.ID, ed.ID} {
		sc, err := a.Authenticate(p.Sign(kid, p.Valid(aud, "alice", map[string]any{"tenant": "acme"})))
		if err != nil || sc != (chat.Scope{Tenant: "acme", User: "alice", Role: chat.Member}) {
			t.Fatalf("%s: %+v %v", p.Key(kid).Alg, sc, err)
		}
	}
	if n := p.Fetches(); n != 1 {
		t.Fatalf("three tokens fetched the key set %d times, want 1 (cached)", n)
	}
	st := a.KeyStatus()
	if len(st) != 1 || st[0].Status != "up" || st[0].Keys != 3 {
		t.Fatalf("key status %+v", st)
	}
}

func TestOIDCRefusals(t *testing.T) {
	p := oidctest.New()
	defer p.Close()
	kid := p.Published()[0]
	a := trust(t, p, auth.Issuer{JWKSURL: p.URL + "/jwks"}, auth.KeyOptions{ClockSkew: 30 * time.Second})
	good := map[string]any{"tenant": "acme"}
	if _, err := a.Authenticate(p.Sign(kid, p.Valid(aud, "alice", good))); err != nil {
		t.Fatal("the valid token was refused:", err)
	}
	now := time.Now()
	with := func(k string, v any) jwt.MapClaims {
		c := p.Valid(aud, "alice", good)
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	pub := p.Key(kid).Public().(*rsa.PublicKey)
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	other := oidctest.New() // another provider's key, same kid
	defer other.Close()
	cases := map[string]string{
		"expired":             p.Sign(kid, with("exp", now.Add(-time.Minute).Unix())),
		"no exp":              p.Sign(kid, with("exp", nil)),
		"not yet valid (nbf)": p.Sign(kid, with("nbf", now.Add(5*time.Minute).Unix())),
		"issued in future":    p.Sign(kid, with("iat", now.Add(5*time.Minute).Unix())),
		"wrong audience":      p.Sign(kid, with("aud", "someone-else")),
		"no audience":         p.Sign(kid, with("aud", nil)),
		"wrong issuer":        p.Sign(kid, with("iss", "https://evil.example")),
		"alg none":            noneToken(p.Valid(aud, "alice", good), kid),
		// Algorithm confusion: the public key (its DER, as a verifier that
		// trusts the header might use it) as an HS256 secret.
		"HS256 with the public key":     oidctest.SignKey(der, "HS256", kid, p.Valid(aud, "alice", good)),
		"HS256 with the public key PEM": oidctest.SignKey([]byte(pemOf(der)), "HS256", kid, p.Valid(aud, "alice", good)),
		"another provider's key":        oidctest.SignKey(otherKey(other), "RS256", kid, p.Valid(aud, "alice", good)),
		"tampered payload":              tamper(p.Sign(kid, p.Valid(aud, "alice", good))),
	}
	for name, tok := range cases {
		if sc, err := a.Authenticate(tok); err == nil {
			t.Errorf("%s: accepted as %+v", name, sc)
		}
	}
	// Within the skew: a token that expired 10s ago, or begins in 10s.
	for name, c := range map[string]jwt.MapClaims{"exp-10s": with("exp", now.Add(-10*time.Second).Unix()), "nbf+10s": with("nbf", now.Add(10*time.Second).Unix())} {
		if _, err := a.Authenticate(p.Sign(kid, c)); err != nil {
			t.Errorf("%s: refused within the clock skew: %v", name, err)
		}
	}
}

func TestOIDCClaimMapping(t *testing.T) {
	p := oidctest.New()
	defer p.Close()
	kid := p.Published()[0]
	sign := func(extra map[string]any) string { return p.Sign(kid, p.Valid(aud, "alice", extra)) }

	a := trust(t, p, auth.Issuer{TenantClaim: "org_id", RoleClaim: "https://acme.example/roles", AdminValue: "agentchat-admin"}, auth.KeyOptions{})
	sc, err := a.Authenticate(sign(map[string]any{"org_id": "org_1", "https://acme.example/roles": []any{"viewer", "agentchat-admin"}}))
	if err != nil || sc != (chat.Scope{Tenant: "org_1", User: "alice", Role: chat.Admin}) {
		t.Fatalf("list role claim: %+v %v", sc, err)
	}
	sc, err = a.Authenticate(sign(map[string]any{"org_id": "org_1", "https://acme.example/roles": "viewer"}))
	if err != nil || sc.Role != chat.Member {
		t.Fatalf("string role claim without the admin value: %+v %v", sc, err)
	}
	_, err = a.Authenticate(sign(map[string]any{"tenant": "acme"}))
	var ce *auth.ClaimError
	if !errors.As(err, &ce) || ce.Claim != "org_id" || !strings.Contains(err.Error(), `"org_id"`) {
		t.Fatalf("missing tenant claim: %v", err)
	}

	// Nested claims (Clerk's o.id), a Keycloak group list, the user from another claim.
	a = trust(t, p, auth.Issuer{TenantClaim: "o.id", UserClaim: "email", RoleClaim: "groups"}, auth.KeyOptions{})
	sc, err = a.Authenticate(sign(map[string]any{"o": map[string]any{"id": "org_9"}, "email": "a@x.example", "groups": []any{"admin"}}))
	if err != nil || sc != (chat.Scope{Tenant: "org_9", User: "a@x.example", Role: chat.Admin}) {
		t.Fatalf("nested claim: %+v %v", sc, err)
	}
	a = trust(t, p, auth.Issuer{TenantClaim: "groups"}, auth.KeyOptions{})
	if sc, err = a.Authenticate(sign(map[string]any{"groups": []any{"/acme"}})); err != nil || sc.Tenant != "acme" {
		t.Fatalf("one-group tenant: %+v %v", sc, err)
	}
	if _, err = a.Authenticate(sign(map[string]any{"groups": []any{"/acme", "/globex"}})); !errors.As(err, &ce) {
		t.Fatalf("two groups must name no tenant: %v", err)
	}
	// A fixed tenant for every token of the issuer.
	a = trust(t, p, auth.Issuer{Tenant: "solo"}, auth.KeyOptions{})
	if sc, err = a.Authenticate(sign(nil)); err != nil || sc.Tenant != "solo" {
		t.Fatalf("fixed tenant: %+v %v", sc, err)
	}
	// The error names the claim, never the token.
	tok := sign(nil)
	_, err = trust(t, p, auth.Issuer{}, auth.KeyOptions{}).Authenticate(tok)
	if err == nil || strings.Contains(err.Error(), tok) || !strings.Contains(err.Error(), `"tenant"`) {
		t.Fatalf("error %v", err)
	}
}

func TestOIDCSeveralIssuers(t *testing.T) {
	p1, p2 := oidctest.New(), oidctest.New()
	defer p1.Close()
	defer p2.Close()
	a := auth.New([]auth.Token{{Token: "static-token", Tenant: "t0", User: "u0"}}, "an-hs256-secret-of-32-bytes-xxxx")
	if err := a.Trust([]auth.Issuer{
		{Issuer: p1.URL, Audience: "aud-1", TenantClaim: "org"},
		{Issuer: p2.URL, Audience: "aud-2", Tenant: "fixed-2"},
	}, auth.KeyOptions{}); err != nil {
		t.Fatal(err)
	}
	sc, err := a.Authenticate(p1.Sign(p1.Published()[0], p1.Valid("aud-1", "alice", map[string]any{"org": "o1"})))
	if err != nil || sc.Tenant != "o1" {
		t.Fatalf("issuer 1: %+v %v", sc, err)
	}
	sc, err = a.Authenticate(p2.Sign(p2.Published()[0], p2.Valid("aud-2", "bob", nil)))
	if err != nil || sc.Tenant != "fixed-2" || sc.User != "bob" {
		t.Fatalf("issuer 2: %+v %v", sc, err)
	}
	// Each issuer's audience is its own.
	if _, err := a.Authenticate(p2.Sign(p2.Published()[0], p2.Valid("aud-1", "bob", nil))); err == nil {
		t.Fatal("issuer 2's token with issuer 1's audience accepted")
	}
	// A token claiming issuer 1 but signed by issuer 2's key.
	c := p1.Valid("aud-1", "alice", map[string]any{"org": "o1"})
	if _, err := a.Authenticate(p2.Sign(p2.Published()[0], c)); err == nil {
		t.Fatal("issuer 2's key accepted for issuer 1")
	}
	if sc, err := a.Authenticate("static-token"); err != nil || sc.Tenant != "t0" {
		t.Fatalf("static tokens still work: %+v %v", sc, err)
	}
	if err := a.Trust([]auth.Issuer{{Issuer: p1.URL, Audience: "x"}}, auth.KeyOptions{}); err == nil {
		t.Fatal("an issuer listed twice was taken")
	}
	if err := a.Trust([]auth.Issuer{{Issuer: "https://no-audience.example"}}, auth.KeyOptions{}); err == nil {
		t.Fatal("an issuer without an audience was taken")
	}
}

func TestOIDCKeyRotationAndKidFlood(t *testing.T) {
	p := oidctest.New()
	defer p.Close()
	old := p.Published()[0]
	// A clock the test moves: unknown kids refresh at most once a minute.
	clock := time.Now()
	a := trust(t, p, auth.Issuer{}, auth.KeyOptions{UnknownKIDInterval: time.Minute, Now: func() time.Time { return clock }})
	claims := p.Valid(aud, "alice", map[string]any{"tenant": "acme"})
	if _, err := a.Authenticate(p.Sign(old, claims)); err != nil {
		t.Fatal(err)
	}
	if p.Fetches() != 1 {
		t.Fatalf("fetches %d", p.Fetches())
	}
	// The provider rotates: a new key, the old one gone. The first token
	// with the new kid refreshes the set at once (no restart, no wait).
	k := p.AddKey("ES256")
	p.Publish(k.ID)
	clock = clock.Add(2 * time.Minute)
	claims = p.Valid(aud, "alice", map[string]any{"tenant": "acme", "iat": clock.Unix(), "nbf": clock.Unix(), "exp": clock.Add(time.Hour).Unix()})
	if _, err := a.Authenticate(p.Sign(k.ID, claims)); err != nil {
		t.Fatal("the rotated key was refused:", err)
	}
	if p.Fetches() != 2 {
		t.Fatalf("fetches after rotation %d, want 2", p.Fetches())
	}
	// The old key is gone from the set: its tokens now fail.
	if _, err := a.Authenticate(p.Sign(old, claims)); err == nil {
		t.Fatal("a token of the withdrawn key was accepted")
	}
	// A flood of tokens with made-up kids: at most one more fetch.
	signed := p.Sign(k.ID, claims)
	for i := range 200 {
		if _, err := a.Authenticate(headerWithKid(signed, fmt.Sprintf("made-up-%d", i))); err == nil {
			t.Fatal("a token with a made-up kid was accepted")
		}
	}
	if n := p.Fetches(); n != 2 {
		t.Fatalf("a flood of unknown kids within a minute of the last refresh made %d fetches, want none", n-2)
	}
	clock = clock.Add(2 * time.Minute)
	for i := range 200 {
		a.Authenticate(headerWithKid(signed, fmt.Sprintf("later-%d", i)))
	}
	if n := p.Fetches(); n != 3 {
		t.Fatalf("a flood a minute later made %d fetches, want 1", n-2)
	}
	if _, err := a.Authenticate(p.Sign(k.ID, claims)); err != nil {
		t.Fatal("the current key stopped working after the flood:", err)
	}
}

func TestOIDCProviderDownKeepsLastGoodKeys(t *testing.T) {
	p := oidctest.New()
	defer p.Close()
	kid := p.Published()[0]
	a := trust(t, p, auth.Issuer{}, auth.KeyOptions{UnknownKIDInterval: time.Nanosecond})
	a.Refresh(context.Background())
	if st := a.KeyStatus()[0]; st.Status != "up" {
		t.Fatalf("status %+v", st)
	}
	p.SetDown(true)
	a.Refresh(context.Background())
	st := a.KeyStatus()[0]
	if st.Status != "stale" || st.Keys != 1 || st.Err() == nil {
		t.Fatalf("status while down %+v", st)
	}
	if _, err := a.Authenticate(p.Sign(kid, p.Valid(aud, "alice", map[string]any{"tenant": "acme"}))); err != nil {
		t.Fatal("the last good key was dropped:", err)
	}
	p.SetDown(false)
	a.Refresh(context.Background())
	if st := a.KeyStatus()[0]; st.Status != "up" {
		t.Fatalf("status after recovery %+v", st)
	}

	// A provider never reached: down, and its tokens fail.
	q := oidctest.New()
	q.SetDown(true)
	defer q.Close()
	b := trust(t, q, auth.Issuer{JWKSURL: q.URL + "/jwks"}, auth.KeyOptions{})
	b.Refresh(context.Background())
	if st := b.KeyStatus()[0]; st.Status != "down" {
		t.Fatalf("never fetched: %+v", st)
	}
}

func TestOIDCCacheHeaders(t *testing.T) {
	for _, c := range []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{"Cache-Control": {"public, max-age=600"}}, 10 * time.Minute},
		{http.Header{"Cache-Control": {"max-age=5"}}, auth.MinKeyTTL},
		{http.Header{"Cache-Control": {"max-age=9999999"}}, auth.MaxKeyTTL},
		{http.Header{"Cache-Control": {"no-store"}}, auth.MinKeyTTL},
		{http.Header{}, auth.DefaultKeyTTL},
		{http.Header{"Date": {"Mon, 02 Jan 2006 15:04:05 GMT"}, "Expires": {"Mon, 02 Jan 2006 17:04:05 GMT"}}, 2 * time.Hour},
	} {
		if got := auth.CacheTTL(c.h); got != c.want {
			t.Errorf("%v: %v, want %v", c.h, got, c.want)
		}
	}
}

func TestOIDCProviders(t *testing.T) {
	p := oidctest.New()
	defer p.Close()
	a := trust(t, p, auth.Issuer{Name: "Acme SSO", ClientID: "console"}, auth.KeyOptions{})
	if len(a.Providers()) != 0 {
		t.Fatal("a provider before discovery answered")
	}
	a.Refresh(context.Background())
	ps := a.Providers()
	if len(ps) != 1 || ps[0].Name != "Acme SSO" || ps[0].AuthorizationEndpoint != p.URL+"/authorize" || ps[0].TokenEndpoint != p.URL+"/token" || ps[0].Token != "access_token" {
		t.Fatalf("providers %+v", ps)
	}
}

func noneToken(c jwt.MapClaims, kid string) string {
	h, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT", "kid": kid})
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(b) + "."
}

// headerWithKid rewrites a signed token's kid (its signature then fails,
// but the kid is looked up first).
func headerWithKid(tok, kid string) string {
	parts := strings.Split(tok, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(parts[0])
	var h map[string]any
	json.Unmarshal(raw, &h)
	h["kid"] = kid
	b, _ := json.Marshal(h)
	return base64.RawURLEncoding.EncodeToString(b) + "." + parts[1] + "." + parts[2]
}

func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var c map[string]any
	json.Unmarshal(raw, &c)
	c["tenant"] = "globex"
	b, _ := json.Marshal(c)
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(b) + "." + parts[2]
}

func pemOf(der []byte) string {
	return "-----BEGIN PUBLIC KEY-----\n" + base64.StdEncoding.EncodeToString(der) + "\n-----END PUBLIC KEY-----\n"
}

func otherKey(p *oidctest.Provider) any { return p.PrivateKey(p.Published()[0]) }
