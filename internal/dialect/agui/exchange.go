package agui

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/event"
)

// Exchange is one AG-UI response: a run request's stream (Standard mode),
// which ends with the first AG-UI run it carries, or a thread's event
// stream (Seed mode), which follows the thread.
type Exchange struct {
	*Encoder
	oneRun   bool
	base     int // AG-UI runs ended before the response's first event
	preamble []byte
}

var _ dialect.Exchange = (*Exchange)(nil)

// NewRunExchange is the response of a streaming run request: one AG-UI run,
// in Standard mode, named as the input names its thread, in the protocol
// generation the input declares (RunAgentInput.PreV1).
func NewRunExchange(in RunAgentInput) *Exchange {
	return &Exchange{Encoder: NewEncoder(Options{Mode: Standard, ThreadID: in.ThreadID, PreV1: in.PreV1()}), oneRun: true}
}

// NewContinuation is the response to a request whose resume entries decided
// interrupts: the next AG-UI run of the paused run, named in.RunID. primer is
// the run's events up to the interrupt the client answered; the encoder
// reads them without writing, so the continuation opens as a stream that
// never dropped would have.
func NewContinuation(in RunAgentInput, primer []event.Event) *Exchange {
	x := NewRunExchange(in)
	x.prime(primer)
	x.NameNextRun(in.RunID)
	x.base = x.RunsEnded()
	return x
}

// NewThreadExchange is seed 004's event stream of a thread (Seed mode).
// primer is the events of the run in progress up to the position the
// client resumes from (nil from the start): the frames after it are then
// exactly those a connection that never dropped would have seen. preV1
// writes for a client before AG-UI 1.0 (Options.PreV1).
func NewThreadExchange(threadID string, preV1 bool, primer []event.Event) *Exchange {
	x := &Exchange{Encoder: NewEncoder(Options{Mode: Seed, ThreadID: threadID, PreV1: preV1})}
	x.prime(primer)
	return x
}

// WithSnapshot makes the response start with a MESSAGES_SNAPSHOT of msgs,
// a thread's stored messages as of event seq: a client loads and follows in
// one request, and one that reconnects from the snapshot's id misses nothing.
func (x *Exchange) WithSnapshot(msgs []chat.Message, seq int64, now time.Time) *Exchange {
	out := make([]Message, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, MessageOf(m))
	}
	x.preamble = AppendMessagesSnapshot(nil, strconv.FormatInt(seq, 10), now, out)
	return x
}

// WithState makes the response's preamble end with a STATE_SNAPSHOT of
// the thread's shared state (after WithSnapshot): a frame without an id,
// so a client's Last-Event-ID stays the messages snapshot's.
func (x *Exchange) WithState(state json.RawMessage, now time.Time) *Exchange {
	x.preamble = AppendStateSnapshot(x.preamble, "", now, state)
	return x
}

func (x *Exchange) prime(evs []event.Event) {
	var scratch []byte
	for _, ev := range evs {
		scratch = x.Encode(scratch[:0], ev)
	}
}

// Header returns nil: AG-UI needs only the SSE headers.
func (x *Exchange) Header() http.Header { return nil }

// Preamble appends the messages snapshot, when asked for.
func (x *Exchange) Preamble(dst []byte) []byte { return append(dst, x.preamble...) }

// Ended reports, for a run request, that its AG-UI run has ended (finished,
// interrupted or errored). A run that errored ends the response at its
// canonical end, which comes after RUN_ERROR with no frame of its own: a
// client whose response has ended may start its next run at once, and
// finds the last one's end and usage recorded (its budgets counted).
func (x *Exchange) Ended() bool { return x.oneRun && x.RunsEnded() > x.base && !x.EndUnrecorded() }

// Idle never ends the response: AG-UI ends a run with a frame.
func (x *Exchange) Idle(dst []byte) ([]byte, bool) { return dst, false }

// MessageOf gives a stored message AG-UI's message shape; an assistant's
// tool calls come from its metadata.
func MessageOf(m chat.Message) Message {
	out := Message{ID: m.ID, Role: m.Role, Content: m.Content}
	switch m.Role {
	case chat.RoleTool:
		out.ToolCallID = m.ToolCallID
	case chat.RoleAssistant:
		out.ToolCalls = toolCallsOf(chat.ParseAssistantMeta(m.Metadata).ToolCalls)
	}
	return out
}

func toolCallsOf(calls []chat.ToolCall) []ToolCall {
	var out []ToolCall
	for _, c := range calls {
		out = append(out, ToolCall{ID: c.ID, Function: FunctionCall{Name: c.Name, Arguments: string(c.Arguments)}})
	}
	return out
}
