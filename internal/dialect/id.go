package dialect

import (
	"strconv"
	"strings"
)

// ID is a frame's position in a stream and the SSE id it carries, so a
// client's Last-Event-ID says exactly which frames it has.
//
// One canonical event (one seq) may become several frames (native's
// tool.state and tool.awaiting_input, AG-UI's TEXT_MESSAGE_START before its
// CONTENT, the AI SDK's tool-approval-request and its data part). Each frame
// gets its own id: the frame that completes event S carries "S" (for most
// events their only frame, so those ids are the seqs they always were); a
// frame of S that more of S follows carries "S.k", k counting S's frames
// from 1. Frames of one stream carry strictly increasing ids in the order
// Less defines: S.1 < S.2 < … < S < (S+1).1.
//
// The completing frame keeps the bare seq, rather than the first, so that
// "S" keeps the one meaning it has everywhere else in the API: everything
// of event S. A timeline seq, `?after=S`, seed 004's history lastEventId and
// a MESSAGES_SNAPSHOT's id all name that position, and an id a client kept
// from before frames had sub-ids resumes where it always did. A Part makes
// the id no decimal number (S.1 sorts before S): compare ids with Less,
// never as numbers.
type ID struct {
	// Seq is the per-thread seq of the canonical event the frame belongs to.
	Seq int64
	// Part is how many frames of event Seq the position holds, counting
	// this one, while more of the event follows; 0 when the event is
	// complete.
	Part int
}

// String returns the SSE id: "S" or "S.k".
func (id ID) String() string {
	if id.Part == 0 {
		return strconv.FormatInt(id.Seq, 10)
	}
	var buf [48]byte // two int64s and a dot: one allocation, the string's
	return string(id.Append(buf[:0]))
}

// Append appends the SSE id to dst.
func (id ID) Append(dst []byte) []byte {
	dst = strconv.AppendInt(dst, id.Seq, 10)
	if id.Part > 0 {
		dst = append(dst, '.')
		dst = strconv.AppendInt(dst, int64(id.Part), 10)
	}
	return dst
}

// Less reports whether position a comes before b in a stream.
func Less(a, b ID) bool {
	if a.Seq != b.Seq {
		return a.Seq < b.Seq
	}
	return a.Part != 0 && (b.Part == 0 || a.Part < b.Part)
}

// Replay is the seq a stream resumed at id replays the log after: id's
// event again when the client has only part of it (its frames up to id are
// then left out by the encoder, see Framer.Resume), else the events after it.
func (id ID) Replay() int64 {
	if id.Part > 0 {
		return id.Seq - 1
	}
	return id.Seq
}

// ParseID reads a Last-Event-ID (or ?after=): "S" or "S.k" with S ≥ 0 and
// k ≥ 1 in decimal, surrounding spaces ignored. ok is false for anything
// else; a Part needs an event, so "0.k" is refused too.
func ParseID(s string) (id ID, ok bool) {
	seq, part, dotted := strings.Cut(strings.TrimSpace(s), ".")
	n, ok := decimal(seq)
	if !ok {
		return ID{}, false
	}
	id.Seq = n
	if !dotted {
		return id, true
	}
	k, ok := decimal(part)
	if !ok || k < 1 || k > maxPart || n < 1 {
		return ID{}, false
	}
	id.Part = int(k)
	return id, true
}

// maxPart bounds a Part: far more frames than any event becomes, and small
// enough for an int on every platform.
const maxPart = 1<<31 - 1

// decimal parses digits only: no sign, no spaces inside, at most int64.
func decimal(s string) (int64, bool) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
