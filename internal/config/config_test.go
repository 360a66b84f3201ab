package config

import (
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load("serve", nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:8080" || c.DataDir != "./data" || c.TenantHeader != "X-Tenant-ID" || c.PingInterval != 15*time.Second ||
		c.LLM != "scripted" || c.MaxBodyBytes != 1<<20 || c.MaxIterations != 8 {
		t.Fatalf("defaults %+v", c)
	}
	if c.SQLitePath() != "data/agentchat.db" {
		t.Fatalf("sqlite path %s", c.SQLitePath())
	}
}

func TestFlagBeatsEnvironment(t *testing.T) {
	t.Parallel()
	c, err := Load("serve", []string{"--addr", ":9000"}, env(map[string]string{"AGENTCHAT_ADDR": ":7000", "AGENTCHAT_PING_INTERVAL": "2s"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":9000" || c.PingInterval != 2*time.Second {
		t.Fatalf("%+v", c)
	}
}

func TestProviderChosenByKey(t *testing.T) {
	t.Parallel()
	for vars, want := range map[string]string{"OPENAI_API_KEY": "openai", "OPENAI_BASE_URL": "openai", "ANTHROPIC_API_KEY": "anthropic"} {
		c, err := Load("serve", nil, env(map[string]string{vars: "x"}), io.Discard)
		if err != nil || c.LLM != want {
			t.Errorf("%s set: llm %q (%v), want %q", vars, c.LLM, err, want)
		}
	}
}

func TestSecretFromFile(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/tokens"
	os.WriteFile(path, []byte("tok:acme:alice\n"), 0o600)
	c, err := Load("serve", nil, env(map[string]string{"AGENTCHAT_TOKENS_FILE": path}), io.Discard)
	if err != nil || len(c.Tokens) != 1 || c.Tokens[0] != (Token{Token: "tok", Tenant: "acme", User: "alice"}) {
		t.Fatalf("tokens %q (%v)", c.Tokens, err)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	t.Parallel()
	tests := map[string]map[string]string{
		"ping-interval":     {"AGENTCHAT_PING_INTERVAL": "fast"},
		"tokens":            {"AGENTCHAT_TOKENS": "only-a-token"},
		"llm":               {"AGENTCHAT_LLM": "gpt"},
		"store":             {"AGENTCHAT_STORE": "mysql://x"},
		"bus":               {"AGENTCHAT_BUS": "kafka://x"},
		"jwt-secret":        {"AGENTCHAT_JWT_SECRET": "short"},
		"lease-ttl":         {"AGENTCHAT_LEASE_TTL": "10ms"},
		"bus-prefix":        {"AGENTCHAT_BUS_PREFIX": "a {b}"},
		"history-time-zone": {"AGENTCHAT_HISTORY_TIME_ZONE": "Mars/Olympus"},
		"file-storage":      {"AGENTCHAT_FILE_STORAGE": "ftp"},
		"s3-bucket":         {"AGENTCHAT_FILE_STORAGE": "s3"},
		"s3-endpoint":       {"AGENTCHAT_S3_ENDPOINT": "minio:9000"},
		"s3-prefix":         {"AGENTCHAT_S3_PREFIX": "../up"},
	}
	for field, vars := range tests {
		_, err := Load("serve", nil, env(vars), io.Discard)
		if err == nil || !strings.Contains(err.Error(), strings.ToUpper(strings.ReplaceAll(field, "-", "_"))) && !strings.Contains(err.Error(), field) {
			t.Errorf("%v: error %v does not name %s", vars, err, field)
		}
	}
}

func TestCORSOrigins(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
		bad  bool
	}{
		{in: "", want: nil},
		{in: "http://localhost:3000", want: []string{"http://localhost:3000"}},
		{in: " HTTPS://App.Example.com , http://127.0.0.1:5173", want: []string{"https://app.example.com", "http://127.0.0.1:5173"}},
		{in: "*", want: []string{"*"}},
		{in: "*,http://localhost:3000", bad: true},
		{in: "http://localhost:3000/", bad: true},
		{in: "http://localhost:3000/app", bad: true},
		{in: "localhost:3000", bad: true},
		{in: "ftp://example.com", bad: true},
		{in: "http://user@example.com", bad: true},
	}
	for _, tt := range tests {
		c, err := Load("serve", nil, env(map[string]string{"AGENTCHAT_CORS_ORIGINS": tt.in}), io.Discard)
		if tt.bad {
			if err == nil || !strings.Contains(err.Error(), "cors-origins") {
				t.Errorf("%q: error %v, want one naming cors-origins", tt.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		got := c.CORSOrigins
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%q: origins %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A token entry's fourth field names the role; three fields mean member.
func TestTokenRoles(t *testing.T) {
	t.Parallel()
	c, err := Load("serve", nil, env(map[string]string{"AGENTCHAT_TOKENS": "t1:acme:alice, t2:acme:root:admin ,t3:acme:bob:member"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := []Token{{Token: "t1", Tenant: "acme", User: "alice"}, {Token: "t2", Tenant: "acme", User: "root", Role: chat.Admin},
		{Token: "t3", Tenant: "acme", User: "bob", Role: chat.Member}}
	if !slices.Equal(c.Tokens, want) {
		t.Errorf("tokens %+v, want %+v", c.Tokens, want)
	}
}

// The file storage follows the deployment unless named: a bucket means s3,
// a PostgreSQL store postgres (replicas share files with nothing new),
// else the data directory.
func TestFileStorageKind(t *testing.T) {
	t.Parallel()
	const pg = "postgres://u@db/agentchat"
	tests := []struct {
		vars map[string]string
		want string
	}{
		{nil, "disk"},
		{map[string]string{"AGENTCHAT_STORE": pg}, "postgres"},
		{map[string]string{"AGENTCHAT_STORE": pg, "AGENTCHAT_S3_BUCKET": "b"}, "s3"},
		{map[string]string{"AGENTCHAT_S3_BUCKET": "b"}, "s3"},
		{map[string]string{"AGENTCHAT_STORE": pg, "AGENTCHAT_FILE_STORAGE": "disk"}, "disk"},
		{map[string]string{"AGENTCHAT_STORE": pg, "AGENTCHAT_S3_BUCKET": "b", "AGENTCHAT_FILE_STORAGE": "postgres"}, "postgres"},
	}
	for _, tt := range tests {
		c, err := Load("serve", nil, env(tt.vars), io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", tt.vars, err)
		}
		if got := c.FileStorageKind(); got != tt.want {
			t.Errorf("%v: file storage %q, want %q", tt.vars, got, tt.want)
		}
	}
	_, err := Load("serve", nil, env(map[string]string{"AGENTCHAT_FILE_STORAGE": "postgres"}), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "PostgreSQL store") {
		t.Errorf("postgres file storage on SQLite: %v", err)
	}
}
