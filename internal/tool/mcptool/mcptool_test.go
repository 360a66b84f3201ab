package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/agentchat/agentchat/internal/tool"
)

// serverEnv, when set, makes the test binary an MCP stdio server: the stdio
// test runs this very binary as its server process.
const serverEnv = "MCPTOOL_TEST_STDIO_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		runStdioServer()
		return
	}
	// After every (parallel) test: sessions, child processes and HTTP
	// streams must all be gone once their Client is closed.
	goleak.VerifyTestMain(m)
}

func runStdioServer() {
	s := newNotesServer(nil)
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit the server process"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "crashing on purpose")
			os.Exit(3)
			return nil, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

type noteIn struct {
	ID string `json:"id" jsonschema:"the note's id"`
}

type noteOut struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// newNotesServer is an MCP server with one read-only tool, one destructive
// tool, one without annotations (and a dotted name), and one that blocks
// until its call is cancelled or release is closed (nil: never).
func newNotesServer(release <-chan struct{}) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "read_note",
		Description: "Read a note",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, noteOut, error) {
		if in.ID == "missing" {
			return nil, noteOut{}, errors.New("no note with id missing")
		}
		return nil, noteOut{ID: in.ID, Text: "hello from " + in.ID}, nil
	})
	destructive := true
	mcp.AddTool(s, &mcp.Tool{
		Name:        "delete_note",
		Description: "Delete a note",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted " + in.ID}}}, nil, nil
	})
	// Raw handler and a draft-07 schema, as many non-Go servers send.
	s.AddTool(&mcp.Tool{
		Name: "notes.archive",
		InputSchema: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
			"properties":{"ids":{"type":"array","items":{"type":"string"}}},"required":["ids"]}`),
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "archived"},
			&mcp.TextContent{Text: string(req.Params.Arguments)},
			&mcp.ImageContent{MIMEType: "image/png", Data: []byte{1, 2, 3}},
		}}, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "wait",
		Description: "Block until cancelled",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-release:
			return nil, nil, errors.New("released at the test's end")
		}
	})
	return s
}

const token = "Bearer test-token"

// serveHTTP serves newNotesServer over streamable HTTP, refusing requests
// without the bearer token, so the test proves configured headers are sent.
func serveHTTP(t *testing.T) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	notes := newNotesServer(release)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return notes }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	// Server-side sessions whose client never said goodbye (the server
	// was shut down under it) are the test server's to end.
	t.Cleanup(func() {
		for ss := range notes.Sessions() {
			ss.Close()
		}
	})
	// Closing a session waits for its calls. A timed-out call's
	// cancellation travels as its own request and can reach the server
	// before the call does, which it then never cancels (CI: a wait call
	// held its session's Close, and the package, for minutes): released
	// here, before the sessions are closed (cleanups run last first).
	t.Cleanup(func() { close(release) })
	return srv
}

// setup connects a Client over cfg to a new registry. The Client is closed
// at cleanup, before any server the test started earlier.
func setup(t *testing.T, regCfg tool.RegistryConfig, cfg Config) (*tool.Registry, *Client) {
	t.Helper()
	reg, err := tool.NewRegistry(regCfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Connect(t.Context(), reg, cfg)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return reg, c
}

func statusOf(t *testing.T, statuses []tool.ServerStatus, name string) tool.ServerStatus {
	t.Helper()
	for _, s := range statuses {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no status for %s in %+v", name, statuses)
	return tool.ServerStatus{}
}

func TestHTTPServerAndFailedNeighbours(t *testing.T) {
	t.Parallel()
	srv := serveHTTP(t)
	reg, c := setup(t, tool.RegistryConfig{}, Config{Servers: map[string]ServerConfig{
		"notes":    {URL: srv.URL, Headers: map[string]string{"Authorization": token}},
		"noauth":   {URL: srv.URL},
		"broken":   {Command: "agentchat-no-such-mcp-server", Args: []string{"--stdio"}},
		"typo":     {Args: []string{"x"}},
		"disabled": {Command: "agentchat-no-such-mcp-server", Disabled: true},
	}})

	t.Run("status", func(t *testing.T) {
		st := c.Status()
		if got := statusOf(t, st, "notes"); got.State != tool.ServerConnected || got.Tools != 4 || got.Error != "" {
			t.Errorf("notes: %+v, want connected with 4 tools", got)
		}
		for name, want := range map[string]string{
			"broken": "executable file not found",
			"noauth": "Unauthorized",
			"typo":   `neither "command" nor "url" is set`,
		} {
			if got := statusOf(t, st, name); got.State != tool.ServerFailed || !strings.Contains(got.Error, want) {
				t.Errorf("%s: %+v, want failed with %q", name, got, want)
			}
		}
		if len(st) != 4 {
			t.Errorf("status lists %d servers, want 4 (not the disabled one)", len(st))
		}
		if fmt.Sprint(reg.Servers()) != fmt.Sprint(st) {
			t.Errorf("registry servers %+v\ndiffer from client status %+v", reg.Servers(), st)
		}
	})

	t.Run("specs", func(t *testing.T) {
		want := map[string]tool.Confirm{
			"notes__read_note":     tool.ConfirmNever,
			"notes__wait":          tool.ConfirmNever,
			"notes__delete_note":   tool.ConfirmAlways,
			"notes__notes_archive": tool.ConfirmAlways, // no annotations at all
		}
		specs := reg.List()
		if len(specs) != len(want) {
			t.Fatalf("List = %+v, want %d tools", specs, len(want))
		}
		for _, s := range specs {
			if c, ok := want[s.Name]; !ok || s.Confirm != c || s.Source != "mcp:notes" {
				t.Errorf("spec %s: confirm %s source %s, want %s mcp:notes", s.Name, s.Confirm, s.Source, c)
			}
		}
		s, _ := reg.Get("notes__read_note")
		if s.Description != "Read a note" || !strings.Contains(string(s.Parameters), `"id"`) {
			t.Errorf("read_note spec %+v", s)
		}
	})

	t.Run("calls", func(t *testing.T) {
		tests := []struct {
			name        string
			tool        string
			args        string
			wantStatus  tool.Status
			wantContent string
			wantOutput  string
			wantError   string
		}{
			{"read-only with structured output", "notes__read_note", `{"id":"a"}`, tool.StatusSuccess,
				`{"id":"a","text":"hello from a"}`, `{"id":"a","text":"hello from a"}`, ""},
			{"tool error", "notes__read_note", `{"id":"missing"}`, tool.StatusFailure, "", "", "no note with id missing"},
			{"invalid arguments stop before the server", "notes__read_note", `{"id":5}`, tool.StatusFailure, "", "",
				"invalid arguments: id: got number, want string"},
			{"destructive", "notes__delete_note", `{"id":"b"}`, tool.StatusSuccess, "deleted b", "", ""},
			{"text blocks joined, image named", "notes__notes_archive", `{"ids":["x"]}`, tool.StatusSuccess,
				"archived\n{\"ids\":[\"x\"]}\n[image (image/png, 3 bytes) not shown]", "", ""},
			{"draft-07 schema enforced", "notes__notes_archive", `{}`, tool.StatusFailure, "", "", "missing property 'ids'"},
			{"failed server's tools are not there", "broken__anything", `{}`, tool.StatusFailure, "", "", "unknown tool"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				res := reg.Call(t.Context(), tt.tool, json.RawMessage(tt.args))
				if res.Status != tt.wantStatus {
					t.Fatalf("Status %s, want %s: %+v", res.Status, tt.wantStatus, res)
				}
				if tt.wantContent != "" && res.Content != tt.wantContent {
					t.Errorf("Content %q, want %q", res.Content, tt.wantContent)
				}
				if tt.wantOutput != "" && string(res.Output) != tt.wantOutput {
					t.Errorf("Output %s, want %s", res.Output, tt.wantOutput)
				}
				if tt.wantError != "" && !strings.Contains(res.Error, tt.wantError) {
					t.Errorf("Error %q, want it to contain %q", res.Error, tt.wantError)
				}
			})
		}
	})
}

func TestCallTimeoutCancelsOnServer(t *testing.T) {
	t.Parallel()
	srv := serveHTTP(t)
	reg, c := setup(t, tool.RegistryConfig{DefaultTimeout: 50 * time.Millisecond}, Config{Servers: map[string]ServerConfig{
		"notes": {Type: "streamable-http", URL: srv.URL, Headers: map[string]string{"Authorization": token}},
	}})
	res := reg.Call(t.Context(), "notes__wait", nil)
	if res.Status != tool.StatusFailure || res.Error != "tool notes__wait timed out after 50ms" {
		t.Fatalf("result %+v", res)
	}
	// The session survives a timed-out call: the server's next tool answers
	// on it. Called as the registry calls it, but without the registry's
	// 50ms, which bounds every call of this registry and is no time at all
	// for a round trip on a loaded machine under the race detector.
	read := &mcpTool{server: c.servers[0], remote: "read_note"}
	res, err := read.Call(t.Context(), json.RawMessage(`{"id":"z"}`))
	if err != nil || res.Status != tool.StatusSuccess {
		t.Fatalf("after timeout: %+v (%v)", res, err)
	}
}

func TestHTTPServerGone(t *testing.T) {
	t.Parallel()
	srv := serveHTTP(t)
	reg, c := setup(t, tool.RegistryConfig{}, Config{Servers: map[string]ServerConfig{
		"notes": {URL: srv.URL, Headers: map[string]string{"Authorization": token}},
	}})
	srv.CloseClientConnections()
	srv.Close()
	res := reg.Call(t.Context(), "notes__read_note", json.RawMessage(`{"id":"a"}`))
	if res.Status != tool.StatusFailure || !strings.Contains(res.Error, "MCP server notes") {
		t.Fatalf("result %+v, want a failure naming the server", res)
	}
	c.Close() // its DELETE fails; Close must still release everything
}

func TestStdioServerDies(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	reg, c := setup(t, tool.RegistryConfig{}, Config{Servers: map[string]ServerConfig{
		"local": {Command: exe, Env: map[string]string{serverEnv: "1"}},
	}})
	if st := c.Status(); st[0].State != tool.ServerConnected || st[0].Tools != 5 {
		t.Fatalf("status %+v, want connected with 5 tools", st)
	}
	if res := reg.Call(t.Context(), "local__read_note", json.RawMessage(`{"id":"s"}`)); res.Status != tool.StatusSuccess {
		t.Fatalf("read_note over stdio: %+v", res)
	}

	if res := reg.Call(t.Context(), "local__crash", nil); res.Status != tool.StatusFailure {
		t.Fatalf("crash: %+v, want failure", res)
	}
	<-c.servers[0].done // the watcher has seen the session end

	st := c.Status()[0]
	if st.State != tool.ServerFailed || !strings.Contains(st.Error, "crashing on purpose") {
		t.Fatalf("status %+v, want failed with the server's stderr", st)
	}
	res := reg.Call(t.Context(), "local__read_note", json.RawMessage(`{"id":"s"}`))
	if res.Status != tool.StatusFailure || !strings.Contains(res.Error, "MCP server local is unavailable") {
		t.Fatalf("call to dead server: %+v", res)
	}
}

func TestStdioCleanClose(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	reg, c := setup(t, tool.RegistryConfig{}, Config{Servers: map[string]ServerConfig{
		"local": {Command: exe, Env: map[string]string{serverEnv: "1"}},
	}})
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	res := reg.Call(t.Context(), "local__read_note", json.RawMessage(`{"id":"s"}`))
	if res.Status != tool.StatusFailure || !strings.Contains(res.Error, "has been shut down") {
		t.Fatalf("call after Close: %+v", res)
	}
	if st := c.Status()[0]; st.State != tool.ServerConnected {
		t.Fatalf("Close marked the server %+v; it did not fail", st)
	}
}

func TestOverridesBeatAnnotations(t *testing.T) {
	t.Parallel()
	srv := serveHTTP(t)
	reg, _ := setup(t, tool.RegistryConfig{Overrides: map[string]tool.Confirm{
		"notes__read_note":   tool.ConfirmAlways,
		"notes__delete_note": tool.ConfirmNever,
	}}, Config{Servers: map[string]ServerConfig{
		"notes": {URL: srv.URL, Headers: map[string]string{"Authorization": token}},
	}})
	for name, want := range map[string]tool.Confirm{"notes__read_note": tool.ConfirmAlways, "notes__delete_note": tool.ConfirmNever} {
		if s, _ := reg.Get(name); s.Confirm != want {
			t.Errorf("%s: Confirm %s, want %s", name, s.Confirm, want)
		}
	}
}

func TestConfirmFor(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	tests := []struct {
		name string
		a    *mcp.ToolAnnotations
		want tool.Confirm
	}{
		{"no annotations", nil, tool.ConfirmAlways},
		{"read-only", &mcp.ToolAnnotations{ReadOnlyHint: true}, tool.ConfirmNever},
		{"read-only wins over a stray destructive hint", &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &yes}, tool.ConfirmNever},
		{"destructive", &mcp.ToolAnnotations{DestructiveHint: &yes}, tool.ConfirmAlways},
		{"destructive by default", &mcp.ToolAnnotations{Title: "x"}, tool.ConfirmAlways},
		{"additive writes", &mcp.ToolAnnotations{DestructiveHint: &no}, tool.ConfirmAlways},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := confirmFor(tt.a); got != tt.want {
				t.Fatalf("confirmFor = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestToolName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 70)
	tests := []struct {
		prefix, remote, want string
		hashed               bool // want is a prefix, a hash follows
	}{
		{"github", "create_issue", "github__create_issue", false},
		{"fs", "read.file", "fs__read_file", false},
		{sanitize("my server"), "a/b", "my_server__a_b", false},
		{"s", long, "s__" + strings.Repeat("x", 52) + "_", true},
	}
	for _, tt := range tests {
		got := toolName(tt.prefix, tt.remote)
		ok := got == tt.want
		if tt.hashed {
			ok = len(got) == maxToolName && strings.HasPrefix(got, tt.want)
		}
		if !ok {
			t.Errorf("toolName(%q, %q) = %q, want %q", tt.prefix, tt.remote, got, tt.want)
		}
	}
	if a, b := toolName("s", long+"a"), toolName("s", long+"b"); a == b {
		t.Errorf("long names collide: %s", a)
	}
}

func TestParseConfig(t *testing.T) {
	t.Parallel()
	servers, err := ParseConfig([]byte(`{
		"mcpServers": {
			"filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"DEBUG": "1"}},
			"remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer x"}},
			"legacy": {"type": "sse", "url": "https://mcp.example.com/sse"},
			"extra": {"command": "srv", "autoApprove": ["x"], "timeout": 60}
		}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	fs := servers["filesystem"]
	if fs.Command != "npx" || len(fs.Args) != 3 || fs.Env["DEBUG"] != "1" {
		t.Errorf("filesystem = %+v", fs)
	}
	if r := servers["remote"]; r.URL != "https://mcp.example.com/mcp" || r.Headers["Authorization"] != "Bearer x" {
		t.Errorf("remote = %+v", r)
	}

	kinds := []struct {
		cfg     ServerConfig
		want    string
		wantErr string
	}{
		{servers["filesystem"], transportStdio, ""},
		{servers["remote"], transportHTTP, ""},
		{servers["legacy"], transportSSE, ""},
		{servers["extra"], transportStdio, ""},
		{ServerConfig{}, "", "neither"},
		{ServerConfig{Command: "a", URL: "http://b"}, "", "both"},
		{ServerConfig{URL: "ftp://b"}, "", `"url" is not an http(s) URL`},
		{ServerConfig{Type: "websocket", URL: "ws://b"}, "", `"type" is "websocket"`},
		{ServerConfig{Type: "stdio", URL: "http://b"}, "", `"command" is not set`},
	}
	for _, k := range kinds {
		got, err := k.cfg.transport()
		if k.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), k.wantErr) {
				t.Errorf("transport(%+v) err = %v, want %q", k.cfg, err, k.wantErr)
			}
			continue
		}
		if err != nil || got != k.want {
			t.Errorf("transport(%+v) = %q, %v; want %q", k.cfg, got, err, k.want)
		}
	}

	for _, bad := range []string{`{`, `{"servers": {}}`, `[]`} {
		if _, err := ParseConfig([]byte(bad)); err == nil {
			t.Errorf("ParseConfig(%s) succeeded", bad)
		}
	}
}

// Not parallel: it sets the environment.
func TestChildEnvKeepsSecretsOut(t *testing.T) {
	t.Setenv("AGENTCHAT_LLM_API_KEY", "sk-secret")
	t.Setenv("PATH", "/usr/bin")
	env := strings.Join(childEnv(map[string]string{"DEBUG": "1", "PATH": "/opt/bin"}), "\n")
	if strings.Contains(env, "sk-secret") {
		t.Fatalf("child env carries a secret:\n%s", env)
	}
	if !strings.Contains(env, "DEBUG=1") || !strings.HasSuffix(env, "PATH=/opt/bin") {
		t.Fatalf("child env lacks configured values (last PATH must win):\n%s", env)
	}
}
