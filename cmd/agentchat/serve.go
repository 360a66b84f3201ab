package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentchat/agentchat/internal/agent"
	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/bus/membus"
	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/config"
	"github.com/agentchat/agentchat/internal/fdbudget"
	"github.com/agentchat/agentchat/internal/httpapi"
	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/transport"
	"github.com/agentchat/agentchat/internal/lockfile"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/store/sqlitestore"
	"github.com/agentchat/agentchat/internal/telemetry"
	"github.com/agentchat/agentchat/internal/tool"
	"github.com/agentchat/agentchat/internal/tool/builtin"
	"github.com/agentchat/agentchat/internal/tool/mcptool"
	usagelimits "github.com/agentchat/agentchat/internal/usage"
)

// errHelp: the command printed its help as asked (exit status 0).
var errHelp = errors.New("help")

// loadConfig reads the settings of serve and migrate. --help prints them
// to stdout and ends the command with success.
func loadConfig(name string, args []string, getenv func(string) string, stdout io.Writer) (config.Config, error) {
	cfg, err := config.Load(name, args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return cfg, errHelp
	}
	return cfg, err
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	// Lines logged with a request's or a run's context carry its trace_id.
	return slog.New(telemetry.LogHandler(h))
}

// openStore opens the store the configuration names, applying migrations.
func openStore(ctx context.Context, cfg config.Config) (store.Store, error) {
	kind, err := cfg.StoreKind()
	if err != nil {
		return nil, err
	}
	switch kind {
	case "postgres":
		return openPostgres(ctx, cfg.Store)
	default:
		return sqlitestore.Open(ctx, cfg.SQLitePath())
	}
}

func openBus(ctx context.Context, cfg config.Config, log *slog.Logger) (bus.Bus, error) {
	if cfg.Bus == "" || cfg.Bus == "memory" {
		return membus.New(0), nil
	}
	return openRedis(ctx, cfg.Bus, cfg.BusPrefix, log)
}

// modelOptions are what every model the server builds shares: the
// environment's default model and the models file's. maxConns, when
// positive, bounds the connections to each provider: one per executing
// run, as the open-files budget counts them (a call beyond waits for one,
// rather than failing to dial).
func modelOptions(cfg config.Config, tel *telemetry.Telemetry, maxConns int) agent.ModelOptions {
	return agent.ModelOptions{
		Timeout: cfg.LLMTimeout, MaxRetries: cfg.LLMRetries,
		// Many runs stream from one provider at once: keep their connections
		// (the default transport keeps two idle per host and redials the rest).
		// Cleartext calls go over HTTP/1.1 with no goroutine per connection
		// (package transport); the standard transport, with the same
		// settings, serves https (HTTP/2 where offered) and proxies.
		HTTPClient: &http.Client{Transport: transport.New(&http.Transport{
			Proxy: http.ProxyFromEnvironment, MaxIdleConns: 1024, MaxIdleConnsPerHost: 512, MaxConnsPerHost: maxConns,
			IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second, ForceAttemptHTTP2: true,
			// The standard transport's write buffer holds a request only
			// until it is sent, yet lives as long as the connection: 1 KiB,
			// not 4 (package transport shares its write buffers). Reads keep
			// the default 4 KiB, which takes a burst of tokens in one read.
			WriteBufferSize: 1 << 10,
		})},
		ScriptedTokenDelay: cfg.ScriptedTokenDelay,
		ScriptedHint:       "Set OPENAI_API_KEY (and OPENAI_BASE_URL for other OpenAI-compatible servers) or ANTHROPIC_API_KEY to use a real model.",
		Observe:            tel.Model,
	}
}

// newModel builds the model the environment configures: the models
// file's "default".
func newModel(cfg config.Config, opts agent.ModelOptions) (llm.Model, agent.ModelInfo, error) {
	e, key := agent.ModelEntry{Provider: agent.ProviderScripted}, ""
	switch cfg.LLM {
	case config.LLMOpenAI:
		e, key = agent.ModelEntry{Provider: agent.ProviderOpenAI, Model: cfg.Model, BaseURL: cfg.OpenAIBaseURL}, cfg.OpenAIAPIKey
	case config.LLMAnthropic:
		e, key = agent.ModelEntry{Provider: agent.ProviderAnthropic, Model: cfg.Model, BaseURL: cfg.AnthropicBaseURL}, cfg.AnthropicAPIKey
	}
	m, err := agent.BuildModel(e, key, opts)
	return m, agent.ModelInfo{Name: agent.DefaultModel, Provider: e.Provider, Model: modelName(cfg)}, err
}

func newTools(ctx context.Context, cfg config.Config, log *slog.Logger, obs tool.CallObserver) (*tool.Registry, func(), error) {
	reg, err := tool.NewRegistry(tool.RegistryConfig{DefaultTimeout: cfg.ToolTimeout, Overrides: cfg.ToolOverrides(), Logger: log, Observer: obs})
	if err != nil {
		return nil, nil, fmt.Errorf("tool-confirm: %w", err)
	}
	err = builtin.Register(reg, builtin.Config{
		HTTPGet: builtin.HTTPGetConfig{Allow: cfg.HTTPGetAllow},
		Feishu:  builtin.FeishuConfig{WebhookURL: cfg.FeishuWebhookURL, Secret: cfg.FeishuSecret},
		Webhook: builtin.WebhookConfig{URL: cfg.WebhookURL},
	})
	if err != nil {
		return nil, nil, err
	}
	closeMCP := func() {}
	if cfg.MCPConfig != "" {
		servers, err := mcptool.LoadConfig(cfg.MCPConfig)
		if err != nil {
			return nil, nil, fmt.Errorf("mcp-config: %w", err)
		}
		client, err := mcptool.Connect(ctx, reg, mcptool.Config{Servers: servers, Logger: log})
		if err != nil {
			return nil, nil, fmt.Errorf("mcp: %w", err)
		}
		closeMCP = func() { client.Close() }
	}
	return reg, closeMCP, nil
}

// devToken returns the development token kept in the data directory,
// creating it on first use, so the README's commands work across restarts.
func devToken(dataDir string) (string, error) {
	path := filepath.Join(dataDir, "dev-token")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return strings.TrimSpace(string(b)), nil
	}
	var raw [24]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	tok := "dev_" + hex.EncodeToString(raw[:])
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return "", err
	}
	return tok, os.WriteFile(path, []byte(tok+"\n"), 0o600)
}

// authTokens is the configured static tokens or, with neither tokens, a
// JWT secret nor a trusted token issuer, the development token, which it
// announces on stdout.
func authTokens(cfg config.Config, stdout io.Writer) ([]config.Token, error) {
	if len(cfg.Tokens) > 0 || cfg.JWTSecret != "" || cfg.OIDCIssuer != "" || cfg.JWKSURL != "" || cfg.JWTIssuers != "" {
		return cfg.Tokens, nil
	}
	tok, err := devToken(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("development token: %w", err)
	}
	fmt.Fprintf(stdout, "No AGENTCHAT_TOKENS or AGENTCHAT_JWT_SECRET set: using a development token for tenant \"default\", user \"dev\" (an admin).\n"+
		"It is kept in %s:\n\n  export TOKEN=%s\n\n", filepath.Join(cfg.DataDir, "dev-token"), tok)
	// The one person on a development server manages its agents too.
	return []config.Token{{Token: tok, Tenant: "default", User: "dev", Role: chat.Admin}}, nil
}

// mutexProfileRate samples one in this many contended lock waits when the
// pprof listener is on (Go's default is none).
const mutexProfileRate = 20

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig("serve", args, getenv, stdout)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	slog.SetDefault(log)
	setMemoryLimit(getenv, log)

	unlock, err := lockData(cfg)
	if err != nil {
		return err
	}
	defer unlock()

	tokens, err := authTokens(cfg, stdout)
	if err != nil {
		return err
	}

	st, err := openStore(ctx, cfg)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer st.Close()
	b, err := openBus(ctx, cfg, log)
	if err != nil {
		return fmt.Errorf("bus: %w", err)
	}
	defer b.Close()
	tp, err := telemetry.TracerFromEnv(ctx, getenv, version())
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	var tracer trace.TracerProvider // nil: no tracing
	if tp != nil {
		tracer = tp
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = tp.Shutdown(sctx) // exports the spans still batched
		}()
		log.Info("tracing: exporting spans over OTLP")
	}
	health := &telemetry.Health{Store: st, Bus: b}
	authn, stopAuth, err := newAuthenticator(ctx, cfg, tokens, health, log)
	if err != nil {
		return err
	}
	defer stopAuth()
	writer, _ := st.(store.SerialWriter) // SQLite's one write connection; PostgreSQL has none
	tel := telemetry.New(telemetry.Config{TracerProvider: tracer, TenantLabels: cfg.MetricsTenantLabels, Health: health, ProcessMetrics: true, Writer: writer})
	tools, closeTools, err := newTools(ctx, cfg, log, tel)
	if err != nil {
		return err
	}
	defer closeTools()
	// With the store, the bus and the tools open, what is left of the
	// open-files limit is shared among client connections and runs.
	budget := planFiles(cfg, st, b, log)
	mopts := modelOptions(cfg, tel, budget.Runs)
	model, info, err := newModel(cfg, mopts)
	if err != nil {
		return fmt.Errorf("llm: %w", err)
	}
	models, err := agent.NewModels(agent.ModelsConfig{Path: cfg.ModelsFile, Default: model, DefaultInfo: info, Getenv: getenv, Options: mopts, Logger: log})
	if err != nil {
		return fmt.Errorf("models-file (AGENTCHAT_MODELS_FILE): %w", err)
	}
	files, closeFiles, err := openFiles(ctx, cfg, st, log) // files.go
	if err != nil {
		return err
	}
	defer closeFiles()
	parts, err := newContextParts(cfg, st, model, log)
	if err != nil {
		return err
	}
	parts.files = files
	router, gateways, err := newRouter(cfg, model, tools, parts, log, tel)
	if err != nil {
		return err
	}
	agents := agent.New(agent.Config{Store: tel.Store(st), Bus: tel.Bus(b), Models: models, Tools: tools,
		Engines: slices.Sorted(maps.Keys(router.Engines)), Gateways: gateways, Logger: log})
	defer agents.Close()

	limits, err := usagelimits.New(usagelimits.Config{Path: cfg.EngineConfig, Logger: log, Defaults: usagelimits.Policy{
		RunsPerMinute: cfg.RunsPerMinute, TokensPerDay: cfg.TokensPerDay, TokensPerMonth: cfg.TokensPerMonth, CostPerMonth: cfg.CostPerMonth,
	}})
	if err != nil {
		return fmt.Errorf("engine-config (AGENTCHAT_ENGINE_CONFIG): %w", err)
	}
	runs := run.New(run.Config{
		Store: tel.Store(st), Bus: tel.Bus(b), Logger: log, Engine: router, Telemetry: tel,
		ConfirmTTL: cfg.ConfirmTTL, RunRetention: cfg.RunRetention, MaxInputChars: cfg.MaxInputChars, MaxRunsPerTenant: cfg.MaxRunsPerTenant,
		LeaseTTL: cfg.LeaseTTL, ReplicaID: replicaID(), Sole: mustKind(cfg) != "postgres", Compactor: parts.compactor,
		MaxExecutions: cmp.Or(budget.Runs, cfg.MaxExecutingRuns),
		Agents:        agents,
		Files:         files,
		Limits:        limits,
	})
	readyCtx, cancelReady := context.WithTimeout(ctx, 60*time.Second)
	err = runs.Ready(readyCtx)
	cancelReady()
	if err != nil {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		if serr := runs.Shutdown(shutdownCtx); serr != nil {
			log.Warn("run service shutdown", "err", serr)
		}
		cancel()
		return err
	}
	api := httpapi.New(httpapi.Config{
		Runs: runs, Tools: tools, Logger: log, Auth: authn,
		TenantHeader: cfg.TenantHeader, MaxBodyBytes: cfg.MaxBodyBytes, PingInterval: cfg.PingInterval,
		HistoryLocation: cfg.HistoryLocation(), ChainHardLimit: cfg.ChainHardLimit, CORSOrigins: cfg.CORSOrigins,
		Retrieval: parts.retrieval, Compactor: parts.compactor,
		Telemetry: tel, Health: health, MetricsToken: cfg.MetricsToken, Agents: agents, Models: models, Files: files,
		Usage: st, Limits: limits,
	})
	srv := &http.Server{
		Handler:           api,
		ConnContext:       fdbudget.ConnContext, // marks connections beyond the budget: answered 503 and closed
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      60 * time.Second, // streams extend it per write
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	ln = budget.Listen(ln)
	ln = api.Listen(ln, srv.IdleTimeout) // a detached stream's connection comes back for the next request
	log.Info("agentchat listening", "addr", ln.Addr().String(), "store", mustKind(cfg), "llm", model.Name(), "models", len(models.List("")), "tools", len(tools.List()))
	fmt.Fprintf(stdout, "agentchat is listening on http://%s (model: %s)\n", ln.Addr(), model.Name())
	fmt.Fprintf(stdout, "Open the console in a browser: %s\n", consoleURL(ln.Addr()))

	if cfg.DebugAddr != "" {
		// A debug listener that cannot listen is logged, not fatal; one that
		// listens stops with the server.
		if dln, err := net.Listen("tcp", cfg.DebugAddr); err != nil {
			log.Error("pprof listener", "err", err)
		} else {
			// Contention is sampled (one event in mutexProfileRate) only
			// where profiles were asked for: the mutex profile is how a
			// convoy on a shared lock shows up.
			runtime.SetMutexProfileFraction(mutexProfileRate)
			mux := http.NewServeMux()
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
			dsrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
			defer dsrv.Close()
			go func() { _ = dsrv.Serve(dln) }()
			log.Info("pprof listening", "addr", dln.Addr().String())
		}
	}
	if cfg.MetricsAddr != "" {
		mln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("metrics-addr: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", tel.Handler())
		msrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		defer msrv.Close()
		go func() { _ = msrv.Serve(mln) }()
		log.Info("metrics listening", "addr", mln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	api.Drain() // /readyz answers 503 from now on
	if cfg.DrainDelay > 0 {
		// Keep serving while load balancers notice; a second signal does not cut this short.
		t := time.NewTimer(cfg.DrainDelay)
		<-t.C
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	api.Close() // streams say goodbye and return, so Shutdown need not wait for them
	if err := srv.Shutdown(sctx); err != nil {
		// Requests still in flight at the deadline: closing their
		// connections ends their contexts, so they stop waiting on the
		// run service, which stops next.
		log.Warn("http server shutdown: closing the connections still open", "err", err)
		_ = srv.Close()
	}
	if err := runs.Shutdown(sctx); err != nil {
		log.Warn("run service shutdown: runs still executing were ended (server_shutdown), or are left to recovery", "err", err)
	}
	return nil
}

// lockData keeps the data directory, and the SQLite file when it is kept
// elsewhere, to this process until serve returns: a second serve would
// share the development token and, on SQLite, end the first one's runs as
// "left by a previous process". The lock is the kernel's, so a killed
// server leaves nothing to clean up.
func lockData(cfg config.Config) (unlock func(), err error) {
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("data-dir: %w", err)
	}
	type lockPath struct{ path, what, other string }
	paths := []lockPath{{filepath.Join(cfg.DataDir, "agentchat.lock"), "the data directory " + cfg.DataDir, "--data-dir"}}
	if mustKind(cfg) == "sqlite" {
		if db := cfg.SQLitePath(); filepath.Clean(filepath.Dir(db)) != filepath.Clean(cfg.DataDir) {
			if err := os.MkdirAll(filepath.Dir(db), 0o750); err != nil {
				return nil, fmt.Errorf("store: %w", err)
			}
			paths = append(paths, lockPath{db + ".lock", "the SQLite file " + db, "--store"})
		}
	}
	var locks []*lockfile.Lock
	unlock = func() {
		for _, l := range locks {
			l.Release()
		}
	}
	for _, p := range paths {
		l, err := lockfile.Acquire(p.path)
		var held *lockfile.HeldError
		if errors.As(err, &held) {
			unlock()
			who := "another agentchat serve"
			if held.PID > 0 {
				who += fmt.Sprintf(", process %d", held.PID)
			}
			return nil, fmt.Errorf("%s is in use by %s (it holds %s): stop it, or give this server another %s", p.what, who, p.path, p.other)
		}
		if err != nil {
			unlock()
			return nil, fmt.Errorf("lock %s: %w", p.what, err)
		}
		locks = append(locks, l)
	}
	return unlock, nil
}

// lowFileLimit is an open-files limit worth a warning on a server whatever
// it is asked to carry: 1024, common on laptops and some container hosts,
// serves a few hundred chats at most.
const lowFileLimit = 4096

// planFiles divides the open-files limit (raised to the hard limit) into a
// reserve for the store's and the bus's pools and everything uncounted,
// client connections and executing runs, and says so in the log: a warning
// when the limit is low, or lower than --max-executing-runs asks for.
func planFiles(cfg config.Config, st store.Store, b bus.Bus, log *slog.Logger) fdbudget.Budget {
	soft, hard, err := fdbudget.Limit()
	if err != nil {
		log.Warn("open files: cannot read the limit; connections and runs are not bounded by it", "err", err)
		return fdbudget.Budget{}
	}
	open := fdbudget.Open()
	if open < 0 {
		open = 32 // not Linux: a fair guess at start
	}
	reserve := fdbudget.DefaultReserve(soft)
	// PostgreSQL's and Redis's pools dial as they need: their bounds stay
	// free. SQLite's connections are open already, so counted in open.
	type pooled interface{ MaxConns() int }
	if p, ok := st.(pooled); ok && mustKind(cfg) == "postgres" {
		reserve += p.MaxConns()
	}
	if p, ok := b.(pooled); ok {
		reserve += p.MaxConns()
	}
	budget := fdbudget.Plan(soft, hard, open, reserve, cfg.MaxExecutingRuns)
	if !budget.Bounded() {
		log.Info("open files: no limit; connections and runs are not bounded by it")
		return budget
	}
	log.Info("open files", "limit", soft, "hard_limit", hard, "open", open, "reserve", reserve,
		"connections", budget.Conns, "executing_runs", budget.Runs)
	switch {
	case cfg.MaxExecutingRuns > budget.Runs:
		log.Warn("open files: the limit allows fewer executing runs than --max-executing-runs; raise it (docs/operations.md, \"Open files\")",
			"limit", soft, "executing_runs", budget.Runs, "max_executing_runs", cfg.MaxExecutingRuns)
	case soft < lowFileLimit:
		log.Warn("open files: the limit is low for a server; beyond these chats at once, clients get 503 overloaded; raise it (docs/operations.md, \"Open files\")",
			"limit", soft, "executing_runs", budget.Runs)
	}
	return budget
}

// replicaID names this process in run leases and logs: host, pid and a
// random suffix, so a restarted process on the same host is another replica.
func replicaID() string {
	host, _ := os.Hostname()
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

func mustKind(cfg config.Config) string {
	k, _ := cfg.StoreKind()
	return k
}

func migrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig("migrate", args, getenv, stdout)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintln(stderr, "migrations applied")
	return st.Close()
}

// modelName is the model the configuration selects, for metrics and spans.
func modelName(cfg config.Config) string {
	if cfg.LLM == config.LLMScripted {
		return config.LLMScripted
	}
	return cfg.Model // Load gave it the provider's default
}

// version is the module version the binary was built from ("devel" from a work tree).
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}
