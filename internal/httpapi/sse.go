package httpapi

import (
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
	write := func() bool {
		if len(out) == 0 {
			return true
		}
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, err := w.Write(out)
		if err == nil {
			err = rc.Flush()
		}
		out = out[:0]
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

// lastEventID reads the resume position from Last-Event-ID (or ?after=).
func lastEventID(r *http.Request) (int64, error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	if v == "" {
		return 0, nil
	}
	seq, ok := dialect.ParseSeqID(v)
	if !ok {
		return 0, apiErr(http.StatusBadRequest, errcode.InvalidLastEventID, "Last-Event-ID must be an event id this server sent")
	}
	return seq, nil
}
