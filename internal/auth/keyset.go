package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"golang.org/x/sync/singleflight"
)

// Key-set timing. A provider's Cache-Control max-age says how long its keys
// may be kept; it is clamped to [MinKeyTTL, MaxKeyTTL], and DefaultKeyTTL
// applies when it says nothing. An unknown kid refreshes the set at most
// once per UnknownKIDInterval, so a flood of made-up kids costs the
// provider one request per interval, not one per token.
const (
	DefaultKeyTTL        = time.Hour
	MinKeyTTL            = time.Minute
	MaxKeyTTL            = 24 * time.Hour
	UnknownKIDInterval   = 5 * time.Second
	keyFetchTimeout      = 10 * time.Second
	maxKeySetBytes       = 1 << 20
	keyRetryAfterFailure = 30 * time.Second
)

// keySet is one issuer's JSON Web Key Set: fetched from jwksURL (or from
// the jwks_uri of the issuer's discovery document), kept for as long as the
// provider's cache headers allow, refreshed in the background, and fetched
// again (rate-limited) when a token names a kid it does not hold. A failed
// refresh keeps the last good keys and marks the set stale.
type keySet struct {
	issuer string // for discovery; empty when jwksURL is given
	client *http.Client
	now    func() time.Time
	every  time.Duration // least time between two unknown-kid refreshes
	group  singleflight.Group

	mu        sync.RWMutex
	jwksURL   string
	endpoints Endpoints
	keys      []jose.JSONWebKey
	fetched   time.Time // last good fetch
	expires   time.Time // when the keys should be fetched again
	lastErr   error     // the last fetch's failure; nil after a good one
	tried     time.Time // last fetch begun for an unknown kid
}

// Endpoints are what discovery says about the provider's browser sign-in.
type Endpoints struct {
	Authorization string
	Token         string
}

func newKeySet(issuer, jwksURL string, client *http.Client, now func() time.Time, unknownEvery time.Duration) *keySet {
	if client == nil {
		client = &http.Client{Timeout: keyFetchTimeout}
	}
	if unknownEvery <= 0 {
		unknownEvery = UnknownKIDInterval
	}
	return &keySet{issuer: issuer, jwksURL: jwksURL, client: client, now: now, every: unknownEvery}
}

// KeyStatus is the state of one issuer's keys, for /readyz.
type KeyStatus struct {
	Issuer string `json:"issuer"`
	// Status is up (fresh keys), stale (the last refresh failed; the last
	// good keys are still used) or down (no keys yet: its tokens fail).
	Status string `json:"status"`
	Keys   int    `json:"keys"`
	// Error is a short public reason when not up.
	Error string `json:"error,omitempty"`
	err   error
}

// Err is the cause of a stale or down key set (for the log).
func (k KeyStatus) Err() error { return k.err }

func (s *keySet) status(issuer string) KeyStatus {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := KeyStatus{Issuer: issuer, Status: "up", Keys: len(s.keys), err: s.lastErr}
	switch {
	case s.fetched.IsZero():
		st.Status, st.Error = "down", "the provider's keys could not be fetched yet"
	case s.lastErr != nil:
		st.Status, st.Error = "stale", "the provider's keys could not be refreshed; the last good keys are used"
	}
	return st
}

// lookup returns the keys that may have signed a token with this kid
// (every key when the token names none).
func (s *keySet) lookup(kid string) []jose.JSONWebKey {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []jose.JSONWebKey
	for _, k := range s.keys {
		if kid == "" || k.KeyID == kid {
			out = append(out, k)
		}
	}
	return out
}

// keysFor returns the keys for kid, refreshing once (rate-limited, and
// shared by concurrent callers) when none is held: the provider may have
// rotated its keys.
func (s *keySet) keysFor(ctx context.Context, kid string) []jose.JSONWebKey {
	if ks := s.lookup(kid); len(ks) > 0 {
		return ks
	}
	s.mu.Lock()
	now := s.now()
	if !s.tried.IsZero() && now.Sub(s.tried) < s.every {
		s.mu.Unlock()
		return nil
	}
	s.tried = now
	s.mu.Unlock()
	s.refresh(ctx)
	return s.lookup(kid)
}

// refresh fetches the key set now; concurrent callers share one request.
func (s *keySet) refresh(ctx context.Context) error {
	_, err, _ := s.group.Do("refresh", func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keyFetchTimeout)
		defer cancel()
		keys, ttl, err := s.fetch(ctx)
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			s.lastErr = err
			return nil, err
		}
		s.keys, s.fetched, s.expires, s.lastErr = keys, s.now(), s.now().Add(ttl), nil
		return nil, nil
	})
	return err
}

// next says when the background loop should refresh again.
func (s *keySet) next() time.Duration {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.lastErr != nil || s.fetched.IsZero() {
		return keyRetryAfterFailure
	}
	return max(s.expires.Sub(s.now()), time.Second)
}

// run refreshes the set in the background until ctx ends.
func (s *keySet) run(ctx context.Context) {
	s.mu.RLock()
	fresh := !s.fetched.IsZero() && s.lastErr == nil
	s.mu.RUnlock()
	if !fresh {
		s.refresh(ctx)
	}
	for {
		t := time.NewTimer(s.next())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		s.refresh(ctx)
	}
}

// fetch discovers the key-set URL when needed and reads the set, with the
// lifetime its cache headers give.
func (s *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, time.Duration, error) {
	s.mu.RLock()
	url := s.jwksURL
	s.mu.RUnlock()
	if url == "" {
		p, err := oidc.NewProvider(oidc.ClientContext(ctx, s.client), s.issuer)
		if err != nil {
			return nil, 0, fmt.Errorf("discovery: %w", err)
		}
		var doc struct {
			JWKSURL string `json:"jwks_uri"`
		}
		if err := p.Claims(&doc); err != nil || doc.JWKSURL == "" {
			return nil, 0, errors.New("discovery: the document names no jwks_uri")
		}
		url = doc.JWKSURL
		s.mu.Lock()
		s.jwksURL = url
		s.endpoints = Endpoints{Authorization: p.Endpoint().AuthURL, Token: p.Endpoint().TokenURL}
		s.mu.Unlock()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("key set: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("key set: %s answered %s", url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxKeySetBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("key set: %w", err)
	}
	if len(body) > maxKeySetBytes {
		return nil, 0, errors.New("key set: larger than 1 MiB")
	}
	var raw struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, 0, fmt.Errorf("key set: %w", err)
	}
	var keys []jose.JSONWebKey
	for _, r := range raw.Keys {
		// A key this server cannot use (another type, a private key, an
		// encryption key) is skipped, not fatal: providers publish several.
		var k jose.JSONWebKey
		if json.Unmarshal(r, &k) != nil || !k.Valid() || !k.IsPublic() || (k.Use != "" && k.Use != "sig") {
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, 0, errors.New("key set: no usable signing key")
	}
	return keys, cacheTTL(resp.Header), nil
}

// cacheTTL reads how long a response may be kept: Cache-Control max-age
// (no-store and no-cache mean the shortest), else Expires, else the default.
func cacheTTL(h http.Header) time.Duration {
	clamp := func(d time.Duration) time.Duration { return min(max(d, MinKeyTTL), MaxKeyTTL) }
	for _, d := range strings.Split(h.Get("Cache-Control"), ",") {
		name, val, _ := strings.Cut(strings.TrimSpace(strings.ToLower(d)), "=")
		switch name {
		case "no-store", "no-cache":
			return MinKeyTTL
		case "max-age":
			if n, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64); err == nil && n >= 0 {
				return clamp(time.Duration(min(n, int64(MaxKeyTTL/time.Second))) * time.Second)
			}
		}
	}
	if e := h.Get("Expires"); e != "" {
		if t, err := http.ParseTime(e); err == nil {
			date := time.Now()
			if d, err := http.ParseTime(h.Get("Date")); err == nil {
				date = d
			}
			return clamp(t.Sub(date))
		}
	}
	return DefaultKeyTTL
}
