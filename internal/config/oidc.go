package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/agentchat/agentchat/internal/auth"
)

// Issuers are the trusted token issuers: the one the AGENTCHAT_OIDC_… and
// AGENTCHAT_JWT_… settings describe, then those of AGENTCHAT_JWT_ISSUERS.
func (c Config) Issuers() ([]auth.Issuer, error) {
	var out []auth.Issuer
	if c.OIDCIssuer != "" || c.JWKSURL != "" {
		is := auth.Issuer{
			Name: c.OIDCName, Issuer: c.JWTIssuer, JWKSURL: c.JWKSURL, Audience: c.JWTAudience,
			UserClaim: c.JWTUserClaim, TenantClaim: c.JWTTenantClaim, Tenant: c.JWTTenant,
			RoleClaim: c.JWTRoleClaim, AdminValue: c.JWTAdminValue, ClientID: c.OIDCClientID, Scopes: c.OIDCScopes,
		}
		switch {
		case c.OIDCIssuer != "" && c.JWKSURL != "":
			return nil, errors.New("oidc-issuer (AGENTCHAT_OIDC_ISSUER) and jwks-url (AGENTCHAT_JWKS_URL): give one of them")
		case c.OIDCIssuer != "" && is.Issuer == "":
			is.Issuer = c.OIDCIssuer
		case c.OIDCIssuer != "" && is.Issuer != c.OIDCIssuer:
			return nil, errors.New("jwt-issuer (AGENTCHAT_JWT_ISSUER): differs from oidc-issuer (AGENTCHAT_OIDC_ISSUER); the discovery document must name the same issuer")
		case c.JWKSURL != "" && is.Issuer == "":
			return nil, errors.New("jwt-issuer (AGENTCHAT_JWT_ISSUER): required with jwks-url (AGENTCHAT_JWKS_URL)")
		}
		if c.JWKSURL != "" && c.OIDCClientID != "" {
			return nil, errors.New("oidc-client-id (AGENTCHAT_OIDC_CLIENT_ID): needs oidc-issuer, whose discovery names the sign-in endpoints")
		}
		if is.Audience == "" {
			return nil, errors.New("jwt-audience (AGENTCHAT_JWT_AUDIENCE): required with a token issuer")
		}
		if err := is.Check(); err != nil {
			return nil, fmt.Errorf("oidc-issuer (AGENTCHAT_OIDC_ISSUER): %w", err)
		}
		out = append(out, is)
	} else if c.JWTIssuer != "" || c.JWTAudience != "" || c.OIDCClientID != "" {
		return nil, errors.New("jwt-issuer, jwt-audience and oidc-client-id need oidc-issuer (AGENTCHAT_OIDC_ISSUER) or jwks-url (AGENTCHAT_JWKS_URL)")
	}
	if c.JWTIssuers != "" {
		raw := []byte(c.JWTIssuers)
		if !strings.HasPrefix(strings.TrimSpace(c.JWTIssuers), "[") {
			b, err := os.ReadFile(c.JWTIssuers)
			if err != nil {
				return nil, fmt.Errorf("jwt-issuers (AGENTCHAT_JWT_ISSUERS): %w", err)
			}
			raw = b
		}
		var more []auth.Issuer
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&more); err != nil {
			return nil, fmt.Errorf("jwt-issuers (AGENTCHAT_JWT_ISSUERS): not a JSON list of issuers: %w", err)
		}
		for i, is := range more {
			if err := is.Check(); err != nil {
				return nil, fmt.Errorf("jwt-issuers (AGENTCHAT_JWT_ISSUERS): entry %d: %w", i+1, err)
			}
		}
		out = append(out, more...)
	}
	seen := map[string]bool{}
	for _, is := range out {
		if seen[is.Issuer] {
			return nil, fmt.Errorf("issuer %s is trusted twice", is.Issuer)
		}
		seen[is.Issuer] = true
	}
	return out, nil
}

// httpURL refuses a value that is not an absolute http(s) URL.
func httpURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	return nil
}
