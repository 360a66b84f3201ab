package dialecttest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/ssetest"
)

// Stream encodes evs through enc as a response does: every event, then,
// for an Exchange, what it writes once the stream is idle (the AI SDK
// stream's tail when its run has paused).
func Stream(enc dialect.Encoder, evs []event.Event) []byte {
	out := Encode(enc, evs)
	if x, ok := enc.(dialect.Exchange); ok && !x.Ended() {
		out, _ = x.Idle(out)
	}
	return out
}

// CheckFrameIDs checks a stream's frames (ssetest.Parse) against the
// contract of dialect.ID: every frame has an id, in the syntax ParseID reads,
// and each id comes after the one before it (dialect.Less), so no two frames
// share one and a client's Last-Event-ID names exactly one frame. It returns
// the parsed ids.
func CheckFrameIDs(t testing.TB, frames []ssetest.Frame) []dialect.ID {
	t.Helper()
	ids := make([]dialect.ID, len(frames))
	for i, f := range frames {
		id, ok := dialect.ParseID(f.ID)
		if !f.HasID || !ok || id.String() != f.ID {
			t.Fatalf("frame %d (%s %.60s) has id %q (present: %v): not a frame id", i, f.Event, f.Data, f.ID, f.HasID)
		}
		if i > 0 && !dialect.Less(ids[i-1], id) {
			t.Fatalf("frame %d (%s %.60s) has id %s, not after the frame before's %s", i, f.Event, f.Data, id, ids[i-1])
		}
		ids[i] = id
	}
	return ids
}

// CheckResume streams evs through a fresh encoder (newEnc) and then, for
// every frame k, resumes as a client that has frames 1..k does: a fresh
// encoder told Resume(id of frame k) must write exactly frames k+1.. of the
// whole stream (no gap, no repeat, same ids), both when it is fed the stream
// again from its first event (the AI SDK resume) and when it reads the
// events up to the id's Replay() seq first, writing none of their frames,
// and then the rest (a resume from the log). It also resumes from the
// stream's start and after its last frame.
func CheckResume(t *testing.T, newEnc func() dialect.Encoder, evs []event.Event) {
	t.Helper()
	checkResume(t, newEnc, evs, true)
}

// CheckReplayResume is CheckResume for a format whose ids are not seqs (the
// chain stream numbers its frames): it resumes by replaying from the start
// only.
func CheckReplayResume(t *testing.T, newEnc func() dialect.Encoder, evs []event.Event) {
	t.Helper()
	checkResume(t, newEnc, evs, false)
}

func checkResume(t *testing.T, newEnc func() dialect.Encoder, evs []event.Event, fromLog bool) {
	t.Helper()
	full := ssetest.Parse(t, Stream(newEnc(), evs))
	ids := CheckFrameIDs(t, full)
	for k := -1; k < len(full); k++ {
		at := dialect.ID{}
		if k >= 0 {
			at = ids[k]
		}
		want := full[k+1:]

		enc := newEnc()
		enc.Resume(at)
		if got := ssetest.Parse(t, Stream(enc, evs)); !sameFrames(got, want) {
			t.Fatalf("replayed from the start, resumed after %v (frame %d): %s", at, k+1, diffFrames(got, want))
		}

		if !fromLog {
			continue
		}
		enc = newEnc()
		enc.Resume(at)
		var out []byte
		i := 0
		for ; i < len(evs) && evs[i].Seq <= at.Replay(); i++ {
			out = enc.Encode(out, evs[i])
		}
		if len(out) > 0 {
			t.Fatalf("priming up to %d before resuming after %v wrote %q", at.Replay(), at, out)
		}
		if got := ssetest.Parse(t, Stream(enc, evs[i:])); !sameFrames(got, want) {
			t.Fatalf("replayed from the log after %d, resumed after %v (frame %d): %s", at.Replay(), at, k+1, diffFrames(got, want))
		}
	}
}

func sameFrames(a, b []ssetest.Frame) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func diffFrames(got, want []ssetest.Frame) string {
	line := func(fs []ssetest.Frame) string {
		var b strings.Builder
		for _, f := range fs {
			fmt.Fprintf(&b, "\n  %s %s %.80s", f.ID, f.Event, f.Data)
		}
		return b.String()
	}
	return fmt.Sprintf("got %d frames:%s\nwant %d frames:%s", len(got), line(got), len(want), line(want))
}
