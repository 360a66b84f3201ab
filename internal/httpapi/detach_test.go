package httpapi_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
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
	return strings.Count(string(buf), "httpapi.(*sseStream)")
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
