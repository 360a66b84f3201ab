package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// toolResults turns a client's answers to its frontend tool calls into the
// role=tool messages that answer the thread's open calls: those of its last
// assistant message with tool calls that have no result yet. Answers to
// other calls (answered before, or never asked) are history a client
// resends, and skipped.
func (s *Service) toolResults(ctx context.Context, sc chat.Scope, thread string, answers []chat.ToolAnswer) ([]chat.Message, error) {
	if thread == "" {
		return nil, fmt.Errorf("tool results need the thread that asked for them: %w", store.ErrNotFound)
	}
	stored, err := s.activeMessages(ctx, sc, thread) // tree.go
	if err != nil {
		return nil, err
	}
	open := map[string]chat.ToolCall{}
	for _, m := range stored {
		switch m.Role {
		case chat.RoleUser:
			clear(open)
		case chat.RoleAssistant:
			if calls := chat.ParseAssistantMeta(m.Metadata).ToolCalls; len(calls) > 0 {
				clear(open)
				for _, c := range calls {
					open[c.ID] = c
				}
			}
		case chat.RoleTool:
			delete(open, m.ToolCallID)
		}
	}
	var out []chat.Message
	for _, a := range answers {
		c, ok := open[a.ToolCallID]
		if !ok {
			continue
		}
		delete(open, a.ToolCallID)
		status := event.ToolSuccess
		if a.Error != "" {
			status = event.ToolFailure
		}
		output := json.RawMessage(a.Content)
		if !json.Valid(output) || len(bytes.TrimSpace(output)) == 0 {
			output, _ = json.Marshal(a.Content)
		}
		args := c.Arguments
		if !json.Valid(args) || len(bytes.TrimSpace(args)) == 0 {
			args = json.RawMessage(`{}`)
		}
		meta := chat.ToolResultMeta{ToolName: c.Name, ToolCallID: c.ID, ToolCallArgs: args, Status: status, Result: a.Content,
			Error: a.Error, ToolAgentOutput: output, Frontend: true}
		out = append(out, chat.Message{Role: chat.RoleTool, Content: a.Content, Metadata: meta.Marshal(), ToolName: c.Name, ToolCallID: c.ID})
	}
	if len(out) == 0 {
		return nil, ErrNoPendingToolCall
	}
	return out, nil
}
