package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// The event log stores consecutive deltas of one message as one row (see
// store.PackEvents); these tests pin that nobody reading the log can tell.

// script builds the events of one thread with consecutive seqs.
type script struct {
	thread string
	seq    int64
	at     time.Time
	evs    []event.Event
}

func newScript(thread string) *script {
	return &script{thread: thread, at: time.Date(2026, 3, 16, 8, 0, 0, 0, time.UTC)}
}

// add appends an event of run (turn = run) at iteration 1 of step "worker",
// dt after the previous one (times may repeat and go back, as clocks do).
func (s *script) add(run string, dt time.Duration, p event.Payload) *script {
	return s.addAt(run, 1, "worker", dt, p)
}

func (s *script) addAt(run string, iteration int, step string, dt time.Duration, p event.Payload) *script {
	s.seq++
	s.at = s.at.Add(dt)
	s.evs = append(s.evs, event.Event{Tenant: "acme", Thread: s.thread, Run: run, Seq: s.seq, Time: s.at, Type: p.EventType(),
		Turn: run, Iteration: iteration, Step: step, Payload: p})
	return s
}

func text(msg, d string) event.Payload { return event.TextDeltaData{MessageID: msg, Delta: d} }
func reasoning(msg, d string) event.Payload {
	return event.ReasoningDeltaData{MessageID: msg, Delta: d}
}

// mixedScript is a run's worth of events that packs into ranges and single
// rows: a reasoning run then a text run of one message, deltas split by a
// tool call, deltas of two messages alternating, deltas of one message
// across iterations and steps, odd texts and odd times.
func mixedScript(thread string) *script {
	s := newScript(thread)
	s.add("r1", 0, event.RunStartedData{ConversationID: thread, Input: "hi"})
	for i := range 4 {
		s.add("r1", 20*time.Millisecond, reasoning("m1", fmt.Sprintf("think %d ", i)))
	}
	for i := range 5 {
		s.add("r1", 20*time.Millisecond, text("m1", fmt.Sprintf("word %d ", i)))
	}
	s.add("r1", time.Millisecond, event.ToolCallStartedData{ToolCallID: "c1", Name: "search", MessageID: "m1"})
	s.add("r1", 0, text("m1", `"quoted" \ back`))
	s.add("r1", -5*time.Millisecond, text("m1", "")) // the clock went back; an empty delta
	s.add("r1", 0, text("m1", "ünïcödé ✓ <b>&amp;</b>\n\ttab\u2028"))
	for i := range 4 { // two messages alternating: no two neighbours share a message
		msg := []string{"m2", "m3"}[i%2]
		s.add("r1", 3*time.Millisecond, text(msg, fmt.Sprintf("alt %d", i)))
	}
	s.addAt("r1", 2, "worker", time.Millisecond, text("m3", "next iteration"))
	s.addAt("r1", 2, "check", time.Millisecond, text("m3", "other step"))
	s.add("r1", 250*time.Millisecond, event.RunFinishedData{Status: event.StatusSucceeded})
	for i := range 6 { // a second run's deltas follow the first run's end
		s.add("r2", 7*time.Millisecond, text("m4", fmt.Sprintf("r2 %d ", i)))
	}
	return s
}

// stored is what the log must return for appended events: the same, with
// times at millisecond precision in UTC.
func stored(evs []event.Event) []event.Event {
	out := make([]event.Event, len(evs))
	for i, e := range evs {
		e.Time = e.Time.UTC().Truncate(time.Millisecond)
		out[i] = e
	}
	return out
}

func sameEvents(t *testing.T, what string, got, want []event.Event) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		for i := range max(len(got), len(want)) {
			var g, w any = "none", "none"
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("%s: %d events, want %d; first difference at %d:\n got %+v\nwant %+v", what, len(got), len(want), i, g, w)
			}
		}
	}
}

func testDeltaRangesRoundTrip(t *testing.T, s store.Store) {
	a := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	b := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	sa, sb := mixedScript(a.ID), mixedScript(b.ID)
	// One batch with the two threads' events interleaved, as the group-commit
	// writer gathers them from two streams; times with sub-millisecond parts.
	var batch []event.Event
	for i := range max(len(sa.evs), len(sb.evs)) {
		for _, evs := range [][]event.Event{sa.evs, sb.evs} {
			if i < len(evs) {
				e := evs[i]
				e.Time = e.Time.Add(123456 * time.Nanosecond).In(time.FixedZone("X", 3600))
				batch = append(batch, e)
			}
		}
	}
	if err := s.AppendEvents(ctx(t), batch); err != nil {
		t.Fatal(err)
	}
	for _, sc := range []*script{sa, sb} {
		want := stored(sc.evs)
		for i := range want {
			want[i].Time = want[i].Time.Add(123456 * time.Nanosecond).Truncate(time.Millisecond)
		}
		sameEvents(t, "thread "+sc.thread, must[[]event.Event](t)(s.ListEvents(ctx(t), alice, store.ListEventsParams{Thread: sc.thread})), want)
		if n := must[int64](t)(s.LastSeq(ctx(t), "acme", sc.thread)); n != sc.seq {
			t.Fatalf("last seq %d, want %d", n, sc.seq)
		}
	}
}

// testDeltaRangeBounds reads every window (after, until], with and without a
// limit and a run filter, and compares it with the events appended.
func testDeltaRangeBounds(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	sc := mixedScript(c.ID)
	// Two batches, cut inside the first text run: ranges end at the cut.
	cut := 8
	for _, part := range [][]event.Event{sc.evs[:cut], sc.evs[cut:]} {
		if err := s.AppendEvents(ctx(t), part); err != nil {
			t.Fatal(err)
		}
	}
	all := stored(sc.evs)
	n := int64(len(all))
	// Every cut at the start, each with the cuts just after it (inside the
	// same packed row or the next), and every cut at the end from the
	// start: the pairs where a row is cut at both ends. (All pairs took a
	// minute under the race detector on SQLite, a sixth of CI's Go tests.)
	untils := func(after int64) []int64 {
		if after == 0 {
			out := make([]int64, 0, n+2)
			for u := int64(0); u <= n+1; u++ {
				out = append(out, u)
			}
			return out
		}
		out := []int64{after}
		for _, u := range []int64{after + 1, after + 2, after + 3, n, n + 1} {
			if u > out[len(out)-1] && u <= n+1 {
				out = append(out, u)
			}
		}
		return out
	}
	for _, run := range []string{"", "r1", "r2"} {
		for after := int64(0); after <= n; after++ {
			for _, until := range untils(after) {
				for _, limit := range []int{0, 1, 2, 3} {
					var want []event.Event
					for _, e := range all {
						if e.Seq > after && (until == after || e.Seq <= until) && (run == "" || e.Run == run) && (limit == 0 || len(want) < limit) {
							want = append(want, e)
						}
					}
					u := until
					if until == after {
						u = 0 // no upper bound
					}
					got, err := s.ListEvents(ctx(t), alice, store.ListEventsParams{Thread: c.ID, RunID: run, AfterSeq: after, UntilSeq: u, Limit: limit})
					if err != nil {
						t.Fatal(err)
					}
					sameEvents(t, fmt.Sprintf("run %q after %d until %d limit %d", run, after, u, limit), got, want)
				}
			}
		}
	}
	if got := must[int64](t)(s.LastSeq(ctx(t), "acme", c.ID)); got != n {
		t.Fatalf("last seq %d, want %d", got, n)
	}
}

// testDeltaRangesAcrossBatches pins that one message's deltas written by two
// batches read as one seamless run of events.
func testDeltaRangesAcrossBatches(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	sc := newScript(c.ID)
	for i := range 10 {
		sc.add("r", 20*time.Millisecond, text("m", fmt.Sprintf("t%d ", i)))
	}
	for _, part := range [][]event.Event{sc.evs[:5], sc.evs[5:]} {
		if err := s.AppendEvents(ctx(t), part); err != nil {
			t.Fatal(err)
		}
	}
	all := stored(sc.evs)
	sameEvents(t, "all", must[[]event.Event](t)(s.ListEvents(ctx(t), alice, store.ListEventsParams{Thread: c.ID})), all)
	sameEvents(t, "(3, 8]", must[[]event.Event](t)(s.ListEvents(ctx(t), alice, store.ListEventsParams{Thread: c.ID, AfterSeq: 3, UntilSeq: 8})), all[3:8])
	sameEvents(t, "after 4, 2", must[[]event.Event](t)(s.ListEvents(ctx(t), alice, store.ListEventsParams{Thread: c.ID, RunID: "r", AfterSeq: 4, Limit: 2})), all[4:6])
	if n := must[int64](t)(s.LastSeq(ctx(t), "acme", c.ID)); n != 10 {
		t.Fatalf("last seq %d", n)
	}
}

// testDeltaRangeConflicts pins that a seq is stored once: a batch repeating
// stored seqs (a retry of a commit whose answer was lost, one event at a time
// or whole), a range overlapping a stored one from either side, and a batch
// repeating a seq of its own are ErrConflict and write nothing.
func testDeltaRangeConflicts(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	sc := newScript(c.ID)
	for i := range 5 { // 1..5: a range
		sc.add("r", 20*time.Millisecond, text("m", fmt.Sprintf("a%d ", i)))
	}
	sc.add("r", 0, event.ToolCallStartedData{ToolCallID: "c", Name: "t"}) // 6
	for i := range 4 {                                                    // 7..10: a range
		sc.add("r", 20*time.Millisecond, text("m", fmt.Sprintf("b%d ", i)))
	}
	if err := s.AppendEvents(ctx(t), sc.evs); err != nil {
		t.Fatal(err)
	}
	deltas := func(from, to int64) []event.Event {
		var out []event.Event
		for seq := from; seq <= to; seq++ {
			out = append(out, event.Event{Tenant: "acme", Thread: c.ID, Run: "r", Seq: seq, Time: sc.at, Type: event.TextDelta,
				Turn: "r", Iteration: 1, Step: "worker", Payload: text("m", "x")})
		}
		return out
	}
	refused := map[string][]event.Event{
		"the same batch again":          sc.evs,
		"a range overlapping the tail":  deltas(9, 12),
		"a range overlapping the head":  append(deltas(11, 12), deltas(0, 1)...),
		"a range covering a tool call":  deltas(5, 7),
		"a range inside a range":        deltas(2, 4),
		"a repeat inside the batch":     append(deltas(11, 13), deltas(13, 14)...),
		"a seq twice, one a lone delta": append(deltas(11, 11), mkEvents(c.ID, "r", 11, 1)...),
	}
	for _, e := range sc.evs { // the run's writer retries a refused batch event by event
		refused[fmt.Sprintf("seq %d alone", e.Seq)] = []event.Event{e}
	}
	for name, batch := range refused {
		if err := s.AppendEvents(ctx(t), batch); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("%s: error = %v, want ErrConflict", name, err)
		}
	}
	if n := must[int64](t)(s.LastSeq(ctx(t), "acme", c.ID)); n != 10 {
		t.Fatalf("a refused batch was stored: last seq %d", n)
	}
	sameEvents(t, "after refusals", must[[]event.Event](t)(s.ListEvents(ctx(t), alice, store.ListEventsParams{Thread: c.ID})), stored(sc.evs))
	if err := s.AppendEvents(ctx(t), deltas(11, 12)); err != nil {
		t.Fatalf("the next seqs: %v", err)
	}
	if n := must[int64](t)(s.LastSeq(ctx(t), "acme", c.ID)); n != 12 {
		t.Fatalf("last seq %d, want 12", n)
	}
}

// CountRows appends batches to s and checks, with count (a backend's own
// look at its table: the thread's rows and their greatest seq_end), that
// consecutive deltas of one message in one batch are one row: 200 deltas
// alone; 50 streams × 40 deltas interleaved; deltas split by a tool call.
func CountRows(t *testing.T, s store.Store, count func(thread string) (rows, lastSeqEnd int64)) {
	t.Helper()
	ctx := t.Context()
	newThread := func() string {
		c, err := s.CreateConversation(ctx, chat.Scope{Tenant: "t", User: "u"}, chat.Conversation{})
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	delta := func(thread string, seq int64) event.Event {
		return event.Event{Tenant: "t", Thread: thread, Run: "run", Seq: seq, Time: time.Now(), Type: event.TextDelta,
			Turn: "run", Iteration: 1, Step: "worker", Payload: event.TextDeltaData{MessageID: "m", Delta: " token"}}
	}
	check := func(what, thread string, wantRows, wantEnd int64) {
		t.Helper()
		if rows, end := count(thread); rows != wantRows || end != wantEnd {
			t.Fatalf("%s: %d rows ending at %d, want %d ending at %d", what, rows, end, wantRows, wantEnd)
		}
	}

	one := newThread()
	var batch []event.Event
	for seq := range int64(200) {
		batch = append(batch, delta(one, seq+1))
	}
	if err := s.AppendEvents(ctx, batch); err != nil {
		t.Fatal(err)
	}
	check("200 deltas", one, 1, 200)

	threads := make([]string, 50)
	for i := range threads {
		threads[i] = newThread()
	}
	batch = batch[:0]
	for seq := range int64(40) {
		for _, th := range threads {
			batch = append(batch, delta(th, seq+1))
		}
	}
	if err := s.AppendEvents(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for _, th := range threads {
		check("40 deltas among 2000", th, 1, 40)
	}

	split := newThread()
	batch = []event.Event{delta(split, 1), delta(split, 2),
		{Tenant: "t", Thread: split, Run: "run", Seq: 3, Time: time.Now(), Type: event.ToolCallStarted, Payload: event.ToolCallStartedData{ToolCallID: "c", Name: "n"}},
		delta(split, 4), delta(split, 5), delta(split, 6)}
	if err := s.AppendEvents(ctx, batch); err != nil {
		t.Fatal(err)
	}
	check("deltas around a tool call", split, 3, 6)
}

// testManyThreadsConflicts pins the overlap refusal in batches of many
// threads' rows, as the event log writes them at thousands of streams (a
// backend may insert such rows many to a statement): one thread's overlap,
// wherever its row falls in the batch, refuses the whole batch, and rows
// of one thread arriving out of seq order are stored.
func testManyThreadsConflicts(t *testing.T, s store.Store) {
	const threads = 45 // more rows than any backend's group, and an odd number
	ids := make([]string, threads)
	for i := range ids {
		ids[i] = must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{})).ID
	}
	at := time.Date(2026, 3, 16, 8, 0, 0, 0, time.UTC)
	ev := func(i int, seq int64, p event.Payload) event.Event {
		return event.Event{Tenant: "acme", Thread: ids[i], Run: "r", Seq: seq, Time: at.Add(time.Duration(seq) * time.Millisecond),
			Type: p.EventType(), Turn: "r", Iteration: 1, Step: "worker", Payload: p}
	}
	// Each thread: seqs 1..2 a range, 3 a tool call, 4 a lone delta, the
	// threads interleaved; thread 7's events come first, last-first.
	var batch []event.Event
	for seq := int64(1); seq <= 4; seq++ {
		for i := range ids {
			if i == 7 {
				continue
			}
			var p event.Payload = text("m", fmt.Sprintf("t%d s%d ", i, seq))
			if seq == 3 {
				p = event.ToolCallStartedData{ToolCallID: fmt.Sprint("c", i), Name: "t"}
			}
			batch = append(batch, ev(i, seq, p))
		}
	}
	seven := []event.Event{ev(7, 4, text("m", "d")), ev(7, 3, text("m", "c")), ev(7, 1, text("m", "a")), ev(7, 2, text("m", "b"))}
	batch = append(seven, batch...) // its rows in one group, descending
	if err := s.AppendEvents(ctx(t), batch); err != nil {
		t.Fatal(err)
	}
	want := func(i int) []event.Event {
		var out []event.Event
		for seq := int64(1); seq <= 4; seq++ {
			for _, e := range batch {
				if e.Thread == ids[i] && e.Seq == seq {
					out = append(out, e)
				}
			}
		}
		return stored(out)
	}
	check := func(what string) {
		t.Helper()
		for i, id := range ids {
			got := must[[]event.Event](t)(s.ListEvents(ctx(t), alice, store.ListEventsParams{Thread: id}))
			sameEvents(t, fmt.Sprintf("%s: thread %d", what, i), got, want(i))
		}
	}
	check("stored")
	next := func(bad int, from, to int64) []event.Event {
		var out []event.Event
		for i := range ids {
			lo, hi := int64(5), int64(6)
			if i == bad {
				lo, hi = from, to
			}
			for seq := lo; seq <= hi; seq++ {
				out = append(out, ev(i, seq, text("m", "x")))
			}
		}
		return out
	}
	for _, bad := range []int{0, 7, 20, 31, 32, 39, 40, 44} {
		for _, seqs := range [][2]int64{{4, 5}, {3, 3}, {2, 6}, {0, 1}} {
			err := s.AppendEvents(ctx(t), next(bad, seqs[0], seqs[1]))
			if !errors.Is(err, store.ErrConflict) {
				t.Fatalf("thread %d writing seqs %d..%d: error = %v, want ErrConflict", bad, seqs[0], seqs[1], err)
			}
		}
	}
	check("after refusals")
	if err := s.AppendEvents(ctx(t), next(-1, 0, 0)); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if n := must[int64](t)(s.LastSeq(ctx(t), "acme", id)); n != 6 {
			t.Fatalf("thread %d: last seq %d, want 6", i, n)
		}
	}
}
