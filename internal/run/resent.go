package run

import (
	"context"

	"github.com/agentchat/agentchat/internal/chat"
)

// AskedAgain is the stored user message that a client's history asks to be
// answered again, for a surface with no regenerate request of its own
// (AG-UI): a history whose user messages are the active branch's, in order
// and text, and which ends with the last of them rather than with what
// followed it (the client dropped that answer, or never got one). It is ""
// when the history asks for something else: a new turn, or an edit
// (Diverged). A client that sends only its new message (no history) never
// asks again.
func (s *Service) AskedAgain(ctx context.Context, sc chat.Scope, conversationID string, sent []SentMessage) (string, error) {
	if len(sent) == 0 || sent[len(sent)-1].Role != chat.RoleUser {
		return "", nil
	}
	var users []SentMessage
	history := false
	for _, m := range sent {
		switch m.Role {
		case chat.RoleUser:
			users = append(users, m)
		case chat.RoleAssistant, chat.RoleTool:
			history = true
		}
	}
	if !history && len(users) < 2 {
		return "", nil
	}
	branch, err := s.activeMessages(ctx, sc, conversationID)
	if err != nil {
		return "", err
	}
	var stored []chat.Message
	for _, m := range branch {
		if m.Role == chat.RoleUser {
			stored = append(stored, m)
		}
	}
	if len(stored) != len(users) {
		return "", nil
	}
	for i, u := range users {
		if stored[i].Content != u.Text {
			return "", nil
		}
	}
	return stored[len(stored)-1].ID, nil
}
