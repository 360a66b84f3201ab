package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/run"
)

// writeTimeout bounds one write to a stream; a client that cannot take a
// frame in that time is cut off and resumes by Last-Event-ID.
const writeTimeout = 15 * time.Second

// deadlineSlack is how much of writeTimeout a write may find already spent
// on its connection's deadline: a write gets between writeTimeout minus
// the slack and writeTimeout.
const deadlineSlack = time.Second

// frameBuf is the length of a pooled array of encoded frames: a few
// frames (a token delta is ~200 bytes). A burst grows past it, and its
// buffer is left to the collector.
const frameBuf = 4 << 10

// frames holds the arrays streams encode their frames into. A stream takes
// one per wake and gives it back after the write, so a thousand streams
// waiting for their next token, or idle, hold none.
var frames = sync.Pool{New: func() any { return new([frameBuf]byte) }}

// serveStream writes a stream's events through the exchange of its wire
// format until the stream is done, the exchange ends, the client leaves, or
// the server shuts down. It knows no format: headers, preamble and when the
// response ends are the exchange's. The request context owns the connection
// only: leaving does not cancel the run.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, st *run.Stream, enc dialect.Exchange) {
	ss := &sseStream{s: s, w: w, rc: http.NewResponseController(w), ctx: r.Context(), done: r.Context().Done(), st: st, enc: enc,
		closed: s.tel.StreamOpened(dialect.Name(enc))}
	detached := false // the stream goes on, detached (detach.go)
	defer func() {
		if !detached {
			ss.close()
		}
	}()
	if ss.open() {
		ss.d = canDetach(r, w.Header())
		detached = ss.serve()
	}
}

// sseStream is a stream being served. Its state lives on the heap, and
// serve's frame holds little but the select, so that the connection's
// goroutine, waiting there for hours, uses under a quarter of a 16 KiB
// stack: a collection then halves the stack its start grew (the runtime
// shrinks only a stack less than a quarter used, counting 800 bytes more).
// Encoding and writing are calls that return before it waits again. The
// handlers and middleware under it keep their frames small for the same
// reason (events, wrap, authenticate).
type sseStream struct {
	s   *Server
	w   http.ResponseWriter
	rc  *http.ResponseController
	ctx context.Context
	// done is ctx.Done(), taken once: a parked stream's every wake looks
	// at it, and ctx.Err() walks the request context's chain of values
	// each time (docs/benchmarks.md, twelfth round).
	done     <-chan struct{}
	st       *run.Stream
	enc      dialect.Exchange
	deadline time.Time // the connection's write deadline
	opened   time.Time // when its preamble went out
	// d is set when the stream may detach from net/http; conn and pk once
	// it has (detach.go), with info, its request's log, watched, its
	// leaveWatcher token, and broken once a write to conn failed.
	d       *detacher
	pk      *parking
	conn    net.Conn
	info    *logInfo
	watched int32
	broken  bool
	// unflushed: the headers and preamble are buffered, not yet sent
	// (open); the stream's first write or wait sends them.
	unflushed bool
	ping      *time.Ticker
	// check wakes a stream that heard nothing for a while to look at the
	// log itself: a run's end reaches it even when its publish was lost.
	// checkSet says whether it may be armed: arm runs for every token and
	// the embedded default never needs the check, so a stopped timer is
	// not stopped again (each Stop takes the timer's lock).
	check    *time.Timer
	checkSet bool
	closed   func() // counts the stream closed
}

// close stops the timers and releases the stream's subscription.
func (ss *sseStream) close() {
	if ss.ping != nil {
		ss.ping.Stop()
	}
	if ss.check != nil {
		ss.check.Stop()
	}
	if ss.pk != nil && ss.pk.ping != nil {
		ss.pk.ping.Stop()
	}
	ss.closed()
	ss.st.Close()
	if ss.conn != nil {
		ss.closeConn()
	}
}

// open writes the headers and the preamble, and starts the timers; false if
// the client is gone.
func (ss *sseStream) open() bool {
	h := ss.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	for k, v := range ss.enc.Header() {
		h[k] = v
	}
	ss.w.WriteHeader(http.StatusOK)
	out := getFrames()
	out = dialect.AppendRetry(out, 2*time.Second)
	out = ss.enc.Preamble(out)
	// Buffered, not flushed: a chat's first events (a new conversation's
	// announcements) are usually queued by now, and go out with the
	// headers in one write (serve flushes before it waits).
	ss.extendDeadline()
	_, err := ss.w.Write(out)
	putFrames(out)
	if err != nil {
		return false
	}
	ss.unflushed = true
	ss.opened = time.Now()
	ss.ping = time.NewTicker(ss.s.ping)
	ss.check, ss.checkSet = time.NewTimer(time.Hour), true
	ss.arm()
	return true
}

// serve is the stream's loop: it waits for events, a ping, a check, the
// client leaving or the server closing. It reports whether the stream
// detached (detach.go) to wait elsewhere.
func (ss *sseStream) serve() (detached bool) {
	done := ss.ctx.Done()
	var later <-chan time.Time // a stream that may detach looks again after Config.DetachAfter
	if ss.d != nil {
		t := time.NewTimer(ss.s.detachAfter)
		defer t.Stop()
		later = t.C
	}
	wait := !ss.st.Pending()
	for {
		if wait && ss.unflushed {
			// Nothing written since open: what is ready goes out with the
			// headers; if nothing is, the headers go alone before the wait.
			select {
			case <-ss.st.Ready():
				wait = false
			default:
				if ss.rc.Flush() != nil {
					return false
				}
				ss.unflushed = false
			}
		}
		if wait {
			if ss.d != nil && ss.conn == nil && (ss.st.Idle() || time.Since(ss.opened) >= ss.s.detachAfter) && ss.detach() {
				return true
			}
			select {
			case <-done:
				return false
			case <-later:
				later = nil
				continue
			case <-ss.s.closing:
				ss.abort(event.ErrorInfo{Code: errcode.ServerShutdown, Message: "the server is restarting; reconnect with Last-Event-ID to continue"})
				return false
			case now := <-ss.ping.C:
				if !ss.keepAlive(now) {
					return false
				}
				continue
			case <-ss.check.C:
				if !ss.checkLog() {
					continue
				}
			case <-ss.st.Ready():
			}
		}
		var more bool
		if wait, more = ss.deliver(); !more {
			return false
		}
	}
}

// keepAlive writes the exchange's keep-alive; false if the client is gone.
func (ss *sseStream) keepAlive(now time.Time) bool {
	return ss.write(ss.enc.KeepAlive(getFrames(), now))
}

// checkLog looks at the log (see run.Stream.Check) and reports whether it
// found events to deliver.
func (ss *sseStream) checkLog() bool {
	if err := ss.st.Check(ss.ctx); err != nil && ss.ctx.Err() == nil {
		ss.s.log.DebugContext(ss.ctx, "stream could not check the log", "err", err)
	}
	ss.arm()
	return ss.st.Pending()
}

// arm sets the check timer for the stream's next look at the log.
func (ss *sseStream) arm() {
	if d := ss.st.CheckAfter(); d > 0 {
		ss.check.Reset(d)
		ss.checkSet = true
	} else if ss.checkSet {
		ss.check.Stop()
		ss.checkSet = false
	}
}

// deliver writes what the stream has ready. more is false once the stream
// is over (its end written, the client gone, the subscription ended); wait
// is false when more is queued already.
func (ss *sseStream) deliver() (wait, more bool) {
	evs, err := ss.st.Next(ss.ctx, event.GetBatch())
	// The events' payloads are sent when this returns: neither they nor
	// the array are held until the next wake.
	defer func() { event.PutBatch(evs) }()
	out := getFrames()
	end := false
	for _, ev := range evs {
		out = ss.enc.Encode(out, ev)
		if ss.enc.Ended() {
			end = true
			break
		}
	}
	if !ss.write(out) || end || ss.st.Done() {
		return false, false
	}
	if len(evs) > 0 {
		ss.arm()
	}
	if err == nil && !ss.st.Pending() {
		select {
		case <-ss.st.Ready():
			return false, true // more is queued: not idle
		default:
			out, stop := ss.enc.Idle(getFrames())
			if !ss.write(out) || stop { // out is empty unless it ends the response
				return false, false
			}
		}
	}
	if err != nil {
		if ss.ctx.Err() != nil {
			return false, false
		}
		info := event.ErrorInfo{Code: errcode.StreamInterrupted, Message: "the stream was interrupted; reconnect with Last-Event-ID to continue"}
		if errors.Is(err, bus.ErrSlowConsumer) {
			info = event.ErrorInfo{Code: errcode.SlowConsumer, Message: "the client fell too far behind; reconnect with Last-Event-ID to continue"}
		} else {
			ss.s.log.WarnContext(ss.ctx, "stream ended", "err", err)
		}
		ss.abort(info)
		return false, false
	}
	return true, true
}

// abort writes the exchange's end for a stream cut short.
func (ss *sseStream) abort(info event.ErrorInfo) {
	ss.write(ss.enc.Abort(getFrames(), info))
}

// write sends out, frames from getFrames, and flushes, then gives out back;
// false if the client is gone.
func (ss *sseStream) write(out []byte) bool {
	defer putFrames(out)
	if len(out) == 0 {
		return true
	}
	if ss.conn != nil {
		return ss.writeChunk(out)
	}
	ss.extendDeadline()
	_, err := ss.w.Write(out)
	if err == nil {
		err = ss.rc.Flush()
		ss.unflushed = false
	}
	return err == nil
}

// extendDeadline moves the connection's write deadline once per
// deadlineSlack, not per write: a write is still cut off within
// writeTimeout, and a stream does not reset its connection's timer for
// every token.
func (ss *sseStream) extendDeadline() {
	if now := time.Now(); ss.deadline.Sub(now) < writeTimeout-deadlineSlack {
		ss.deadline = now.Add(writeTimeout)
		_ = ss.rc.SetWriteDeadline(ss.deadline)
	}
}

// getFrames returns an empty buffer over a pooled array for encoded frames.
func getFrames() []byte { return frames.Get().(*[frameBuf]byte)[:0] }

// putFrames gives out's array back, unless a burst outgrew it.
func putFrames(out []byte) {
	if cap(out) == frameBuf {
		frames.Put((*[frameBuf]byte)(out[:frameBuf]))
	}
}

// lastEventID reads where a client resumes a stream: the id of the last frame
// it has, from Last-Event-ID (or ?after=, for clients that cannot set the
// header); the zero ID, the stream's start, when it sent neither. Every
// stream reads it here, and dialect.ParseID is its one syntax.
func lastEventID(r *http.Request) (dialect.ID, error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	if v == "" {
		return dialect.ID{}, nil
	}
	at, ok := dialect.ParseID(v)
	if !ok {
		return dialect.ID{}, apiErr(http.StatusBadRequest, errcode.InvalidLastEventID, "Last-Event-ID must be an event id this server sent")
	}
	return at, nil
}

// resume readies enc for a client that has every frame up to at, on a stream
// that replays the log after at.Replay() (Follow's position: at's event
// again when the client has only some of its frames), or from further back.
// The encoder leaves out the frames the client has (dialect.Encoder.Resume),
// so no frame is lost or repeated when the cut fell between two frames of
// one event. A format with state across a run's events (AG-UI, the
// observable stream) is primed: it reads the run's events up to the
// position first, writing nothing, so it continues as the stream that
// dropped would have. The stream opened before has written this process's
// log out; a position the log does not (yet) hold leaves the encoder
// unprimed.
func (s *Server) resume(ctx context.Context, st *run.Stream, enc dialect.Encoder, at dialect.ID, primed bool) {
	if at == (dialect.ID{}) {
		return
	}
	enc.Resume(at)
	if !primed || at.Replay() <= 0 {
		return
	}
	var scratch []byte
	for _, ev := range s.runs.RunUpTo(ctx, scopeOf(ctx), st.Thread(), at.Replay()) {
		scratch = enc.Encode(scratch[:0], ev) // every frame is at or before at: none is written
	}
}
