package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
)

// Engine names.
const (
	EngineLocal    = "local"
	EngineOpenClaw = "openclaw"
	EngineChain    = "chain" // seed 003's planner → executor → check
)

// DefaultGateway names the OpenClaw gateway set by OPENCLAW_GATEWAY_URL.
const DefaultGateway = "default"

// Engines is the engine routing the configuration describes: the default
// engine (AGENTCHAT_ENGINE), the fallback, the OpenClaw gateways (the
// default one from OPENCLAW_GATEWAY_*, more from the engine file) and the
// per-tenant rules (from the engine file).
type Engines struct {
	// Default is the engine of a run that nothing else routes. Default local.
	Default string
	// Fallback takes a new run whose gateway fails before its first token; "" for none.
	Fallback string
	// Gateways by name, tokens resolved.
	Gateways map[string]Gateway
	// DefaultGateway is the gateway of tenants without one of their own; "" for none.
	DefaultGateway string
	// Tenants are the per-tenant rules.
	Tenants map[string]TenantRule
}

// EngineFile is the JSON file AGENTCHAT_ENGINE_CONFIG names:
//
//	{
//	  "gateways": {
//	    "acme-claw": {"url": "https://claw.acme.internal", "tokenFile": "/run/secrets/acme-claw", "agentId": "support"}
//	  },
//	  "tenants": {
//	    "acme":   {"engine": "openclaw", "gateway": "acme-claw"},
//	    "globex": {"engine": "local"}
//	  }
//	}
//
// A tenant's engine is its default (a request's engine field and a
// conversation's pinned engine still come first); its gateway is the one its
// OpenClaw runs use, never another tenant's unless the file says so. Unknown
// fields are refused, so a misspelt key is not silently ignored.
type EngineFile struct {
	Gateways map[string]Gateway    `json:"gateways"`
	Tenants  map[string]TenantRule `json:"tenants"`
	// Limits are the runs limits and budgets per tenant, user and agent:
	// package usage reads them (usage.File), and reads them again when
	// the file changes.
	Limits json.RawMessage `json:"limits,omitempty"`
}

// Gateway is one OpenClaw Gateway.
type Gateway struct {
	// URL is the gateway's root; requests go to URL/v1/chat/completions.
	URL string `json:"url"`
	// Token, or the file TokenFile names, is the gateway's bearer token.
	Token     string `json:"token,omitempty"`
	TokenFile string `json:"tokenFile,omitempty"`
	// AgentID is the OpenClaw agent that answers. Default main.
	AgentID string `json:"agentId,omitempty"`
	// SendHistory sends the whole conversation with every call (a gateway
	// without sessions); by default only the current run's messages go.
	SendHistory bool `json:"sendHistory,omitempty"`
	// NoTools offers the gateway none of agentchat's tools.
	NoTools bool `json:"noTools,omitempty"`
	// SystemPrompt, when set, is sent first.
	SystemPrompt string `json:"systemPrompt,omitempty"`
}

// TenantRule routes one tenant.
type TenantRule struct {
	// Engine is the tenant's default engine.
	Engine string `json:"engine,omitempty"`
	// Gateway names the tenant's OpenClaw gateway.
	Gateway string `json:"gateway,omitempty"`
}

// Engines reads the engine settings and the engine file, and checks them.
func (c Config) Engines() (Engines, error) {
	e := Engines{
		Default:  cmp.Or(c.Engine, EngineLocal),
		Fallback: c.EngineFallback,
		Gateways: map[string]Gateway{},
		Tenants:  map[string]TenantRule{},
	}
	if c.EngineConfig != "" {
		f, err := readEngineFile(c.EngineConfig)
		if err != nil {
			return e, fmt.Errorf("engine-config: %w", err)
		}
		for name, g := range f.Gateways {
			e.Gateways[name] = g
		}
		if f.Tenants != nil {
			e.Tenants = f.Tenants
		}
	}
	if c.OpenClawGatewayURL != "" {
		if _, ok := e.Gateways[DefaultGateway]; ok {
			return e, fmt.Errorf("engine-config: the gateway name %q is taken by OPENCLAW_GATEWAY_URL", DefaultGateway)
		}
		e.Gateways[DefaultGateway] = Gateway{URL: c.OpenClawGatewayURL, Token: c.OpenClawGatewayToken, AgentID: c.OpenClawAgentID}
		e.DefaultGateway = DefaultGateway
	} else if c.OpenClawGatewayToken != "" || c.OpenClawAgentID != "" {
		return e, errors.New("openclaw-gateway-url: OPENCLAW_GATEWAY_URL is required with OPENCLAW_GATEWAY_TOKEN or OPENCLAW_AGENT_ID")
	}
	return e, e.check()
}

func readEngineFile(path string) (EngineFile, error) {
	var f EngineFile
	raw, err := os.ReadFile(path)
	if err != nil {
		return f, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return f, fmt.Errorf("%s: %w", path, err)
	}
	for name, g := range f.Gateways {
		if g.Token != "" && g.TokenFile != "" {
			return f, fmt.Errorf("gateway %q: set token or tokenFile, not both", name)
		}
		if g.TokenFile != "" {
			b, err := os.ReadFile(g.TokenFile)
			if err != nil {
				return f, fmt.Errorf("gateway %q: %w", name, err)
			}
			g.Token, g.TokenFile = strings.TrimSpace(string(b)), ""
			f.Gateways[name] = g
		}
	}
	return f, nil
}

// check names the first inconsistency.
func (e Engines) check() error {
	known := []string{EngineLocal, EngineOpenClaw, EngineChain}
	if !slices.Contains(known, e.Default) {
		return fmt.Errorf("engine: must be local, openclaw or chain, not %q", e.Default)
	}
	if e.Fallback != "" && e.Fallback != EngineLocal {
		return fmt.Errorf("engine-fallback: must be local or empty, not %q", e.Fallback)
	}
	for name, g := range e.Gateways {
		u, err := url.Parse(g.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			// The URL is not repeated: a mistyped one may hold a secret.
			return fmt.Errorf("gateway %q: the url must be http(s)://host[:port] without credentials", name)
		}
	}
	for tenant, r := range e.Tenants {
		if r.Engine != "" && !slices.Contains(known, r.Engine) {
			return fmt.Errorf("engine-config: tenant %q: engine must be local, openclaw or chain, not %q", tenant, r.Engine)
		}
		if r.Gateway != "" {
			if _, ok := e.Gateways[r.Gateway]; !ok {
				return fmt.Errorf("engine-config: tenant %q: no gateway named %q", tenant, r.Gateway)
			}
		}
		if r.Engine == EngineOpenClaw && r.Gateway == "" && e.DefaultGateway == "" {
			return fmt.Errorf("engine-config: tenant %q uses openclaw but has no gateway (and OPENCLAW_GATEWAY_URL is not set)", tenant)
		}
	}
	if e.Default == EngineOpenClaw && e.DefaultGateway == "" {
		return errors.New("engine: openclaw needs OPENCLAW_GATEWAY_URL (the default gateway)")
	}
	return nil
}

// TenantDefaults maps each tenant with a rule to its default engine.
func (e Engines) TenantDefaults() map[string]string {
	out := map[string]string{}
	for tenant, r := range e.Tenants {
		if r.Engine != "" {
			out[tenant] = r.Engine
		}
	}
	return out
}

// TenantGateways maps each tenant with a gateway of its own to it.
func (e Engines) TenantGateways() map[string]string {
	out := map[string]string{}
	for tenant, r := range e.Tenants {
		if r.Gateway != "" {
			out[tenant] = r.Gateway
		}
	}
	return out
}

// UsesOpenClaw reports whether any gateway is configured.
func (e Engines) UsesOpenClaw() bool { return len(e.Gateways) > 0 }
