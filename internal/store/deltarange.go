package store

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/jsonstr"
)

// The event log's stored shape. A model streams its answer as many small
// deltas, each an event with a seq of its own; one row per delta would make
// the log's write cost grow by a row per token. So a backend stores an
// AppendEvents batch as EventRows: consecutive deltas (text or reasoning) of
// one message of one run, consecutive in seq, become one row covering
// Seq..SeqEnd, and every other event is a row of its own (SeqEnd == Seq).
// Reading splits a range back into its events, each with its own seq, time
// and payload, equal to the events appended (times at the millisecond, the
// precision of every stored time).
//
// Rows of one thread never overlap: a backend refuses, with ErrConflict, a
// row overlapping a stored one, as it refused a repeated seq when every event
// was a row. That makes (thread, seq) order also (thread, SeqEnd) order, so
// the row with the greatest Seq holds the thread's last seq, and the only row
// starting at or before a seq that can contain it is the last such row:
// backends answer LastSeq and bound ListEvents with one index probe each.

// MaxDeltaRange bounds the deltas packed into one row, so that a reader
// wanting a few events of a long answer decodes a bounded row.
const MaxDeltaRange = 1000

// EventRow is one row of the event log: one event, or a range of deltas.
type EventRow struct {
	Tenant string
	Thread string
	Run    string
	// Seq is the row's first seq and SeqEnd its last; they are equal for a
	// row holding one event.
	Seq    int64
	SeqEnd int64
	// Time is the first event's time.
	Time      time.Time
	Type      event.Type
	Turn      string
	Iteration int
	Step      string
	// Payload is JSON: the event's payload, or for a range a deltaRange.
	Payload []byte
}

// IsRange reports whether the row holds more than one event.
func (r EventRow) IsRange() bool { return r.SeqEnd > r.Seq }

// deltaRange is the payload of a range row: the message the deltas belong
// to, each delta's text, and each delta's time as milliseconds after the
// previous one's (the first after the row's time, so 0).
type deltaRange struct {
	MessageID string   `json:"messageId"`
	Deltas    []string `json:"deltas"`
	MS        []int64  `json:"ms"`
}

// appendDeltaRange appends a range row's payload, byte for byte what
// json.Marshal writes for deltaRange{msg, deltas, ms} (TestDeltaRangeJSON and
// FuzzDeltaRangeJSON hold it to that), without reflection: the event log
// encodes one for every few tokens of every stream, and json.Marshal's
// reflection, buffer and copy were about half of BenchmarkPackEvents' time and
// a quarter of its allocations. deltas and ms are non-nil (a range holds two
// deltas or more).
func appendDeltaRange(dst []byte, msg string, deltas []string, ms []int64) []byte {
	if dst == nil {
		n := len(`{"messageId":,"deltas":[],"ms":[]}`) + len(msg) + 2 + 8*len(ms)
		for _, d := range deltas {
			n += len(d) + 3
		}
		dst = make([]byte, 0, n)
	}
	dst = append(dst, `{"messageId":`...)
	dst = jsonstr.Append(dst, msg)
	dst = append(dst, `,"deltas":[`...)
	for i, d := range deltas {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, d)
	}
	dst = append(dst, `],"ms":[`...)
	for i, v := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, v, 10)
	}
	return append(dst, "]}"...)
}

// packable returns the message and text of a delta that may join a range.
func packable(e event.Event) (msg, text string, ok bool) {
	switch p := e.Payload.(type) {
	case event.TextDeltaData:
		return p.MessageID, p.Delta, e.Type == event.TextDelta
	case event.ReasoningDeltaData:
		return p.MessageID, p.Delta, e.Type == event.ReasoningDelta
	}
	return "", "", false
}

// openRange is a range row being built. Most batches hold one delta of a
// stream (the writer commits often), so the first delta is kept inline and
// the slices made only when a second one joins.
type openRange struct {
	row    int // index in the rows
	msg    string
	first  string
	deltas []string // nil while the range holds only first
	ms     []int64
	lastMS int64 // the last delta's time
}

// threadState is what packing remembers of one thread of the batch.
type threadState struct {
	maxSeq int64
	open   int // index of the thread's last range in the ranges, -1 for none
}

// PackEvents turns an AppendEvents batch into the rows to insert, in the
// order of each row's first event. A seq appearing twice in the batch for one
// thread is ErrConflict (it could not be stored), found before anything is
// written.
func PackEvents(evs []event.Event) ([]EventRow, error) {
	// Sized as the last batch was (a batch's rows and threads change slowly
	// with the load), so that they are not grown from a few dozen entries
	// to a batch's thousands each time: that growth (and the map's rehashing)
	// was most of PackEvents' allocations at a thousand streams.
	lastRows, lastThreads := int(lastPacked.rows.Load()), int(lastPacked.threads.Load())
	rows := make([]EventRow, 0, min(len(evs), max(64, lastRows+lastRows/8)))
	ranges := make([]openRange, 0, min(len(evs), max(16, lastRows+lastRows/8)))
	threads := make(map[string]threadState, min(len(evs), max(64, lastThreads+lastThreads/8)))
	unordered := false
	for _, e := range evs {
		th, seen := threads[e.Thread]
		if !seen {
			th.open = -1
		} else if e.Seq <= th.maxSeq {
			unordered = true // may repeat a seq: checked below
		}
		th.maxSeq = max(th.maxSeq, e.Seq)
		at := e.Time.UnixMilli()
		msg, text, ok := packable(e)
		if ok && th.open >= 0 {
			o := &ranges[th.open]
			r := &rows[o.row]
			if e.Seq == r.SeqEnd+1 && o.msg == msg && r.Type == e.Type && r.Run == e.Run && r.Tenant == e.Tenant &&
				r.Turn == e.Turn && r.Iteration == e.Iteration && r.Step == e.Step && r.SeqEnd-r.Seq+1 < MaxDeltaRange {
				r.SeqEnd = e.Seq
				if o.deltas == nil {
					o.deltas, o.ms = append(make([]string, 0, 8), o.first), append(make([]int64, 0, 8), 0)
				}
				o.deltas = append(o.deltas, text)
				o.ms = append(o.ms, at-o.lastMS)
				o.lastMS = at
				threads[e.Thread] = th
				continue
			}
		}
		rows = append(rows, EventRow{Tenant: e.Tenant, Thread: e.Thread, Run: e.Run, Seq: e.Seq, SeqEnd: e.Seq,
			Time: time.UnixMilli(at).UTC(), Type: e.Type, Turn: e.Turn, Iteration: e.Iteration, Step: e.Step})
		if ok {
			ranges = append(ranges, openRange{row: len(rows) - 1, msg: msg, first: text, lastMS: at})
			th.open = len(ranges) - 1
		} else {
			p, err := event.EncodePayload(e.Payload)
			if err != nil {
				return nil, fmt.Errorf("encode %s: %w", e.Type, err)
			}
			rows[len(rows)-1].Payload = p
			th.open = -1
		}
		threads[e.Thread] = th
	}
	if unordered {
		if err := repeatedSeq(evs); err != nil {
			return nil, err
		}
	}
	// The deltas' payloads share one buffer: one allocation for the batch
	// instead of one per row. Each payload is capped at its length, so that
	// no append to one runs into the next.
	n := 0
	for _, o := range ranges {
		if o.deltas == nil {
			n += lonePayloadLen(o.msg, o.first)
		} else {
			n += rangePayloadLen(o.msg, o.deltas, o.ms)
		}
	}
	buf := make([]byte, 0, n)
	for _, o := range ranges {
		start := len(buf)
		if o.deltas == nil {
			// A lone delta is stored as any event is: its payload as
			// json.Marshal writes it.
			buf = appendDelta(buf, o.msg, o.first)
		} else {
			buf = appendDeltaRange(buf, o.msg, o.deltas, o.ms)
		}
		rows[o.row].Payload = buf[start:len(buf):len(buf)]
	}
	lastPacked.rows.Store(int32(min(len(rows), 1<<20)))
	lastPacked.threads.Store(int32(min(len(threads), 1<<20)))
	return rows, nil
}

// lastPacked is the size of the last batch PackEvents packed (rows and
// threads), a hint for sizing the next.
var lastPacked struct{ rows, threads atomic.Int32 }

// appendDelta appends a lone delta's payload, byte for byte what
// json.Marshal writes for its TextDeltaData or ReasoningDeltaData (the two
// have the same fields), without reflection: most rows at a thousand
// streams hold one delta (TestDeltaRangeJSON and FuzzDeltaRangeJSON hold it
// to json.Marshal).
func appendDelta(dst []byte, msg, text string) []byte {
	dst = append(dst, `{"messageId":`...)
	dst = jsonstr.Append(dst, msg)
	dst = append(dst, `,"delta":`...)
	dst = jsonstr.Append(dst, text)
	return append(dst, '}')
}

// lonePayloadLen and rangePayloadLen estimate a payload's length (exact
// without escapes), to size the batch's buffer.
func lonePayloadLen(msg, text string) int {
	return len(`{"messageId":"","delta":""}`) + len(msg) + len(text)
}

func rangePayloadLen(msg string, deltas []string, ms []int64) int {
	n := len(`{"messageId":"","deltas":[],"ms":[]}`) + len(msg) + 4*len(ms)
	for _, d := range deltas {
		n += len(d) + 3
	}
	return n
}

// repeatedSeq finds a (thread, seq) appearing twice in evs.
func repeatedSeq(evs []event.Event) error {
	type key struct {
		thread string
		seq    int64
	}
	seen := make(map[key]bool, len(evs))
	for _, e := range evs {
		k := key{e.Thread, e.Seq}
		if seen[k] {
			return fmt.Errorf("%w: seq %d of thread %s appears twice in one batch", ErrConflict, e.Seq, e.Thread)
		}
		seen[k] = true
	}
	return nil
}

func deltaPayload(t event.Type, msg, text string) event.Payload {
	if t == event.ReasoningDelta {
		return event.ReasoningDeltaData{MessageID: msg, Delta: text}
	}
	return event.TextDeltaData{MessageID: msg, Delta: text}
}

// Unpack appends to out the row's events with after < seq <= until (until
// 0: no upper bound).
func (r EventRow) Unpack(out []event.Event, after, until int64) ([]event.Event, error) {
	if until <= 0 {
		until = r.SeqEnd
	}
	if r.SeqEnd <= after || r.Seq > until {
		return out, nil
	}
	e := event.Event{Tenant: r.Tenant, Thread: r.Thread, Run: r.Run, Seq: r.Seq, Time: r.Time.UTC(), Type: r.Type,
		Turn: r.Turn, Iteration: r.Iteration, Step: r.Step}
	if !r.IsRange() {
		var err error
		if e.Payload, err = event.DecodePayload(r.Type, r.Payload); err != nil {
			return out, fmt.Errorf("event %d: %w", r.Seq, err)
		}
		return append(out, e), nil
	}
	if r.Type != event.TextDelta && r.Type != event.ReasoningDelta {
		return out, fmt.Errorf("event range %d..%d: type %q cannot be a range", r.Seq, r.SeqEnd, r.Type)
	}
	var d deltaRange
	if err := json.Unmarshal(r.Payload, &d); err != nil {
		return out, fmt.Errorf("event range %d..%d: %w", r.Seq, r.SeqEnd, err)
	}
	if n := r.SeqEnd - r.Seq + 1; int64(len(d.Deltas)) != n || len(d.MS) != len(d.Deltas) {
		return out, fmt.Errorf("event range %d..%d: %d deltas and %d times", r.Seq, r.SeqEnd, len(d.Deltas), len(d.MS))
	}
	at := r.Time.UnixMilli()
	for i, text := range d.Deltas {
		at += d.MS[i]
		seq := r.Seq + int64(i)
		if seq <= after {
			continue
		}
		if seq > until {
			break
		}
		e.Seq, e.Time, e.Payload = seq, time.UnixMilli(at).UTC(), deltaPayload(r.Type, d.MessageID, text)
		out = append(out, e)
	}
	return out, nil
}

// UnpackRows splits rows read in seq order into their events with after <
// seq <= until (until 0: no upper bound), at most limit of them (0: all).
func UnpackRows(rows []EventRow, after, until int64, limit int) ([]event.Event, error) {
	n := 0
	for _, r := range rows {
		n += int(r.SeqEnd - r.Seq + 1)
	}
	if limit > 0 {
		n = min(n, limit)
	}
	out := make([]event.Event, 0, n)
	for _, r := range rows {
		var err error
		if out, err = r.Unpack(out, after, until); err != nil {
			return nil, err
		}
		if limit > 0 && len(out) >= limit {
			return out[:limit], nil
		}
	}
	return out, nil
}
