package httpapi

import (
	"cmp"
	"context"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentchat/agentchat/internal/agent"
	"github.com/agentchat/agentchat/internal/auth"
	"github.com/agentchat/agentchat/internal/compaction"
	"github.com/agentchat/agentchat/internal/cors"
	enginechain "github.com/agentchat/agentchat/internal/engine/chain"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/fdbudget"
	"github.com/agentchat/agentchat/internal/file"
	"github.com/agentchat/agentchat/internal/retrieval"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/telemetry"
	"github.com/agentchat/agentchat/internal/tool"
	"github.com/agentchat/agentchat/internal/usage"
)

// Defaults of Config.
const (
	DefaultTenantHeader = "X-Tenant-ID"
	DefaultMaxBodyBytes = 1 << 20
	DefaultBodyTimeout  = 30 * time.Second
	DefaultPingInterval = 15 * time.Second
	DefaultDetachAfter  = 250 * time.Millisecond
)

// Config configures the HTTP surface. Zero values mean the defaults.
type Config struct {
	Runs         *run.Service
	Auth         *auth.Authenticator
	Tools        *tool.Registry
	Logger       *slog.Logger
	TenantHeader string // default DefaultTenantHeader
	MaxBodyBytes int64  // default DefaultMaxBodyBytes
	// BodyTimeout bounds the time a request body takes to arrive after its
	// headers; default DefaultBodyTimeout. A client trickling a body would otherwise hold
	// a connection and a goroutine for as long as it likes.
	BodyTimeout  time.Duration
	PingInterval time.Duration // default DefaultPingInterval
	// DetachAfter is how long a stream with a run to follow is served by
	// its handler before it detaches from net/http (detach.go); default
	// DefaultDetachAfter.
	DetachAfter time.Duration
	// HistoryLocation is the time zone that cuts the history's days. Default UTC.
	HistoryLocation *time.Location
	// ChainHardLimit caps a chain's max_steps (CHAIN_HARD_LIMIT). Default chain.DefaultHardLimit.
	ChainHardLimit int
	// CORSOrigins are the browser origins allowed to call the API (exact, or
	// "*" for any); none by default. See cors.go.
	CORSOrigins []string
	// Retrieval serves the knowledge base; nil answers its routes 404.
	Retrieval *retrieval.Service
	// Compactor compacts conversations; nil answers compaction 404.
	Compactor *compaction.Compactor
	// Telemetry receives HTTP metrics and spans and serves /metrics; nil records nothing.
	Telemetry *telemetry.Telemetry
	// Health answers /readyz. Default: no dependency checked (serve
	// always gives the store's and the bus's).
	Health *telemetry.Health
	// MetricsToken, when set, serves GET /metrics on this listener to
	// requests bearing it (Authorization: Bearer <token>).
	MetricsToken string
	// Agents serves the agents API and Models GET /v1/models; nil answers
	// them 404 agents_disabled.
	Agents *agent.Service
	Models *agent.Models
	// Files serves the file API and attachments; nil answers its routes 404
	// files_disabled.
	Files *file.Service
	// Usage answers GET /v1/usage (the store); nil answers it 404.
	Usage store.Usage
	// Limits are the limits GET /v1/usage/limits shows; nil shows none.
	Limits *usage.Limits
}

// Server holds the handlers. Create it with New.
type Server struct {
	runs           *run.Service
	auth           *auth.Authenticator
	tools          *tool.Registry
	log            *slog.Logger
	tenantHeader   string
	maxBody        int64
	bodyTimeout    time.Duration
	ping           time.Duration
	detachAfter    time.Duration // Config.DetachAfter
	historyLoc     *time.Location
	chainHardLimit int
	mux            *http.ServeMux
	cors           *cors.Policy
	retrieval      *retrieval.Service
	compactor      *compaction.Compactor
	tel            *telemetry.Telemetry
	health         *telemetry.Health
	metricsToken   string
	agents         *agent.Service
	models         *agent.Models
	files          *file.Service
	usage          store.Usage
	limits         *usage.Limits

	// closing is closed when the server begins to shut down, so streams end cleanly.
	closing   chan struct{}
	closeOnce sync.Once
	// detached holds the streams parked off net/http (detach.go), so
	// Close can wake them and wait for their goodbyes:
	// http.Server.Shutdown knows them not.
	detached detachedSet
	leave    leaveWatcher // hears parked streams' clients leave, and kept connections' next requests
	keep     keeper       // connections kept for the client's next request (keep.go)
}

// New builds the server and its routes.
func New(cfg Config) *Server {
	s := &Server{
		runs: cfg.Runs, auth: cfg.Auth, tools: cfg.Tools, log: cfg.Logger,
		tenantHeader: cfg.TenantHeader, maxBody: cfg.MaxBodyBytes, bodyTimeout: cfg.BodyTimeout, ping: cfg.PingInterval, detachAfter: cfg.DetachAfter, historyLoc: cfg.HistoryLocation,
		chainHardLimit: cfg.ChainHardLimit, retrieval: cfg.Retrieval, compactor: cfg.Compactor,
		tel: cfg.Telemetry, health: cfg.Health, metricsToken: cfg.MetricsToken, agents: cfg.Agents, models: cfg.Models, files: cfg.Files,
		usage: cfg.Usage, limits: cfg.Limits,
		mux: http.NewServeMux(), closing: make(chan struct{}),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.tenantHeader = cmp.Or(s.tenantHeader, DefaultTenantHeader)
	s.maxBody = cmp.Or(s.maxBody, DefaultMaxBodyBytes)
	s.bodyTimeout = cmp.Or(s.bodyTimeout, DefaultBodyTimeout)
	s.ping = cmp.Or(s.ping, DefaultPingInterval)
	s.detachAfter = cmp.Or(s.detachAfter, DefaultDetachAfter)
	if s.historyLoc == nil {
		s.historyLoc = time.UTC
	}
	if s.chainHardLimit <= 0 {
		s.chainHardLimit = enginechain.DefaultHardLimit
	}
	s.cors = cors.New(cfg.CORSOrigins, s.tenantHeader)
	if s.health == nil {
		s.health = &telemetry.Health{}
	}
	s.routes()
	return s
}

// handlerFunc is a handler that returns its error for one place to render.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (s *Server) routes() {
	open := func(pattern string, h handlerFunc) { s.mux.Handle(pattern, s.wrap(pattern, h)) }
	api := func(pattern string, h handlerFunc) { s.mux.Handle(pattern, s.authenticate(s.wrap(pattern, h), false)) }
	stream := func(pattern string, h handlerFunc) {
		s.mux.Handle(pattern, detachable(s.authenticate(s.wrap(pattern, h), true))) // detach.go
	}
	// A POST that answers with a stream; the token only in its header.
	streamPost := func(pattern string, h handlerFunc) {
		s.mux.Handle(pattern, detachable(s.authenticate(s.wrap(pattern, h), false)))
	}

	open("GET /healthz", s.healthz)
	open("GET /readyz", s.readyz)
	s.consoleRoutes()                    // the web console at /, and GET /v1/me: console.go
	open("GET /openapi.json", s.openapi) // openapi.go
	if s.metricsToken != "" && s.tel != nil {
		s.mux.Handle("GET /metrics", s.metricsAuth(s.tel.Handler()))
	}

	api("POST /v1/conversations", s.createConversation)
	api("GET /v1/conversations", s.listConversations)
	api("GET /v1/conversations/{id}", s.getConversation)
	api("PATCH /v1/conversations/{id}", s.updateConversation)
	api("DELETE /v1/conversations/{id}", s.deleteConversation)
	api("GET /v1/conversations/{id}/messages", s.listMessages)
	api("PUT /v1/conversations/{id}/active", s.setActive) // tree.go
	api("GET /v1/conversations/{id}/queue", s.listQueue)
	api("PUT /v1/messages/{id}/feedback", s.putFeedback)       // feedback.go
	api("DELETE /v1/messages/{id}/feedback", s.deleteFeedback) // feedback.go
	api("GET /v1/feedback", s.listFeedback)                    // feedback.go
	stream("GET /v1/conversations/{id}/events", s.conversationEvents)

	streamPost("POST /v1/agent/chat", s.chat)
	stream("GET /v1/agent/chat/{chatId}/stream", s.vercelResume) // AI SDK resume: vercel.go
	api("GET /v1/agent/runs/{runId}", s.getRun)
	stream("GET /v1/agent/runs/{runId}/events", s.runEvents)
	api("POST /v1/agent/runs/{runId}/cancel", s.cancelRun)
	api("GET /v1/agent/runs/{runId}/timeline", s.timeline)

	api("POST /v1/agent/confirmations/{id}", s.decide)
	api("GET /v1/agent/confirmations", s.listConfirmations)
	api("GET /v1/tools", s.listTools)

	// AG-UI (seeds 001 and 004): agui.go, history.go.
	streamPost("POST /api/v1/agent/runs", s.aguiRun)
	stream("GET /api/v1/agent/runs/{threadId}/events", s.aguiEvents)
	api("GET /api/v1/agent/history", s.aguiHistory)

	// Chain stream (seed 003): chain.go.
	stream("GET /v1/chain/stream", s.chainStream)
	streamPost("POST /v1/chain/stream", s.chainStream)
	s.contextRoutes(api)      // knowledge.go
	s.agentRoutes(api)        // agents.go
	s.fileRoutes(api, stream) // files.go
	s.usageRoutes(api)        // usage.go
}

// wrap renders a handler's error. Before the handler, it answers 404 for a
// path id that cannot exist and 400 for a query that is not text (text.go),
// so what reaches a handler, and a store, is text.
func (s *Server) wrap(pattern string, h handlerFunc) http.Handler {
	ids := pathIDs(pattern)
	// The closure stays small: a stream's handler runs under it for the
	// stream's life (see sseStream).
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := badRequest(r, ids)
		if err == nil {
			err = h(w, r)
		}
		if err != nil {
			s.fail(w, r, err)
		}
	})
}

// badRequest is the answer to a request whose query is not text or whose
// path names an id that cannot exist; nil for any other.
func badRequest(r *http.Request, ids []pathID) error {
	if err := checkQueryText(r); err != nil {
		return err
	}
	for _, id := range ids {
		if !possibleID(r.PathValue(id.name)) {
			return id.notFound
		}
	}
	return nil
}

// fail renders a handler's error.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	writeError(w, r, s.log, toAPIError(err, errcode.NotFound, "resource"))
}

// pathID is a wildcard of a route that names a stored object.
type pathID struct {
	name     string
	notFound *Error
}

var wildcard = regexp.MustCompile(`\{(\w+)\}`)

// pathIDs lists the id wildcards of a route pattern with the answer for an
// id that cannot exist. The AI SDK's chat id is not one: its handler answers
// a bad one with 400 (the client chose it) and an unknown one with 204.
func pathIDs(pattern string) []pathID {
	var out []pathID
	for _, m := range wildcard.FindAllStringSubmatch(pattern, -1) {
		var e *Error
		switch name := m[1]; {
		case name == "runId":
			e = notFound(errcode.RunNotFound, "run")
		case name == "threadId":
			e = notFound(errcode.ThreadNotFound, "thread")
		case name == "agentId":
			e = notFound(errcode.AgentNotFound, "agent")
		case name == "fileId":
			e = notFound(errcode.FileNotFound, "file")
		case name == "id" && strings.Contains(pattern, "/confirmations/"):
			e = notFound(errcode.ConfirmationNotFound, "confirmation")
		case name == "id":
			e = notFound(errcode.ConversationNotFound, "conversation")
		default:
			continue
		}
		out = append(out, pathID{m[1], e})
	}
	return out
}

// ServeHTTP runs the middleware chain: request id, access log, panic
// recovery, body limit, then the route (or a JSON 404/405).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ctx, id := telemetry.WithRequestID(r.Context(), r.Header.Get("X-Request-ID"))
	info := &logInfo{}
	ctx = context.WithValue(ctx, logInfoKey{}, info)
	_, pattern := s.mux.Handler(r)
	r = r.WithContext(ctx)
	ctx, observed := s.tel.Request(r, pattern) // traceparent, server span, per-route series
	r = r.WithContext(ctx)
	w.Header().Set("X-Request-ID", id)
	rec := &statusRecorder{ResponseWriter: w}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.ErrorContext(ctx, "panic", "panic", p, "stack", string(debug.Stack()))
			if rec.status == 0 {
				writeError(rec, r, s.log, &Error{Status: http.StatusInternalServerError, Code: errcode.InternalError, Message: "something went wrong on our side"})
			}
		}
		// A stream detached from its handler (detach.go) ends the request
		// when it ends; the closure keeps neither the request nor rec,
		// which hold net/http's buffers.
		code, method, path := rec.code(), r.Method, r.URL.Path
		end := func() {
			observed(code)
			info.mu.Lock()
			tenant := info.tenant
			info.mu.Unlock()
			s.log.LogAttrs(ctx, slog.LevelInfo, "request",
				slog.String("method", method), slog.String("path", path), slog.Int("status", code),
				slog.Duration("duration", time.Since(start)), slog.String("tenant", tenant)) // request_id: telemetry.LogHandler
		}
		if !info.deferEnd(end) {
			end()
		}
	}()
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(rec, r.Body, s.bodyLimit(pattern))
		// The body must arrive in time; readBody lifts the deadline once it
		// has, so a stream answering the request is not cut by it.
		rc := http.NewResponseController(rec)
		if rc.SetReadDeadline(time.Now().Add(s.bodyTimeout)) == nil {
			bd := &bodyDeadline{}
			bd.rc.Store(rc)
			r = r.WithContext(context.WithValue(r.Context(), bodyDeadlineKey{}, bd))
		}
	}
	if s.handleCORS(rec, r) { // cors.go: preflights and refused origins end here
		return
	}
	if fdbudget.Overflowed(r.Context()) {
		// The connection is beyond the open-files budget (fdbudget.Listener):
		// answered at once and closed, so its descriptor is free again in a
		// moment. Liveness is still answered: an overloaded process is alive.
		rec.Header().Set("Connection", "close")
		if r.URL.Path != "/healthz" {
			writeError(rec, r, s.log, errOverloaded)
			return
		}
	}
	if pattern == "" {
		s.noRoute(rec, r)
		return
	}
	s.mux.ServeHTTP(rec, r) // sets the path values Handler does not
}

// noRoute answers 405 when the path exists under another method, else 404.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	allowed := s.methodsOf(r)
	if len(allowed) > 0 {
		for _, m := range allowed {
			w.Header().Add("Allow", m)
		}
		writeError(w, r, s.log, apiErr(http.StatusMethodNotAllowed, errcode.MethodNotAllowed, "%s is not allowed here", r.Method))
		return
	}
	writeError(w, r, s.log, notFound(errcode.NotFound, "route"))
}

// Close ends open streams: each sends its dialect's closing frame and returns.
// It waits for the streams detached from net/http (detach.go) to have
// written theirs and closed their connections, each write bounded by
// writeTimeout, then stops the goroutine that hears their clients leave.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closing) })
	s.detached.close()
	s.closeKept()
	s.leave.stop()
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// Drain makes /readyz answer 503 "draining" from now on, so a load balancer
// stops sending new requests before the listener closes.
func (s *Server) Drain() { s.health.Drain() }

// readyz reports the store and the bus separately: 200 when both answer
// and the process is not draining, else 503 with the same body.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	rep := s.health.Check(r.Context())
	for name, c := range map[string]telemetry.Check{"store": rep.Store, "bus": rep.Bus} {
		if c.Err() != nil {
			s.log.WarnContext(r.Context(), "readiness: "+name+" unreachable", "err", c.Err())
		}
	}
	code := http.StatusOK
	if !rep.Ready() {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, rep)
	return nil
}

// metricsAuth lets through requests bearing the metrics token; the token
// is compared in constant time.
func (s *Server) metricsAuth(h http.Handler) http.Handler {
	want := []byte("Bearer " + s.metricsToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			writeError(w, r, s.log, apiErr(http.StatusUnauthorized, errcode.Unauthorized, "a valid metrics token is required"))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// bodyDeadlineKey holds the request's *bodyDeadline.
type bodyDeadlineKey struct{}

// bodyDeadline holds the controller whose read deadline bounds the body,
// until the body is read whole. It is a request context's value, and a
// stream detached from its handler (detach.go) keeps its request's context
// for its whole life: a controller kept there would keep the response, and
// through it net/http's connection with its 4 KiB reader and writer, the
// response's 2 KiB writer and the request's headers (about 12 KiB a
// stream, live, twice that with the collector's headroom), long after the
// connection was hijacked. So lift lets go of it.
type bodyDeadline struct {
	rc atomic.Pointer[http.ResponseController]
}

// liftBodyDeadline lifts the body's read deadline once the body is read
// whole, and lets go of the response's controller.
func liftBodyDeadline(r *http.Request) {
	if bd, ok := r.Context().Value(bodyDeadlineKey{}).(*bodyDeadline); ok {
		if rc := bd.rc.Swap(nil); rc != nil {
			_ = rc.SetReadDeadline(time.Time{})
		}
	}
}

// logInfo collects what the access log learns during the request.
type logInfo struct {
	mu     sync.Mutex
	tenant string
	// A stream detached from its handler ends the request (detach.go):
	// detached, ended and finish, the request's end once its handler
	// has returned.
	detached, ended bool
	finish          func()
}

type logInfoKey struct{}

func setLogTenant(ctx context.Context, tenant string) {
	if li, ok := ctx.Value(logInfoKey{}).(*logInfo); ok {
		li.mu.Lock()
		li.tenant = tenant
		li.mu.Unlock()
	}
}

// statusRecorder remembers the status for the access log and passes
// flushing and deadlines through (http.ResponseController uses Unwrap).
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *statusRecorder) code() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}
