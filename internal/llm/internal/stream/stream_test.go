package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/internal/jsonscan"
	"github.com/agentchat/agentchat/internal/llm/internal/upstream"
)

// TestMain fails the package if a stream leaves its connection's
// goroutines behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// scripted is a decoder whose events say what to do: "text:x" yields a
// chunk, "last:x" yields one and ends the answer, "bad" and "fail" yield a
// chunk and then an unparseable event or the provider's error.
type scripted struct {
	complete bool // what End reports
	ends     int  // how often End was called
	doneLine bool
	header   string // from init
}

func (d *scripted) Event(typ, data []byte, q []llm.Chunk) ([]llm.Chunk, bool, error) {
	verb, arg, _ := strings.Cut(strings.TrimSuffix(string(data), "\n"), ":")
	switch verb {
	case "text":
		return append(q, llm.Chunk{Text: arg}), false, nil
	case "last":
		return append(q, llm.Chunk{Text: arg}), true, nil
	case "bad":
		var sc jsonscan.Scanner
		return append(q, llm.Chunk{Text: "dropped"}), false, sc.Fail("not an event")
	case "fail":
		return append(q, llm.Chunk{Text: "dropped"}), false, &llm.Error{Code: llm.CodeRateLimited, Message: "slow down"}
	}
	return q, false, nil // skipped, like a ping
}

func (d *scripted) End(q []llm.Chunk, doneLine bool) ([]llm.Chunk, bool) {
	d.ends++
	d.doneLine = doneLine
	if !d.complete {
		return q, false
	}
	return append(q, llm.Chunk{FinishReason: "stop"}), true
}

// open streams body from a local server through Open, its decoder
// reporting complete at the end.
func open(t *testing.T, ctx context.Context, body string, complete bool) (llm.Stream, *scripted) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Test", "seen")
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	var dec *scripted
	s, err := Open(ctx, Upstream{Provider: upstream.Provider{Name: "the test provider", Host: "test"}},
		func(ctx context.Context) (*http.Response, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
			return srv.Client().Do(req)
		},
		func(d *scripted, resp *http.Response) {
			d.complete, d.header, dec = complete, resp.Header.Get("X-Test"), d
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dec
}

func events(data ...string) string {
	var b strings.Builder
	for _, d := range data {
		fmt.Fprintf(&b, "data: %s\n\n", d)
	}
	return b.String()
}

func read(s llm.Stream) []string {
	var got []string
	for s.Next() {
		c := s.Chunk()
		got = append(got, c.Text+c.FinishReason)
	}
	return got
}

func TestDecoderContract(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     string
		complete bool
		want     []string
		wantCode string // "" for a clean end
		wantEnds int
		doneLine bool
	}{
		{"an event ends the answer; nothing after it is read", events("text:a", "ping", "last:b", "text:never"), true,
			[]string{"a", "b", "stop"}, "", 1, false},
		{"the body's clean end, the answer complete", events("text:a", "text:b"), true,
			[]string{"a", "b", "stop"}, "", 1, false},
		{"the body's clean end, the answer incomplete", events("text:a"), false,
			[]string{"a"}, llm.CodeStreamCut, 1, false},
		{"a [DONE] line the body stops after", events("text:a") + "data: [DONE]\n", true,
			[]string{"a", "stop"}, "", 1, true},
		{"an unparseable event drops its chunks", events("text:a", "bad", "text:never"), true,
			[]string{"a"}, llm.CodeBadStream, 0, false},
		{"the provider's error is reported as it is", events("text:a", "fail"), true,
			[]string{"a"}, llm.CodeRateLimited, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, dec := open(t, t.Context(), tt.body, tt.complete)
			if got := read(s); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("chunks %q, want %q", got, tt.want)
			}
			var code string
			var lerr *llm.Error
			if errors.As(s.Err(), &lerr) {
				code = lerr.Code
			} else if s.Err() != nil {
				code = s.Err().Error()
			}
			if code != tt.wantCode {
				t.Errorf("Err = %v, want code %q", s.Err(), tt.wantCode)
			}
			if tt.wantCode == llm.CodeStreamCut && !errors.Is(s.Err(), llm.ErrStreamCut) {
				t.Errorf("Err = %v does not wrap llm.ErrStreamCut", s.Err())
			}
			if dec.ends != tt.wantEnds || dec.doneLine != tt.doneLine {
				t.Errorf("End called %d times (doneLine %v), want %d (%v)", dec.ends, dec.doneLine, tt.wantEnds, tt.doneLine)
			}
			if dec.header != "seen" {
				t.Errorf("init saw header %q: it was not given the response", dec.header)
			}
			if s.Next() {
				t.Error("Next after the end = true")
			}
		})
	}
}

// Once ctx has ended, not even the chunks already decoded are delivered.
func TestCancelDropsQueuedChunks(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	s, dec := open(t, ctx, events("text:a", "text:b")+events("text:c"), true)
	if !s.Next() || s.Chunk().Text != "a" {
		t.Fatalf("first chunk %+v, %v", s.Chunk(), s.Err())
	}
	cancel()
	if s.Next() {
		t.Fatalf("Next after cancel = true (%+v)", s.Chunk())
	}
	if !errors.Is(s.Err(), context.Canceled) || dec.ends != 0 {
		t.Errorf("Err = %v, End called %d times: want context.Canceled and no End", s.Err(), dec.ends)
	}
}

// A refused call is the provider's status error and leaves no stream.
func TestRefusedCall(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"slow down"}}`)
	}))
	t.Cleanup(srv.Close)
	inits := 0
	_, err := Open(t.Context(), Upstream{Provider: upstream.Provider{Name: "the test provider", Host: "test"}},
		func(ctx context.Context) (*http.Response, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
			resp, err := srv.Client().Do(req)
			if err == nil {
				err = errors.New("refused") // as an SDK maps a status
			}
			return resp, err
		},
		func(*scripted, *http.Response) { inits++ })
	var lerr *llm.Error
	if !errors.As(err, &lerr) || lerr.Code != llm.CodeRateLimited || lerr.Status != 429 ||
		!strings.Contains(lerr.Message, "slow down") || lerr.RetryAfter.Seconds() != 3 || inits != 0 {
		t.Fatalf("err %v (inits %d), want the 429 with its message and Retry-After, and no decoder", err, inits)
	}
}
