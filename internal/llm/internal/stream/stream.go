// Package stream is the one stream loop of the HTTP provider adapters
// (openai, anthropic). It owns everything about a streamed completion but
// its format: sending the request through the provider's SDK within the
// first-answer bound, the error of a call that was refused or never
// answered, reading the SSE body, queueing the chunks of each event,
// cancellation, and how the stream ended (cleanly, cut, unparseable, or
// cancelled). A provider supplies only its decode step, a Decoder, which
// turns one event into chunks and says whether the answer was complete. The
// loop knows no format, as the SSE handler over dialect.Exchange knows none.
//
// Invariants:
//   - Errors are *llm.Error, except a cancelled ctx, which is reported as the
//     context's error; their texts are the upstream.Provider's, scrubbed of
//     the API key.
//   - Once ctx has ended, Next delivers nothing more, not even chunks
//     already received: the caller has moved on.
//   - Cancelling ctx, Close, or the end of the stream ends the upstream
//     request at once: the body is closed and the request's context
//     cancelled, exactly once.
//   - A stream is used by one goroutine, as llm.Stream says; a Decoder is
//     called by its stream only, one event at a time.
package stream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/internal/jsonscan"
	"github.com/agentchat/agentchat/internal/llm/internal/sse"
	"github.com/agentchat/agentchat/internal/llm/internal/upstream"
)

// Decoder is a provider's decode step: the state of one answer as its
// events arrive. It knows nothing of HTTP, contexts or transport errors.
type Decoder interface {
	// Event decodes one event of the body: typ is its SSE event name ("" if
	// it has none) and data its data, each line followed by "\n"; both are
	// valid only during the call. It appends the chunks the event yields to
	// q and returns q; last reports that the event ends the answer, so the
	// loop reads no further. An error ends the stream: an *llm.Error is
	// reported as it is (an error the provider sent in the stream), a
	// *jsonscan.Error as an event that could not be parsed. On an error the
	// chunks appended to q are dropped.
	Event(typ, data []byte, q []llm.Chunk) (_ []llm.Chunk, last bool, err error)
	// End is called once, when the body ended without an error: after an
	// event reported last, or at the body's clean end. It appends the chunks
	// that close the answer (its usage) to q and reports whether the answer
	// was complete; an incomplete one is a stream cut. doneLine reports that
	// a "data: [DONE]" line was read: the body may stop right after that
	// line, before the blank line that would have made it an event.
	End(q []llm.Chunk, doneLine bool) (_ []llm.Chunk, complete bool)
}

// Upstream is the provider a stream talks to.
type Upstream struct {
	// Provider names the upstream in errors and holds the key they are
	// scrubbed of.
	Provider upstream.Provider
	// Timeout bounds the wait for the response headers (see
	// upstream.FirstAnswer); zero or negative: no bound.
	Timeout time.Duration
}

// InvalidRequest is the error of a request the adapter could not translate
// for its provider: nothing was sent.
func InvalidRequest(err error) *llm.Error {
	return &llm.Error{Code: llm.CodeBadRequest, Message: "invalid model request: " + err.Error(), Err: err}
}

// Open makes one streamed call to u and returns the stream of its answer,
// decoded by a D.
//
// send makes the request with the ctx it is given through the provider's
// SDK, which builds, authenticates and sends it and maps a refusal to its
// error. It returns the response with its body unread (the SDK's
// option.WithResponseBodyInto), or the SDK's error, with the response when
// there was one. init, when set, prepares the decoder for the response (its
// headers, say) before the first event.
//
// D is held by value inside the stream, so a stream costs one allocation
// whatever its decoder; send and init do not escape, so neither do the
// request parameters they capture.
func Open[D any, P interface {
	*D
	Decoder
}](ctx context.Context, u Upstream, send func(ctx context.Context) (*http.Response, error), init func(dec P, resp *http.Response)) (llm.Stream, error) {
	if err := u.Provider.ContextError(ctx, nil); err != nil {
		return nil, err
	}
	reqCtx, stop, cancel := upstream.FirstAnswer(ctx, u.Timeout)
	resp, err := send(reqCtx)
	timedOut := stop()
	if err != nil || timedOut {
		if err == nil && resp != nil {
			resp.Body.Close()
		}
		cancel()
		return nil, u.startError(ctx, err, resp, timedOut)
	}
	s := &stream[D, P]{ctx: ctx, cancel: cancel, provider: u.Provider, body: resp.Body, events: sse.NewReader(resp.Body)}
	if init != nil {
		init(&s.dec, resp)
	}
	return s, nil
}

// startError is the error of a call that produced no stream.
func (u Upstream) startError(ctx context.Context, err error, resp *http.Response, timedOut bool) error {
	if resp != nil && resp.StatusCode >= 400 && ctx.Err() == nil {
		// The SDK has read the error body and put it back on resp; read it
		// here, since the SDKs decode only their own error shape and
		// providers and proxies answer in others too (or in HTML).
		var body []byte
		if resp.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		}
		return u.Provider.StatusError(resp.StatusCode, resp.Header, upstream.ErrorBodyMessage(body), err)
	}
	if err == nil {
		err = context.DeadlineExceeded
	}
	return u.Provider.StartError(ctx, err, timedOut, u.Timeout)
}

// stream reads one answer's body and hands each event to its decoder.
type stream[D any, P interface {
	*D
	Decoder
}] struct {
	ctx      context.Context // the caller's: tells cancellation from failure
	cancel   func()          // ends the request
	provider upstream.Provider
	body     io.ReadCloser
	events   *sse.Reader
	dec      D

	queue  []llm.Chunk // the chunks of the current event; reused
	queued int         // how many of queue were delivered
	cur    llm.Chunk
	ended  bool
	err    error
	closed bool
}

func (s *stream[D, P]) Next() bool {
	for {
		// ctx is looked at before a chunk is delivered, not before each
		// read too (every token passes here): a read after ctx ended fails,
		// since its cancellation closes the request's body.
		if s.queued < len(s.queue) && !s.ended && s.ctx.Err() != nil {
			// Once ctx has ended, nothing more is delivered, not even
			// chunks already received: the caller has moved on.
			clear(s.queue)
			s.queue, s.queued = s.queue[:0], 0
			s.end(s.ctx.Err())
		}
		if s.queued < len(s.queue) {
			s.cur = s.queue[s.queued]
			s.queue[s.queued] = llm.Chunk{} // drop the references it holds
			s.queued++
			return true
		}
		s.queue, s.queued = s.queue[:0], 0
		if s.ended {
			return false
		}
		typ, data, err := s.events.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil // the body's clean end; End judges the answer
			}
			s.end(err)
			continue
		}
		var last bool
		s.queue, last, err = P(&s.dec).Event(typ, data, s.queue)
		if err != nil {
			clear(s.queue)
			s.queue = s.queue[:0]
		}
		if err != nil || last {
			s.end(err)
		}
	}
}

// end settles how the stream ended, with err nil at a clean end of the
// body or an event that ended the answer, and releases the request.
func (s *stream[D, P]) end(err error) {
	s.ended = true
	defer s.release()
	if err = failure(s.ctx, s.provider, err); err != nil {
		s.err = err
		return
	}
	var complete bool
	if s.queue, complete = P(&s.dec).End(s.queue, s.events.Done()); !complete {
		s.err = s.provider.StreamCut(nil)
	}
}

// failure is the error to report for a stream that ended with err, nil for
// a clean end of the body.
func failure(ctx context.Context, p upstream.Provider, err error) error {
	if cerr := p.ContextError(ctx, err); cerr != nil {
		return cerr
	}
	if err == nil {
		return nil
	}
	// Declared past the clean end: errors.As moves its targets to the heap.
	var lerr *llm.Error
	var decErr *jsonscan.Error
	switch {
	case errors.As(err, &lerr): // the provider's own error, sent in the stream
		return lerr
	case errors.As(err, &decErr), errors.Is(err, sse.ErrTooLarge):
		return p.BadStream(err)
	}
	return p.StreamCut(err)
}

func (s *stream[D, P]) Chunk() llm.Chunk { return s.cur }

func (s *stream[D, P]) Err() error { return s.err }

func (s *stream[D, P]) Close() error {
	s.release()
	return nil
}

// release ends the upstream request: closing the body stops the read,
// cancelling the context stops a request still in flight. A body read to
// the answer's end is closed as such where its transport tells that apart
// (closerAtEnd), so that its connection serves the next call.
func (s *stream[D, P]) release() {
	if s.closed {
		return
	}
	s.closed = true
	if b, ok := s.body.(closerAtEnd); ok && s.ended && s.err == nil {
		b.CloseAtEnd()
	} else {
		s.body.Close()
	}
	s.cancel()
}

// closerAtEnd is a body that can be closed once its reader stopped at the
// answer's end marker, before the body's own end (package transport's):
// what is left is that end, not more of an answer, so its connection may
// be kept.
type closerAtEnd interface{ CloseAtEnd() error }
