package agui_test

import (
	"testing"

	"github.com/agentchat/agentchat/internal/dialect/agui/aguitest"
)

// checkSchema reports what a strict 1.0 client would refuse or strip.
func checkSchema(ev map[string]any, strict bool) error { return aguitest.CheckSchema(ev, strict) }

// verifyStream checks every frame of an AG-UI stream: SSE framing, event
// name equal to type, schema, no null, and the client's ordering rules.
func verifyStream(t *testing.T, stream []byte, strict bool) []map[string]any {
	t.Helper()
	return verifyFrames(t, stream, strict, true)
}

// verifyFrames is verifyStream; needID false allows frames without an id
// (Abort's, which are not replayable).
func verifyFrames(t *testing.T, stream []byte, strict, needID bool) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, ev := range aguitest.VerifyStream(t, stream, strict, needID) {
		out = append(out, ev.Data)
	}
	return out
}
