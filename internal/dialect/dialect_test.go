package dialect_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/dialect/dialecttest"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/ssetest"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestAppendFrame(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		frame dialect.Frame
		want  string
	}{
		{"all fields", dialect.Frame{ID: "7", Event: "agent.delta", Data: []byte(`{"a":1}`)},
			"event: agent.delta\nid: 7\ndata: {\"a\":1}\n\n"},
		{"data only", dialect.Frame{Data: []byte(`[DONE]`)}, "data: [DONE]\n\n"},
		{"empty data", dialect.Frame{ID: "1"}, "id: 1\ndata: \n\n"},
		{"LF splits data", dialect.Frame{Data: []byte("a\nb")}, "data: a\ndata: b\n\n"},
		{"CRLF splits once", dialect.Frame{Data: []byte("a\r\nb")}, "data: a\ndata: b\n\n"},
		{"lone CR splits", dialect.Frame{Data: []byte("a\rb")}, "data: a\ndata: b\n\n"},
		{"trailing newline keeps an empty line", dialect.Frame{Data: []byte("a\n")}, "data: a\ndata: \n\n"},
		{"LF in id is refused", dialect.Frame{ID: "1\ndata: x", Event: "e", Data: []byte("d")}, "event: e\ndata: d\n\n"},
		{"CR in event is refused", dialect.Frame{ID: "2", Event: "e\rx", Data: []byte("d")}, "id: 2\ndata: d\n\n"},
		{"NUL in id is refused", dialect.Frame{ID: "3\x00", Event: "e", Data: []byte("d")}, "event: e\ndata: d\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := dialect.AppendFrame([]byte("prefix|"), tt.frame)
			if want := "prefix|" + tt.want; string(got) != want {
				t.Errorf("got %q, want %q", got, want)
			}
			// What a client reassembles equals what was sent, line breaks normalised to LF.
			frames := ssetest.Parse(t, got[len("prefix|"):])
			if len(frames) != 1 {
				t.Fatalf("%d frames", len(frames))
			}
			norm := bytes.ReplaceAll(bytes.ReplaceAll(tt.frame.Data, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
			if frames[0].Data != string(norm) {
				t.Errorf("client sees %q, want %q", frames[0].Data, norm)
			}
		})
	}
}

func TestAppendCommentAndRetry(t *testing.T) {
	t.Parallel()
	if got := string(dialect.AppendComment(nil, "keep-alive")); got != ": keep-alive\n\n" {
		t.Errorf("comment: %q", got)
	}
	if got := string(dialect.AppendComment(nil, "a\nb\rc")); got != ": a b c\n\n" {
		t.Errorf("multi-line comment: %q", got)
	}
	if got := string(dialect.AppendRetry(nil, 1500*time.Millisecond)); got != "retry: 1500\n\n" {
		t.Errorf("retry: %q", got)
	}
}

func TestID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]dialect.ID{
		"42": {Seq: 42}, " 7 ": {Seq: 7}, "0": {}, "9.1": {Seq: 9, Part: 1}, "9.12": {Seq: 9, Part: 12},
		"9223372036854775807": {Seq: 1<<63 - 1}, "1.2147483647": {Seq: 1, Part: 1<<31 - 1},
	} {
		got, ok := dialect.ParseID(in)
		if !ok || got != want {
			t.Errorf("ParseID(%q) = %+v, %v; want %+v", in, got, ok, want)
		}
		if s := strings.TrimSpace(in); got.String() != s {
			t.Errorf("%+v.String() = %q, want %q", got, got.String(), s)
		}
	}
	for _, in := range []string{"", "-1", "x", "+1", "1.", ".1", "1.0", "0.1", "1.-1", "1.+1", "1.2.3", "1 .2", "1e3",
		"9999999999999999999999", "1.2147483648", "1.99999999999999999999", "0x10", "１"} {
		if got, ok := dialect.ParseID(in); ok {
			t.Errorf("ParseID(%q) accepted as %+v", in, got)
		}
	}
}

// Less orders the frames of one event before its bare seq, and events by seq.
func TestIDOrder(t *testing.T) {
	t.Parallel()
	order := []dialect.ID{{Seq: 0}, {Seq: 1}, {Seq: 2, Part: 1}, {Seq: 2, Part: 2}, {Seq: 2, Part: 10}, {Seq: 2}, {Seq: 3, Part: 1}, {Seq: 3}, {Seq: 10}}
	for i, a := range order {
		for j, b := range order {
			if got := dialect.Less(a, b); got != (i < j) {
				t.Errorf("Less(%v, %v) = %v", a, b, got)
			}
		}
	}
	for id, want := range map[dialect.ID]int64{{Seq: 5}: 5, {Seq: 5, Part: 2}: 4, {}: 0} {
		if got := id.Replay(); got != want {
			t.Errorf("%v.Replay() = %d, want %d", id, got, want)
		}
	}
}

// TestScripts pins each canonical script's JSON-lines form in testdata, for
// tools outside Go (a real AG-UI or AI SDK client replaying the scripts), and
// checks that the lines decode back to the same events.
func TestScripts(t *testing.T) {
	t.Parallel()
	for _, name := range dialecttest.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			evs := dialecttest.Script(name)
			var buf bytes.Buffer
			for i, ev := range evs {
				if ev.Seq != int64(i+1) {
					t.Fatalf("event %d has seq %d", i, ev.Seq)
				}
				b, err := json.Marshal(ev)
				if err != nil {
					t.Fatal(err)
				}
				buf.Write(b)
				buf.WriteByte('\n')
			}
			dialecttest.Golden(t, name+".events.jsonl", buf.Bytes(), *update)
			dec := json.NewDecoder(&buf)
			for i := 0; dec.More(); i++ {
				var ev event.Event
				if err := dec.Decode(&ev); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(ev, evs[i]) {
					t.Errorf("line %d decodes to %+v, want %+v", i+1, ev, evs[i])
				}
			}
		})
	}
}
