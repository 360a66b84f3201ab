package httpapi_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentchat/agentchat/internal/agent"
	"github.com/agentchat/agentchat/internal/auth"
	"github.com/agentchat/agentchat/internal/bus/membus"
	"github.com/agentchat/agentchat/internal/config"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/engine/local"
	"github.com/agentchat/agentchat/internal/fdbudget"
	"github.com/agentchat/agentchat/internal/httpapi"
	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/scripted"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/ssetest"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/store/pgstore"
	"github.com/agentchat/agentchat/internal/store/sqlitestore"
	"github.com/agentchat/agentchat/internal/store/sqlitestore/sqlitetest"
	"github.com/agentchat/agentchat/internal/telemetry"
	"github.com/agentchat/agentchat/internal/testenv"
	"github.com/agentchat/agentchat/internal/tool"
	"github.com/agentchat/agentchat/internal/tool/builtin"
	"github.com/agentchat/agentchat/internal/usage"
)

const (
	alice     = "alice-token"
	bob       = "bob-token"     // same tenant as alice, another user
	root      = "root-token"    // an admin of alice's tenant
	eve       = "eve-token"     // another tenant
	mallory   = "mallory-token" // an admin of eve's tenant
	jwtSecret = "test-secret-0123456789abcdef"
)

type options struct {
	model         llm.Model
	ping          time.Duration
	confirmTTL    time.Duration
	maxIterations int
	builtin       builtin.Config
	dbPath        string // reuse a database (restart tests)
	extraTools    []tool.Tool
	// tools, when set, adds to the registry (e.g. MCP servers) before the stack starts.
	tools func(*tool.Registry)
	// engines, when set, adds engines beside "local" (which it is given);
	// router then adjusts the router (its default, tenant rules).
	engines func(reg *tool.Registry, local engine.Engine) map[string]engine.Engine
	router  func(*engine.Router)
	// corsOrigins is AGENTCHAT_CORS_ORIGINS, parsed.
	corsOrigins []string
	// bodyTimeout is httpapi.Config.BodyTimeout.
	bodyTimeout time.Duration
	// postgres runs the stack on PostgreSQL (a schema of its own) instead of SQLite.
	postgres bool
	// pgURL, when set, is the PostgreSQL database (from postgresSchema) the
	// stack shares with others: each is a replica (its own pool and run
	// service, not the store's sole user).
	pgURL string
	// Context management (seed 002), see context_test.go.
	knowledge   bool // retrieval from the knowledge base in turns
	memory      bool
	embedder    llm.Embedder
	compactMin  int
	compactKeep int
	autoCompact int
	promptDir   string
	inlineBytes int
	// tracer, when set, receives the spans (an in-memory exporter's provider).
	tracer trace.TracerProvider
	// maxRunsPerTenant is run.Config.MaxRunsPerTenant (0: no limit).
	maxRunsPerTenant int
	// maxExecutions is run.Config.MaxExecutions; budget, when bounded, wraps
	// the listener as serve does (overload_test.go).
	maxExecutions int
	budget        fdbudget.Budget
	// agents serves agents (package agent) over the models file at
	// modelsFile (none: the default model alone), with getenv for its keys.
	agents     bool
	modelsFile string
	getenv     func(string) string
	// issuers are trusted OpenID providers (oidc_test.go), with keyOptions.
	issuers    []auth.Issuer
	keyOptions auth.KeyOptions
	// files stores uploads and attachments on disk (files_test.go);
	// fileMax and fetch are its size limit and URL client.
	files   bool
	fileMax int64
	// fileTypes are the media types an upload may have (file.DefaultTypes when nil).
	fileTypes []string
	fetch     *http.Client
	// limits are the tenants' default limits (package usage); now, when
	// set, is the run service's clock.
	limits usage.Policy
	now    func() time.Time
	// wrapStore, when set, wraps the store the run service uses (a test's
	// fault or pause around one call, firsttext_test.go).
	wrapStore func(store.Store) store.Store
}

type env struct {
	t      *testing.T
	url    string
	client *http.Client
	store  store.Store
	runs   *run.Service
	api    *httpapi.Server
	srv    *httptest.Server
	dbPath string
	tel    *telemetry.Telemetry
	agents *agent.Service
	authn  *auth.Authenticator
}

// metricsToken reads GET /metrics on the test server.
const metricsToken = "metrics-token-0123456789"

// setup starts the whole stack (SQLite, in-process bus, agent loop, HTTP) on a
// real local port.
func setup(t *testing.T, o options) *env {
	t.Helper()
	if o.model == nil {
		o.model = scripted.New(scripted.Config{TokenDelay: -1})
	}
	if o.dbPath == "" {
		o.dbPath = sqlitetest.Path(t) // migrated and empty
	}
	var st store.Store
	var err error
	switch {
	case o.pgURL != "":
		st, err = pgstore.Open(context.Background(), o.pgURL)
	case o.postgres:
		st, err = openPostgres(t)
	default:
		st, err = sqlitestore.Open(context.Background(), o.dbPath)
	}
	if err != nil {
		t.Fatal(err)
	}
	parts := contextParts(o, st)
	b := membus.New(0)
	health := &telemetry.Health{Store: st, Bus: b}
	writer, _ := st.(store.SerialWriter) // as serve passes it: SQLite's, none on PostgreSQL
	tel := telemetry.New(telemetry.Config{TracerProvider: o.tracer, Health: health, Writer: writer})
	reg, err := tool.NewRegistry(tool.RegistryConfig{Observer: tel})
	if err != nil {
		t.Fatal(err)
	}
	if err := builtin.Register(reg, o.builtin); err != nil {
		t.Fatal(err)
	}
	for _, x := range o.extraTools {
		if err := reg.Register(x); err != nil {
			t.Fatal(err)
		}
	}
	if o.tools != nil {
		o.tools(reg)
	}
	files := testFiles(t, o, st)
	lc := parts.local(local.Config{Model: tel.Model(o.model, "scripted", "scripted"), Tools: reg, MaxIterations: o.maxIterations})
	if files != nil {
		lc.Files = files
	}
	router := &engine.Router{Default: "local", Engines: map[string]engine.Engine{
		"local": local.New(lc),
	}}
	if o.engines != nil {
		for name, eng := range o.engines(reg, router.Engines["local"]) {
			router.Engines[name] = eng
		}
	}
	if o.router != nil {
		o.router(router)
	}
	var agents *agent.Service
	var models *agent.Models
	if o.agents {
		models, err = agent.NewModels(agent.ModelsConfig{Path: o.modelsFile, Default: tel.Model(o.model, "scripted", "scripted"),
			DefaultInfo: agent.ModelInfo{Provider: agent.ProviderScripted, Model: agent.ProviderScripted}, Getenv: o.getenv,
			Options: agent.ModelOptions{MaxRetries: -1, ScriptedTokenDelay: -1, Observe: tel.Model}})
		if err != nil {
			t.Fatal(err)
		}
		agents = agent.New(agent.Config{Store: st, Bus: b, Models: models, Tools: reg, Engines: slices.Sorted(maps.Keys(router.Engines))})
		t.Cleanup(agents.Close)
		<-agents.Listening()
	}
	runStore := st
	if o.wrapStore != nil {
		runStore = o.wrapStore(st)
	}
	// A confirmation expires at the sweep after its TTL: the tests that
	// shorten the TTL sweep every 20ms. The others keep the service's
	// default (1s): a sweep is a write transaction and two queries on the
	// store, and 50 a second in every stack were about 40% of the CPU of
	// the streaming tests under -race.
	var sweep time.Duration
	if o.confirmTTL != 0 {
		sweep = 20 * time.Millisecond
	}
	rc := run.Config{
		Store: tel.Store(runStore), Bus: tel.Bus(b), ConfirmTTL: o.confirmTTL, SweepInterval: sweep, Engine: router, Compactor: parts.compactor,
		Telemetry: tel, Sole: o.pgURL == "", // one process over its store, as serve runs SQLite; else a replica
		MaxRunsPerTenant: o.maxRunsPerTenant,
		MaxExecutions:    o.maxExecutions,
		Files:            files,
	}
	if agents != nil {
		rc.Agents = agents // a nil *agent.Service would be a non-nil interface
	}
	limits, err := usage.New(usage.Config{Defaults: o.limits})
	if err != nil {
		t.Fatal(err)
	}
	rc.Limits, rc.Now = limits, o.now
	runs := run.New(rc)
	tokens, _ := config.ParseTokens("alice-token:acme:alice,bob-token:acme:bob,root-token:acme:root:admin,eve-token:evil:eve,mallory-token:evil:mallory:admin")
	authn := auth.New(tokens, jwtSecret)
	if len(o.issuers) > 0 {
		if err := authn.Trust(o.issuers, o.keyOptions); err != nil {
			t.Fatal(err)
		}
		health.Keys = func() []telemetry.KeyCheck {
			var out []telemetry.KeyCheck
			for _, k := range authn.KeyStatus() {
				out = append(out, telemetry.KeyCheck{Issuer: k.Issuer, Status: k.Status, Keys: k.Keys, Error: k.Error})
			}
			return out
		}
	}
	api := httpapi.New(httpapi.Config{Runs: runs, Tools: reg, Auth: authn, PingInterval: o.ping, MaxBodyBytes: 64 << 10,
		DetachAfter: time.Nanosecond, // every HTTP/1.1 stream serves the suite detached (detach.go)
		CORSOrigins: o.corsOrigins, BodyTimeout: o.bodyTimeout, Retrieval: parts.retrieval, Compactor: parts.compactor,
		Telemetry: tel, Health: health, MetricsToken: metricsToken, Agents: agents, Models: models, Files: files, Usage: st, Limits: limits})
	srv := httptest.NewUnstartedServer(api)
	if o.budget.Bounded() {
		srv.Listener = o.budget.Listen(srv.Listener)
		srv.Config.ConnContext = fdbudget.ConnContext
	}
	srv.Listener = api.Listen(srv.Listener, 0)
	srv.Start()
	e := &env{t: t, url: srv.URL, client: &http.Client{Transport: validating{t, &http.Transport{}}}, store: st, runs: runs, api: api, srv: srv, dbPath: o.dbPath, tel: tel,
		agents: agents, authn: authn}
	t.Cleanup(e.stop)
	return e
}

// stop shuts the stack down as serve does.
func (e *env) stop() {
	e.api.Close()
	e.srv.Close()
	// Runs still going are cut short: a test is over.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	e.runs.Shutdown(ctx)
	e.store.Close()
	e.client.CloseIdleConnections()
}

type req struct {
	method, path, token string
	body                any // string or a value to marshal
	header              map[string]string
}

func (e *env) send(r req) *http.Response {
	e.t.Helper()
	var body io.Reader
	switch b := r.body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		body = bytes.NewReader(raw)
	}
	hr, err := http.NewRequest(r.method, e.url+r.path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	resp, err := e.client.Do(hr)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// call sends r, checks the status and decodes the JSON answer.
func (e *env) call(r req, status int) map[string]any {
	e.t.Helper()
	resp := e.send(r)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		e.t.Fatalf("%s %s: status %d, want %d: %s", r.method, r.path, resp.StatusCode, status, raw)
	}
	if len(raw) == 0 {
		return nil
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		e.t.Fatalf("%s %s: not JSON: %s", r.method, r.path, raw)
	}
	return out
}

// apiError checks an error answer's status and code.
func (e *env) apiError(r req, status int, code string) map[string]any {
	e.t.Helper()
	out := e.call(r, status)
	errObj, _ := out["error"].(map[string]any)
	if errObj == nil || errObj["code"] != code || errObj["message"] == "" || errObj["requestId"] == "" {
		e.t.Fatalf("%s %s: error body %v, want code %q with message and requestId", r.method, r.path, out, code)
	}
	return errObj
}

// stream opens an SSE request and returns its reader.
func (e *env) stream(r req) (*ssetest.Reader, *http.Response) {
	e.t.Helper()
	resp := e.send(r)
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		e.t.Fatalf("%s %s: status %d: %s", r.method, r.path, resp.StatusCode, raw)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		e.t.Fatalf("content type %q", ct)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	return ssetest.NewReader(resp.Body), resp
}

// chat posts a native chat and reads the whole stream.
func (e *env) chat(token string, body any) []native {
	e.t.Helper()
	rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: token, body: body})
	defer resp.Body.Close()
	return readNative(e.t, rd, "")
}

// native is one decoded native frame.
type native struct {
	ID    string
	Event string
	Data  map[string]any
}

// readNative reads native frames (pings skipped) until the stream ends or,
// when until is set, until an event of that name.
func readNative(t *testing.T, rd *ssetest.Reader, until string) []native {
	t.Helper()
	var out []native
	for {
		f, err := rd.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("stream broke after %d frames: %v", len(out), err)
		}
		if f.Comment != "" || f.Event == "" || f.Event == "ping" {
			continue
		}
		var env struct {
			Event string         `json:"event"`
			ID    string         `json:"id"`
			Data  map[string]any `json:"data"`
		}
		f.JSON(t, &env)
		if env.Event != f.Event {
			t.Fatalf("frame event %q carries data.event %q", f.Event, env.Event)
		}
		out = append(out, native{f.ID, f.Event, env.Data})
		if until != "" && f.Event == until {
			return out
		}
	}
}

func names(fs []native) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Event)
	}
	return out
}

func last(fs []native) native {
	if len(fs) == 0 {
		return native{}
	}
	return fs[len(fs)-1]
}

func find(fs []native, name string) (native, bool) {
	for _, f := range fs {
		if f.Event == name {
			return f, true
		}
	}
	return native{}, false
}

func signJWT(t *testing.T, secret string, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// openPostgres opens a store on a new schema of the test PostgreSQL, dropped
// when the test ends (skipped without AGENTCHAT_TEST_POSTGRES, outside CI).
func openPostgres(t *testing.T) (store.Store, error) {
	t.Helper()
	return pgstore.Open(context.Background(), postgresSchema(t))
}

// postgresSchema is the URL of a fresh schema of the test database, dropped
// when the test ends.
func postgresSchema(t *testing.T) string {
	t.Helper()
	dbURL := testenv.Postgres(t)
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	schema := "agentchat_test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+schema+` CASCADE`); err != nil {
			t.Error(err)
		}
	})
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("schema", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// backends runs fn once per store backend, as subtests named for them.
func backends(t *testing.T, fn func(t *testing.T, o options)) {
	for _, b := range []struct {
		name string
		pg   bool
	}{{"sqlite", false}, {"postgres", true}} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(t, options{postgres: b.pg})
		})
	}
}
