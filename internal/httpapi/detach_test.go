package httpapi_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/ssetest"
)

// streamGoroutines counts the goroutines serving streams.
func streamGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") { // a goroutine's stack may hold several of its frames
		if strings.Contains(g, "httpapi.(*sseStream)") {
			n++
		}
	}
	return n
}

// waitFor polls cond until it holds, failing the test after a bounded
// number of looks: what it waits for (a leave noticed on a socket) sends
// no event to wait on.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 2000 {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s: not after 2000 looks", what)
}

// Idle thread streams on HTTP/1.1 detach from net/http (detach.go): they keep
// the headers every middleware set, count as open streams, park with no
// goroutine, and when their clients leave they free everything: the
// open-stream gauge and the goroutines serving streams return to where they
// were. On Linux the leave is heard at once (the pings here are an hour
// apart); elsewhere the pings' writes find it. Not parallel: it counts the
// process's goroutines.
func TestDetachedStreamsFreeEverythingOnLeave(t *testing.T) {
	ping := time.Hour
	if runtime.GOOS != "linux" {
		ping = 20 * time.Millisecond
	}
	e := setup(t, options{corsOrigins: []string{appOrigin}, ping: ping})
	const n = 20
	gauge := `agentchat_streams_open{format="native"}`
	open0 := e.scrape()[gauge]
	serving0 := streamGoroutines()

	client := &http.Client{Transport: &http.Transport{}}
	var bodies []*http.Response
	var convs []string
	for range n {
		c := e.call(req{method: "POST", path: "/v1/conversations", token: alice}, 200)
		convs = append(convs, c["id"].(string))
		r, _ := http.NewRequest("GET", e.url+"/v1/conversations/"+c["id"].(string)+"/events", nil)
		r.Header.Set("Authorization", "Bearer "+alice)
		r.Header.Set("Origin", appOrigin)
		resp, err := client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, resp)
		h := resp.Header
		if resp.StatusCode != 200 || h.Get("Content-Type") != "text/event-stream" || h.Get("X-Request-ID") == "" ||
			h.Get("Access-Control-Allow-Origin") != appOrigin || h.Get("X-Accel-Buffering") != "no" ||
			resp.TransferEncoding == nil || resp.TransferEncoding[0] != "chunked" {
			t.Fatalf("status %d, transfer encoding %v, headers %v", resp.StatusCode, resp.TransferEncoding, h)
		}
		if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.HasPrefix(line, "retry: ") {
			t.Fatalf("stream starts with %q, %v", line, err)
		}
	}
	// Each stream detaches once its preamble is out, and then no goroutine
	// serves it, though it stays open (and pings).
	waitFor(t, "streams parked", func() bool { return streamGoroutines() == serving0 })
	if got := e.scrape()[gauge]; got != open0+n {
		t.Fatalf("open streams %v, want %v", got, open0+n)
	}
	// A parked stream is woken by a run on its conversation.
	rd := ssetest.NewReader(bodies[0].Body)
	frames := e.chat(alice, map[string]any{"conversationId": convs[0], "input": "hi"})
	if watched := readNative(t, rd, "agent.end"); len(watched) != len(frames) || len(frames) < 3 {
		t.Fatalf("the parked stream saw %d events, the chat %d", len(watched), len(frames))
	}

	for _, resp := range bodies {
		resp.Body.Close()
	}
	client.CloseIdleConnections()
	waitFor(t, "streams freed", func() bool { return e.scrape()[gauge] == open0 })
	if got := streamGoroutines(); got != serving0 {
		t.Fatalf("%d goroutines serve streams, want %d", got, serving0)
	}
}

// On HTTP/2, which cannot hand a connection over, an idle stream is served
// where it is, by its handler, as before.
func TestIdleStreamOnHTTP2StaysInItsHandler(t *testing.T) {
	e := setup(t, options{})
	srv := httptest.NewUnstartedServer(e.api)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	serving0 := streamGoroutines()
	c := e.call(req{method: "POST", path: "/v1/conversations", token: alice}, 200)
	r, _ := http.NewRequest("GET", srv.URL+"/v1/conversations/"+c["id"].(string)+"/events", nil)
	r.Header.Set("Authorization", "Bearer "+alice)
	resp, err := srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 || resp.Header.Get("X-Request-ID") == "" {
		t.Fatalf("%s %d, headers %v", resp.Proto, resp.StatusCode, resp.Header)
	}
	rd := ssetest.NewReader(resp.Body)
	if f, err := rd.Next(); err != nil || f.Retry == 0 {
		t.Fatalf("first frame %+v, %v", f, err)
	}
	if got := streamGoroutines(); got != serving0+1 {
		t.Fatalf("%d goroutines serve streams, want %d", got, serving0+1)
	}
	frames := e.chat(alice, map[string]any{"conversationId": c["id"], "input": "hi"})
	watched := readNative(t, rd, "agent.end")
	if len(watched) != len(frames) {
		t.Fatalf("the HTTP/2 stream saw %d events, the chat %d", len(watched), len(frames))
	}
	resp.Body.Close()
	waitFor(t, "stream freed", func() bool { return streamGoroutines() == serving0 })
}

// A parked stream pings: its ping timer wakes it.
func TestParkedStreamPings(t *testing.T) {
	e := setup(t, options{ping: 20 * time.Millisecond})
	serving0 := streamGoroutines()
	c := e.call(req{method: "POST", path: "/v1/conversations", token: alice}, 200)
	rd, _ := e.stream(req{method: "GET", path: "/v1/conversations/" + c["id"].(string) + "/events", token: alice})
	waitFor(t, "stream parked", func() bool { return streamGoroutines() == serving0 })
	if f, err := rd.Next(); err != nil || f.Retry == 0 {
		t.Fatalf("preamble: %+v, %v", f, err)
	}
	for range 2 {
		if f, err := rd.Next(); err != nil || f.Event != "ping" {
			t.Fatalf("parked stream: %+v, %v", f, err)
		}
	}
}

// Close wakes parked streams: each says why it ends and ends its body
// cleanly (the last chunk), before Close returns.
func TestShutdownEndsParkedStreams(t *testing.T) {
	e := setup(t, options{})
	serving0 := streamGoroutines()
	var rds []*ssetest.Reader
	for range 3 {
		c := e.call(req{method: "POST", path: "/v1/conversations", token: alice}, 200)
		rd, _ := e.stream(req{method: "GET", path: "/v1/conversations/" + c["id"].(string) + "/events", token: alice})
		rds = append(rds, rd)
	}
	waitFor(t, "streams parked", func() bool { return streamGoroutines() == serving0 })
	e.api.Close()
	for _, rd := range rds {
		frames := readNative(t, rd, "") // to the body's end: a cut body fails here
		if len(frames) != 1 || frames[0].Event != "error" || frames[0].Data["code"] != "server_shutdown" {
			t.Fatalf("stream ended with %v", frames)
		}
	}
}

// Streams whose run is in progress detach too, in every dialect: the chats
// a POST starts (native, the observable stream, the AI SDK's, AG-UI's run)
// and a run's event stream. While the runs stream no goroutine serves them;
// the frames go on to each dialect's end; and each connection then serves
// the client's next request (keep.go). Not parallel: it counts the
// process's goroutines.
func TestActiveStreamsDetach(t *testing.T) {
	g := newGate()
	e := setup(t, options{model: g, ping: time.Hour})
	serving0 := streamGoroutines()
	formats := []string{"native", "conversation", "vercel", "agui"}
	gauge := func(f string) string { return `agentchat_streams_open{format="` + f + `"}` }
	before := e.scrape()

	var reused atomic.Int32
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if i.Reused {
			reused.Add(1)
		}
	}}
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	send := func(method, path, body string) *http.Response {
		r, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), method, e.url+path, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+alice)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "text/event-stream")
		resp, err := client.Do(r)
		if err != nil || resp.StatusCode != 200 || resp.TransferEncoding == nil {
			t.Fatalf("%s %s: %v %v", method, path, resp, err)
		}
		return resp
	}
	type stream struct {
		name, end string // a line of the stream's last frame
		resp      *http.Response
		rd        *bufio.Reader
		head      string // what came up to the first text
	}
	streams := []*stream{
		{name: "native", end: `"event":"agent.end"`, resp: send("POST", "/v1/agent/chat", `{"input":"hi"}`)},
		{name: "conversation", end: `"type":"done"`, resp: send("POST", "/v1/agent/chat?format=conversation", `{"input":"hi"}`)},
		{name: "vercel", end: "data: [DONE]", resp: send("POST", "/v1/agent/chat?format=vercel-ai", `{"input":"hi"}`)},
		{name: "agui", end: `"type":"RUN_FINISHED"`, resp: send("POST", "/api/v1/agent/runs",
			`{"threadId":"","runId":"r1","messages":[{"id":"m1","role":"user","content":"hi"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`)},
	}
	firstText := func(st *stream) {
		st.rd = bufio.NewReader(st.resp.Body)
		for !strings.Contains(st.head, "Hello") {
			line, err := st.rd.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: %v after %q", st.name, err, st.head)
			}
			st.head += line
		}
	}
	for _, st := range streams {
		firstText(st)
	}
	// A run's event stream, opened while its run waits for the gate.
	runID := regexp.MustCompile(`"runId":"([^"]+)"`).FindStringSubmatch(streams[0].head)
	if runID == nil {
		t.Fatalf("no run id in %q", streams[0].head)
	}
	events := &stream{name: "run events", end: `"event":"agent.end"`, resp: send("GET", "/v1/agent/runs/"+runID[1]+"/events", "")}
	firstText(events)
	streams = append(streams, events)

	waitFor(t, "active streams parked", func() bool { return streamGoroutines() == serving0 })
	open := e.scrape()
	for _, f := range formats {
		want := before[gauge(f)] + 1
		if f == "native" {
			want++ // the chat's and the run's event stream
		}
		if open[gauge(f)] != want {
			t.Errorf("%s: %v open streams, want %v", gauge(f), open[gauge(f)], want)
		}
	}

	close(g.release)
	for _, st := range streams {
		rest, err := io.ReadAll(st.rd)
		if err != nil || !strings.Contains(string(rest), st.end) || !strings.Contains(string(rest), "gate.") {
			t.Fatalf("%s ended with %q, %v; want the rest of the text and %s", st.name, rest, err, st.end)
		}
		st.resp.Body.Close()
	}
	waitFor(t, "streams closed", func() bool {
		now := e.scrape()
		for _, f := range formats {
			if now[gauge(f)] != before[gauge(f)] {
				return false
			}
		}
		return true
	})
	// The connections serve the client's next requests.
	reused.Store(0)
	for range streams {
		resp := send("POST", "/v1/agent/chat", `{"input":"again"}`)
		if rest, err := io.ReadAll(resp.Body); err != nil || !strings.Contains(string(rest), `"event":"agent.end"`) {
			t.Fatalf("next chat: %q, %v", rest, err)
		}
		resp.Body.Close()
	}
	if reused.Load() != int32(len(streams)) {
		t.Fatalf("%d of %d requests reused a connection after the detached streams ended", reused.Load(), len(streams))
	}
}

// A client that leaves while its run streams frees its detached stream at
// once (the open-stream gauge and the goroutines return); the run goes on
// to its end, and the client can watch it again by its events.
func TestActiveStreamLeaveKeepsTheRun(t *testing.T) {
	g := newGate()
	e := setup(t, options{model: g, ping: time.Hour})
	serving0 := streamGoroutines()
	gauge := `agentchat_streams_open{format="native"}`
	open0 := e.scrape()[gauge]
	rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "hi"}})
	start := readNative(t, rd, "agent.start")
	runID, _ := start[len(start)-1].Data["runId"].(string)
	<-g.started
	waitFor(t, "stream parked", func() bool { return streamGoroutines() == serving0 && e.scrape()[gauge] == open0+1 })
	resp.Body.Close()
	e.client.CloseIdleConnections()
	waitFor(t, "stream freed", func() bool { return e.scrape()[gauge] == open0 })
	close(g.release)
	rd, resp = e.stream(req{method: "GET", path: "/v1/agent/runs/" + runID + "/events", token: alice})
	defer resp.Body.Close()
	frames := readNative(t, rd, "")
	if end := frames[len(frames)-1]; end.Event != "agent.end" || end.Data["status"] != "succeeded" {
		t.Fatalf("the run ended with %v", end)
	}
	if got := streamGoroutines(); got != serving0 {
		t.Fatalf("%d goroutines serve streams, want %d", got, serving0)
	}
}

// Close during a run: a detached chat stream says why it ends, in its
// dialect, and ends its body cleanly.
func TestShutdownEndsActiveStreams(t *testing.T) {
	g := newGate()
	e := setup(t, options{model: g, ping: time.Hour})
	t.Cleanup(func() { close(g.release) })
	serving0 := streamGoroutines()
	rd, _ := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "hi"}})
	readNative(t, rd, "agent.delta")
	waitFor(t, "stream parked", func() bool { return streamGoroutines() == serving0 })
	e.api.Close()
	frames := readNative(t, rd, "") // to the body's end: a cut body fails here
	if len(frames) == 0 || frames[len(frames)-1].Event != "error" || frames[len(frames)-1].Data["code"] != "server_shutdown" {
		t.Fatalf("stream ended with %v", frames)
	}
}

// On HTTP/2 a chat's stream is served by its handler, as before.
func TestActiveStreamOnHTTP2StaysInItsHandler(t *testing.T) {
	g := newGate()
	e := setup(t, options{model: g, ping: time.Hour})
	srv := httptest.NewUnstartedServer(e.api)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	serving0 := streamGoroutines()
	r, _ := http.NewRequest("POST", srv.URL+"/v1/agent/chat", strings.NewReader(`{"input":"hi"}`))
	r.Header.Set("Authorization", "Bearer "+alice)
	resp, err := srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 {
		t.Fatalf("%s %d", resp.Proto, resp.StatusCode)
	}
	rd := ssetest.NewReader(resp.Body)
	readNative(t, rd, "agent.delta")
	<-g.started
	if got := streamGoroutines(); got != serving0+1 {
		t.Fatalf("%d goroutines serve streams, want %d", got, serving0+1)
	}
	close(g.release)
	if frames := readNative(t, rd, ""); frames[len(frames)-1].Event != "agent.end" {
		t.Fatalf("the HTTP/2 stream ended with %v", frames[len(frames)-1])
	}
}

// A chat's stream, once detached, keeps nothing of net/http's: not the
// response its handler wrote to, which holds the connection's 4 KiB reader
// and writer, the response's 2 KiB writer and the request. The request's
// body deadline kept the response's controller in the context the stream
// keeps (about 12 KiB live a stream for its whole life). The test serves
// the API through a handler that notes when net/http's request, which its
// response holds, is freed,
// and holds the run mid-answer, its stream parked, until then. Not
// parallel: it counts the process's goroutines.
func TestDetachedStreamKeepsNoResponse(t *testing.T) {
	g := newGate()
	e := setup(t, options{model: g, ping: time.Hour})
	serving0 := streamGoroutines()
	freed := make(chan struct{})
	var once atomic.Bool
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/agent/chat" && once.CompareAndSwap(false, true) {
			// net/http's *response holds r (its req) and is held by its
			// connection, which it holds: a cycle, so a finalizer on the
			// response would never run. A cleanup on r runs once nothing
			// reaches the response (or r) any more.
			runtime.AddCleanup(r, func(struct{}) { close(freed) }, struct{}{})
		}
		e.api.ServeHTTP(w, r)
	}))
	srv.Listener = e.api.Listen(srv.Listener, 0)
	srv.Start()
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	r, _ := http.NewRequest("POST", srv.URL+"/v1/agent/chat", strings.NewReader(`{"input":"hi"}`))
	r.Header.Set("Authorization", "Bearer "+alice)
	r.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(r)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("chat: %v %v", resp, err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	for head := ""; !strings.Contains(head, "Hello"); {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("%v after %q", err, head)
		}
		head += line
	}
	waitFor(t, "the stream parked", func() bool { return streamGoroutines() == serving0 })
	waitFor(t, "net/http's response freed while the stream is parked", func() bool {
		runtime.GC()
		select {
		case <-freed:
			return true
		default:
			return false
		}
	})
	close(g.release)
	if rest, err := io.ReadAll(rd); err != nil || !strings.Contains(string(rest), `"event":"agent.end"`) {
		t.Fatalf("the stream ended with %q, %v", rest, err)
	}
}
