package vercel

import "github.com/agentchat/agentchat/internal/dialect"

// Request is the body DefaultChatTransport sends (plus the fields an app
// adds through the transport's body option, and our native fields).
type Request struct {
	ID        *string          `json:"id"` // nil when absent; "" is refused
	Messages  []RequestMessage `json:"messages"`
	Trigger   string           `json:"trigger"`
	MessageID string           `json:"messageId"`

	ConversationID string `json:"conversationId"`
	Input          string `json:"input"`
	Title          string `json:"title"`
	Engine         string `json:"engine"`
}

// RequestMessage is a UIMessage as the client holds it. Only what the server
// reads is declared; every other field is ignored.
type RequestMessage struct {
	ID    string        `json:"id"`
	Role  string        `json:"role"`
	Parts []RequestPart `json:"parts"`
}

// RequestPart is one part of a UIMessage: text, a file, or a tool invocation
// (type "tool-<name>" or "dynamic-tool").
type RequestPart struct {
	Type       string    `json:"type"`
	Text       string    `json:"text"`
	MediaType  string    `json:"mediaType"`
	URL        string    `json:"url"`
	ToolCallID string    `json:"toolCallId"`
	State      string    `json:"state"`
	Approval   *Approval `json:"approval"`
}

// Approval is a tool part's approval: asked, then answered.
type Approval struct {
	ID       string `json:"id"`
	Approved *bool  `json:"approved"`
	Reason   string `json:"reason"`
}

// MaxApprovals bounds the approvals one message answers: each is looked up.
const MaxApprovals = 64

// DecodeRequest decodes the transport's body: one JSON object whose fields
// the server does not read are ignored (UIMessages carry more, and apps add
// their own body fields), and whose strings are text (dialect.DecodeJSON).
func DecodeRequest(body []byte) (Request, error) {
	var r Request
	if err := dialect.DecodeJSON(body, &r, dialect.Lenient, false); err != nil {
		return Request{}, err
	}
	for _, m := range r.Messages {
		n := 0
		for _, p := range m.Parts {
			if p.State == "approval-responded" {
				n++
			}
		}
		if n > MaxApprovals {
			return Request{}, dialect.Unusable("invalid_field", "a message answers at most %d approvals", MaxApprovals)
		}
	}
	return r, nil
}
