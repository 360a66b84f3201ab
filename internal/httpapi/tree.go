package httpapi

import (
	"errors"
	"net/http"

	"github.com/agentchat/agentchat/internal/dialect/native"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/store"
)

// The message tree on the native surface: the active branch or the whole
// tree (?branch=all), with each message's parent and siblings, and
// switching branches (PUT …/active).

// steerErr maps the errors of a start that edits, regenerates or forks.
func steerErr(err error) error {
	switch {
	case errors.Is(err, run.ErrNoSuchMessage), errors.Is(err, run.ErrNoSuchAnswer):
		return notFound(errcode.MessageNotFound, "message")
	case errors.Is(err, run.ErrNotEditable):
		return apiErr(http.StatusUnprocessableEntity, errcode.MessageNotEditable, "only a user message can be edited")
	case errors.Is(err, run.ErrNothingToRegenerate):
		return apiErr(http.StatusUnprocessableEntity, errcode.NothingToRegenerate, "there is no answer to regenerate")
	}
	return conversationErr(err)
}

func (s *Server) listMessages(w http.ResponseWriter, r *http.Request) error {
	q := run.MessagesQuery{Filter: store.MessageFilter{ToolName: r.URL.Query().Get("tool_name"), RunID: r.URL.Query().Get("runId")}}
	switch b := r.URL.Query().Get("branch"); b {
	case "", "active":
	case "all":
		q.All = true
	default:
		return apiErr(http.StatusBadRequest, errcode.InvalidField, "branch must be active or all, not %q", b)
	}
	var err error
	if q.Page, err = page(r); err != nil {
		return err
	}
	ctx := r.Context()
	got, err := s.runs.Messages(ctx, scopeOf(ctx), r.PathValue("id"), q)
	if err != nil {
		return conversationErr(err)
	}
	items := make([]native.Message, 0, len(got.Messages))
	for _, m := range got.Messages {
		v := native.MessageOf(m)
		v.SiblingIDs = got.Siblings[m.ID]
		if f, ok := got.Feedback[m.ID]; ok {
			v.Feedback = feedbackOf(f)
		}
		items = append(items, v)
	}
	writeJSON(w, http.StatusOK, pageBody[native.Message]{name: "messages", items: items, next: got.Next})
	return nil
}

// setActive switches a conversation to the branch through a message.
func (s *Server) setActive(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		MessageID string `json:"messageId"`
	}
	if err := decodeJSON(r, &body, false); err != nil {
		return err
	}
	if body.MessageID == "" {
		return apiErr(http.StatusUnprocessableEntity, errcode.InvalidField, "field \"messageId\" is required")
	}
	ctx := r.Context()
	c, err := s.runs.SetActive(ctx, scopeOf(ctx), r.PathValue("id"), body.MessageID)
	if err != nil {
		return steerErr(err)
	}
	writeJSON(w, http.StatusOK, native.ConversationOf(c))
	return nil
}
