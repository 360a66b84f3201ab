package httpapi

import (
	"context"
	"errors"
	"net/http"
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

// What a stream keeps between writes: a burst (a client that fell behind,
// a replay) grows its buffers, and a thousand streams keeping them would
// hold megabytes for nothing while they stream a token at a time.
const (
	keepOut    = 8 << 10 // bytes of encoded frames
	keepEvents = 32      // events taken from the stream (~150 bytes each)
)

// serveStream writes a stream's events through the exchange of its wire
// format until the stream is done, the exchange ends, the client leaves, or
// the server shuts down. It knows no format: headers, preamble and when the
// response ends are the exchange's. The request context owns the connection
// only: leaving does not cancel the run.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, st *run.Stream, enc dialect.Exchange) {
	defer st.Close()
	defer s.tel.StreamOpened(dialect.Name(enc))()
	ctx := r.Context()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	for k, v := range enc.Header() {
		h[k] = v
	}
	w.WriteHeader(http.StatusOK)

	// Sized for a few common frames (a token delta is ~200 bytes): it grows
	// for a burst, and a thousand idle streams do not each hold 4 KiB.
	out := make([]byte, 0, 1024)
	out = dialect.AppendRetry(out, 2*time.Second)
	out = enc.Preamble(out)
	var deadline time.Time
	write := func() bool {
		if len(out) == 0 {
			return true
		}
		// The deadline moves once per deadlineSlack, not per write: a
		// write is still cut off within writeTimeout, and a stream does
		// not reset its connection's timer for every token.
		if now := time.Now(); deadline.Sub(now) < writeTimeout-deadlineSlack {
			deadline = now.Add(writeTimeout)
			_ = rc.SetWriteDeadline(deadline)
		}
		_, err := w.Write(out)
		if err == nil {
			err = rc.Flush()
		}
		out = out[:0]
		if cap(out) > keepOut {
			out = make([]byte, 0, 1024) // a burst's buffer goes
		}
		return err == nil
	}
	if !write() {
		return
	}
	ping := time.NewTicker(s.ping)
	defer ping.Stop()
	// check wakes a stream that heard nothing for a while to look at the
	// log itself: a run's end reaches it even when its publish was lost.
	check := time.NewTimer(time.Hour)
	arm := func() {
		if d := st.CheckAfter(); d > 0 {
			check.Reset(d)
		} else {
			check.Stop()
		}
	}
	arm()
	defer check.Stop()
	var evs []event.Event
	wait := !st.Pending()
	for {
		if wait {
			select {
			case <-ctx.Done():
				return
			case <-s.closing:
				out = enc.Abort(out, event.ErrorInfo{Code: errcode.ServerShutdown, Message: "the server is restarting; reconnect with Last-Event-ID to continue"})
				write()
				return
			case now := <-ping.C:
				out = enc.KeepAlive(out, now)
				if !write() {
					return
				}
				continue
			case <-check.C:
				if err := st.Check(ctx); err != nil && ctx.Err() == nil {
					s.log.DebugContext(ctx, "stream could not check the log", "err", err)
				}
				arm()
				if !st.Pending() {
					continue
				}
			case <-st.Ready():
			}
		}
		wait = true
		var err error
		evs, err = st.Next(ctx, evs[:0])
		end := false
		for _, ev := range evs {
			out = enc.Encode(out, ev)
			if enc.Ended() {
				end = true
				break
			}
		}
		if !write() {
			return
		}
		if end || st.Done() {
			return
		}
		if len(evs) > 0 {
			arm()
		}
		clear(evs) // their payloads are sent: do not hold them until the next wake
		if cap(evs) > keepEvents {
			evs = nil // a burst's array goes: the stream may live for hours
		}
		if err == nil && !st.Pending() {
			select {
			case <-st.Ready():
				wait = false // more is queued: not idle
			default:
				var stop bool
				if out, stop = enc.Idle(out); stop {
					write()
					return
				}
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			info := event.ErrorInfo{Code: errcode.StreamInterrupted, Message: "the stream was interrupted; reconnect with Last-Event-ID to continue"}
			if errors.Is(err, bus.ErrSlowConsumer) {
				info = event.ErrorInfo{Code: errcode.SlowConsumer, Message: "the client fell too far behind; reconnect with Last-Event-ID to continue"}
			} else {
				s.log.WarnContext(ctx, "stream ended", "err", err)
			}
			out = enc.Abort(out, info)
			write()
			return
		}
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
