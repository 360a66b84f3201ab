package run

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/payload"
	"github.com/agentchat/agentchat/internal/store"
)

// MessagesQuery asks for a page of a conversation's messages.
type MessagesQuery struct {
	Filter store.MessageFilter
	Page   store.Page
	// All lists every message of the tree; otherwise the active branch.
	All bool
}

// MessagePage is one page of a conversation's messages with their places
// in its tree.
type MessagePage struct {
	Messages []chat.Message
	// Siblings maps each message's id to the ids that share its parent,
	// itself included, in creation order.
	Siblings map[string][]string
	// Feedback maps a message's id to its owner's rating, when given.
	Feedback map[string]chat.Feedback
	Next     string
}

// Messages lists a conversation's stored messages, one page at a time, with
// their large payloads (stored by reference) resolved: the active branch,
// or with q.All every message of the tree.
func (s *Service) Messages(ctx context.Context, sc chat.Scope, conversationID string, q MessagesQuery) (MessagePage, error) {
	conv, err := s.st.GetConversation(ctx, sc, conversationID)
	if err != nil {
		return MessagePage{}, err
	}
	all, err := s.messages(ctx, sc, conversationID)
	if err != nil {
		return MessagePage{}, err
	}
	out := MessagePage{Siblings: chat.Siblings(all)}
	if q.All {
		if out.Messages, out.Next, err = s.st.ListMessages(ctx, sc, conversationID, q.Filter, q.Page); err != nil {
			return MessagePage{}, err
		}
	} else {
		branch := slices.DeleteFunc(chat.Branch(all, conv.ActiveLeaf), func(m chat.Message) bool {
			return (q.Filter.ToolName != "" && m.ToolName != q.Filter.ToolName) || (q.Filter.RunID != "" && m.RunID != q.Filter.RunID)
		})
		if out.Messages, out.Next, err = pageOf(branch, q.Page); err != nil {
			return MessagePage{}, err
		}
	}
	out.Messages = payload.Resolve(ctx, s.st, sc, out.Messages)
	ratings, err := s.st.ConversationFeedback(ctx, sc, conversationID)
	if err != nil {
		return MessagePage{}, err
	}
	out.Feedback = make(map[string]chat.Feedback, len(ratings))
	for _, f := range ratings {
		out.Feedback[f.MessageID] = f
	}
	return out, nil
}

// A branch's page cursor names the last message of the page before.
const branchCursorPrefix = "branch:"

func pageOf(msgs []chat.Message, p store.Page) ([]chat.Message, string, error) {
	start := 0
	if p.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(p.Cursor)
		id, ok := strings.CutPrefix(string(raw), branchCursorPrefix)
		i := slices.IndexFunc(msgs, func(m chat.Message) bool { return m.ID == id })
		if err != nil || !ok || i < 0 {
			return nil, "", store.ErrBadCursor
		}
		start = i + 1
	}
	limit := max(p.Limit, 1)
	end := min(start+limit, len(msgs))
	next := ""
	if end < len(msgs) {
		next = base64.RawURLEncoding.EncodeToString([]byte(branchCursorPrefix + msgs[end-1].ID))
	}
	return msgs[start:end], next, nil
}

// SetActive switches the conversation to the branch through messageID: the
// latest message under it becomes the active leaf, so the history and the
// next run's context follow that branch.
func (s *Service) SetActive(ctx context.Context, sc chat.Scope, conversationID, messageID string) (chat.Conversation, error) {
	all, err := s.messages(ctx, sc, conversationID)
	if err != nil {
		return chat.Conversation{}, err
	}
	if !slices.ContainsFunc(all, func(m chat.Message) bool { return m.ID == messageID }) {
		return chat.Conversation{}, fmt.Errorf("message %s: %w", messageID, ErrNoSuchMessage)
	}
	if err := s.st.SetActiveLeaf(ctx, sc, conversationID, chat.LatestDescendant(all, messageID)); err != nil {
		return chat.Conversation{}, err
	}
	return s.st.GetConversation(ctx, sc, conversationID)
}

// activeMessages reads the conversation's active branch, oldest first.
func (s *Service) activeMessages(ctx context.Context, sc chat.Scope, conversationID string) ([]chat.Message, error) {
	conv, err := s.st.GetConversation(ctx, sc, conversationID)
	if err != nil {
		return nil, err
	}
	all, err := s.messages(ctx, sc, conversationID)
	if err != nil {
		return nil, err
	}
	return chat.Branch(all, conv.ActiveLeaf), nil
}
