package vercel

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/errcode"
)

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
	// AgentID picks the agent (what useChat's body option sends);
	// AgentVersion pins one of its versions.
	AgentID      string `json:"agentId"`
	AgentVersion int    `json:"agentVersion"`
	// MultitaskStrategy is what the input does while the chat has an
	// active run (reject, enqueue, interrupt, rollback; useChat's body option).
	MultitaskStrategy string `json:"multitaskStrategy"`
}

// Agent is the agent the request names.
func (r Request) Agent() dialect.AgentRef {
	return dialect.AgentRef{ID: r.AgentID, Version: r.AgentVersion}
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
	Filename   string    `json:"filename"`
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
	switch r.Trigger {
	case "", TriggerSubmit, TriggerRegenerate:
	default:
		return Request{}, dialect.Unusable(errcode.InvalidField, "field \"trigger\" must be submit-message or regenerate-message")
	}
	for _, m := range r.Messages {
		n := 0
		for _, p := range m.Parts {
			if p.State == "approval-responded" {
				n++
			}
		}
		if n > MaxApprovals {
			return Request{}, dialect.Unusable(errcode.InvalidField, "a message answers at most %d approvals", MaxApprovals)
		}
	}
	if err := dialect.CheckMultitask(r.MultitaskStrategy, "multitaskStrategy"); err != nil {
		return Request{}, err
	}
	if err := dialect.CheckAgentRef(r.Agent(), "agentId", "agentVersion"); err != nil {
		return Request{}, err
	}
	return r, nil
}

// Triggers of DefaultChatTransport.
const (
	TriggerSubmit     = "submit-message"
	TriggerRegenerate = "regenerate-message"
)

var chatIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:~-]{1,128}$`)

// ValidChatID reports whether id can name a chat: 1 to 128 letters, digits or ._:~-.
func ValidChatID(id string) bool { return chatIDPattern.MatchString(id) }

// ChatID is the chat id the request names, "" for none.
func (r Request) ChatID() (string, error) {
	if r.ID == nil {
		return "", nil
	}
	if !ValidChatID(*r.ID) {
		return "", dialect.BadRequest(errcode.InvalidField, "field \"id\" (the chat id) must be 1 to 128 letters, digits or ._:~-")
	}
	return *r.ID, nil
}

// Regenerate reports whether the request asks for an answer again
// (trigger regenerate-message); MessageID then names the answer, or is
// empty for the last one.
func (r Request) Regenerate() bool { return r.Trigger == TriggerRegenerate }

// Continued returns the assistant message a submit-message request
// continues with decisions: the message named by messageId, else the last
// message, when it holds approval answers.
func (r Request) Continued() (RequestMessage, bool) {
	if r.Regenerate() || len(r.Messages) == 0 {
		return RequestMessage{}, false
	}
	msg := r.Messages[len(r.Messages)-1]
	if r.MessageID != "" {
		for _, m := range r.Messages {
			if m.ID == r.MessageID {
				msg = m
			}
		}
	}
	if msg.Role != "assistant" {
		return RequestMessage{}, false
	}
	for _, p := range msg.Parts {
		if p.State == "approval-responded" {
			return msg, true
		}
	}
	return RequestMessage{}, false
}

// Decision is an approval answered in a tool part: a decision on the
// confirmation the approval id names.
type Decision struct {
	ConfirmationID string
	Decision       chat.Decision
}

// Decisions reads the approvals the message answers.
func (m RequestMessage) Decisions() ([]Decision, error) {
	var out []Decision
	for _, p := range m.Parts {
		if p.State != "approval-responded" || p.Approval == nil {
			continue
		}
		if p.Approval.Approved == nil || p.Approval.ID == "" {
			return nil, dialect.Unusable(errcode.InvalidField, "an approval-responded tool part needs approval.id and approval.approved")
		}
		if len(p.Approval.Reason) > chat.MaxReasonLength {
			return nil, dialect.Unusable(errcode.InvalidField, "an approval reason is longer than %d characters", chat.MaxReasonLength)
		}
		status := chat.ConfirmRejected
		if *p.Approval.Approved {
			status = chat.ConfirmApproved
		}
		out = append(out, Decision{p.Approval.ID, chat.Decision{Status: status, Reason: p.Approval.Reason}})
	}
	return out, nil
}

// Awaiting maps the message's tool calls still asking for approval to
// their approval (confirmation) ids.
func (m RequestMessage) Awaiting() map[string]string {
	out := map[string]string{}
	for _, p := range m.Parts {
		if p.State == "approval-requested" && p.Approval != nil && p.ToolCallID != "" {
			out[p.ToolCallID] = p.Approval.ID
		}
	}
	return out
}

// Edits reports whether a submit-message request edits an earlier user
// message: messageId names the last message, a user's, after the client
// dropped what followed it. after is the id of the assistant message before
// it (the run whose successor the edit replaces), "" when it is the first.
func (r Request) Edits() (after string, ok bool) {
	n := len(r.Messages)
	if r.Regenerate() || r.MessageID == "" || n == 0 || r.Messages[n-1].ID != r.MessageID || r.Messages[n-1].Role != "user" {
		return "", false
	}
	for i := n - 2; i >= 0; i-- {
		if r.Messages[i].Role == "assistant" {
			return r.Messages[i].ID, true
		}
	}
	return "", true
}

// NewInput is the new turn's input: the native input field, else the text
// of the last message, which must be the user's. Image files become parts.
func (r Request) NewInput() (string, json.RawMessage, error) {
	if r.Input != "" {
		return r.Input, nil, nil
	}
	if len(r.Messages) == 0 {
		return "", nil, dialect.Unusable(errcode.InvalidInput, "field \"messages\" must end with the user's new message")
	}
	last := r.Messages[len(r.Messages)-1]
	if last.Role != "user" {
		return "", nil, dialect.Unusable(errcode.InvalidInput, "the last message must be the user's (or an assistant message with tool approvals)")
	}
	var parts []chat.Part
	for _, p := range last.Parts {
		switch {
		case p.Type == "text":
			parts = append(parts, chat.Part{Type: chat.PartText, Text: p.Text})
		case p.Type == "file" && p.URL != "":
			// Stored as a file on arrival (the run service): a data: URL's
			// bytes, an http(s) URL fetched once, or a file of the caller's
			// by its content route.
			fp := chat.Part{Type: chat.PartFile, Name: p.Filename, MediaType: p.MediaType}
			if id, ok := dialect.FileIDOf(p.URL); ok {
				fp.FileID = id
			} else {
				fp.URL = p.URL
			}
			parts = append(parts, fp)
		case p.Type == "file":
			return "", nil, dialect.Unusable(errcode.UnsupportedPart, "a file part needs its url (a data: URL, an http(s) URL, or a file's content route)")
		}
	}
	input, raw := chat.Content(parts)
	if strings.TrimSpace(input) == "" && raw == nil {
		return "", nil, dialect.Unusable(errcode.InvalidInput, "the last user message has no text")
	}
	return input, raw, nil
}
