package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/dialect/native"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/run"
)

// Feedback on messages: PUT and DELETE /v1/messages/{id}/feedback by the
// message's owner (another's message is a 404), and GET /v1/feedback for a
// tenant's admins to review.

func feedbackOf(f chat.Feedback) *native.Feedback {
	return &native.Feedback{MessageID: f.MessageID, ConversationID: f.ConversationID, RunID: f.RunID, AgentID: f.AgentID, UserID: f.Owner,
		Rating: f.Rating, Comment: f.Comment, Tags: f.Tags, CreatedAt: dialect.Millis(f.CreatedAt), UpdatedAt: dialect.Millis(f.UpdatedAt)}
}

func (s *Server) putFeedback(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Rating  string   `json:"rating"`
		Comment string   `json:"comment"`
		Tags    []string `json:"tags"`
	}
	if err := decodeJSON(r, &body, false); err != nil {
		return err
	}
	ctx := r.Context()
	f, err := s.runs.Rate(ctx, scopeOf(ctx), chat.Feedback{MessageID: r.PathValue("id"), Rating: body.Rating, Comment: body.Comment, Tags: body.Tags})
	if err != nil {
		return toAPIError(err, errcode.MessageNotFound, "message")
	}
	writeJSON(w, http.StatusOK, feedbackOf(f))
	return nil
}

func (s *Server) deleteFeedback(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	if err := s.runs.Unrate(ctx, scopeOf(ctx), r.PathValue("id")); err != nil {
		return toAPIError(err, errcode.FeedbackNotFound, "feedback")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listFeedback(w http.ResponseWriter, r *http.Request) error {
	q := run.FeedbackQuery{Rating: r.URL.Query().Get("rating"), AgentID: r.URL.Query().Get("agentId")}
	if q.Rating != "" && q.Rating != chat.RatingUp && q.Rating != chat.RatingDown {
		return apiErr(http.StatusBadRequest, errcode.InvalidField, "rating must be up or down")
	}
	if v := r.URL.Query().Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return apiErr(http.StatusBadRequest, errcode.InvalidField, "since must be an RFC 3339 time")
		}
		q.Since = t
	}
	p, err := page(r)
	if err != nil {
		return err
	}
	q.Page = p
	ctx := r.Context()
	rows, next, err := s.runs.ReviewFeedback(ctx, scopeOf(ctx), q)
	if errors.Is(err, run.ErrAdminOnly) {
		return apiErr(http.StatusForbidden, errcode.AdminRequired, "only the tenant's admins may review feedback")
	}
	if err != nil {
		return toAPIError(err, errcode.NotFound, "feedback")
	}
	items := make([]*native.Feedback, 0, len(rows))
	for _, f := range rows {
		items = append(items, feedbackOf(f))
	}
	writeJSON(w, http.StatusOK, pageBody[*native.Feedback]{name: "feedback", items: items, next: next})
	return nil
}
