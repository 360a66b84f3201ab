package agent

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/llmtest"
	"github.com/agentchat/agentchat/internal/llm/scripted"
)

// syncBuffer is a log sink tests read while the code under test writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	// Written to a new file renamed over the old one, as editors and
	// Kubernetes do: the reload must follow the path, not the old inode.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func newModels(t *testing.T, path string, env map[string]string, log *syncBuffer) *Models {
	t.Helper()
	m, err := NewModels(ModelsConfig{Path: path, Default: scripted.New(scripted.Config{TokenDelay: -1}),
		DefaultInfo: ModelInfo{Provider: ProviderScripted, Model: ProviderScripted},
		Getenv:      func(k string) string { return env[k] }, Options: ModelOptions{MaxRetries: -1},
		Logger: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func modelNames(list []ModelInfo) string {
	var out []string
	for _, m := range list {
		out = append(out, m.Name+"="+m.Provider+":"+m.Model)
	}
	return strings.Join(out, " ")
}

// The models file is read at start, reloaded at the next use after it
// changes, and a file that does not load leaves the last good models in
// force, logged with the reason.
func TestModelsFileReload(t *testing.T) {
	t.Parallel()
	up := llmtest.NewOpenAIServer(t, llmtest.Options{Replies: []llmtest.Reply{llmtest.TextReply("hello from upstream")}})
	path := filepath.Join(t.TempDir(), "models.json")
	writeFile(t, path, `{"models": {"offline": {"provider": "scripted"}}}`)
	var log syncBuffer
	const secret = "sk-very-secret-0123"
	m := newModels(t, path, map[string]string{"UP_KEY": secret}, &log)
	if got := modelNames(m.List("acme")); got != "default=scripted:scripted offline=scripted:scripted" {
		t.Fatalf("models %s", got)
	}

	writeFile(t, path, `{"models": {"offline": {"provider": "scripted"},
		"fast": {"provider": "openai", "model": "gpt-fast", "baseURL": "`+up.URL+`/v1", "apiKeyEnv": "UP_KEY", "contextWindow": 128000,
			"accepts": ["audio/*"]}}}`)
	fast, info, ok := m.Get("acme", "fast")
	if !ok || !reflect.DeepEqual(info, ModelInfo{Name: "fast", Provider: ProviderOpenAI, Model: "gpt-fast", ContextWindow: 128000, Accepts: []string{"audio/*"}}) {
		t.Fatalf("after the edit: %v %+v", ok, info)
	}
	s, err := fast.Stream(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	for s.Next() {
	}
	s.Close()
	if reqs := up.Requests(); len(reqs) != 1 || reqs[0].APIKey() != secret || reqs[0].Body["model"] != "gpt-fast" {
		t.Fatalf("upstream saw %d requests (key %q)", len(reqs), reqs[0].APIKey())
	}

	// A broken edit: the models stay, the log says why, and nothing says the key.
	for _, bad := range []string{
		`{"models": {"fast": {"provider": "openai"`,                                 // not JSON
		`{"models": {"fast": {"provider": "gpt"}}}`,                                 // unknown provider
		`{"models": {"fast": {"provider": "openai", "model": "x", "apiKey": "k"}}}`, // unknown field
		`{"models": {"fast": {"provider": "openai", "model": "x", "apiKeyEnv": "NOT_SET"}}}`,
		`{"models": {"fast": {"provider": "openai", "model": "x", "baseURL": "http://user:` + secret + `@host/v1"}}}`,
		`{"models": {"bad name": {"provider": "scripted"}}}`,
		`{}`,
	} {
		writeFile(t, path, bad)
		if _, _, ok := m.Get("acme", "fast"); !ok {
			t.Fatalf("after a broken edit (%s) the last good models are gone", bad)
		}
	}
	out := strings.ReplaceAll(log.String(), `\"`, `"`) // the text handler quotes
	for _, want := range []string{"models file does not load", "unexpected EOF", `"provider" must be openai, anthropic or scripted`,
		`unknown field "apiKey"`, "NOT_SET", `"baseURL" must be an http(s) URL without credentials`, "a model's name", `no "models" object`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, secret) {
		t.Errorf("the log repeats the key:\n%s", out)
	}

	// Fixed again: the file's models are back, without the one it dropped.
	writeFile(t, path, `{"models": {"offline": {"provider": "scripted", "tenants": ["globex"]}}}`)
	if _, _, ok := m.Get("acme", "fast"); ok {
		t.Fatal("a model the file no longer names is still served")
	}
	if _, _, ok := m.Get("acme", "offline"); ok {
		t.Fatal("a model limited to globex is served to acme")
	}
	if got := modelNames(m.List("globex")); got != "default=scripted:scripted offline=scripted:scripted" {
		t.Fatalf("globex's models %s", got)
	}
}

// A file that does not load at start is an error naming the entry, never
// the key; a key may come from a file (_FILE).
func TestModelsFileAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "models.json")
	writeFile(t, path, `{"models": {"claude": {"provider": "anthropic", "model": "claude-x"}}}`)
	_, err := NewModels(ModelsConfig{Path: path, Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), `model "claude"`) || !strings.Contains(err.Error(), "apiKeyEnv") {
		t.Fatalf("error %v", err)
	}
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte("sk-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, `{"models": {"claude": {"provider": "anthropic", "model": "claude-x", "apiKeyEnv": "CLAUDE_KEY"},
		"default": {"provider": "scripted"}}}`)
	m, err := NewModels(ModelsConfig{Path: path, Getenv: envMap{"CLAUDE_KEY_FILE": keyFile}.get})
	if err != nil {
		t.Fatal(err)
	}
	if got := modelNames(m.List("acme")); got != "claude=anthropic:claude-x default=scripted:scripted" {
		t.Fatalf("models %s (the file's default replaces the environment's)", got)
	}
	if _, err := NewModels(ModelsConfig{Path: filepath.Join(dir, "missing.json")}); err == nil {
		t.Fatal("a missing models file started")
	}
}

type envMap map[string]string

func (m envMap) get(k string) string { return m[k] }
