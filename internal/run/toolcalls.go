package run

import (
	"encoding/json"

	"github.com/agentchat/agentchat/internal/event"
)

// openCalls follows a run's tool calls that have no result yet, so that a run
// ending without them (failed, cancelled, its executor lost) ends them too:
// no call stays "running" in the timeline or any format after its run ended.
type openCalls struct {
	order []string
	calls map[string]*event.ToolResultData
}

// note updates the calls with one event of the run.
func (o *openCalls) note(ev event.Event) {
	var id, name string
	var args json.RawMessage
	switch p := ev.Payload.(type) {
	case event.ToolCallStartedData:
		id, name = p.ToolCallID, p.Name
	case event.ToolCallReadyData:
		id, name, args = p.ToolCallID, p.Name, p.Args
	case event.ToolAwaitingData:
		id, name, args = p.ToolCallID, p.Name, p.Args
	case event.ToolRunningData:
		id, name, args = p.ToolCallID, p.Name, p.Args
	case event.ToolResultData:
		if _, ok := o.calls[p.ToolCallID]; ok {
			delete(o.calls, p.ToolCallID)
		}
		return
	default:
		return
	}
	if id == "" {
		return
	}
	if o.calls == nil {
		o.calls = map[string]*event.ToolResultData{}
	}
	c, ok := o.calls[id]
	if !ok {
		c = &event.ToolResultData{ToolCallID: id}
		o.calls[id] = c
		o.order = append(o.order, id)
	}
	if name != "" {
		c.Name = name
	}
	if len(args) > 0 {
		c.Args = args
	}
}

// failures returns a failed result for every open call, in the order the
// calls began, and forgets them.
func (o *openCalls) failures(reason string) []event.Event {
	var out []event.Event
	for _, id := range o.order {
		c, ok := o.calls[id]
		if !ok {
			continue
		}
		r := *c
		r.Status, r.Error, r.Content = event.ToolFailure, reason, reason
		if len(r.Args) == 0 {
			r.Args = json.RawMessage(`{}`)
		}
		out = append(out, event.New(r))
	}
	o.order, o.calls = nil, nil
	return out
}

// unfinishedReason says why a run's open calls end with it.
func unfinishedReason(status string) string {
	if status == event.StatusCancelled {
		return "The run was cancelled before this tool call finished."
	}
	return "The run failed before this tool call finished."
}
