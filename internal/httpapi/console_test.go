package httpapi_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestConsoleIsServedAtRoot(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	resp := e.send(req{method: "GET", path: "/"})
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(body), "/console/js/app.js") {
		t.Fatalf("GET /: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	// Unknown paths stay JSON 404s, the console does not swallow them.
	e.apiError(req{method: "GET", path: "/nothing"}, 404, "not_found")
	e.apiError(req{method: "GET", path: "/console/nothing.js"}, 404, "not_found")
}

// GET /v1/me names the token's principal and its role: a static token's
// fourth field or a JWT's role claim; neither means member.
func TestMe(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	exp := time.Now().Add(time.Hour).Unix()
	tests := []struct {
		name, token, tenant, user, role string
	}{
		{"static member", alice, "acme", "alice", "member"},
		{"static admin", root, "acme", "root", "admin"},
		{"JWT without role", signJWT(t, jwtSecret, jwt.MapClaims{"sub": "carol", "tenant": "acme", "exp": exp}), "acme", "carol", "member"},
		{"JWT member", signJWT(t, jwtSecret, jwt.MapClaims{"sub": "carol", "tenant": "acme", "exp": exp, "role": "member"}), "acme", "carol", "member"},
		{"JWT admin", signJWT(t, jwtSecret, jwt.MapClaims{"sub": "dana", "tenant": "acme", "exp": exp, "role": "admin"}), "acme", "dana", "admin"},
	}
	for _, tt := range tests {
		me := e.call(req{method: "GET", path: "/v1/me", token: tt.token}, 200)
		if me["tenant"] != tt.tenant || me["user"] != tt.user || me["role"] != tt.role {
			t.Errorf("%s: me %v, want %s/%s %s", tt.name, me, tt.tenant, tt.user, tt.role)
		}
	}
	e.apiError(req{method: "GET", path: "/v1/me"}, 401, "unauthorized")
	// A role claim the server does not know is refused, never read as either role.
	for _, role := range []any{"owner", "Admin", 1, true} {
		tok := signJWT(t, jwtSecret, jwt.MapClaims{"sub": "carol", "tenant": "acme", "exp": exp, "role": role})
		e.apiError(req{method: "GET", path: "/v1/me", token: tok}, 401, "unauthorized")
	}
}
