package fakeupstream

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentchat/agentchat/internal/llm"
)

// Failure is how a scripted reply goes wrong.
type Failure int

// Failures a Reply can script. Except FailStatus and FailHang, each happens
// after Reply.FailAfter events of the stream, and never reaches the stream's
// end marker.
const (
	FailNone       Failure = iota
	FailStatus             // answer Reply.Status with the provider's error body, no stream
	FailHang               // send nothing, not even headers, until the client goes away
	FailStall              // stream FailAfter events, then send nothing more until the client goes away
	FailCut                // stream FailAfter events, then close the TCP connection mid-body
	FailMalformed          // stream FailAfter events, then one event whose data is not JSON
	FailNoEnd              // stream FailAfter events, then end the body cleanly without the end marker
	FailErrorEvent         // stream FailAfter events, then the provider's in-stream error event
)

// ToolCall is a tool call a Reply streams: the first event names it, then
// each argument fragment is its own event, as real providers split them.
type ToolCall struct {
	ID   string
	Name string
	Args []string // fragments of the JSON arguments, in order
}

// Reply scripts one answer.
type Reply struct {
	Reasoning []string   // reasoning deltas, streamed first
	Text      []string   // text deltas, streamed after the reasoning
	ToolCalls []ToolCall // streamed after the text
	// FinishReason in llm terms ("stop", "tool_calls", "length"); the Anthropic
	// fake translates it. Default "tool_calls" when ToolCalls is set, else "stop".
	FinishReason string
	// Usage reported at the end. Default: 10 input tokens, one output token
	// per delta. The OpenAI fake sends it only when the request asked for it
	// (stream_options.include_usage), as OpenAI does.
	Usage *llm.Usage

	Fail      Failure
	FailAfter int // events streamed before the failure
	// Status, ErrorType, ErrorCode and ErrorMessage make the error body of
	// FailStatus (and the error of FailErrorEvent). Defaults depend on Status;
	// a 401's default message quotes the API key the request carried, as some
	// providers do, so tests can prove the adapters never repeat it.
	Status       int
	ErrorType    string
	ErrorCode    string
	ErrorMessage string
	// RawErrorBody, when set, is the FailStatus body verbatim, such as the
	// HTML page a proxy answers with.
	RawErrorBody string
	// Header is added to the response (e.g. Retry-After with a 429).
	Header http.Header
	// Hold and HoldAfter hold this reply alone as Options.Hold holds
	// every one (they replace it for this reply): a test whose earlier
	// replies must run through can stop the one it needs mid-stream.
	Hold      <-chan struct{}
	HoldAfter int
}

// TextReply is a reply streaming s word by word.
func TextReply(s string) Reply { return Reply{Text: Words(s)} }

// Words splits s into tokens the way models stream them: each word with
// its leading spaces. Joining the tokens gives s back.
func Words(s string) []string { return llm.SplitTokens(s) }

// Options configure a Handler.
type Options struct {
	// Replies answer the requests in order; the last one answers every request after it.
	Replies []Reply
	// Reply, when set, chooses each answer from the request instead.
	Reply func(Request) Reply
	// Tokens is the length of the default answer (when neither Replies nor
	// Reply is set): a request's max_tokens when it has one, else Tokens,
	// default 20. A benchmark sets the answer length T per request this way.
	Tokens int
	// Delay paces every stream: event i after the first is due Delay×i
	// after the first, as a model produces tokens at its own rate. A frame
	// written late does not push the ones after it back: paced by a pause
	// after each write, a stream on a loaded machine took a quarter longer
	// than Delay said (each pause's own scheduling delay, 200 times), and a
	// benchmark charged the server under test with its upstream's lag
	// (docs/benchmarks.md, "fourteenth round", "The fake model's pace").
	Delay time.Duration
	// Hold, when set, stops every stream after its first HoldAfter events
	// (at least one) until Hold is closed, so that a test can keep streams
	// going until it has done what it needs mid-stream, whatever the
	// machine's speed, instead of counting on a pace to be slow enough.
	Hold      <-chan struct{}
	HoldAfter int
	// DiscardRequests stops the recording of requests, for long benchmarks.
	DiscardRequests bool
	// OnRequest, when set, is called with each request as it arrives, before
	// it is answered: a test can wait for it instead of sleeping.
	OnRequest func(Request)
}

// Request is one request a Handler received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Raw    []byte         // the body as sent
	Body   map[string]any // the body decoded; nil if it was not a JSON object
	// Gone is closed when the Handler saw the client go away (the request's
	// context ended) before the answer was complete: proof that cancelling
	// the caller's context stops the upstream request.
	Gone <-chan struct{}
}

// APIKey is the key the request carried: the bearer token, or x-api-key.
func (r Request) APIKey() string {
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return k
	}
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// Handler is a fake provider upstream. It is an http.Handler.
type Handler struct {
	opts Options
	wire wire

	mu   sync.Mutex
	reqs []Request
	n    int

	stop     chan struct{}
	stopOnce sync.Once
}

// wire is one provider's wire format.
type wire interface {
	accepts(r *http.Request) bool
	errorBody(rep Reply, key string) (status int, body []byte)
	// frames are the SSE frames of rep: the content frames, then the end
	// frames (finish, usage, end marker) that a failure never reaches.
	frames(rep Reply, req Request) (content, end [][]byte)
	malformed() []byte
	errorEvent(rep Reply) []byte
}

// OpenAIHandler returns a fake OpenAI-compatible upstream serving POST …/chat/completions.
func OpenAIHandler(opts Options) *Handler { return newHandler(opts, openaiWire{}) }

// AnthropicHandler returns a fake Anthropic upstream serving POST …/v1/messages.
func AnthropicHandler(opts Options) *Handler { return newHandler(opts, anthropicWire{}) }

func newHandler(opts Options, w wire) *Handler {
	return &Handler{opts: opts, wire: w, stop: make(chan struct{})}
}

// Close releases every request still hanging or stalled. The Handler answers
// no more requests after it.
func (f *Handler) Close() { f.stopOnce.Do(func() { close(f.stop) }) }

// Requests returns the requests received so far, in arrival order.
func (f *Handler) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.reqs...)
}

// Count is the number of requests received so far, recorded or not.
func (f *Handler) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// ServeHTTP records the request and plays its Reply in the Handler's wire format.
func (f *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !f.wire.accepts(r) {
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	gone := make(chan struct{})
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw, Gone: gone}
	if json.Unmarshal(raw, &req.Body) != nil {
		req.Body = nil
	}
	f.mu.Lock()
	n := f.n
	f.n++
	if !f.opts.DiscardRequests {
		f.reqs = append(f.reqs, req)
	}
	f.mu.Unlock()
	if f.opts.OnRequest != nil {
		f.opts.OnRequest(req)
	}

	rep := f.reply(n, req)
	p := player{w: w, r: r, gone: gone, stop: f.stop, delay: f.opts.Delay, hold: f.opts.Hold, holdAfter: max(f.opts.HoldAfter, 1)}
	if rep.Hold != nil {
		p.hold, p.holdAfter = rep.Hold, max(rep.HoldAfter, 1)
	}
	for k, vs := range rep.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	switch rep.Fail {
	case FailStatus:
		status, body := f.wire.errorBody(rep, req.APIKey())
		w.Header().Set("Content-Type", "application/json")
		if rep.RawErrorBody != "" {
			body = []byte(rep.RawErrorBody)
			w.Header().Set("Content-Type", "text/html")
		}
		w.WriteHeader(status)
		w.Write(body)
		return
	case FailHang:
		p.wait(nil)
		return
	}

	content, end := f.wire.frames(rep, req)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	http.NewResponseController(w).Flush()

	if rep.Fail == FailNone {
		p.play(append(content, end...))
		return
	}
	if !p.play(content[:min(max(rep.FailAfter, 0), len(content))]) {
		return
	}
	switch rep.Fail {
	case FailStall:
		p.wait(nil)
	case FailCut:
		rc := http.NewResponseController(w)
		rc.Flush()
		// Hijack takes the connection from the server mid-body; closing it
		// leaves the chunked body without its terminating chunk, exactly
		// what a client sees when a proxy or provider drops the stream.
		if conn, _, err := rc.Hijack(); err == nil {
			conn.Close()
		}
	case FailMalformed:
		p.play([][]byte{f.wire.malformed()})
	case FailErrorEvent:
		p.play([][]byte{f.wire.errorEvent(rep)})
	case FailNoEnd:
		// Return: the server ends the body cleanly, with no end marker.
	}
}

func (f *Handler) reply(n int, req Request) Reply {
	switch {
	case f.opts.Reply != nil:
		return f.opts.Reply(req)
	case len(f.opts.Replies) > 0:
		return f.opts.Replies[min(n, len(f.opts.Replies)-1)]
	}
	t := f.opts.Tokens
	if mt, ok := req.Body["max_tokens"].(float64); ok && mt > 0 {
		t = int(mt)
	}
	if t <= 0 {
		t = 20
	}
	return Reply{Text: Tokens(t)}
}

// Tokens returns n text tokens of filler prose.
func Tokens(n int) []string {
	words := Words("The quick brown fox jumps over the lazy dog and keeps running far away.")
	out := make([]string, n)
	for i := range out {
		w := words[i%len(words)]
		if i == 0 {
			w = strings.TrimLeft(w, " ")
		} else if !strings.HasPrefix(w, " ") {
			w = " " + w
		}
		out[i] = w
	}
	return out
}

// player writes SSE frames one by one, flushed and paced.
type player struct {
	w     http.ResponseWriter
	r     *http.Request
	gone  chan struct{}
	stop  chan struct{}
	delay time.Duration
	due   time.Time // when the frame last written was due (Options.Delay)

	hold      <-chan struct{} // Options.Hold
	holdAfter int             // frames written before waiting for hold
	written   int             // frames written so far
}

// play writes frames, each after the first due delay after the one before
// was due (Options.Delay). It reports false when the client went away or
// the Handler was closed.
func (p *player) play(frames [][]byte) bool {
	rc := http.NewResponseController(p.w)
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for i, fr := range frames {
		if p.delay > 0 {
			if i == 0 {
				p.due = time.Now()
			} else {
				p.due = p.due.Add(p.delay)
			}
			if wait := time.Until(p.due); i > 0 && wait > 0 {
				if t == nil {
					t = time.NewTimer(wait)
				} else {
					t.Reset(wait)
				}
				if !p.wait(t.C) {
					return false
				}
			}
		}
		if p.hold != nil && p.written == p.holdAfter {
			if !p.await(p.hold) {
				return false
			}
			// Held for as long as a test wanted: the pace starts anew
			// rather than catching up on the frames due meanwhile.
			p.due = time.Now()
		}
		if _, err := p.w.Write(fr); err != nil {
			p.markGone()
			return false
		}
		if err := rc.Flush(); err != nil {
			p.markGone()
			return false
		}
		p.written++
	}
	return true
}

// await blocks until c is closed (true), or the client goes away or the
// Handler is closed (false).
func (p *player) await(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	case <-p.r.Context().Done():
		p.markGone()
		return false
	case <-p.stop:
		return false
	}
}

// wait blocks until c fires (true), or the client goes away or the Handler
// is closed (false). A nil c waits only for the latter two.
func (p *player) wait(c <-chan time.Time) bool {
	select {
	case <-c:
		return true
	case <-p.r.Context().Done():
		p.markGone()
		return false
	case <-p.stop:
		return false
	}
}

func (p *player) markGone() {
	select {
	case <-p.gone:
	default:
		close(p.gone)
	}
}

// sse frames one event.
func sse(event string, data []byte) []byte {
	var b bytes.Buffer
	if event != "" {
		b.WriteString("event: " + event + "\n")
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	return b.Bytes()
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func usageOf(rep Reply) llm.Usage {
	if rep.Usage != nil {
		return *rep.Usage
	}
	out := len(rep.Reasoning) + len(rep.Text)
	for _, c := range rep.ToolCalls {
		out += 1 + len(c.Args)
	}
	return llm.Usage{InputTokens: 10, OutputTokens: out, ReasoningTokens: len(rep.Reasoning)}
}

func finishOf(rep Reply) string {
	switch {
	case rep.FinishReason != "":
		return rep.FinishReason
	case len(rep.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}
