// Package bench is the load command behind `agentchat bench`: it serves a fake
// OpenAI-compatible upstream (the real chunk format, T tokens per answer at a
// set pace), starts agentchat server processes pointed at it, opens N
// concurrent chats and measures what a client and an operator care about:
// time to first byte and to first text event against the same measured
// directly on the upstream (the floor), tokens per second delivered, server
// CPU per 1000 tokens, and memory per idle and per active stream.
//
// The servers are separate processes so that their CPU time and memory are
// read from /proc without the load generator's own mixed in.
package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/procfs"

	"github.com/agentchat/agentchat/internal/llm/fakeupstream"
	"github.com/agentchat/agentchat/internal/tied"
)

// Config sets up one benchmark.
type Config struct {
	Binary    string        // the agentchat executable to start
	Streams   int           // concurrent chats (N)
	Tokens    int           // tokens per answer (T)
	Pace      time.Duration // upstream pause between tokens
	Replicas  int           // server processes; chats are spread round-robin
	Store     string        // AGENTCHAT_STORE for the servers ("" = SQLite in a temp dir; a postgres:// URL naming no schema gets the run's own, dropped at the end)
	Bus       string        // AGENTCHAT_BUS ("" = in-process; needed as redis:// with replicas > 1)
	BusPrefix string        // the run's own key prefix on the Redis bus, so runs do not mix; its keys are deleted at the end
	IdleProbe bool          // also measure memory per idle stream
	// Ramp spreads the streams' starts evenly over this long, in the floor
	// and through agentchat alike (0: all at the same instant).
	Ramp time.Duration
	// Soak, when above zero, replaces the single load by a soak: Streams
	// chats kept going, one after another, for this long (see Soak).
	Soak time.Duration
	// Rounds repeats the floor and the load this many times, alternately,
	// on the same servers, and pools their samples (0 or 1: once). Each
	// pass opens its client connections anew. A few streams give a few
	// samples a pass: at one stream, "added first text" from one pass is
	// one sample's difference, within the pacing timer's jitter.
	Rounds int
	// ProfileDir, when set, is a folder to write the first server's
	// profiles of the load to, from its pprof listener: cpu.pprof over as
	// long as the floor took (rounded up: the load's busy part), heap.pprof
	// and goroutine.pprof halfway through it, trace.out (an execution
	// trace, runtime/trace) over traceWindow from halfway, mutex.pprof
	// (contention since the server started) at its end.
	ProfileDir string
	// ProfileStart takes the heap, the goroutines and the trace as the
	// load starts instead of halfway: where a burst's starts queue.
	ProfileStart bool
	Log          io.Writer // progress; nil discards
}

// Result is what one benchmark measured.
type Result struct {
	Config         Config  `json:"-"`
	FloorTTFB      Percent `json:"floorTTFB"`
	FloorFirstText Percent `json:"floorFirstText"`
	TTFB           Percent `json:"ttfb"`
	FirstText      Percent `json:"firstText"`
	// StreamTime is a chat's request to its end, FloorStreamTime the
	// floor's request to its [DONE], and EndTail a chat's last text to its
	// end: where a load's tokens/s falls short of the floor's, these split
	// the loss between the starts (first text), the streams and the ends.
	FloorStreamTime Percent `json:"floorStreamTime"`
	StreamTime      Percent `json:"streamTime"`
	EndTail         Percent `json:"endTail"`
	// ListenOverflows counts the connections the kernel dropped during the
	// load because a listen queue was full (TcpExt ListenOverflows, the
	// machine's: the servers' and the fake model's); each such client
	// retries its connect after a second or more. -1: not readable.
	ListenOverflows int64 `json:"listenOverflows"`
	Errors          int   `json:"errors"`
	// The errors by kind: a refused start (not 200), a run that ended
	// other than succeeded, a stream that stopped (or stalled past the
	// deadline) before its run's end.
	Refused              int     `json:"refused"`
	FailedRuns           int     `json:"failedRuns"`
	NoEnd                int     `json:"noEnd"`
	FloorTokensPerSecond float64 `json:"floorTokensPerSecond"`
	TokensDelivered      int64   `json:"tokensDelivered"`
	Elapsed              float64 `json:"elapsedSeconds"`
	TokensPerSecond      float64 `json:"tokensPerSecond"`
	ServerCPUms          float64 `json:"serverCPUms"`
	CPUmsPer1kTokens     float64 `json:"cpuMsPer1000Tokens"`
	IdleRSSMiB           float64 `json:"idleRSSMiB"`
	PeakRSSMiB           float64 `json:"peakRSSMiB"`
	KiBPerActive         float64 `json:"kibPerActiveStream"`
	KiBPerIdle           float64 `json:"kibPerIdleStream,omitempty"`
	// FirstTextMean is the mean of the chats' first text (ms, from the
	// client's request), and ServerFirstTextMean the servers' own part of
	// it: a run's start (its request decoded and authenticated) to its
	// first text emitted, the model's answer included. The rest is the
	// request reaching the run's start and the emitted text reaching the
	// client.
	FirstTextMean       float64 `json:"firstTextMean"`
	ServerFirstTextMean float64 `json:"serverFirstTextMean,omitempty"`
	// Serial are the servers' parts that every stream passes through one
	// at a time, with how busy the load kept each (from their metrics).
	Serial []Serial `json:"serial,omitempty"`
	// Soak is set by a soak run.
	Soak *SoakResult `json:"soak,omitempty"`
}

// Percent holds latency percentiles in milliseconds.
type Percent struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

func percent(d []time.Duration) Percent {
	if len(d) == 0 {
		return Percent{}
	}
	slices.Sort(d)
	at := func(q float64) float64 {
		i := min(int(q*float64(len(d))), len(d)-1)
		return float64(d[i].Microseconds()) / 1000
	}
	return Percent{at(0.50), at(0.99)}
}

// Run performs the benchmark. A PostgreSQL store URL that names no schema
// gets a schema of the run's own, dropped at the end, and the Redis bus's
// keys under BusPrefix (which must be the run's own) are deleted at the end
// (see scratch.go), whether the run succeeded or not.
func Run(ctx context.Context, cfg Config) (Result, error) {
	logf := logger(cfg.Log)
	schema := "bench_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	storeURL, dropSchema := scratchSchema(cfg.Store, schema)
	if storeURL != cfg.Store {
		logf("store: PostgreSQL schema %s, dropped at the end", schema)
	}
	cfg.Store = storeURL
	res, err := run(ctx, cfg)
	// The servers have stopped: nothing holds the schema or writes keys. A
	// cleanup that fails is said loudly but does not throw the run's
	// figures away.
	cleanup := context.WithoutCancel(ctx)
	if derr := dropSchema(cleanup); derr != nil {
		logf("WARNING: %v: drop it by hand", derr)
	}
	n, kerr := deleteKeys(cleanup, cfg.Bus, cfg.BusPrefix)
	if kerr != nil {
		logf("WARNING: %v: delete the keys %s:* by hand", kerr, cfg.BusPrefix)
	}
	if n > 0 {
		logf("bus: deleted the run's %d Redis keys (prefix %s)", n, cfg.BusPrefix)
	}
	return res, err
}

// logger prints progress lines to w (nil discards them).
func logger(w io.Writer) func(format string, a ...any) {
	return func(format string, a ...any) {
		if w != nil {
			fmt.Fprintf(w, format+"\n", a...)
		}
	}
}

// run is Run on the backends as given.
func run(ctx context.Context, cfg Config) (Result, error) {
	res := Result{Config: cfg}
	logf := logger(cfg.Log)
	fake := fakeupstream.OpenAIHandler(fakeupstream.Options{Tokens: cfg.Tokens, Delay: cfg.Pace, DiscardRequests: true})
	upLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	upstream := &http.Server{Handler: fake}
	go upstream.Serve(upLn)
	defer upstream.Close()
	defer fake.Close()
	upURL := "http://" + upLn.Addr().String() + "/v1"

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Streams + 16, MaxConnsPerHost: 0, DisableCompression: true}}
	defer client.CloseIdleConnections()

	// The floor's passes: each opens its connections anew, as the
	// load's clients do (see pass below).
	var fl floorPasses
	floorPass := func() error {
		client.CloseIdleConnections()
		logf("floor: %d concurrent streams straight to the fake upstream", cfg.Streams)
		t := time.Now()
		ttfb, first, stream, tokens, err := floor(ctx, client, upURL, cfg.Streams, cfg.Ramp)
		fl.ttfb, fl.first, fl.stream = append(fl.ttfb, ttfb...), append(fl.first, first...), append(fl.stream, stream...)
		fl.tokens += tokens
		fl.elapsed += time.Since(t)
		if err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		return nil
	}
	floorStart := time.Now()
	if err := floorPass(); err != nil {
		return res, err
	}
	// A soak reports the first pass's floor; the load, every pass's.
	res.FloorTTFB, res.FloorFirstText = percent(fl.ttfb), percent(fl.first)
	res.FloorTokensPerSecond = float64(fl.tokens) / fl.elapsed.Seconds()

	dir, err := os.MkdirTemp("", "agentchat-bench-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	var servers []*server
	for i := range max(cfg.Replicas, 1) {
		s, err := startServer(ctx, cfg, upURL, filepath.Join(dir, fmt.Sprint(i)), i)
		if err != nil {
			return res, err
		}
		defer s.stop()
		servers = append(servers, s)
	}
	// Warm up each server (first-use allocations, connection pools).
	for _, s := range servers {
		if _, err := chat(ctx, client, s.url, nil); err != nil {
			return res, fmt.Errorf("warm-up: %w", err)
		}
	}
	for _, s := range servers {
		if s.idleRSS, _, err = s.proc.memory(); err != nil {
			return res, err
		}
		res.IdleRSSMiB += float64(s.idleRSS) / 1024
	}

	if cfg.IdleProbe {
		kib, err := idleStreams(ctx, client, servers, cfg.Streams)
		if err != nil {
			return res, fmt.Errorf("idle streams: %w", err)
		}
		res.KiBPerIdle = kib
	}

	if cfg.Soak > 0 {
		res.Soak, err = soak(ctx, cfg, client, servers, logf)
		if res.Soak != nil {
			res.Errors = res.Soak.Errors
		}
		return res, err
	}

	overflows0, overflowsErr := servers[0].proc.listenOverflows()
	cpu0, err := serversCPU(servers)
	if err != nil {
		return res, err
	}
	for _, s := range servers {
		s.proc.resetPeak()
	}
	// The serial parts' counters before the load; a server whose metrics
	// cannot be read (an older binary) reports none.
	before := make([]metricsSample, len(servers))
	for i, s := range servers {
		before[i], _ = scrape(ctx, client, s.metricsURL)
	}
	profiled := make(chan error, 1)
	if cfg.ProfileDir != "" {
		go func() {
			profiled <- profile(ctx, client, servers[0].debugURL, time.Since(floorStart), cfg.ProfileStart, cfg.ProfileDir)
		}()
	} else {
		profiled <- nil
	}
	peak := make([]int64, len(servers))
	var ld loadPasses
	rounds := max(cfg.Rounds, 1)
	for r := range rounds {
		if r > 0 {
			if err := floorPass(); err != nil {
				return res, err
			}
		}
		logf("load: %d concurrent chats of %d tokens at %s/token over %d server(s) (round %d of %d)", cfg.Streams, cfg.Tokens, cfg.Pace, len(servers), r+1, rounds)
		ld.pass(ctx, cfg, client, servers, peak, logf)
	}
	res.FloorTTFB, res.FloorFirstText = percent(fl.ttfb), percent(fl.first)
	res.FloorTokensPerSecond = float64(fl.tokens) / fl.elapsed.Seconds()
	after := make([]metricsSample, len(servers))
	for i, s := range servers {
		after[i], _ = scrape(ctx, client, s.metricsURL)
	}
	res.Serial = serialParts(before, after, ld.elapsed.Seconds())
	if err := <-profiled; err != nil {
		return res, fmt.Errorf("profiles: %w", err)
	}
	cpu1, err := serversCPU(servers)
	if err != nil {
		return res, err
	}
	for i, s := range servers {
		_, hwm, err := s.proc.memory()
		if err != nil {
			return res, err
		}
		peak[i] = max(peak[i], hwm)
		res.PeakRSSMiB += float64(peak[i]) / 1024
		res.KiBPerActive += float64(peak[i]-s.idleRSS) / float64(cfg.Streams)
	}
	res.ServerFirstTextMean = serverFirstText(before, after)
	if len(ld.firsts) > 0 {
		var sum time.Duration
		for _, d := range ld.firsts {
			sum += d
		}
		res.FirstTextMean = float64(sum.Microseconds()) / 1000 / float64(len(ld.firsts))
	}
	res.TTFB, res.FirstText = percent(ld.ttfbs), percent(ld.firsts)
	res.FloorStreamTime, res.StreamTime, res.EndTail = percent(fl.stream), percent(ld.streams), percent(ld.tails)
	res.ListenOverflows = -1
	if overflows1, err := servers[0].proc.listenOverflows(); err == nil && overflowsErr == nil {
		res.ListenOverflows = overflows1 - overflows0
	}
	res.Errors = int(ld.errs.Load())
	res.Refused, res.FailedRuns, res.NoEnd = int(ld.refused.Load()), int(ld.failed.Load()), int(ld.noEnd.Load())
	res.TokensDelivered = ld.tokens.Load()
	res.Elapsed = ld.elapsed.Seconds()
	res.TokensPerSecond = float64(res.TokensDelivered) / res.Elapsed
	res.ServerCPUms = cpu1 - cpu0
	if res.TokensDelivered > 0 {
		res.CPUmsPer1kTokens = res.ServerCPUms / float64(res.TokensDelivered) * 1000
	}
	return res, nil
}

// floorPasses sums the floor's passes.
type floorPasses struct {
	ttfb, first, stream []time.Duration
	tokens              int64
	elapsed             time.Duration
}

// loadPasses sums the load's passes through the servers.
type loadPasses struct {
	mu                            sync.Mutex
	ttfbs, firsts, streams, tails []time.Duration
	tokens                        atomic.Int64
	errs, refused, failed, noEnd  atomic.Int64
	elapsed                       time.Duration
}

// pass runs one load: cfg.Streams chats spread over the servers, arriving
// as cfg.Ramp says, each on a connection of its own (the client's idle
// ones are closed first, so every pass opens its connections as the
// first did). peak keeps each server's greatest RSS sampled.
func (ld *loadPasses) pass(ctx context.Context, cfg Config, client *http.Client, servers []*server, peak []int64, logf func(string, ...any)) {
	client.CloseIdleConnections()
	var wg sync.WaitGroup
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(sampled)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
				for i, s := range servers {
					if rss, _, err := s.proc.memory(); err == nil { // a missed sample; the peak (VmHWM) covers it
						peak[i] = max(peak[i], rss)
					}
				}
			}
		}
	}()
	// A client that is never told its run ended gives up here, and counts.
	deadline := time.Duration(cfg.Tokens)*cfg.Pace*10 + 2*time.Minute
	for i := range cfg.Streams {
		wg.Go(func() {
			if !arrive(ctx, start, i, cfg.Streams, cfg.Ramp) {
				ld.errs.Add(1)
				ld.noEnd.Add(1)
				return
			}
			cctx, cancel := context.WithTimeout(ctx, deadline)
			defer cancel()
			m, err := chat(cctx, client, servers[i%len(servers)].url, nil)
			if err != nil {
				ld.errs.Add(1)
				switch {
				case errors.Is(err, errRefused):
					ld.refused.Add(1)
				case errors.Is(err, errRunFailed):
					ld.failed.Add(1)
				default:
					ld.noEnd.Add(1)
				}
				if ld.errs.Load() <= 20 {
					logf("chat %d: %v", i, err)
				}
				return
			}
			ld.tokens.Add(int64(m.deltas))
			ld.mu.Lock()
			ld.ttfbs, ld.firsts = append(ld.ttfbs, m.ttfb), append(ld.firsts, m.firstText)
			ld.streams, ld.tails = append(ld.streams, m.end), append(ld.tails, m.end-m.lastText)
			ld.mu.Unlock()
		})
	}
	wg.Wait()
	ld.elapsed += time.Since(start)
	close(stopSampling)
	<-sampled // the sampler has stopped writing peak
}

// traceWindow is how long the execution trace of a profiled load runs: a
// couple of seconds of a loaded server is a few MiB of trace (1.2 MiB at
// a thousand streams on two cores), which go tool trace opens quickly.
const traceWindow = 2 * time.Second

// profile writes the profiles the server at debugURL takes over the next
// window to dir (see Config.ProfileDir), the snapshots and the trace from
// its start when atStart is set, else from halfway.
func profile(ctx context.Context, client *http.Client, debugURL string, window time.Duration, atStart bool, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	seconds := int(window.Seconds()) + 1
	cpu := make(chan error, 1)
	go func() {
		cpu <- fetchProfile(ctx, client, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", debugURL, seconds), filepath.Join(dir, "cpu.pprof"))
	}()
	if !atStart {
		select {
		case <-time.After(time.Duration(seconds) * time.Second / 2):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// The trace shows what the CPU profile cannot: where a goroutine that
	// is not running waits (a syscall, the scheduler, a lock), such as the
	// write connection's holder between its CPU samples.
	trace := make(chan error, 1)
	go func() {
		trace <- fetchProfile(ctx, client, fmt.Sprintf("%s/debug/pprof/trace?seconds=%d", debugURL, int(traceWindow.Seconds())), filepath.Join(dir, "trace.out"))
	}()
	err := errors.Join(
		fetchProfile(ctx, client, debugURL+"/debug/pprof/heap", filepath.Join(dir, "heap.pprof")),
		fetchProfile(ctx, client, debugURL+"/debug/pprof/goroutine", filepath.Join(dir, "goroutine.pprof")))
	err = errors.Join(err, <-trace, <-cpu)
	return errors.Join(err, fetchProfile(ctx, client, debugURL+"/debug/pprof/mutex", filepath.Join(dir, "mutex.pprof")))
}

// fetchProfile writes the profile at url to path.
func fetchProfile(ctx context.Context, client *http.Client, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// arrive waits until stream i of n is due when n arrive evenly over ramp
// from start; false if ctx ends first.
func arrive(ctx context.Context, start time.Time, i, n int, ramp time.Duration) bool {
	if ramp <= 0 {
		return true
	}
	t := time.NewTimer(time.Until(start.Add(ramp * time.Duration(i) / time.Duration(n))))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// floor measures the upstream alone: N concurrent streaming requests, and
// the text chunks they delivered.
func floor(ctx context.Context, client *http.Client, upURL string, n int, ramp time.Duration) (ttfb, first, stream []time.Duration, tokens int64, err error) {
	var count atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	body := []byte(`{"model":"bench","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			if !arrive(ctx, start, i, n, ramp) {
				return
			}
			t0 := time.Now()
			req, _ := http.NewRequestWithContext(ctx, "POST", upURL+"/chat/completions", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
				return
			}
			defer resp.Body.Close()
			tb := time.Since(t0)
			var ft time.Duration
			br := bufio.NewReader(resp.Body)
			for {
				line, err := br.ReadSlice('\n')
				// The first chunk only names the role (content ""); text starts after it.
				if bytes.Contains(line, []byte(`"content":"`)) && !bytes.Contains(line, []byte(`"content":""`)) {
					if ft == 0 {
						ft = time.Since(t0)
					}
					count.Add(1)
				}
				if err != nil || bytes.HasPrefix(line, []byte("data: [DONE]")) {
					break
				}
			}
			st := time.Since(t0)
			mu.Lock()
			ttfb, first, stream = append(ttfb, tb), append(first, ft), append(stream, st)
			mu.Unlock()
		})
	}
	wg.Wait()
	return ttfb, first, stream, count.Load(), firstErr
}

// Kinds of failed chats.
var (
	errRefused   = errors.New("start refused")
	errRunFailed = errors.New("run did not succeed")
)

// measure is one chat's times, from its request.
type measure struct {
	ttfb, firstText, lastText, end time.Duration
	deltas                         int
}

var (
	deltaLine = []byte("event: agent.delta")
	endLine   = []byte("event: agent.end")
	okEnd     = []byte(`"status":"succeeded"`)
)

// chat runs one native chat and times it. The frames are scanned, not
// decoded: the load generator must not be the bottleneck.
func chat(ctx context.Context, client *http.Client, base string, conv *string) (measure, error) {
	var m measure
	body := `{"input":"Write me a long story."}`
	t0 := time.Now()
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/agent/chat", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer bench-token")
	resp, err := client.Do(req)
	if err != nil {
		return m, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return m, fmt.Errorf("%w: status %d: %s", errRefused, resp.StatusCode, b)
	}
	m.ttfb = time.Since(t0)
	br := bufio.NewReaderSize(resp.Body, 16<<10)
	ended := false
	for {
		line, err := br.ReadSlice('\n')
		if bytes.HasPrefix(line, deltaLine) {
			m.lastText = time.Since(t0)
			if m.deltas == 0 {
				m.firstText = m.lastText
			}
			m.deltas++
		} else if bytes.HasPrefix(line, endLine) {
			ended = true
		} else if ended && bytes.HasPrefix(line, []byte("data: ")) {
			if !bytes.Contains(line, okEnd) {
				return m, fmt.Errorf("%w: %s", errRunFailed, bytes.TrimSpace(line))
			}
			m.end = time.Since(t0)
			return m, nil
		}
		if err != nil {
			return m, fmt.Errorf("stream ended before agent.end: %w", err)
		}
	}
}

// idleStreams opens n idle conversation streams and reports the servers'
// memory per stream.
func idleStreams(ctx context.Context, client *http.Client, servers []*server, n int) (float64, error) {
	before, err := totalRSS(servers)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var bodies []io.Closer
	defer func() {
		for _, b := range bodies {
			b.Close()
		}
	}()
	for i := range n {
		s := servers[i%len(servers)]
		req, _ := http.NewRequestWithContext(ctx, "POST", s.url+"/v1/conversations", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer bench-token")
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		var c struct{ ID string }
		json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		req, _ = http.NewRequestWithContext(ctx, "GET", s.url+"/v1/conversations/"+c.ID+"/events", nil)
		req.Header.Set("Authorization", "Bearer bench-token")
		resp, err = client.Do(req)
		if err != nil {
			return 0, err
		}
		// Read the preamble so the stream is really open on the server.
		br := bufio.NewReader(resp.Body)
		if _, err := br.ReadString('\n'); err != nil {
			return 0, err
		}
		bodies = append(bodies, resp.Body)
	}
	after, err := totalRSS(servers)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(n), nil
}

// totalRSS is the servers' resident memory in KiB.
func totalRSS(servers []*server) (int64, error) {
	total := int64(0)
	for _, s := range servers {
		rss, _, err := s.proc.memory()
		if err != nil {
			return 0, err
		}
		total += rss
	}
	return total, nil
}

// server is one agentchat process.
type server struct {
	cmd        *exec.Cmd
	url        string
	debugURL   string // its pprof listener
	metricsURL string // its metrics listener
	proc       procReader
	idleRSS    int64 // KiB
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startServer starts an agentchat server process tied to this one (a
// bench killed outright leaves no server running) and waits until it is
// ready.
func startServer(ctx context.Context, cfg Config, upURL, dataDir string, i int) (*server, error) {
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	// The pprof listener gives a soak the server's goroutine count.
	debugAddr, err := freePort()
	if err != nil {
		return nil, err
	}
	// The metrics listener gives the serial parts' busy time.
	metricsAddr, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cfg.Binary, "serve")
	cmd.Env = append(os.Environ(), "AGENTCHAT_DEBUG_ADDR="+debugAddr, "AGENTCHAT_METRICS_ADDR="+metricsAddr,
		"AGENTCHAT_ADDR="+addr, "AGENTCHAT_DATA_DIR="+dataDir, "AGENTCHAT_TOKENS=bench-token:bench:bench",
		"AGENTCHAT_LLM=openai", "OPENAI_BASE_URL="+upURL, "OPENAI_API_KEY=bench", "AGENTCHAT_MODEL=bench",
		"AGENTCHAT_LOG_LEVEL=warn", "AGENTCHAT_STORE="+cfg.Store, "AGENTCHAT_BUS="+cfg.Bus,
		"AGENTCHAT_BUS_PREFIX="+cfg.BusPrefix)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := tied.Start(cmd); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, url: "http://" + addr, debugURL: "http://" + debugAddr, metricsURL: "http://" + metricsAddr}
	if s.proc, err = newProcReader(procfs.DefaultMountPoint, cmd.Process.Pid); err != nil {
		s.stop()
		return nil, fmt.Errorf("bench reads server CPU time and memory from %s: %w", procfs.DefaultMountPoint, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.stop()
			return nil, errors.New("server did not become ready")
		}
		time.Sleep(50 * time.Millisecond) // polling another process's readiness
	}
}

func (s *server) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}
