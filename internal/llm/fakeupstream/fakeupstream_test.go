package fakeupstream_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/llm/fakeupstream"
)

func TestWords(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "one", "Hello there,  world.", " lead", "trail "} {
		if got := strings.Join(fakeupstream.Words(s), ""); got != s {
			t.Errorf("Words(%q) joined = %q", s, got)
		}
	}
	if got := fakeupstream.Words("a b"); len(got) != 2 || got[1] != " b" {
		t.Errorf("Words(a b) = %q, want [a, ' b']", got)
	}
}

// TestHandlerWithoutT serves the fake the way a load benchmark does: its
// own server, no testing.T, the answer length set per request by max_tokens.
func TestHandlerWithoutT(t *testing.T) {
	t.Parallel()
	h := fakeupstream.OpenAIHandler(fakeupstream.Options{Tokens: 3, DiscardRequests: true})
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()

	for _, tt := range []struct {
		body string
		want int
	}{
		{`{"model":"m","stream":true}`, 3},
		{`{"model":"m","stream":true,"max_tokens":7,"stream_options":{"include_usage":true}}`, 7},
	} {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		var data []string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				data = append(data, d)
			}
		}
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Errorf("Content-Type %q", ct)
		}
		if len(data) == 0 || data[len(data)-1] != "[DONE]" {
			t.Fatalf("stream does not end with [DONE]: %q", data)
		}
		var text, usage int
		for _, d := range data[:len(data)-1] {
			var c struct {
				Object  string
				Choices []struct{ Delta struct{ Content string } }
				Usage   *struct {
					CompletionTokens int `json:"completion_tokens"`
				}
			}
			if err := json.Unmarshal([]byte(d), &c); err != nil || c.Object != "chat.completion.chunk" {
				t.Fatalf("chunk %s: %v", d, err)
			}
			if len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
				text++
			}
			if c.Usage != nil {
				usage = c.Usage.CompletionTokens
			}
		}
		if text != tt.want {
			t.Errorf("%s: %d text chunks, want %d", tt.body, text, tt.want)
		}
		if strings.Contains(tt.body, "include_usage") != (usage == tt.want) {
			t.Errorf("%s: usage %d: want it exactly when asked for", tt.body, usage)
		}
	}
	if h.Count() != 2 || len(h.Requests()) != 0 {
		t.Errorf("Count %d, recorded %d: want 2 counted, none kept", h.Count(), len(h.Requests()))
	}
}

// Hold stops a stream after HoldAfter events until it is closed: every
// stream (Options.Hold), or one reply's (Reply.Hold) while the replies
// before it run through.
func TestHold(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		opts    func(hold chan struct{}) fakeupstream.Options
		through int // requests answered whole before the held one
	}{
		{"every reply", func(hold chan struct{}) fakeupstream.Options {
			return fakeupstream.Options{Tokens: 5, Hold: hold, HoldAfter: 2}
		}, 0},
		{"one reply", func(hold chan struct{}) fakeupstream.Options {
			return fakeupstream.Options{Replies: []fakeupstream.Reply{
				{Text: fakeupstream.Tokens(5)},
				{Text: fakeupstream.Tokens(5), Hold: hold, HoldAfter: 2},
			}}
		}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			hold := make(chan struct{})
			h := fakeupstream.OpenAIHandler(tt.opts(hold))
			srv := httptest.NewServer(h)
			defer srv.Close()
			defer h.Close()
			post := func() (next func() string, done func()) {
				resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
				if err != nil {
					t.Fatal(err)
				}
				sc := bufio.NewScanner(resp.Body)
				return func() string {
					for sc.Scan() {
						if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
							return d
						}
					}
					return ""
				}, func() { resp.Body.Close() }
			}
			// The role, 5 text events, the finish, [DONE]: 8; a stream ends at [DONE].
			rest := func(next func() string, n int) int {
				for d := next(); d != ""; d = next() {
					n++
					if d == "[DONE]" {
						break
					}
				}
				return n
			}
			for range tt.through {
				next, done := post()
				if n := rest(next, 0); n != 8 {
					t.Fatalf("a reply with no hold streamed %d events before the hold was released", n)
				}
				done()
			}
			next, done := post()
			defer done()
			for range 2 {
				if next() == "" {
					t.Fatal("the stream ended before the hold")
				}
			}
			// The rest follows once the hold is released.
			close(hold)
			if n := rest(next, 2); n != 8 {
				t.Fatalf("%d events in all after the hold was released", n)
			}
			if h.Count() != tt.through+1 {
				t.Fatalf("%d requests", h.Count())
			}
		})
	}
}
