// Package clustertest runs agentchat as a cluster of real processes for
// fault tests: several `agentchat serve` replicas over one PostgreSQL and one
// Redis, started from the built binary on free 127.0.0.1 ports, with the
// faults a deployment meets injected from outside — a replica killed with
// SIGKILL, a Redis server crashed and restarted empty, the database cut off
// by a TCP proxy in front of it. The replicas' fake model (StartModel) and
// that proxy run in processes of their own too, so that the replicas'
// answers and queries do not wait on the -race test process, which a loaded
// machine starves.
//
// Each Cluster has its own PostgreSQL schema and Redis key prefix, so tests
// run in parallel against shared servers. Everything a test starts (server
// processes, proxies, a private redis-server, a fake model) is stopped when
// it ends, and the test's schema and keys are dropped; a failed test logs
// the tail of each replica's log.
//
// The services come from AGENTCHAT_TEST_POSTGRES and AGENTCHAT_TEST_REDIS (see
// package testenv): without them a test is skipped, except under CI.
package clustertest

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/ssetest"
	"github.com/agentchat/agentchat/internal/testenv"
	"github.com/agentchat/agentchat/internal/tied"
)

// Token is the bearer token of the cluster's one user (tenant acme, user alice).
const Token = "clustertest-token-0123456789"

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

// Binary builds cmd/agentchat once per test process and returns its path.
// The same build makes the test's helper programs beside it, the fake
// model (StartModel) and the TCP proxy (NewProxy), with plain `go build` as
// well: the test's -race does not slow them.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "agentchat-clustertest-")
		if buildErr != nil {
			return
		}
		buildBin = filepath.Join(buildDir, "agentchat")
		// -o names a directory: each command is built into it under its name.
		cmd := exec.Command("go", "build", "-o", buildDir+string(filepath.Separator),
			"github.com/agentchat/agentchat/cmd/agentchat",
			"github.com/agentchat/agentchat/internal/clustertest/fakemodel",
			"github.com/agentchat/agentchat/internal/clustertest/tcpproxy")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

// Cleanup removes the binaries Binary built; call it from TestMain.
func Cleanup() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

// Cluster is one deployment: a schema, a key prefix, and the replicas started in it.
type Cluster struct {
	t        testing.TB
	bin      string
	dir      string
	Postgres string // the store URL replicas use (with this cluster's schema)
	Redis    string // the bus URL
	Prefix   string // the bus key prefix
	// LeaseTTL is the replicas' lease (Options.LeaseTTL).
	LeaseTTL time.Duration
	// Env is added to every replica's environment (KEY=value), after the
	// cluster's own settings, so it may override them.
	Env []string

	base   string // the test database's URL, without the schema
	schema string

	mu       sync.Mutex
	replicas []*Replica
}

// Options shape a Cluster.
type Options struct {
	// Redis overrides the bus URL: a private server from StartRedis, whose
	// keys are not cleaned up (they die with it).
	Redis string
	// Env is added to every replica's environment.
	Env []string
	// LeaseTTL is the replicas' AGENTCHAT_LEASE_TTL; default DefaultLease.
	// Tests that wait for a lease to lapse (a replica killed or cut off, its
	// runs taken over) set ShortLease, so the takeover comes quickly.
	LeaseTTL time.Duration
}

// startBound bounds a replica's start: registering its term needs the
// database, and on a loaded machine two 10 s tries of it timed out (CI).
const startBound = 90 * time.Second

// DefaultLease is the replicas' lease when a test does not wait for one to
// lapse: long enough that no stall of a loaded machine (CI runs the Go
// packages side by side on two cores) outlasts it. A replica acts on a term
// only until LeaseTTL/4 before the end it last renewed, renewing every
// LeaseTTL/3, so with a 2 s lease a stall of about a second fences it and
// its run ends executor_lost in a test that meant no fault.
const DefaultLease = 10 * time.Second

// ShortLease is the lease of the tests that measure a takeover (kill -9, the
// database cut off): other replicas end the lost replica's runs within it.
const ShortLease = 2 * time.Second

// New makes a cluster on the test servers: a fresh schema and key prefix,
// dropped when the test ends.
func New(t testing.TB, o Options) *Cluster {
	t.Helper()
	pg := testenv.Postgres(t)
	rd := o.Redis
	if rd == "" {
		rd = testenv.Redis(t)
	}
	bin := Binary(t)
	id := randomID()
	schema := "clustertest_" + id
	c := &Cluster{t: t, bin: bin, dir: t.TempDir(), Postgres: withParam(t, pg, "schema", schema), Redis: rd, Prefix: "clustertest_" + id, Env: o.Env,
		LeaseTTL: cmp.Or(o.LeaseTTL, DefaultLease), base: pg, schema: schema}
	t.Cleanup(func() {
		c.stopAll()
		dropSchema(t, pg, schema)
		if o.Redis == "" { // a private server goes with its data
			deleteKeys(t, rd, c.Prefix)
		}
	})
	return c
}

func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func withParam(t testing.TB, raw, key, value string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// WithHost returns a URL with its host:port replaced (to go through a Proxy).
func WithHost(t testing.TB, raw, hostport string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = hostport
	return u.String()
}

// Exec runs one statement in the cluster's schema, behind the servers' backs
// (to stage a state a crash would leave).
func (c *Cluster) Exec(sql string, args ...any) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.base)
	if err != nil {
		c.t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SET search_path = `+pgx.Identifier{c.schema}.Sanitize()); err != nil {
		c.t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		c.t.Fatal(err)
	}
}

func dropSchema(t testing.TB, dbURL, schema string) {
	// A minute: on a loaded box (CI at load 15) 20 s ran out while the
	// stopped replicas' connections were still being torn down.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
	}
}

func deleteKeys(t testing.TB, redisURL, prefix string) {
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		return
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	keys, err := rdb.Keys(ctx, prefix+":*").Result()
	if err == nil && len(keys) > 0 {
		err = rdb.Del(ctx, keys...).Err()
	}
	if err != nil && !isConnRefused(err) {
		t.Logf("delete test keys: %v", err)
	}
}

func isConnRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// Replica is one `agentchat serve` process.
type Replica struct {
	Name string
	URL  string // http://127.0.0.1:port
	t    testing.TB
	cmd  *exec.Cmd
	log  string // path of its stderr
	done chan struct{}
	err  error // Wait's result, once done is closed
}

// Start starts a replica named name with extra environment (KEY=value,
// after the cluster's) and waits until it listens. The replica is tied to
// the test process: killed outright, the test leaves none running.
func (c *Cluster) Start(name string, env ...string) *Replica {
	c.t.Helper()
	dir := filepath.Join(c.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	r := &Replica{Name: name, t: c.t, log: filepath.Join(dir, "stderr.log"), done: make(chan struct{})}
	logFile, err := os.Create(r.log)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(c.bin, "serve")
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"AGENTCHAT_ADDR=127.0.0.1:0",
		"AGENTCHAT_DATA_DIR=" + dir,
		"AGENTCHAT_STORE=" + c.Postgres,
		"AGENTCHAT_BUS=" + c.Redis,
		"AGENTCHAT_BUS_PREFIX=" + c.Prefix,
		"AGENTCHAT_TOKENS=" + Token + ":acme:alice",
		"AGENTCHAT_LEASE_TTL=" + c.LeaseTTL.String(),
		"AGENTCHAT_PING_INTERVAL=500ms",
		"AGENTCHAT_SHUTDOWN_TIMEOUT=2s",
		"AGENTCHAT_LOG_LEVEL=debug",
		// A bound only against a hung model: served from the -race test
		// process, the fake model answered some of 500 requests only
		// after the default minute on a loaded machine (CI). It has a
		// process of its own now (StartModel), but the box is as loaded;
		// no test here is about that bound, which internal/llm's tests pin.
		"AGENTCHAT_LLM_TIMEOUT=5m",
	}, c.Env...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := tied.Start(cmd); err != nil {
		c.t.Fatal(err)
	}
	r.cmd = cmd
	c.mu.Lock()
	c.replicas = append(c.replicas, r)
	c.mu.Unlock()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "agentchat is listening on "); ok {
				addr <- strings.Fields(rest)[0]
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() {
		r.err = cmd.Wait()
		logFile.Close()
		close(r.done)
	}()
	select {
	case a := <-addr:
		r.URL = a
	case <-r.done:
		c.t.Fatalf("replica %s exited at start: %v\n%s", name, r.err, r.tail(40))
	case <-time.After(startBound):
		c.t.Fatalf("replica %s did not start listening within %s\n%s", name, startBound, r.tail(40))
	}
	c.t.Cleanup(func() {
		if c.t.Failed() {
			c.t.Logf("---- replica %s log: warnings and errors ----\n%s", name, r.problems(40))
			c.t.Logf("---- replica %s log (tail) ----\n%s", name, r.tail(60))
		}
	})
	return r
}

// Kill ends the replica with SIGKILL, as a crash would, and waits for it.
func (r *Replica) Kill() {
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
}

// Stop asks the replica to shut down (SIGTERM) and waits up to 10s, then kills it.
func (r *Replica) Stop() {
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		r.Kill()
	}
}

// Alive reports whether the process is still running.
func (r *Replica) Alive() bool {
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// Log returns the replica's log so far.
func (r *Replica) Log() string {
	b, _ := os.ReadFile(r.log)
	return string(b)
}

// problems is the log's first n warnings and errors (the tail of a loaded
// replica's log is all request lines, and the line that explains a failure
// came earlier), and what the process wrote outside its logger.
func (r *Replica) problems(n int) string {
	var out []string
	for _, line := range strings.Split(r.Log(), "\n") {
		if len(out) == n {
			break
		}
		if line != "" && !strings.Contains(line, "level=INFO") && !strings.Contains(line, "level=DEBUG") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// Grep is the replica's log lines that contain s (a run's id, say): what
// it logged of one run or request among every other.
func (r *Replica) Grep(s string) string {
	var out []string
	for _, line := range strings.Split(r.Log(), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func (r *Replica) tail(n int) string {
	lines := strings.Split(strings.TrimRight(r.Log(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (c *Cluster) stopAll() {
	c.mu.Lock()
	rs := c.replicas
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range rs {
		if r.Alive() {
			wg.Go(r.Kill) // the test is over: no need to be graceful
		}
	}
	wg.Wait()
}

// Do sends a JSON request to a replica and returns the response with its
// body read.
func (c *Cluster) Do(r *Replica, method, path string, body any) (*http.Response, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, r.URL+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s on %s: %v", method, path, r.Name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s on %s: read: %v", method, path, r.Name, err)
	}
	return resp, b
}

// Frame is one native stream frame, with the seq its id carries.
type Frame struct {
	// ID is the frame's SSE id, what a client resumes after: the event's
	// seq, or "<seq>.<k>" for a frame more of the same event follows
	// (dialect.ID); "" for an error frame.
	ID    string
	Seq   int64 // the seq of the event the frame belongs to
	Event string
	Data  json.RawMessage // the envelope's data
}

func (f Frame) String() string { return fmt.Sprintf("%d %s %s", f.Seq, f.Event, f.Data) }

// Field reads a top-level string field of the frame's data.
func (f Frame) Field(name string) string {
	var m map[string]any
	_ = json.Unmarshal(f.Data, &m)
	s, _ := m[name].(string)
	return s
}

// Stream is an open native SSE stream.
type Stream struct {
	resp   *http.Response
	rd     *ssetest.Reader
	cancel context.CancelFunc
	// Header is the response header (X-Run-ID, X-Conversation-ID on a chat).
	Header http.Header
}

// Chat starts a run on r with POST /v1/agent/chat and returns its stream.
func (c *Cluster) Chat(r *Replica, body map[string]any) *Stream {
	c.t.Helper()
	return c.open(r, http.MethodPost, "/v1/agent/chat", body, nil)
}

// TryChat is Chat for a replica that may refuse (safe off the test's goroutine).
func (c *Cluster) TryChat(r *Replica, body map[string]any) (*Stream, int, string) {
	return c.tryOpen(r, http.MethodPost, "/v1/agent/chat", body, nil)
}

// TryChatWithKey is TryChat with an Idempotency-Key: a client that lost
// its connection before any answer sends the same request again with the
// same key, and attaches to the run if the first one started it.
func (c *Cluster) TryChatWithKey(r *Replica, body map[string]any, key string) (*Stream, int, string) {
	return c.tryOpen(r, http.MethodPost, "/v1/agent/chat", body, http.Header{"Idempotency-Key": {key}})
}

// Attach opens a run's stream on r after event seq after (-1: from the start,
// without a Last-Event-ID).
func (c *Cluster) Attach(r *Replica, runID string, after int64) *Stream {
	c.t.Helper()
	return c.open(r, http.MethodGet, "/v1/agent/runs/"+runID+"/events", nil, lastEventID(seqID(after)))
}

// TryAttach is Attach for a replica that may refuse: it returns a nil stream
// with the status and body of the refusal (status 0: no answer at all).
func (c *Cluster) TryAttach(r *Replica, runID string, after int64) (*Stream, int, string) {
	return c.tryOpen(r, http.MethodGet, "/v1/agent/runs/"+runID+"/events", nil, lastEventID(seqID(after)))
}

// TryResume is TryAttach for a client resuming after the frame with this
// SSE id (Frame.ID; "" from the start), as a browser's EventSource does.
func (c *Cluster) TryResume(r *Replica, runID, lastID string) (*Stream, int, string) {
	return c.tryOpen(r, http.MethodGet, "/v1/agent/runs/"+runID+"/events", nil, lastEventID(lastID))
}

// lastEventID is the header of a client resuming after the frame with this
// SSE id (none for "").
func lastEventID(id string) http.Header {
	if id == "" {
		return nil
	}
	return http.Header{"Last-Event-ID": {id}}
}

func seqID(seq int64) string {
	if seq < 0 {
		return ""
	}
	return strconv.FormatInt(seq, 10)
}

func (c *Cluster) open(r *Replica, method, path string, body any, hdr http.Header) *Stream {
	c.t.Helper()
	s, status, msg := c.tryOpen(r, method, path, body, hdr)
	if s == nil {
		c.t.Fatalf("%s %s on %s: %d %s", method, path, r.Name, status, msg)
	}
	return s
}

// tryOpen opens a stream, or reports the status and body of a refusal (status 0: no answer).
func (c *Cluster) tryOpen(r *Replica, method, path string, body any, hdr http.Header) (*Stream, int, string) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, method, r.URL+path, rd)
	if err != nil {
		cancel()
		return nil, 0, err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+Token)
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range hdr {
		req.Header[http.CanonicalHeaderKey(k)] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		return nil, 0, err.Error()
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return nil, resp.StatusCode, string(b)
	}
	s := &Stream{resp: resp, rd: ssetest.NewReader(resp.Body), cancel: cancel, Header: resp.Header}
	c.t.Cleanup(s.Close)
	return s, resp.StatusCode, ""
}

// Next returns the next replayable frame (pings and other frames without an
// id are skipped, except error frames, which are returned with Seq 0); io.EOF
// when the stream ends.
func (s *Stream) Next() (Frame, error) {
	for {
		f, err := s.rd.Next()
		if err != nil {
			return Frame{}, err
		}
		if f.Event == "ping" || f.Comment != "" || (f.ID == "" && f.Event != "error") {
			continue
		}
		var env struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(f.Data), &env); err != nil {
			return Frame{}, fmt.Errorf("frame %q: %v", f.Data, err)
		}
		id, _ := dialect.ParseID(f.ID)
		return Frame{ID: f.ID, Seq: id.Seq, Event: f.Event, Data: env.Data}, nil
	}
}

// Close ends the stream.
func (s *Stream) Close() {
	s.cancel()
	s.resp.Body.Close()
}

// ReadUntil reads frames until stop says so or the stream ends (io.EOF is
// not an error) or within passes.
func (s *Stream) ReadUntil(within time.Duration, stop func(Frame) bool) ([]Frame, error) {
	var out []Frame
	timer := time.AfterFunc(within, s.Close)
	defer timer.Stop()
	for {
		f, err := s.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			if !timer.Stop() {
				return out, fmt.Errorf("no end within %s (%d frames)", within, len(out))
			}
			return out, err
		}
		out = append(out, f)
		if stop != nil && stop(f) {
			return out, nil
		}
	}
}

// IsEnd reports a run's end frame.
func IsEnd(f Frame) bool { return f.Event == "agent.end" }

// Timeline returns a run's stored timeline, as frames.
func (c *Cluster) Timeline(r *Replica, runID string) []Frame {
	c.t.Helper()
	resp, body := c.Do(r, http.MethodGet, "/v1/agent/runs/"+runID+"/timeline", nil)
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("timeline on %s: %d %s", r.Name, resp.StatusCode, body)
	}
	var tl struct {
		Events []struct {
			Seq     int64           `json:"seq"`
			Event   string          `json:"event"`
			Payload json.RawMessage `json:"payload"`
		} `json:"events"`
	}
	if err := json.Unmarshal(body, &tl); err != nil {
		c.t.Fatal(err)
	}
	out := make([]Frame, 0, len(tl.Events))
	for _, e := range tl.Events {
		out = append(out, Frame{Seq: e.Seq, Event: e.Event, Data: e.Payload})
	}
	return out
}

// Equal compares frame lists by seq, event and data (as JSON values).
func Equal(a, b []Frame) (bool, string) {
	for i := 0; i < len(a) || i < len(b); i++ {
		if i >= len(a) || i >= len(b) {
			return false, fmt.Sprintf("lengths %d and %d; first extra: %v", len(a), len(b), extra(a, b, i))
		}
		if a[i].Seq != b[i].Seq || a[i].Event != b[i].Event || !jsonEqual(a[i].Data, b[i].Data) {
			return false, fmt.Sprintf("frame %d: %v ≠ %v", i, a[i], b[i])
		}
	}
	return true, ""
}

func extra(a, b []Frame, i int) Frame {
	if i < len(a) {
		return a[i]
	}
	return b[i]
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// Proxy is a TCP proxy in front of a server (PostgreSQL) that a test can cut:
// every connection through it is closed and new ones are refused at once,
// as when the database goes away, until Restore. It runs in a process of
// its own, the command tcpproxy, built without -race: every query of the
// replicas behind it passes through it, and served from the -race test
// process on a loaded machine, a replica could not register through it
// within 30 s (CI). The process is the test's (see startChild); the test
// drives it over a loopback control port.
type Proxy struct {
	Addr    string
	target  string
	control string // the control's base URL
	t       testing.TB
}

// NewProxy listens on a free 127.0.0.1 port and forwards to target (host:port).
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	f := strings.Fields(startChild(t, "tcpproxy", "-target", target))
	if len(f) != 3 || f[1] != "control" {
		t.Fatalf("tcpproxy: listening on %q", f)
	}
	return &Proxy{Addr: f[0], target: target, control: f[2], t: t}
}

// PostgresProxy is a Proxy to the host of the test database, and the cluster's
// store URL rewritten to go through it.
func (c *Cluster) PostgresProxy() (*Proxy, string) {
	c.t.Helper()
	u, err := url.Parse(c.Postgres)
	if err != nil {
		c.t.Fatal(err)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "5432")
	}
	p := NewProxy(c.t, host)
	return p, WithHost(c.t, c.Postgres, p.Addr)
}

// Cut closes every connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.t.Helper()
	p.do("/cut", 30*time.Second)
}

// AwaitRefused waits until the proxy has refused a connection since the
// last Cut: a client behind it has felt the outage (its connections were
// reset, and it tried a new one). A test that needs an outage short but
// real cuts, waits for this and restores, instead of sleeping a length
// that a loaded machine stretches. It fails the test after within.
func (p *Proxy) AwaitRefused(within time.Duration) {
	p.t.Helper()
	if !p.do("/refused", within) {
		p.t.Fatalf("proxy to %s: no connection refused within %s of the cut", p.target, within)
	}
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.t.Helper()
	p.do("/restore", 30*time.Second)
}

// do sends a control request and reports whether it was done within
// bound; any other failure fails the test. (The bounds only stop a hung
// test: the test process, starved on a loaded machine, may be slow to
// send.)
func (p *Proxy) do(path string, within time.Duration) bool {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.control+path, nil)
	if err != nil {
		p.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if err != nil {
		p.t.Fatalf("proxy to %s: %s: %v", p.target, path, err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusGatewayTimeout { // /refused, as the bound ran out
		return false
	}
	if resp.StatusCode != http.StatusNoContent {
		p.t.Fatalf("proxy to %s: %s: %s", p.target, path, resp.Status)
	}
	return true
}

// RedisServer is a private redis-server a test may crash and restart.
type RedisServer struct {
	Port int
	URL  string
	t    testing.TB
	dir  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// StartRedis starts redis-server on a free port, with nothing persisted: a
// restart comes back empty. A machine without redis-server skips the test
// (fails it under CI).
func StartRedis(t testing.TB) *RedisServer {
	t.Helper()
	// The cluster needs the shared services too: skip (or fail) before
	// starting anything.
	testenv.Postgres(t)
	testenv.Redis(t)
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-server is not installed, and CI must run this test")
		}
		t.Skip("skipping: redis-server is not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r := &RedisServer{Port: port, URL: fmt.Sprintf("redis://127.0.0.1:%d/0", port), t: t, dir: t.TempDir()}
	r.Start()
	t.Cleanup(r.Kill)
	return r
}

// Start starts the server (again) on its port and waits until it answers.
func (r *RedisServer) Start() {
	r.t.Helper()
	cmd := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(r.Port),
		"--save", "", "--appendonly", "no", "--dir", r.dir, "--daemonize", "no")
	if err := tied.Start(cmd); err != nil {
		r.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	r.mu.Lock()
	r.cmd, r.done = cmd, done
	r.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", r.Port), time.Second)
		if err == nil {
			fmt.Fprint(c, "PING\r\n")
			c.SetReadDeadline(time.Now().Add(time.Second))
			buf := make([]byte, 7)
			n, _ := io.ReadFull(c, buf)
			c.Close()
			if string(buf[:n]) == "+PONG\r\n" {
				return
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server on port %d did not answer", r.Port)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill crashes the server (SIGKILL): with nothing persisted, its data is gone.
func (r *RedisServer) Kill() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Eventually polls cond every 20ms until it holds or within passes.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
