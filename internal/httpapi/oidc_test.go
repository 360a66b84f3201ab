package httpapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentchat/agentchat/internal/auth"
	"github.com/agentchat/agentchat/internal/auth/oidctest"
)

// An RS256 token of an OpenID provider started by the test authenticates
// every kind of route and stream, with its tenant and role from configured
// claims, on both store backends; a rotated key works without a restart;
// expired, wrong-audience, wrong-issuer, alg none and algorithm-confusion
// tokens are 401.
func TestOIDCTokens(t *testing.T) {
	backends(t, func(t *testing.T, o options) {
		p := oidctest.New()
		t.Cleanup(p.Close)
		o.issuers = []auth.Issuer{{Issuer: p.URL, Audience: "agentchat", TenantClaim: "org_id", RoleClaim: "roles", AdminValue: "chat-admin",
			ClientID: "console", Name: "Test SSO"}}
		e := setup(t, o)
		e.authn.Refresh(context.Background()) // as serve's background refresh does at start
		kid := p.Published()[0]
		member := p.Sign(kid, p.Valid("agentchat", "alice", map[string]any{"org_id": "acme", "roles": []any{"viewer"}}))
		admin := p.Sign(kid, p.Valid("agentchat", "carol", map[string]any{"org_id": "acme", "roles": []any{"viewer", "chat-admin"}}))

		me := e.call(req{method: "GET", path: "/v1/me", token: member}, 200)
		if me["tenant"] != "acme" || me["user"] != "alice" || me["role"] != "member" {
			t.Fatalf("me %v", me)
		}
		if me := e.call(req{method: "GET", path: "/v1/me", token: admin}, 200); me["role"] != "admin" {
			t.Fatalf("admin me %v", me)
		}
		// The same principal as the static alice-token (acme/alice): one user, two kinds of token.
		c := e.call(req{method: "POST", path: "/v1/conversations", token: member, body: map[string]any{"title": "from SSO"}}, 200)
		if got := e.call(req{method: "GET", path: "/v1/conversations/" + c["id"].(string), token: alice}, 200); got["title"] != "from SSO" {
			t.Fatalf("static token of the same user: %v", got)
		}
		fs := e.chat(member, map[string]any{"input": "hello", "conversationId": c["id"]})
		if last(fs).Event != "agent.end" {
			t.Fatalf("chat ended with %v", names(fs))
		}
		// EventSource's ?access_token= on a stream.
		_, resp := e.stream(req{method: "GET", path: fmt.Sprintf("/v1/conversations/%s/events?access_token=%s", c["id"], member)})
		resp.Body.Close()
		// The tenant header must name the token's tenant.
		e.apiError(req{method: "GET", path: "/v1/conversations", token: member, header: map[string]string{"X-Tenant-ID": "evil"}}, 403, "tenant_forbidden")
		// Another tenant's user sees nothing of acme's.
		evil := p.Sign(kid, p.Valid("agentchat", "alice", map[string]any{"org_id": "evil"}))
		e.apiError(req{method: "GET", path: "/v1/conversations/" + c["id"].(string), token: evil}, 404, "conversation_not_found")

		now := time.Now()
		claims := func(k string, v any) jwt.MapClaims {
			c := p.Valid("agentchat", "alice", map[string]any{"org_id": "acme"})
			c[k] = v
			return c
		}
		refused := map[string]string{
			"expired":        p.Sign(kid, claims("exp", now.Add(-time.Hour).Unix())),
			"wrong audience": p.Sign(kid, claims("aud", "another-api")),
			"wrong issuer":   p.Sign(kid, claims("iss", "https://issuer.invalid")),
			"alg none":       unsigned(claims("sub", "alice"), kid),
			"HS256 keyed with the public key": oidctest.SignKey(must(json.Marshal(p.Key(kid).Public())), "HS256", kid,
				claims("sub", "alice")),
		}
		for name, tok := range refused {
			errObj := e.apiError(req{method: "GET", path: "/v1/conversations", token: tok}, 401, "unauthorized")
			if errObj["message"] != "a valid bearer token is required" {
				t.Errorf("%s: message %v", name, errObj["message"])
			}
			resp := e.send(req{method: "GET", path: fmt.Sprintf("/v1/conversations/%s/events?access_token=%s", c["id"], tok)})
			resp.Body.Close()
			if resp.StatusCode != 401 {
				t.Errorf("%s on a stream: %d", name, resp.StatusCode)
			}
		}
		// A verified token without the tenant claim: the message names the claim, not the token.
		noTenant := p.Sign(kid, p.Valid("agentchat", "alice", nil))
		errObj := e.apiError(req{method: "GET", path: "/v1/me", token: noTenant}, 401, "unauthorized")
		if msg := errObj["message"].(string); !strings.Contains(msg, `"org_id"`) || strings.Contains(msg, noTenant) {
			t.Fatalf("missing-claim message %q", msg)
		}

		// Rotation: a new key replaces the old one; no restart.
		k := p.AddKey("RS256")
		p.Publish(k.ID)
		rotated := p.Sign(k.ID, p.Valid("agentchat", "alice", map[string]any{"org_id": "acme"}))
		if me := e.call(req{method: "GET", path: "/v1/me", token: rotated}, 200); me["user"] != "alice" {
			t.Fatalf("rotated %v", me)
		}

		// Readiness reports the keys: up, then stale while the provider is down (still ready).
		ready := e.call(req{method: "GET", path: "/readyz"}, 200)
		keys := ready["keys"].([]any)[0].(map[string]any)
		if keys["status"] != "up" || keys["issuer"] != p.URL {
			t.Fatalf("readyz keys %v", keys)
		}
		p.SetDown(true)
		e.authn.Refresh(context.Background())
		ready = e.call(req{method: "GET", path: "/readyz"}, 200)
		if keys := ready["keys"].([]any)[0].(map[string]any); keys["status"] != "stale" {
			t.Fatalf("readyz keys while down %v", keys)
		}
		if me := e.call(req{method: "GET", path: "/v1/me", token: rotated}, 200); me["user"] != "alice" {
			t.Fatalf("last good key while down: %v", me)
		}
		p.SetDown(false)

		// The console's sign-in: the provider is listed, and the console's
		// policy lets it post the code to the token endpoint.
		list := e.call(req{method: "GET", path: "/v1/auth/providers"}, 200)
		ps := list["providers"].([]any)
		if len(ps) != 1 || ps[0].(map[string]any)["name"] != "Test SSO" || ps[0].(map[string]any)["tokenEndpoint"] != p.URL+"/token" {
			t.Fatalf("providers %v", list)
		}
		resp = e.send(req{method: "GET", path: "/"})
		resp.Body.Close()
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self' "+p.URL+";") {
			t.Fatalf("console CSP %q", csp)
		}
	})
}

func TestOIDCProvidersWithoutIssuers(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	if out := e.call(req{method: "GET", path: "/v1/auth/providers"}, 200); len(out["providers"].([]any)) != 0 {
		t.Fatalf("providers %v", out)
	}
	resp := e.send(req{method: "GET", path: "/"})
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self';") {
		t.Fatalf("CSP %q", csp)
	}
	if out := e.call(req{method: "GET", path: "/readyz"}, 200); out["keys"] != nil {
		t.Fatalf("readyz without issuers %v", out)
	}
}

// TestOIDCProviderNeverReached: a provider down from the start makes
// /readyz unready (its users cannot sign in) and its tokens 401.
func TestOIDCProviderNeverReached(t *testing.T) {
	t.Parallel()
	p := oidctest.New()
	t.Cleanup(p.Close)
	p.SetDown(true)
	e := setup(t, options{issuers: []auth.Issuer{{Issuer: p.URL, JWKSURL: p.URL + "/jwks", Audience: "agentchat"}}})
	e.authn.Refresh(context.Background())
	out := e.call(req{method: "GET", path: "/readyz"}, 503)
	if out["status"] != "unready" || out["keys"].([]any)[0].(map[string]any)["status"] != "down" {
		t.Fatalf("readyz %v", out)
	}
	tok := p.Sign(p.Published()[0], p.Valid("agentchat", "alice", map[string]any{"tenant": "acme"}))
	e.apiError(req{method: "GET", path: "/v1/me", token: tok}, 401, "unauthorized")
	// Static tokens still work.
	e.call(req{method: "GET", path: "/v1/me", token: alice}, 200)
}

func unsigned(c jwt.MapClaims, kid string) string {
	h, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT", "kid": kid})
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(b) + "."
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
