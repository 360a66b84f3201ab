package httpapi

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect/agui"
	"github.com/agentchat/agentchat/internal/store"
)

// messagesSnapshot is an AG-UI MESSAGES_SNAPSHOT of a thread's stored
// messages, sent first on a thread stream when the client asks for it
// (?snapshot=messages). Its id is the seq the snapshot reflects, so a client
// that reconnects from it misses nothing.
func (s *Server) messagesSnapshot(ctx context.Context, sc chat.Scope, thread string, seq int64) ([]byte, error) {
	var out []agui.Message
	cursor := ""
	for {
		page, next, err := s.st.ListMessages(ctx, sc, thread, store.MessageFilter{}, store.Page{Limit: 500, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, m := range page {
			out = append(out, snapshotMessage(m))
		}
		if cursor = next; next == "" {
			return agui.AppendMessagesSnapshot(nil, strconv.FormatInt(seq, 10), time.Now(), out), nil
		}
	}
}

// snapshotMessage gives a stored message AG-UI's message shape; an assistant's
// tool calls come from its metadata, where the agent loop records them.
func snapshotMessage(m chat.Message) agui.Message {
	out := agui.Message{ID: m.ID, Role: m.Role, Content: m.Content}
	switch m.Role {
	case chat.RoleTool:
		out.ToolCallID = m.ToolCallID
	case chat.RoleAssistant:
		var meta struct {
			ToolCalls []struct {
				ID        string          `json:"id"`
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"toolCalls"`
		}
		_ = json.Unmarshal(m.Metadata, &meta)
		for _, c := range meta.ToolCalls {
			out.ToolCalls = append(out.ToolCalls, agui.ToolCall{ID: c.ID, Function: agui.FunctionCall{Name: c.Name, Arguments: string(c.Arguments)}})
		}
	}
	return out
}
