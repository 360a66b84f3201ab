package dialect

import "strconv"

// Framer numbers the frames of one stream, one ID per frame, and leaves out
// the frames a resuming client already has. Every encoder writes its frames
// through one (chain numbers its own frames: each of its frames is an event
// of its own).
//
// An encoder calls Begin before the frames of a canonical event and End after
// them. A frame is written with the bare seq, as if it completed the event;
// when another frame of the event follows, the one before it is given its
// ".k" in place (it is still in dst: the caller writes out dst only between
// events). So an event of one frame, every token delta, costs nothing extra.
// An encoder that knows an event's frames in advance asks Next for each id
// instead.
//
// A dialect that writes frames after an event but outside its Encode (the AI
// SDK stream's tail when the run pauses, written once the stream is idle)
// brackets them with Continue and End: they continue the last event's
// numbering. For them to sort before the bare seq, that event must have been
// ended with hold (its last frame then keeps a ".k"); a tail after an event
// ended without hold continues with ".k" ids and no bare seq. A frame
// appended outside any bracket (an abort) carries no id: it is no position
// in the stream, and a client that reconnects keeps the id before it.
//
// The zero value is ready to use.
type Framer struct {
	seq    int64
	n      int  // frames of seq so far, written or left out
	open   bool // no frame has completed seq yet
	in     bool // between Begin (or Continue) and End
	mark   int  // offset in dst just past the id of the last frame written in this bracket; -1: none
	after  ID   // with resume: the client has every frame up to this one
	resume bool
}

// Resume makes the framer leave out every frame at or before after: the
// frames a client that sent after as its Last-Event-ID has. The stream may
// replay from any earlier point (from the run's start, as the AI SDK resume
// does, or from after's event, as a log replay after after.Replay() does):
// frames are counted, not written, until after.
func (f *Framer) Resume(after ID) { f.after, f.resume = after, true }

// Begin starts the frames of the event with this seq.
func (f *Framer) Begin(seq int64) {
	f.seq, f.n, f.open, f.in, f.mark = seq, 0, true, true, -1
}

// Continue starts frames that follow the last event outside its Encode.
func (f *Framer) Continue() { f.in, f.mark = true, -1 }

// End ends the bracket. hold keeps the event open: its last frame keeps a
// ".k", so frames a later Continue brackets sort before the bare seq, which
// the last of them then carries.
func (f *Framer) End(dst []byte, hold bool) []byte {
	if hold && f.open && f.mark >= 0 {
		dst = f.number(dst, f.n)
	}
	f.open = hold && f.open
	f.in, f.mark = false, -1
	return dst
}

// Append appends one frame (event may be empty: no event line) of the
// current event, with its id, unless the client has it.
func (f *Framer) Append(dst []byte, event string, data []byte) []byte {
	if !f.in {
		return AppendFrame(dst, Frame{Event: event, Data: data})
	}
	f.n++
	if f.skip() {
		f.mark = -1
		return dst
	}
	if f.mark >= 0 {
		dst = f.number(dst, f.n-1) // the frame before is not the event's last
	}
	if event != "" && safeField(event) {
		dst = append(dst, "event: "...)
		dst = append(dst, event...)
		dst = append(dst, '\n')
	}
	dst = append(dst, "id: "...)
	dst = strconv.AppendInt(dst, f.seq, 10)
	if f.open {
		f.mark = len(dst)
	} else {
		// A tail after an event ended without hold: the bare seq is taken.
		dst = append(dst, '.')
		dst = strconv.AppendInt(dst, int64(f.n), 10)
	}
	dst = append(dst, '\n')
	return appendData(dst, data)
}

// Next counts the next frame of the current event for an encoder that knows
// whether it is the event's last, and returns its id and whether to write it
// (false: the client has it). The encoder writes it with that id.
func (f *Framer) Next(last bool) (id ID, write bool) {
	f.n++
	id = ID{Seq: f.seq, Part: f.n}
	if last && f.open {
		id.Part = 0
	}
	return id, !f.skip()
}

// skip reports whether the client has the frame just counted.
func (f *Framer) skip() bool {
	switch {
	case !f.resume || f.seq > f.after.Seq:
		return false
	case f.seq < f.after.Seq:
		return true
	case f.after.Part == 0:
		return f.open // up to the frame that completes the event
	default:
		return f.n <= f.after.Part
	}
}

// number gives the frame whose id ends at f.mark its ".k": the bytes after
// it move right, within dst.
func (f *Framer) number(dst []byte, k int) []byte {
	var buf [24]byte
	suffix := strconv.AppendInt(append(buf[:0], '.'), int64(k), 10)
	end := len(dst)
	dst = append(dst, suffix...)
	copy(dst[f.mark+len(suffix):], dst[f.mark:end])
	copy(dst[f.mark:], suffix)
	f.mark = -1
	return dst
}
