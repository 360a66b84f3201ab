package chain_test

import (
	"encoding/json"
	"errors"
	"flag"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/dialect/chain"
	"github.com/agentchat/agentchat/internal/dialect/dialecttest"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/ssetest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// verify checks every frame's envelope: the five keys plus payload (and
// final's usage, when the run used any), evt equal to the SSE event, seq
// equal to the SSE id, an RFC 3339 ts, no null.
func verify(t *testing.T, stream []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for i, f := range ssetest.Parse(t, stream) {
		dialecttest.NoNull(t, f.Data)
		env := dialecttest.Object(t, f.Data)
		keys := 6
		if _, ok := env["usage"]; ok && f.Event == "final" {
			keys++
		}
		if len(env) != keys || env["evt"] != f.Event || env["schema"] != "v1" || env["trace_id"] == "" {
			t.Fatalf("frame %d: envelope %s", i, f.Data)
		}
		if seq, _ := env["seq"].(json.Number); seq.String() != f.ID {
			t.Fatalf("frame %d: seq %v, id %q", i, env["seq"], f.ID)
		}
		if _, err := time.Parse(time.RFC3339, env["ts"].(string)); err != nil {
			t.Fatalf("frame %d: ts %v", i, env["ts"])
		}
		out = append(out, env)
	}
	return out
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, name := range dialecttest.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := dialecttest.Encode(chain.NewEncoder(chain.Options{}), dialecttest.Script(name))
			dialecttest.Golden(t, name+".chain.golden", got, *update)
			envs := verify(t, got)
			finals := 0
			for i, env := range envs {
				if env["evt"] == "final" {
					finals++
					if i != len(envs)-1 {
						t.Errorf("final is not last")
					}
				}
			}
			if want := map[bool]int{true: 0, false: 1}[name == dialecttest.Awaiting]; finals != want {
				t.Errorf("%d finals, want %d", finals, want)
			}
		})
	}
}

func TestChainRun(t *testing.T) {
	t.Parallel()
	envs := verify(t, dialecttest.Encode(chain.NewEncoder(chain.Options{}), dialecttest.Script(dialecttest.Chain)))
	var evts []string
	for _, env := range envs {
		evts = append(evts, env["evt"].(string))
	}
	want := []string{"chain.step", "planner.plan", "chain.step", "call.start", "call.end", "chain.step", "check.summary", "final"}
	if !slices.Equal(evts, want) {
		t.Errorf("%v", evts)
	}
	if envs[0]["payload"] != "planner" || envs[len(envs)-1]["payload"] != "Weekly report: 42 orders, all paid." {
		t.Errorf("payloads %v … %v", envs[0]["payload"], envs[len(envs)-1]["payload"])
	}
	start, end := envs[3]["payload"].(map[string]any), envs[4]["payload"].(map[string]any)
	if start["status"] != "start" || start["output"] != "" || start["input"] != `{"query":"weekly report template"}` || start["server"] != "executor" {
		t.Errorf("call.start %v", start)
	}
	if end["status"] != "success" || end["output"] != "1 hit: templates/weekly.md" {
		t.Errorf("call.end %v", end)
	}
}

func TestConfirmationAndFailures(t *testing.T) {
	t.Parallel()
	envs := verify(t, dialecttest.Encode(chain.NewEncoder(chain.Options{}), dialecttest.Script(dialecttest.Rich)))
	var calls []string
	for _, env := range envs {
		if p, ok := env["payload"].(map[string]any); ok && strings.HasPrefix(env["evt"].(string), "call.") {
			calls = append(calls, env["evt"].(string)+" "+p["name"].(string)+" "+p["status"].(string))
			if p["status"] == "awaiting_input" && p["confirmationId"] != "conf-1" {
				t.Errorf("awaiting call.start %v", p)
			}
		}
	}
	want := []string{"call.start search_orders start", "call.start send_message start", "call.start send_message awaiting_input",
		"call.end search_orders success", "call.start send_message start", "call.end send_message error"}
	if !slices.Equal(calls, want) {
		t.Errorf("got  %q\nwant %q", calls, want)
	}
	envs = verify(t, dialecttest.Encode(chain.NewEncoder(chain.Options{}), dialecttest.Script(dialecttest.Failed)))
	if n := len(envs); envs[n-2]["evt"] != "error" || envs[n-1]["payload"] != "The model provider is unavailable." {
		t.Errorf("failed run ends %v %v", envs[n-2], envs[n-1])
	}
}

// TestNumbering: seq counts the chain's frames from 1 whatever the log's
// seqs, and an encoder resuming after N writes the frames from N+1 on with
// the same numbers.
func TestNumbering(t *testing.T) {
	t.Parallel()
	evs := dialecttest.Script(dialecttest.Chain)
	full := verify(t, dialecttest.Encode(chain.NewEncoder(chain.Options{}), evs))
	for i, env := range full {
		if seq, _ := env["seq"].(json.Number).Int64(); seq != int64(i+1) {
			t.Fatalf("frame %d has seq %d", i, seq)
		}
	}
	for after := range len(full) + 1 {
		rest := verify(t, dialecttest.Encode(chain.NewEncoder(chain.Options{After: int64(after)}), evs))
		if len(rest) != len(full)-after {
			t.Fatalf("after %d: %d frames, want %d", after, len(rest), len(full)-after)
		}
		for i, env := range rest {
			want, _ := json.Marshal(full[after+i])
			got, _ := json.Marshal(env)
			if string(got) != string(want) {
				t.Errorf("after %d, frame %d:\n got %s\nwant %s", after, i, got, want)
			}
		}
	}
}

func TestParseRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		query string // GET query, or a body when it starts with {
		want  chain.Request
		field string // the RequestError's field, "" for success
	}{
		{"seed example", "user_input=%E5%86%99%E4%B8%80%E4%B8%AA%E5%91%A8%E6%8A%A5&max_steps=10", chain.Request{UserInput: "写一个周报", MaxSteps: 10}, ""},
		{"default steps", "user_input=hi&access_token=x", chain.Request{UserInput: "hi"}, ""},
		{"missing input", "max_steps=3", chain.Request{}, "user_input"},
		{"blank input", "user_input=%20%20", chain.Request{}, "user_input"},
		{"attach", "run_id=r1", chain.Request{RunID: "r1"}, ""},
		{"bad steps", "user_input=hi&max_steps=many", chain.Request{}, "max_steps"},
		{"zero steps", "user_input=hi&max_steps=0", chain.Request{}, "max_steps"},
		{"body", `{"user_input":"hi","max_steps":3,"conversationId":"c1","extra":true}`, chain.Request{UserInput: "hi", MaxSteps: 3, ConversationID: "c1"}, ""},
		{"body null steps", `{"user_input":"hi","max_steps":null}`, chain.Request{UserInput: "hi"}, ""},
		{"body no input", `{"max_steps":3}`, chain.Request{}, "user_input"},
		{"body bad steps", `{"user_input":"hi","max_steps":"3"}`, chain.Request{}, "max_steps"},
		{"body not json", `{"user_input":`, chain.Request{}, "body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got chain.Request
			var err error
			if strings.HasPrefix(tt.query, "{") {
				got, err = chain.ParseBody([]byte(tt.query))
			} else {
				q, _ := url.ParseQuery(tt.query)
				got, err = chain.ParseQuery(q)
			}
			var re *chain.RequestError
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.field != "" && (!errors.As(err, &re) || re.Field != tt.field):
				t.Fatalf("error %v, want one about %s", err, tt.field)
			case tt.field == "" && got != tt.want:
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	if (chain.Request{}).Steps() != 6 || !(chain.Request{MaxSteps: 21}).OverLimit(20) || (chain.Request{MaxSteps: 20}).OverLimit(20) {
		t.Error("steps and limit")
	}
}

func TestRejection(t *testing.T) {
	t.Parallel()
	got := chain.Rejection(nil, 50, 20, "0190aaaa-0000-7000-8000-000000000000", dialecttest.T0)
	dialecttest.Golden(t, "rejection.chain.golden", got, *update)
	envs := verify(t, got)
	if len(envs) != 1 || envs[0]["evt"] != "final" || envs[0]["seq"].(json.Number).String() != "1" ||
		!strings.Contains(envs[0]["payload"].(string), "CHAIN_HARD_LIMIT") {
		t.Errorf("rejection %v", envs)
	}
}

func TestKeepAliveAndAbort(t *testing.T) {
	t.Parallel()
	enc := chain.NewEncoder(chain.Options{})
	if got := string(enc.KeepAlive(nil, time.Now())); got != ": keep-alive\n\n" {
		t.Errorf("keep-alive %q", got)
	}
	enc.Encode(nil, event.Event{Run: "r", Seq: 1, Payload: event.StepStartedData{Name: "planner"}})
	frames := ssetest.Parse(t, enc.Abort(nil, event.ErrorInfo{Code: "slow_client", Message: "Reconnect."}))
	if len(frames) != 1 || frames[0].HasID || frames[0].Event != "error" || !strings.Contains(frames[0].Data, `"trace_id":"r"`) {
		t.Errorf("abort %+v", frames)
	}
}

func TestTraceIDIsTheRuns(t *testing.T) {
	t.Parallel()
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	enc := chain.NewEncoder(chain.Options{TraceID: trace})
	var out []byte
	out = enc.Abort(out, event.ErrorInfo{Code: "slow_client", Message: "Reconnect."}) // before any event
	out = enc.Encode(out, event.Event{Run: "r", Seq: 1, Payload: event.StepStartedData{Name: "planner"}})
	out = enc.Encode(out, event.Event{Run: "r", Seq: 2, Payload: event.RunFinishedData{Status: event.StatusSucceeded}})
	frames := ssetest.Parse(t, out)
	if len(frames) != 3 {
		t.Fatalf("%d frames", len(frames))
	}
	for _, f := range frames {
		if !strings.Contains(f.Data, `"trace_id":"4bf92f35-77b3-4da6-a3ce-929d0e0e4736"`) { // the seed's UUID shape
			t.Errorf("frame %s: %s", f.Event, f.Data)
		}
	}
}

func BenchmarkEncodeChain(b *testing.B) {
	evs := dialecttest.LongRun(1000)
	var dst []byte
	b.ReportAllocs()
	for b.Loop() {
		enc := chain.NewEncoder(chain.Options{})
		for _, ev := range evs {
			dst = enc.Encode(dst[:0], ev)
		}
	}
}

// A chain frame is numbered by itself (never "<n>.<k>"), and a client that
// resumes after any frame (the run replayed from its start) gets exactly the
// frames after it.
func TestResumeAfterEveryFrame(t *testing.T) {
	t.Parallel()
	for _, name := range dialecttest.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dialecttest.CheckReplayResume(t, func() dialect.Encoder { return chain.NewEncoder(chain.Options{}) }, dialecttest.Script(name))
			for _, f := range ssetest.Parse(t, dialecttest.Encode(chain.NewEncoder(chain.Options{}), dialecttest.Script(name))) {
				if strings.Contains(f.ID, ".") {
					t.Fatalf("chain frame id %q", f.ID)
				}
			}
		})
	}
}
