package httpapi

import (
	"context"
	"net/http"
	"regexp"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/errcode"
)

// clientThread is the existing conversation a client-chosen name (an AG-UI
// threadId, an AI SDK chat id) means for the principal
// (run.Service.ClientConversation), or 404.
func (s *Server) clientThread(ctx context.Context, sc chat.Scope, name string) (string, error) {
	if !possibleID(name) {
		return "", notFound(errcode.ThreadNotFound, "thread")
	}
	id, err := s.runs.ClientThread(ctx, sc, name)
	if err != nil {
		return "", toAPIError(err, errcode.ThreadNotFound, "thread")
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
		return apiErr(http.StatusBadRequest, errcode.InvalidField, "field %q must name an engine this server runs, like local", field)
	}
	return nil
}
