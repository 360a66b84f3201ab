package native_test

import (
	"flag"
	"testing"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/dialect/dialecttest"
	"github.com/agentchat/agentchat/internal/dialect/native"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/ssetest"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, name := range dialecttest.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := dialecttest.Encode(native.NewEncoder(), dialecttest.Script(name))
			dialecttest.Golden(t, name+".native.golden", got, *update)
			for _, f := range ssetest.Parse(t, got) {
				m := dialecttest.Object(t, f.Data)
				if m["event"] != f.Event || f.ID == "" || m["id"] != f.ID {
					t.Errorf("frame %q/%q carries event %v id %v", f.Event, f.ID, m["event"], m["id"])
				}
			}
		})
	}
}

func TestKeepAliveAndAbort(t *testing.T) {
	t.Parallel()
	enc := native.NewEncoder()
	got := string(enc.KeepAlive(nil, dialecttest.T0))
	if want := "event: ping\ndata: {\"event\":\"ping\",\"data\":{\"at\":\"2026-03-16T09:00:00.000Z\"}}\n\n"; got != want {
		t.Errorf("keep-alive %q, want %q", got, want)
	}
	got = string(enc.Abort(nil, event.ErrorInfo{Code: "slow_client", Message: "reconnect"}))
	if want := "event: error\ndata: {\"event\":\"error\",\"data\":{\"code\":\"slow_client\",\"message\":\"reconnect\"}}\n\n"; got != want {
		t.Errorf("abort %q, want %q", got, want)
	}
}

func BenchmarkEncodeNative(b *testing.B) {
	evs := dialecttest.LongRun(1000)
	enc := native.NewEncoder()
	var dst []byte
	b.ReportAllocs()
	for b.Loop() {
		for _, ev := range evs {
			dst = enc.Encode(dst[:0], ev)
		}
	}
}

// Every frame has its own id, and a client that resumes after any frame
// gets exactly the frames after it: the two frames of a tool awaiting input
// included (they once shared one id, and a cut between them lost the second).
func TestResumeAfterEveryFrame(t *testing.T) {
	t.Parallel()
	for _, name := range dialecttest.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dialecttest.CheckResume(t, func() dialect.Encoder { return native.NewEncoder() }, dialecttest.Script(name))
		})
	}
}
