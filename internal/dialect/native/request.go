package native

import (
	"strings"

	"github.com/agentchat/agentchat/internal/dialect"
)

// ChatRequest is the body of POST /v1/agent/chat in the native and the
// observable (seed 002) formats.
type ChatRequest struct {
	ConversationID string `json:"conversationId"`
	Input          string `json:"input"`
	Title          string `json:"title"`
	// Engine asks for an engine (local, openclaw); empty lets the router choose.
	Engine string `json:"engine"`
}

// DecodeChatRequest decodes a chat body strictly (an unknown field is a
// mistake worth telling), its strings text (dialect.DecodeJSON), its input
// not blank.
func DecodeChatRequest(body []byte) (ChatRequest, error) {
	var r ChatRequest
	if err := dialect.DecodeJSON(body, &r, dialect.Strict, false); err != nil {
		return ChatRequest{}, err
	}
	if strings.TrimSpace(r.Input) == "" {
		return ChatRequest{}, dialect.Unusable("invalid_input", "field \"input\" is required")
	}
	return r, nil
}
