package agui

import "github.com/agentchat/agentchat/internal/event"

// RunIndex tells which AG-UI run carried what. A canonical run may span
// several AG-UI runs (each interrupt ends one; the decision opens the next),
// and events held across an interrupt are released into the next one, so
// only the encoder knows the runId a message was streamed under.
type RunIndex struct {
	// Messages maps a text or tool-result message id to its AG-UI runId.
	Messages map[string]string
	// ToolCalls maps a tool call id to the AG-UI runId that started it.
	ToolCalls map[string]string
	// Runs maps a canonical run id to the AG-UI runId it opened with.
	Runs map[string]string
}

// IndexRuns encodes evs (a thread's events, in seq order) as a stream would
// and records, for every message and tool call, the AG-UI runId of the first
// frame naming it. The history endpoint uses it so that history and the
// events stream agree on runId, messageId and toolCallId.
func IndexRuns(evs []event.Event) RunIndex {
	ix := RunIndex{Messages: map[string]string{}, ToolCalls: map[string]string{}, Runs: map[string]string{}}
	e := NewEncoder(Options{})
	first := func(m map[string]string, k, v string) {
		if _, ok := m[k]; !ok && k != "" {
			m[k] = v
		}
	}
	e.onFrame = func(typ string, v any) {
		switch f := v.(type) {
		case runStarted:
			first(ix.Runs, e.run, f.RunID)
		case textStart:
			first(ix.Messages, f.MessageID, e.runID)
		case toolStart:
			first(ix.ToolCalls, f.ToolCallID, e.runID)
		case toolResult:
			first(ix.Messages, f.MessageID, e.runID)
			first(ix.ToolCalls, f.ToolCallID, e.runID)
		}
	}
	var dst []byte
	for _, ev := range evs {
		dst = e.Encode(dst[:0], ev)
	}
	return ix
}
