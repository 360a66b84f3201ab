package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect/native"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/store"
)

const maxTitleChars = 200

func checkTitle(t string) (string, error) {
	t = strings.TrimSpace(t)
	if utf8.RuneCountInString(t) > maxTitleChars {
		return "", apiErr(http.StatusUnprocessableEntity, errcode.InvalidField, "field \"title\" is longer than %d characters", maxTitleChars)
	}
	return t, nil
}

func (s *Server) createConversation(w http.ResponseWriter, r *http.Request) error {
	raw, err := readBody(r)
	if err != nil {
		return err
	}
	body, err := native.DecodeConversationRequest(raw)
	if err != nil {
		return err
	}
	title, err := checkTitle(body.Title)
	if err != nil {
		return err
	}
	c, err := s.runs.CreateConversation(r.Context(), scopeOf(r.Context()), run.NewConversation{Title: title, AgentID: body.AgentID, AgentVersion: body.AgentVersion})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, native.ConversationOf(c))
	return nil
}

// page reads limit (default 20, max 100) and cursor.
func page(r *http.Request) (store.Page, error) {
	p := store.Page{Limit: 20, Cursor: r.URL.Query().Get("cursor")}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p, apiErr(http.StatusBadRequest, errcode.InvalidLimit, "limit must be a whole number from 1 to 100")
		}
		p.Limit = min(n, 100)
	}
	return p, nil
}

// writePage answers a list route: the page the request asks for, read by
// list in the caller's scope, each row shown through view under name.
// list's errors are returned as they are.
func writePage[T, V any](w http.ResponseWriter, r *http.Request, name string,
	list func(context.Context, chat.Scope, store.Page) ([]T, string, error), view func(T) V) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	rows, next, err := list(r.Context(), scopeOf(r.Context()), p)
	if err != nil {
		return err
	}
	items := make([]V, 0, len(rows))
	for _, row := range rows {
		items = append(items, view(row))
	}
	writeJSON(w, http.StatusOK, pageBody[V]{name: name, items: items, next: next})
	return nil
}

// pageBody is a page of a list as the API shows it:
// {"<name>": [...], "nextCursor": "..." (absent on the last page), "hasMore": bool}.
type pageBody[V any] struct {
	name  string
	items []V
	next  string
	// extra are more fields of the answer, beside the list.
	extra map[string]any
}

// MarshalJSON writes the items under the list's own name. It encodes as
// writeJSON does, without HTML escaping, which a Marshaler's output does not
// inherit from the encoder that calls it.
func (b pageBody[V]) MarshalJSON() ([]byte, error) {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	out.WriteByte('{')
	if err := enc.Encode(b.name); err != nil {
		return nil, err
	}
	out.WriteByte(':')
	if err := enc.Encode(b.items); err != nil {
		return nil, err
	}
	if b.next != "" {
		out.WriteString(`,"nextCursor":`)
		if err := enc.Encode(b.next); err != nil {
			return nil, err
		}
	}
	out.WriteString(`,"hasMore":` + strconv.FormatBool(b.next != ""))
	for _, k := range slices.Sorted(maps.Keys(b.extra)) {
		out.WriteByte(',')
		if err := enc.Encode(k); err != nil {
			return nil, err
		}
		out.WriteByte(':')
		if err := enc.Encode(b.extra[k]); err != nil {
			return nil, err
		}
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// listConversations pages the principal's conversations; ?agentId= keeps
// those bound to that agent.
func (s *Server) listConversations(w http.ResponseWriter, r *http.Request) error {
	agentID := r.URL.Query().Get("agentId")
	list := func(ctx context.Context, sc chat.Scope, p store.Page) ([]chat.Conversation, string, error) {
		return s.runs.Conversations(ctx, sc, agentID, p)
	}
	return writePage(w, r, "conversations", list, native.ConversationOf)
}

func conversationErr(err error) error {
	return toAPIError(err, errcode.ConversationNotFound, "conversation")
}

// writeConversation answers c with the run active in it, if any (the
// console's second tab follows that run).
func (s *Server) writeConversation(w http.ResponseWriter, r *http.Request, c chat.Conversation) error {
	out := native.ConversationOf(c)
	switch active, err := s.runs.Active(r.Context(), scopeOf(r.Context()), c.ID); {
	case err == nil:
		out.ActiveRunID = active.ID
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getConversation(w http.ResponseWriter, r *http.Request) error {
	c, err := s.runs.Conversation(r.Context(), scopeOf(r.Context()), r.PathValue("id"))
	if err != nil {
		return conversationErr(err)
	}
	return s.writeConversation(w, r, c)
}

// listQueue answers the inputs queued in a conversation (multitaskStrategy
// enqueue), as runs with status queued, in the order they will start. A
// queue is short (each input waits for the one before it), so it is one
// page.
func (s *Server) listQueue(w http.ResponseWriter, r *http.Request) error {
	queued, err := s.runs.Queue(r.Context(), scopeOf(r.Context()), r.PathValue("id"))
	if err != nil {
		return conversationErr(err)
	}
	items := make([]native.Run, 0, len(queued))
	for _, q := range queued {
		items = append(items, native.RunOf(q))
	}
	writeJSON(w, http.StatusOK, pageBody[native.Run]{name: "runs", items: items})
	return nil
}

func (s *Server) updateConversation(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Title *string `json:"title"`
	}
	if err := decodeJSON(r, &body, false); err != nil {
		return err
	}
	if body.Title == nil {
		return apiErr(http.StatusUnprocessableEntity, errcode.InvalidField, "field \"title\" is required")
	}
	title, err := checkTitle(*body.Title)
	if err != nil {
		return err
	}
	c, err := s.runs.RenameConversation(r.Context(), scopeOf(r.Context()), r.PathValue("id"), title)
	if err != nil {
		return conversationErr(err)
	}
	return s.writeConversation(w, r, c)
}

func (s *Server) deleteConversation(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	sc := scopeOf(ctx)
	id := r.PathValue("id")
	if err := s.runs.DeleteConversation(ctx, sc, id); err != nil {
		return conversationErr(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
