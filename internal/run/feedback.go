package run

import (
	"context"
	"errors"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// Limits of a rating.
const (
	MaxFeedbackComment = 2000
	MaxFeedbackTags    = 10
	MaxFeedbackTag     = 64
)

// ErrAdminOnly: only the tenant's admins may do this.
var ErrAdminOnly = errors.New("only the tenant's admins may do this")

// Rate records a person's rating of a message of their conversation (a new
// rating replaces theirs); another principal's message is store.ErrNotFound.
func (s *Service) Rate(ctx context.Context, sc chat.Scope, f chat.Feedback) (chat.Feedback, error) {
	switch {
	case f.Rating != chat.RatingUp && f.Rating != chat.RatingDown:
		return chat.Feedback{}, invalidInput("rating must be up or down")
	case !chat.ValidText(f.Comment) || utf8.RuneCountInString(f.Comment) > MaxFeedbackComment:
		return chat.Feedback{}, invalidInput("comment must be text of at most %d characters", MaxFeedbackComment)
	case len(f.Tags) > MaxFeedbackTags:
		return chat.Feedback{}, invalidInput("at most %d tags", MaxFeedbackTags)
	case slices.ContainsFunc(f.Tags, func(t string) bool {
		return t == "" || !chat.ValidText(t) || utf8.RuneCountInString(t) > MaxFeedbackTag
	}):
		return chat.Feedback{}, invalidInput("each tag must be 1 to %d characters of text", MaxFeedbackTag)
	}
	return s.st.PutFeedback(ctx, sc, f)
}

// Unrate withdraws a person's rating of a message.
func (s *Service) Unrate(ctx context.Context, sc chat.Scope, messageID string) error {
	return s.st.DeleteFeedback(ctx, sc, messageID)
}

// FeedbackQuery narrows a tenant's ratings for review.
type FeedbackQuery struct {
	Rating, AgentID string
	Since           time.Time
	Page            store.Page
}

// ReviewFeedback pages the tenant's ratings, newest first: its admins'.
func (s *Service) ReviewFeedback(ctx context.Context, sc chat.Scope, q FeedbackQuery) ([]chat.Feedback, string, error) {
	if !sc.IsAdmin() {
		return nil, "", ErrAdminOnly
	}
	return s.st.ListFeedback(ctx, sc.Tenant, store.FeedbackFilter{Rating: q.Rating, AgentID: q.AgentID, Since: q.Since}, q.Page)
}
