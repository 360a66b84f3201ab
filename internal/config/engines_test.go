package config

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func loadEnv(t *testing.T, env map[string]string) Config {
	t.Helper()
	c, err := Load("serve", nil, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEnginesFromEnvironment(t *testing.T) {
	t.Parallel()
	e, err := loadEnv(t, nil).Engines()
	if err != nil || e.Default != "local" || e.UsesOpenClaw() || e.Fallback != "" {
		t.Fatalf("defaults %+v %v", e, err)
	}
	e, err = loadEnv(t, map[string]string{
		"AGENTCHAT_ENGINE": "openclaw", "OPENCLAW_GATEWAY_URL": "http://127.0.0.1:18789", "OPENCLAW_GATEWAY_TOKEN": "tok",
		"AGENTCHAT_ENGINE_FALLBACK": "local",
	}).Engines()
	g := e.Gateways[DefaultGateway]
	if err != nil || e.Default != "openclaw" || e.DefaultGateway != DefaultGateway || g.URL != "http://127.0.0.1:18789" || g.Token != "tok" || e.Fallback != "local" {
		t.Fatalf("openclaw %+v %v", e, err)
	}
	for name, env := range map[string]map[string]string{
		"unknown engine":       {"AGENTCHAT_ENGINE": "remote"},
		"openclaw, no gateway": {"AGENTCHAT_ENGINE": "openclaw"},
		"token without url":    {"OPENCLAW_GATEWAY_TOKEN": "tok"},
		"bad fallback":         {"AGENTCHAT_ENGINE_FALLBACK": "openclaw"},
		"url with credentials": {"OPENCLAW_GATEWAY_URL": "http://me:secret@host"},
	} {
		// Refused by Load (a setting's own rule) or by Engines (the rules
		// between settings and the engine file), but refused.
		c, err := Load("serve", nil, func(k string) string { return env[k] }, io.Discard)
		if err == nil {
			_, err = c.Engines()
		}
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error repeats a secret: %v", name, err)
		}
	}
}

func TestEngineFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tokenFile := write("acme-token", "acme-secret\n")
	file := write("engines.json", `{
		"gateways": {"acme-claw": {"url": "https://claw.acme.internal", "tokenFile": "`+tokenFile+`", "agentId": "support", "sendHistory": true}},
		"tenants": {"acme": {"engine": "openclaw", "gateway": "acme-claw"}, "globex": {"engine": "local"}}
	}`)
	e, err := loadEnv(t, map[string]string{"AGENTCHAT_ENGINE_CONFIG": file}).Engines()
	if err != nil {
		t.Fatal(err)
	}
	g := e.Gateways["acme-claw"]
	if g.Token != "acme-secret" || g.AgentID != "support" || !g.SendHistory || e.DefaultGateway != "" {
		t.Fatalf("gateway %+v", g)
	}
	if d := e.TenantDefaults(); d["acme"] != "openclaw" || d["globex"] != "local" || len(d) != 2 {
		t.Fatalf("tenant defaults %v", d)
	}
	if gws := e.TenantGateways(); gws["acme"] != "acme-claw" || len(gws) != 1 {
		t.Fatalf("tenant gateways %v", gws)
	}

	for name, body := range map[string]string{
		"unknown field":             `{"gateway": {}}`,
		"unknown gateway":           `{"tenants": {"acme": {"engine": "openclaw", "gateway": "nope"}}}`,
		"openclaw without gateway":  `{"tenants": {"acme": {"engine": "openclaw"}}}`,
		"unknown engine":            `{"tenants": {"acme": {"engine": "remote"}}}`,
		"token and tokenFile":       `{"gateways": {"g": {"url": "http://h", "token": "a", "tokenFile": "` + tokenFile + `"}}}`,
		"not json":                  `gateways:`,
		"bad url":                   `{"gateways": {"g": {"url": "h:1"}}}`,
		"default name taken by env": `{"gateways": {"default": {"url": "http://h"}}}`,
	} {
		env := map[string]string{"AGENTCHAT_ENGINE_CONFIG": write("bad.json", body)}
		if name == "default name taken by env" {
			env["OPENCLAW_GATEWAY_URL"] = "http://other"
		}
		if _, err := loadEnv(t, env).Engines(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
