// Package oidctest is a small OpenID provider for tests: a discovery
// document, a JWKS with cache headers, keys that rotate, tokens signed with
// RS256, ES256 or EdDSA, and the authorization-code flow with PKCE (S256)
// for a browser, which it approves at once for the user it is told.
//
// It serves on 127.0.0.1 only. It is not a provider to run for real users.
package oidctest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
)

// Key is a signing key of the provider.
type Key struct {
	ID     string
	Alg    string // RS256, ES256 or EdDSA
	signer crypto.Signer
}

// PrivateKey returns a key's private half (to forge with).
func (p *Provider) PrivateKey(kid string) crypto.Signer { return p.Key(kid).signer }

// Public is the key's public half.
func (k *Key) Public() crypto.PublicKey { return k.signer.Public() }

// Provider is a running test provider.
type Provider struct {
	URL string // the issuer

	srv *httptest.Server

	mu        sync.Mutex
	keys      map[string]*Key
	published []string // kids in the JWKS
	signing   string   // kid of new tokens
	maxAge    int      // Cache-Control max-age of the JWKS; <0 none
	down      bool     // the JWKS answers 503
	fetches   int      // JWKS requests
	codes     map[string]grant
	Claims    map[string]any // extra claims of the tokens the code flow issues
	Audience  string         // aud of the code flow's access token
	User      string         // sub of the code flow's tokens
	seq       int
}

type grant struct {
	clientID, redirect, challenge, nonce string
}

// New starts a provider with one RS256 key, published and signing.
func New() *Provider {
	p := &Provider{keys: map[string]*Key{}, codes: map[string]grant{}, maxAge: 300, User: "alice", Claims: map[string]any{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	mux.HandleFunc("OPTIONS /token", p.token)
	p.srv = httptest.NewServer(mux)
	p.URL = p.srv.URL
	k := p.AddKey("RS256")
	p.Publish(k.ID)
	p.SignWith(k.ID)
	return p
}

// Close stops the provider.
func (p *Provider) Close() { p.srv.Close() }

// AddKey makes a new key of alg (RS256, ES256 or EdDSA), not yet published.
func (p *Provider) AddKey(alg string) *Key {
	var s crypto.Signer
	var err error
	switch alg {
	case "RS256":
		s, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ES256":
		s, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "EdDSA":
		_, s, err = ed25519.GenerateKey(rand.Reader)
	default:
		panic("oidctest: unknown alg " + alg)
	}
	if err != nil {
		panic(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	k := &Key{ID: fmt.Sprintf("key-%d", p.seq), Alg: alg, signer: s}
	p.keys[k.ID] = k
	return k
}

// Key returns a key by id.
func (p *Provider) Key(kid string) *Key {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keys[kid]
}

// Publish sets the kids the JWKS lists (a rotation drops the old one).
func (p *Provider) Publish(kids ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.published = kids
}

// SignWith sets the key of the tokens the code flow issues.
func (p *Provider) SignWith(kid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.signing = kid
}

// SetMaxAge sets the JWKS's Cache-Control max-age; negative sends none.
func (p *Provider) SetMaxAge(seconds int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.maxAge = seconds
}

// SetDown makes the JWKS answer 503 (down) or serve again.
func (p *Provider) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
}

// Fetches counts the JWKS requests so far.
func (p *Provider) Fetches() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fetches
}

// Sign signs claims with the key kid, the header's alg being the key's.
func (p *Provider) Sign(kid string, claims jwt.MapClaims) string {
	k := p.Key(kid)
	return SignKey(k.signer, k.Alg, kid, claims)
}

// SignKey signs claims with any key and alg (for forged tokens too).
func SignKey(key any, alg, kid string, claims jwt.MapClaims) string {
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(alg), claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		panic(err)
	}
	return s
}

// Claims returns valid claims for aud: this issuer, sub, an hour's expiry.
func (p *Provider) Valid(aud, sub string, extra map[string]any) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{"iss": p.URL, "aud": aud, "sub": sub, "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	maps.Copy(c, extra)
	return c
}

func (p *Provider) discovery(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"issuer":                                p.URL,
		"jwks_uri":                              p.URL + "/jwks",
		"authorization_endpoint":                p.URL + "/authorize",
		"token_endpoint":                        p.URL + "/token",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256", "ES256", "EdDSA"},
		"code_challenge_methods_supported":      []string{"S256"},
	})
}

func (p *Provider) jwks(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fetches++
	if p.down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	var set jose.JSONWebKeySet
	for _, kid := range p.published {
		k := p.keys[kid]
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.signer.Public(), KeyID: kid, Algorithm: k.Alg, Use: "sig"})
	}
	if p.maxAge >= 0 {
		w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d", p.maxAge))
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(set)
}

// authorize approves at once: it sends the browser back with a code.
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Host == "" || q.Get("response_type") != "code" || q.Get("client_id") == "" ||
		q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	code := randomString()
	p.mu.Lock()
	p.codes[code] = grant{clientID: q.Get("client_id"), redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge"), nonce: q.Get("nonce")}
	p.mu.Unlock()
	v := redirect.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	v.Set("iss", p.URL)
	redirect.RawQuery = v.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// token exchanges a code for tokens when the PKCE verifier matches; a
// public client, so no secret. Browsers call it cross-origin.
func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Access-Control-Allow-Headers", "Content-Type")
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	fail := func(code string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": code})
	}
	if r.ParseForm() != nil || r.PostForm.Get("grant_type") != "authorization_code" {
		fail("unsupported_grant_type")
		return
	}
	p.mu.Lock()
	g, ok := p.codes[r.PostForm.Get("code")]
	delete(p.codes, r.PostForm.Get("code")) // a code is used once
	p.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	if !ok || g.clientID != r.PostForm.Get("client_id") || g.redirect != r.PostForm.Get("redirect_uri") ||
		subtle.ConstantTimeCompare([]byte(challenge), []byte(g.challenge)) != 1 {
		fail("invalid_grant")
		return
	}
	p.mu.Lock()
	kid, user, aud, extra := p.signing, p.User, p.Audience, maps.Clone(p.Claims)
	p.mu.Unlock()
	idClaims := p.Valid(g.clientID, user, extra)
	if g.nonce != "" {
		idClaims["nonce"] = g.nonce
	}
	access := p.Valid(cmpOr(aud, g.clientID), user, extra)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(map[string]any{
		"token_type": "Bearer", "expires_in": 3600,
		"id_token": p.Sign(kid, idClaims), "access_token": p.Sign(kid, access),
	})
}

// Published lists the kids the JWKS serves now.
func (p *Provider) Published() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.published)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func randomString() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
