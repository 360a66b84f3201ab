package vercel

import (
	"net/http"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/event"
)

// Exchange is one response of the chat endpoint in the UI message stream:
// it ends with `finish` and `data: [DONE]` when its run ends, or when the
// run pauses for a person. Then the message finishes with finishReason
// "tool-calls", and the client's next request, carrying the decision in the
// message's tool part (state "approval-responded"), continues the same
// message in a new response.
type Exchange struct {
	*Encoder
	pause pauseWatch
}

var _ dialect.Exchange = (*Exchange)(nil)

// ExchangeOptions shape one response.
type ExchangeOptions struct {
	// MessageID names the assistant message when continuing one the client
	// holds; "" for the run id.
	MessageID string
	// AISDK5 writes only what AI SDK 5 clients accept (Options.AISDK5).
	AISDK5 bool
	// Awaiting maps the calls that waited for a person before the response's
	// first event, and still wait, to their confirmation ids
	// (RequestMessage.Awaiting); Decided are the calls decided now, whose
	// outcomes are still to come.
	Awaiting map[string]string
	Decided  []string
}

// NewExchange returns the response's exchange.
func NewExchange(opts ExchangeOptions) *Exchange {
	x := &Exchange{Encoder: NewEncoder(Options{MessageID: opts.MessageID, AISDK5: opts.AISDK5, ExplicitPause: true}),
		pause: pauseWatch{open: map[string]bool{}, awaiting: map[string]string{}}}
	for call, c := range opts.Awaiting {
		x.pause.awaiting[call] = c
	}
	for _, call := range opts.Decided {
		x.pause.open[call] = true
	}
	return x
}

// Encode appends the chunks of ev and follows the run towards its pause.
func (x *Exchange) Encode(dst []byte, ev event.Event) []byte {
	x.pause.see(ev)
	x.hold = x.pause.paused() // Idle may end the message after this event
	return x.Encoder.Encode(dst, ev)
}

// Header marks the response as a UI message stream.
func (x *Exchange) Header() http.Header {
	return http.Header{http.CanonicalHeaderKey(HeaderName): {HeaderValue}}
}

// Preamble appends nothing.
func (x *Exchange) Preamble(dst []byte) []byte { return dst }

// Ended is false: the run's end ends the stream, and with it the response.
func (x *Exchange) Ended() bool { return false }

// Idle ends the response once the run has paused for a person and said all
// it says before it waits: the message finishes and `[DONE]` follows.
func (x *Exchange) Idle(dst []byte) ([]byte, bool) {
	if !x.pause.paused() {
		return dst, false
	}
	// The tail is numbered after the last event, which was held open for
	// it: `[DONE]` carries its bare seq, so a client that reconnects after
	// any chunk of the tail gets the rest of it, and one that has it all
	// gets nothing more.
	x.frames.Continue()
	dst = x.pauseChunks(dst)
	dst = x.frames.Append(dst, "", done)
	return x.frames.End(dst, false), true
}

// pauseWatch follows a run's events to tell when it has paused for a
// person: a call awaits a decision and no other call of the run has an
// outcome still to come. Events say this before the run's status does, and
// an engine reports nothing after it until a decision resumes the run.
type pauseWatch struct {
	open     map[string]bool   // calls announced or resumed whose outcome has not come
	awaiting map[string]string // call id → confirmation id, for calls waiting for a person
}

func (p *pauseWatch) see(ev event.Event) {
	switch d := ev.Payload.(type) {
	case event.RunStartedData:
		clear(p.open)
		clear(p.awaiting)
	case event.ToolCallStartedData:
		p.open[d.ToolCallID] = true
	case event.ToolCallReadyData:
		p.open[d.ToolCallID] = true
	case event.ToolAwaitingData:
		delete(p.open, d.ToolCallID)
		p.awaiting[d.ToolCallID] = d.ConfirmationID
	case event.RunResumedData:
		for call, c := range p.awaiting {
			if c == d.ConfirmationID {
				delete(p.awaiting, call)
				p.open[call] = true
			}
		}
	case event.ToolResultData:
		delete(p.open, d.ToolCallID)
		delete(p.awaiting, d.ToolCallID)
	}
}

func (p *pauseWatch) paused() bool { return len(p.open) == 0 && len(p.awaiting) > 0 }
