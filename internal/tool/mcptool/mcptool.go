// Package mcptool connects to MCP (Model Context Protocol) servers and adds
// their tools to a tool.Registry. It is the only package that imports the
// MCP SDK.
//
// Names. A server's tool joins the registry as "<server>__<tool>": model
// APIs allow only [a-zA-Z0-9_-] (at most 64 characters) in a function name,
// so the dot or slash other clients use as a separator is not available, and
// two servers may well both have a "search" tool. Characters outside that
// set are replaced by "_"; an over-long name is shortened and made unique
// with a hash.
//
// Confirmation comes from the tool's MCP annotations: readOnlyHint means no
// confirmation; anything else (destructive, additive, or no annotations at
// all) needs a person's approval. Annotations are the server's own claims:
// the operator vouches for the servers they configure, and the registry's
// Overrides correct a server that claims too little.
//
// Lifecycle. Connect starts every configured server concurrently and waits
// until each is connected or has failed; a server that fails, or dies later,
// is logged and reported as failed in Status (and the registry's Servers),
// and its tools answer with a failure while every other server keeps
// working. Nothing reconnects: a restart of agentchat does. The Client owns
// its sessions and child processes; Close ends them all and waits for every
// goroutine it started.
package mcptool

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentchat/agentchat/internal/tool"
)

// DefaultConnectTimeout bounds starting one server: process start (an npx
// download, say), the MCP handshake and listing its tools.
const DefaultConnectTimeout = 30 * time.Second

// Config configures a Client. Zero values mean the defaults.
type Config struct {
	// Servers are the MCP servers by name, usually from LoadConfig.
	Servers map[string]ServerConfig
	// Logger receives server failures and, at debug level, each stdio
	// server's stderr. Nil discards.
	Logger *slog.Logger
	// HTTPClient's Transport carries the HTTP servers' requests; each
	// server's Headers are added on top. Nil means a transport of our own.
	// Its Timeout is not used: MCP keeps long-lived event streams open.
	HTTPClient *http.Client
	// ConnectTimeout bounds starting one server. Default 30s.
	ConnectTimeout time.Duration
}

// Client holds the sessions to the configured MCP servers. It is safe for
// concurrent use.
type Client struct {
	servers   []*server // sorted by name
	transport http.RoundTripper
	ownsHTTP  bool // transport is ours to close
	closeOnce sync.Once
	watchers  sync.WaitGroup
}

// server is one configured MCP server.
type server struct {
	name   string
	prefix string // tool-name prefix: name, sanitised
	cfg    ServerConfig
	log    *slog.Logger
	reg    *tool.Registry
	stderr *tailBuffer // stdio servers only
	// done is closed once the session has ended (or never started), so
	// tests and Close can wait for the watcher's verdict.
	done chan struct{}

	mu      sync.Mutex
	session *mcp.ClientSession // nil when not connected
	status  tool.ServerStatus
	closing bool
}

// Connect starts every server in cfg.Servers, registers their tools in reg
// and returns once each server is connected or has failed. It fails only for
// a bad Config (never because a server failed: see Status); ctx bounds the
// start, not the sessions, which last until Close.
func Connect(ctx context.Context, reg *tool.Registry, cfg Config) (*Client, error) {
	if reg == nil {
		return nil, errors.New("mcptool: nil registry")
	}
	if cfg.ConnectTimeout < 0 {
		return nil, fmt.Errorf("mcptool: ConnectTimeout is negative (%s)", cfg.ConnectTimeout)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{}
	if cfg.HTTPClient != nil && cfg.HTTPClient.Transport != nil {
		c.transport = cfg.HTTPClient.Transport
	} else {
		c.transport = http.DefaultTransport.(*http.Transport).Clone()
		c.ownsHTTP = true
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
		if cfg.Servers[name].Disabled {
			log.Info("MCP server disabled", "mcp_server", name)
			continue
		}
		c.servers = append(c.servers, &server{
			name:   name,
			prefix: sanitize(name),
			cfg:    cfg.Servers[name],
			log:    log.With("mcp_server", name),
			reg:    reg,
			done:   make(chan struct{}),
		})
	}

	timeout := cmp.Or(cfg.ConnectTimeout, DefaultConnectTimeout)
	type started struct {
		session *mcp.ClientSession
		tools   []*mcp.Tool
		err     error
	}
	results := make([]started, len(c.servers))
	var wg sync.WaitGroup
	for i, s := range c.servers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			sess, tools, err := c.start(ctx, s)
			results[i] = started{sess, tools, err}
		})
	}
	wg.Wait()

	// Register in name order, after every start, so which of two clashing
	// names wins does not depend on which server answered first.
	for i, s := range c.servers {
		r := results[i]
		if r.err != nil {
			s.fail(r.err)
			close(s.done)
			continue
		}
		n := s.register(r.tools)
		s.mu.Lock()
		s.session = r.session
		s.mu.Unlock()
		s.setStatus(tool.ServerStatus{Name: s.name, State: tool.ServerConnected, Tools: n})
		s.log.Info("MCP server connected", "tools", n)
		c.watchers.Go(func() { s.watch(r.session) })
	}
	return c, nil
}

// start connects to s and lists its tools.
func (c *Client) start(ctx context.Context, s *server) (*mcp.ClientSession, []*mcp.Tool, error) {
	kind, err := s.cfg.transport()
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	var t mcp.Transport
	switch kind {
	case transportStdio:
		cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
		cmd.Env = childEnv(s.cfg.Env)
		cmd.Dir = s.cfg.Cwd
		s.stderr = newTailBuffer(s.log)
		cmd.Stderr = s.stderr
		t = &mcp.CommandTransport{Command: cmd}
	case transportHTTP:
		t = &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: c.httpClient(s.cfg.Headers)}
	case transportSSE:
		t = &mcp.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: c.httpClient(s.cfg.Headers)}
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "agentchat", Version: "1"}, &mcp.ClientOptions{Logger: s.log})
	sess, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w%s", err, s.stderrTail())
	}
	var tools []*mcp.Tool
	for mt, err := range sess.Tools(ctx, nil) {
		if err != nil {
			_ = sess.Close()
			return nil, nil, fmt.Errorf("list tools: %w%s", err, s.stderrTail())
		}
		tools = append(tools, mt)
	}
	return sess, tools, nil
}

// httpClient returns a client that adds headers to every request. MCP's
// HTTP transports take an *http.Client, so headers ride in its RoundTripper.
func (c *Client) httpClient(headers map[string]string) *http.Client {
	if len(headers) == 0 {
		return &http.Client{Transport: c.transport}
	}
	h := make(http.Header, len(headers))
	for k, v := range headers {
		h.Set(k, v)
	}
	return &http.Client{Transport: &headerTransport{base: c.transport, headers: h}}
}

// Status returns each configured server's health, sorted by name. Disabled
// servers are not listed.
func (c *Client) Status() []tool.ServerStatus {
	out := make([]tool.ServerStatus, 0, len(c.servers))
	for _, s := range c.servers {
		s.mu.Lock()
		out = append(out, s.status)
		s.mu.Unlock()
	}
	return out
}

// Close ends every session (a stdio server gets its stdin closed, then
// SIGTERM, then SIGKILL, as the MCP spec describes) and waits for them. Its
// tools stay registered and answer with a failure. Close is idempotent.
func (c *Client) Close() error {
	var errs []error
	c.closeOnce.Do(func() {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, s := range c.servers {
			s.mu.Lock()
			s.closing = true
			sess := s.session
			s.session = nil
			s.mu.Unlock()
			if sess == nil {
				continue
			}
			// Concurrently: a stubborn stdio server may take seconds to stop.
			wg.Go(func() {
				if err := sess.Close(); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("close MCP server %s: %w", s.name, err))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		c.watchers.Wait()
		if c.ownsHTTP {
			c.transport.(*http.Transport).CloseIdleConnections()
		}
	})
	return errors.Join(errs...)
}

// register adds s's tools to the registry and returns how many it took.
func (s *server) register(tools []*mcp.Tool) int {
	n := 0
	for _, t := range tools {
		mt, err := s.newTool(t)
		if err == nil {
			err = s.reg.Register(mt)
		}
		if err != nil {
			s.log.Warn("MCP tool skipped", "tool", t.Name, "error", err)
			continue
		}
		n++
	}
	return n
}

// watch waits for the session to end and, unless we ended it, reports the
// server as failed.
func (s *server) watch(sess *mcp.ClientSession) {
	err := sess.Wait()
	defer close(s.done)
	s.mu.Lock()
	closing := s.closing
	s.session = nil
	s.mu.Unlock()
	if closing {
		return
	}
	reason := "server closed the connection"
	if err != nil {
		reason += ": " + err.Error()
	}
	// The session's own end may race with a call's Close; either way the
	// process is gone, so make sure its resources are released.
	_ = sess.Close()
	s.fail(errors.New(reason + s.stderrTail()))
}

// fail records s as failed.
func (s *server) fail(err error) {
	s.log.Error("MCP server failed", "error", err)
	s.mu.Lock()
	tools := s.status.Tools
	s.mu.Unlock()
	s.setStatus(tool.ServerStatus{Name: s.name, State: tool.ServerFailed, Error: err.Error(), Tools: tools})
}

func (s *server) setStatus(st tool.ServerStatus) {
	s.mu.Lock()
	s.status = st
	s.mu.Unlock()
	s.reg.SetServerStatus(st)
}

// current returns the live session, or an error for the model.
func (s *server) current() (*mcp.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != nil {
		return s.session, nil
	}
	if s.closing {
		return nil, fmt.Errorf("MCP server %s has been shut down", s.name)
	}
	// The reason (often the server's stderr) is for operators, in Status
	// and the log; the model only needs to know not to retry.
	return nil, fmt.Errorf("MCP server %s is unavailable: it has stopped", s.name)
}

func (s *server) stderrTail() string {
	if s.stderr == nil {
		return ""
	}
	if tail := s.stderr.String(); tail != "" {
		return "; stderr: " + tail
	}
	return ""
}

// mcpTool is one MCP server tool, as a tool.Tool.
type mcpTool struct {
	server *server
	remote string // the tool's name on its server
	spec   tool.Spec
}

func (s *server) newTool(t *mcp.Tool) (*mcpTool, error) {
	params := json.RawMessage(`{"type":"object","properties":{}}`)
	if t.InputSchema != nil {
		b, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("input schema: %w", err)
		}
		params = b
	}
	return &mcpTool{
		server: s,
		remote: t.Name,
		spec: tool.Spec{
			Name:        toolName(s.prefix, t.Name),
			Description: cmp.Or(t.Description, t.Title, t.Name),
			Parameters:  params,
			Confirm:     confirmFor(t.Annotations),
			Source:      "mcp:" + s.name,
		},
	}, nil
}

// confirmFor maps MCP annotations to a policy. Only a tool that says it is
// read-only runs unasked: per the spec, a tool without annotations may be
// destructive (destructiveHint defaults to true), and a non-destructive
// tool that is not read-only still writes ("additive" updates).
func confirmFor(a *mcp.ToolAnnotations) tool.Confirm {
	if a != nil && a.ReadOnlyHint {
		return tool.ConfirmNever
	}
	return tool.ConfirmAlways
}

func (t *mcpTool) Spec() tool.Spec { return t.spec }

func (t *mcpTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	sess, err := t.server.current()
	if err != nil {
		return tool.Result{}, err
	}
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: t.remote, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, ctx.Err()
		}
		return tool.Result{}, fmt.Errorf("MCP server %s: %w", t.server.name, err)
	}
	return toResult(res)
}

// toResult turns an MCP result into ours: text blocks joined as Content,
// structuredContent as Output, isError as a failure. Non-text blocks are
// named, not inlined: the model gains nothing from base64 bytes.
func toResult(res *mcp.CallToolResult) (tool.Result, error) {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image (%s, %d bytes) not shown]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio (%s, %d bytes) not shown]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s: %s]", cmp.Or(c.Title, c.Name), c.URI))
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else if c.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s (%s) not shown]", c.Resource.URI, c.Resource.MIMEType))
			}
		default:
			parts = append(parts, fmt.Sprintf("[%T content not shown]", c))
		}
	}
	out := tool.Result{Status: tool.StatusSuccess, Content: strings.Join(parts, "\n")}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return tool.Result{}, fmt.Errorf("structured content: %w", err)
		}
		out.Output = b
	}
	if res.IsError {
		out.Status = tool.StatusFailure
		out.Error = cmp.Or(out.Content, "the tool reported an error without a message")
	}
	return out, nil
}

// invalidName matches what model APIs refuse in a function name.
var invalidName = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

func sanitize(s string) string { return invalidName.ReplaceAllString(s, "_") }

// maxToolName is the longest function name OpenAI and Anthropic accept.
const maxToolName = 64

// toolName is "<server>__<tool>", sanitised; names over 64 characters keep
// their start and end with a hash of the full name, so two long names that
// share a prefix stay distinct.
func toolName(prefix, remote string) string {
	name := prefix + "__" + sanitize(remote)
	if len(name) <= maxToolName {
		return name
	}
	sum := sha256.Sum256([]byte(prefix + "\x00" + remote))
	return name[:maxToolName-9] + "_" + hex.EncodeToString(sum[:4])
}

// inheritedEnv is what a stdio server gets from our environment: enough to
// find programs and a home directory, and the proxy settings a package
// runner needs, but not the API keys and secrets agentchat itself holds.
// The same choice as the official TypeScript SDK's default environment.
var inheritedEnv = []string{
	"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	// Windows.
	"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATHEXT", "PROCESSOR_ARCHITECTURE",
	"PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE",
}

func childEnv(extra map[string]string) []string {
	var env []string
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		env = append(env, k+"="+extra[k]) // later entries win in os/exec
	}
	return env
}

// headerTransport adds fixed headers to each request.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context()) // a RoundTripper must not modify its request
	for k, v := range t.headers {
		req.Header[k] = v
	}
	return t.base.RoundTrip(req)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach base.
func (t *headerTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// tailBuffer keeps the last bytes a stdio server wrote to stderr, for the
// failure message, and logs each line at debug level.
type tailBuffer struct {
	log *slog.Logger

	mu   sync.Mutex
	tail []byte
	line []byte
}

const (
	stderrTail    = 1 << 10
	stderrLineMax = 1 << 10
)

func newTailBuffer(log *slog.Logger) *tailBuffer { return &tailBuffer{log: log} }

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tail = append(b.tail, p...)
	if over := len(b.tail) - stderrTail; over > 0 {
		b.tail = append(b.tail[:0], b.tail[over:]...)
	}
	for _, c := range p {
		if c == '\n' {
			b.flushLine()
			continue
		}
		if len(b.line) < stderrLineMax {
			b.line = append(b.line, c)
		}
	}
	return len(p), nil
}

func (b *tailBuffer) flushLine() {
	if len(b.line) > 0 && b.log.Enabled(context.Background(), slog.LevelDebug) {
		b.log.Debug("MCP server stderr", "line", string(b.line))
	}
	b.line = b.line[:0]
}

// String returns the kept tail, trimmed.
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(strings.ToValidUTF8(string(b.tail), ""))
}
