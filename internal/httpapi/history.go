package httpapi

// GET /api/v1/agent/history?threadId=…&before=YYYY-MM-DD (seed 001 §4):
// one day of a thread's messages, the latest day with messages before
// `before` (the latest day at all without it), oldest first, days cut in the
// configured time zone (Config.HistoryLocation).
//
// A client loads the snapshot, then follows GET …/runs/{threadId}/events
// from its lastEventId and merges by runId + messageId (or toolCallId): every
// message's runId is the AG-UI runId its events carry (agui.IndexRuns), and
// lastEventId is taken before the messages are read and never inside a run
// still going, so the stream replays that run whole. Together the two miss
// nothing; what both carry merges by key.
//
// Assistant answers carry the structured result and the ui_schema of the same
// compiler the events stream uses (agui.Result, uischema.Compile); tool
// messages keep metadata.tool_agent_output as the full output and content as
// the light summary (seed 001 §5.2).

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/dialect/agui"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/payload"
	"github.com/agentchat/agentchat/internal/uischema"
)

const dayLayout = "2006-01-02"

// historySnapshot is seed 001's HistorySnapshotResponse.
type historySnapshot struct {
	Scope    string           `json:"scope"` // always "history_day"
	ThreadID string           `json:"threadId"`
	Day      string           `json:"day"` // "" when the thread has no messages before `before`
	HasMore  bool             `json:"hasMore"`
	Messages []historyMessage `json:"messages"`
	// LastEventID is where to follow the events stream from (?after= or Last-Event-ID).
	LastEventID string `json:"lastEventId"`
	// TimeZone names the zone days are cut in.
	TimeZone string `json:"timeZone"`
}

type historyMessage struct {
	ID        string `json:"id"`
	MessageID string `json:"messageId"` // = id; the key the events stream uses
	Role      string `json:"role"`
	Content   string `json:"content"`
	// Parts is a user message's text and images.
	Parts json.RawMessage `json:"parts,omitempty"`
	// RunID is the AG-UI runId of the events that carried the message;
	// TaskID the run (the 202's taskId).
	RunID     string          `json:"runId,omitempty"`
	TaskID    string          `json:"taskId,omitempty"`
	CreatedAt string          `json:"createdAt"`
	ToolCalls []agui.ToolCall `json:"toolCalls,omitempty"`
	// Tool messages: the call answered, and the seed's record in metadata
	// (tool_name, tool_call_id, tool_call_args, status, result, error, tool_agent_output).
	ToolCallID string          `json:"toolCallId,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	*historyResult
}

// historyResult is an answer's structured result, as seed 004's
// TEXT_MESSAGE_END carries it.
type historyResult struct {
	Status           string          `json:"status"`
	Answer           string          `json:"answer"`
	KeyPoints        []string        `json:"key_points"`
	ResultType       string          `json:"result_type"`
	SuggestedActions []string        `json:"suggested_actions"`
	UISchema         uischema.Schema `json:"ui_schema"`
}

// assistantMeta is what the agent loop records on an assistant message.
type assistantMeta struct {
	ToolCalls []storedCall  `json:"toolCalls"`
	Partial   bool          `json:"partial"`
	Answer    *event.Answer `json:"answer"`
}

func (s *Server) aguiHistory(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	thread, before := q.Get("threadId"), q.Get("before")
	if thread == "" {
		return apiErr(http.StatusBadRequest, "missing_thread_id", "the threadId query parameter is required")
	}
	if before != "" {
		if _, err := time.Parse(dayLayout, before); err != nil {
			return apiErr(http.StatusBadRequest, "invalid_before", "before must be a date like 2026-03-16")
		}
	}
	ctx, sc := r.Context(), scopeOf(r.Context())
	name := thread
	thread, err := s.clientThread(ctx, sc, name)
	if err != nil {
		return err
	}
	// The resume point first, then the messages: nothing falls between.
	last, err := s.runs.LastSeq(ctx, sc, thread)
	if err != nil {
		return err
	}
	if active, err := s.st.ActiveRun(ctx, sc, thread); err == nil {
		if first, err := s.st.ListEvents(ctx, sc, thread, active.ID, 0, 0, 1); err == nil && len(first) > 0 && first[0].Seq <= last {
			last = first[0].Seq - 1 // replay the run in progress whole
		}
	}
	msgs, err := s.allMessages(ctx, sc, thread)
	if err != nil {
		return err
	}

	loc := s.historyLoc
	dayOf := func(m chat.Message) string { return m.CreatedAt.In(loc).Format(dayLayout) }
	day := ""
	for _, m := range msgs {
		if d := dayOf(m); (before == "" || d < before) && d > day {
			day = d
		}
	}
	out := historySnapshot{Scope: "history_day", ThreadID: name, Day: day, Messages: []historyMessage{},
		LastEventID: strconv.FormatInt(last, 10), TimeZone: loc.String()}
	var page []chat.Message
	for _, m := range msgs {
		switch d := dayOf(m); {
		case d == day:
			page = append(page, m)
		case d < day:
			out.HasMore = true
		}
	}
	page = payload.Resolve(ctx, s.st, sc, page) // large outputs stored by reference
	ix := s.indexRuns(r, sc, page)
	for _, m := range page {
		out.Messages = append(out.Messages, viewHistoryMessage(m, ix))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// indexRuns replays the events of the runs behind msgs to learn the AG-UI
// runId of each message. A run whose events are gone (retention) is left
// out; its messages fall back to the run's id.
func (s *Server) indexRuns(r *http.Request, sc chat.Scope, msgs []chat.Message) agui.RunIndex {
	var runs []string
	for _, m := range msgs {
		if m.RunID != "" && !slices.Contains(runs, m.RunID) {
			runs = append(runs, m.RunID)
		}
	}
	var evs []event.Event
	for _, id := range runs {
		_, run, err := s.runs.Timeline(r.Context(), sc, id)
		if err != nil {
			s.log.WarnContext(r.Context(), "history: run events unavailable", "run_id", id, "err", err)
			continue
		}
		evs = append(evs, run...)
	}
	slices.SortFunc(evs, func(a, b event.Event) int { return int(a.Seq - b.Seq) })
	return agui.IndexRuns(evs)
}

func viewHistoryMessage(m chat.Message, ix agui.RunIndex) historyMessage {
	v := historyMessage{ID: m.ID, MessageID: m.ID, Role: m.Role, Content: m.Content, TaskID: m.RunID,
		CreatedAt: dialect.Millis(m.CreatedAt), RunID: aguiOr(ix.Runs[m.RunID], m.RunID)}
	if id, ok := ix.Messages[m.ID]; ok {
		v.RunID = id
	}
	switch m.Role {
	case chat.RoleUser:
		v.Parts = m.Parts
	case chat.RoleAssistant:
		var meta assistantMeta
		_ = json.Unmarshal(m.Metadata, &meta)
		for _, c := range meta.ToolCalls {
			v.ToolCalls = append(v.ToolCalls, agui.ToolCall{ID: c.ID, Function: agui.FunctionCall{Name: c.Name, Arguments: string(c.Arguments)}})
		}
		if len(meta.ToolCalls) > 0 {
			if _, streamed := ix.Messages[m.ID]; !streamed {
				if id, ok := ix.ToolCalls[meta.ToolCalls[0].ID]; ok {
					v.RunID = id
				}
			}
			break // a step towards the answer, not a result
		}
		a := agui.Result(event.MessageCompletedData{MessageID: m.ID, Role: m.Role, Content: m.Content, Partial: meta.Partial, Answer: meta.Answer})
		v.historyResult = &historyResult{Status: a.Status, Answer: a.Answer, KeyPoints: a.KeyPoints, ResultType: a.ResultType,
			SuggestedActions: a.SuggestedActions, UISchema: uischema.Compile(a.UIHints, a)}
	case chat.RoleTool:
		v.ToolCallID = m.ToolCallID
		v.Metadata = toolMetadata(m)
	}
	return v
}

// toolMetadata is a tool message's seed record; tool_agent_output, the full
// output, is the content itself when the tool gave nothing structured.
func toolMetadata(m chat.Message) json.RawMessage {
	meta := map[string]json.RawMessage{}
	_ = json.Unmarshal(m.Metadata, &meta)
	if out := meta["tool_agent_output"]; len(out) == 0 || string(out) == "null" {
		meta["tool_agent_output"], _ = json.Marshal(m.Content)
	}
	if _, ok := meta["result"]; !ok {
		meta["result"], _ = json.Marshal(m.Content)
	}
	for k, v := range meta {
		if string(v) == "null" || string(v) == `""` && k == "error" {
			delete(meta, k) // optional fields are omitted, never null
		}
	}
	b, _ := json.Marshal(meta)
	return b
}
