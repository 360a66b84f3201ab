package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/auth"
	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// `serve --help` prints the settings by group, with types and defaults, to
// stdout, and succeeds.
func TestServeHelp(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"serve", "migrate"} {
		for _, arg := range []string{"--help", "-h"} {
			var stdout, stderr bytes.Buffer
			code := dispatch(context.Background(), []string{cmd, arg}, env(nil), &stdout, &stderr)
			if code != 0 || stderr.Len() != 0 {
				t.Errorf("%s %s: exit %d, stderr %q; want 0 and nothing", cmd, arg, code, stderr.String())
			}
			for _, want := range []string{"Usage: agentchat " + cmd + " [flags]", "\nServer:\n", "\nObservability:\n",
				"  --ping-interval duration  [AGENTCHAT_PING_INTERVAL]\n", "(default 15s)"} {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("%s %s: stdout lacks %q", cmd, arg, want)
				}
			}
		}
	}
}

// A command line serve cannot read is exit status 2, said once on stderr,
// naming the flag and never quoting a secret's value.
func TestServeFlagErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args  []string
		want  string
		never string
	}{
		{args: []string{"--no-such-flag"}, want: "no-such-flag"},
		{args: []string{"--ping-interval", "fast"}, want: `--ping-interval (AGENTCHAT_PING_INTERVAL): not a duration`},
		{args: []string{"--tokens", "tok:acme:alice,hunter2"}, want: "--tokens (AGENTCHAT_TOKENS): entry 2 is not token:tenant:user", never: "hunter2"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := dispatch(context.Background(), append([]string{"serve"}, tt.args...), env(nil), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tt.want) || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want 2 and %q", tt.args, code, stderr.String(), stdout.String(), tt.want)
		}
		if tt.never != "" && strings.Contains(stderr.String(), tt.never) {
			t.Errorf("%v: stderr %q repeats a secret", tt.args, stderr.String())
		}
	}
}

// A malformed entry of a list setting stops serve before it opens anything,
// naming the setting and the entry; main skipped it silently.
func TestServeRefusesMalformedListEntry(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	var stdout, stderr bytes.Buffer
	code := dispatch(context.Background(), []string{"serve"}, env(map[string]string{
		"AGENTCHAT_DATA_DIR": dir, "AGENTCHAT_ADDR": "127.0.0.1:0", "AGENTCHAT_TOOL_CONFIRM": "http_get=always,send_webhook",
	}), &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "AGENTCHAT_TOOL_CONFIRM") || !strings.Contains(stderr.String(), `"send_webhook"`) {
		t.Fatalf("exit %d, stderr %q; want 1 and an error naming AGENTCHAT_TOOL_CONFIRM and the entry", code, stderr.String())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("serve created %s before refusing its settings (%v)", dir, err)
	}
}

// The development token names an admin of tenant "default" (the one person
// on a development server manages its agents); configured tokens keep the
// roles their entries give.
func TestDevTokenIsAnAdmin(t *testing.T) {
	t.Parallel()
	var stdout bytes.Buffer
	tokens, err := authTokens(config.Config{DataDir: t.TempDir()}, &stdout)
	if err != nil {
		t.Fatal(err)
	}
	if len(tokens) != 1 {
		t.Fatalf("tokens %v", tokens)
	}
	sc, err := auth.New(tokens, "").Authenticate(tokens[0].Token)
	if err != nil || sc.Tenant != "default" || sc.User != "dev" || !sc.IsAdmin() {
		t.Errorf("development token names %+v (%v), want the admin dev of default", sc, err)
	}
	if !strings.Contains(stdout.String(), "an admin") {
		t.Errorf("announcement %q does not say the token is an admin's", stdout.String())
	}
	configured, err := config.ParseTokens("t1:acme:alice,t2:acme:root:admin")
	if err != nil {
		t.Fatal(err)
	}
	got, err := authTokens(config.Config{Tokens: configured, DataDir: t.TempDir()}, &stdout)
	if err != nil || len(got) != 2 || got[0].Role != "" || got[1].Role != chat.Admin {
		t.Errorf("configured tokens %+v (%v)", got, err)
	}
}
