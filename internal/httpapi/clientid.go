package httpapi

import (
	"context"
	"errors"
	"net/http"
	"regexp"

	"github.com/google/uuid"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// Names clients choose for conversations (an AI SDK chat id, an AG-UI
// threadId) are the principal's own: a name means the principal's
// conversation with that id when there is one (a conversation the server
// named, whose id the client was told), else the conversation whose id is
// derived from the tenant, the user and the name (a name-based UUID). Two
// principals choosing one name never meet, none can squat a name for
// others, and a name says nothing about conversations of others. Both
// surfaces share the namespace, so a chat id and a threadId of one
// principal that are equal name one conversation.

// clientNamespace is the UUID namespace of conversation ids derived from client names.
var clientNamespace = uuid.MustParse("5b0c6a56-2f0e-4c59-9f4e-2b7c8e4f6a10")

// clientConversation returns the conversation a client-chosen name means
// for the principal, and whether it exists; when it does not, id is the one
// to create it with.
func (s *Server) clientConversation(ctx context.Context, sc chat.Scope, name string) (id string, exists bool, err error) {
	derived := uuid.NewSHA1(clientNamespace, []byte(sc.Tenant+"\x00"+sc.User+"\x00"+name)).String()
	for _, id := range []string{name, derived} {
		_, err := s.st.GetConversation(ctx, sc, id)
		if err == nil {
			return id, true, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return "", false, err
		}
	}
	return derived, false, nil
}

// clientThread is the existing conversation a threadId means, or 404.
func (s *Server) clientThread(ctx context.Context, sc chat.Scope, threadID string) (string, error) {
	if !possibleID(threadID) {
		return "", notFound("thread_not_found", "thread")
	}
	id, exists, err := s.clientConversation(ctx, sc, threadID)
	if err != nil {
		return "", err
	}
	if !exists {
		return "", notFound("thread_not_found", "thread")
	}
	return id, nil
}

// enginePattern is the shape of an engine name.
var enginePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// checkEngine refuses an engine name the run service cannot route, naming
// the request field that asked for it ("" asks for none).
func (s *Server) checkEngine(field, name string) error {
	if name == "" {
		return nil
	}
	if !enginePattern.MatchString(name) || !s.runs.KnowsEngine(name) {
		return apiErr(http.StatusBadRequest, "invalid_field", "field %q must name an engine this server runs, like local", field)
	}
	return nil
}
