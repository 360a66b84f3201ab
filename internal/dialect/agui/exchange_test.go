package agui_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/dialect/agui"
	"github.com/agentchat/agentchat/internal/event"
)

// TestRunExchangeEndsAtTheRecordedEnd: a run request's response whose run
// fails shows RUN_ERROR at the run's error event, and ends only at the
// run's canonical end (which adds no frame): the run service publishes
// that end once the run's end and usage are stored, so a client that sees
// its response end finds the run counted against its budgets. A run that
// succeeds ends at RUN_FINISHED.
func TestRunExchangeEndsAtTheRecordedEnd(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	ev := func(seq int64, p event.Payload) event.Event {
		e := event.New(p)
		e.Tenant, e.Thread, e.Run, e.Seq, e.Time = "acme", "conv-1", "run-1", seq, at
		return e
	}
	usage := event.Usage{InputTokens: 3, OutputTokens: 4}
	failed := &event.ErrorInfo{Code: "quota_exceeded", Message: "your limit of 1 tokens per day is reached"}

	x := agui.NewRunExchange(agui.RunAgentInput{ThreadID: "thread-1"})
	var out []byte
	for _, e := range []event.Event{
		ev(1, event.RunStartedData{ConversationID: "conv-1", Input: "hi"}),
		ev(2, event.TextDeltaData{Delta: "partial"}),
		ev(3, event.ErrorData{ErrorInfo: *failed, Usage: &usage}),
	} {
		out = x.Encode(out, e)
	}
	if !strings.Contains(string(out), "event: RUN_ERROR") || !strings.Contains(string(out), `"code":"quota_exceeded"`) {
		t.Fatalf("no RUN_ERROR:\n%s", out)
	}
	if x.Ended() {
		t.Fatal("the response ended at RUN_ERROR, before the run's end was recorded")
	}
	n := len(out)
	out = x.Encode(out, ev(4, event.RunFinishedData{Status: event.StatusFailed, Error: failed, Usage: usage}))
	if len(out) != n || !x.Ended() {
		t.Fatalf("after the run's end: ended %v, frames added %q", x.Ended(), out[n:])
	}

	ok := agui.NewRunExchange(agui.RunAgentInput{ThreadID: "thread-2"})
	ok.Encode(nil, ev(1, event.RunStartedData{ConversationID: "conv-1", Input: "hi"}))
	if ok.Encode(nil, ev(2, event.RunFinishedData{Status: event.StatusSucceeded, Usage: usage})); !ok.Ended() {
		t.Fatal("a run that succeeded did not end its response at RUN_FINISHED")
	}
}
