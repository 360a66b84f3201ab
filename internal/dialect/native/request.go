package native

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/errcode"
)

// ChatRequest is the body of POST /v1/agent/chat in the native and the
// observable (seed 002) formats.
type ChatRequest struct {
	ConversationID string `json:"conversationId"`
	Input          string `json:"input"`
	Title          string `json:"title"`
	// Engine asks for an engine (local, openclaw); empty lets the router choose.
	Engine string `json:"engine"`
	// AgentID picks the agent (a new conversation is bound to it);
	// AgentVersion pins one of its versions (0: the published one).
	AgentID      string `json:"agentId"`
	AgentVersion int    `json:"agentVersion"`
	// Attachments are ids of files uploaded first (POST /v1/files) that
	// the message attaches.
	Attachments []string `json:"attachments"`
	// Regenerate asks for the answer to a message again (no input): its
	// messageId is an answer, or the user message to answer again.
	Regenerate *MessageRef `json:"regenerate"`
	// Edit replaces a user message with a new version: a sibling under
	// the same parent, answered; the old branch stays.
	Edit *Edit `json:"edit"`
	// ParentID forks explicitly: the new input follows this message (null
	// or absent: the active leaf).
	ParentID *string `json:"parentId"`
	// MultitaskStrategy is what the input does while the conversation has
	// an active run: reject, enqueue, interrupt or rollback (absent: the
	// agent's default, else reject).
	MultitaskStrategy string `json:"multitaskStrategy"`
}

// Multitask is the request's strategy (validated by DecodeChatRequest).
func (r ChatRequest) Multitask() chat.MultitaskStrategy {
	return chat.MultitaskStrategy(r.MultitaskStrategy)
}

// MessageRef names a message.
type MessageRef struct {
	MessageID string `json:"messageId"`
}

// Edit is a new version of a user message.
type Edit struct {
	MessageID string `json:"messageId"`
	Input     string `json:"input"`
}

// MaxAttachments bounds the files one message attaches.
const MaxAttachments = 20

// Parts is the message's multi-part form: its text, then its attachments
// as file parts; nil without attachments.
func (r ChatRequest) Parts() json.RawMessage {
	if len(r.Attachments) == 0 {
		return nil
	}
	parts := []chat.Part{{Type: chat.PartText, Text: r.Input}}
	for _, id := range r.Attachments {
		parts = append(parts, chat.Part{Type: chat.PartFile, FileID: id})
	}
	_, raw := chat.Content(parts)
	return raw
}

// Agent is the agent the request names.
func (r ChatRequest) Agent() dialect.AgentRef {
	return dialect.AgentRef{ID: r.AgentID, Version: r.AgentVersion}
}

// DecodeChatRequest decodes a chat body strictly (an unknown field is a
// mistake worth telling), its strings text (dialect.DecodeJSON), its input
// not blank.
func DecodeChatRequest(body []byte) (ChatRequest, error) {
	var r ChatRequest
	if err := dialect.DecodeJSON(body, &r, dialect.Strict, false); err != nil {
		return ChatRequest{}, err
	}
	steers := 0
	for _, set := range []bool{r.Regenerate != nil, r.Edit != nil, r.ParentID != nil} {
		if set {
			steers++
		}
	}
	switch {
	case steers > 1:
		return ChatRequest{}, dialect.Unusable(errcode.InvalidField, "use one of \"regenerate\", \"edit\" and \"parentId\"")
	case (r.Regenerate != nil || r.Edit != nil) && r.ConversationID == "":
		return ChatRequest{}, dialect.Unusable(errcode.InvalidField, "field \"conversationId\" is required with \"regenerate\" or \"edit\"")
	case r.Regenerate != nil && r.Regenerate.MessageID == "":
		return ChatRequest{}, dialect.Unusable(errcode.InvalidField, "field \"regenerate.messageId\" is required")
	case r.Regenerate != nil && r.Input != "":
		return ChatRequest{}, dialect.Unusable(errcode.InvalidField, "a regenerate takes no \"input\": it answers the stored message again")
	case r.Edit != nil && r.Edit.MessageID == "":
		return ChatRequest{}, dialect.Unusable(errcode.InvalidField, "field \"edit.messageId\" is required")
	case r.Edit != nil && r.Input != "":
		return ChatRequest{}, dialect.Unusable(errcode.InvalidField, "an edit carries its text in \"edit.input\"")
	case r.Edit != nil && strings.TrimSpace(r.Edit.Input) == "":
		return ChatRequest{}, dialect.Unusable(errcode.InvalidInput, "field \"edit.input\" is required")
	case r.Regenerate == nil && r.Edit == nil && strings.TrimSpace(r.Input) == "" && len(r.Attachments) == 0:
		return ChatRequest{}, dialect.Unusable(errcode.InvalidInput, "field \"input\" is required")
	}
	if len(r.Attachments) > MaxAttachments {
		return ChatRequest{}, dialect.Unusable(errcode.InvalidField, "a message attaches at most %d files", MaxAttachments)
	}
	if err := dialect.CheckMultitask(r.MultitaskStrategy, "multitaskStrategy"); err != nil {
		return ChatRequest{}, err
	}
	for _, id := range r.Attachments {
		if strings.TrimSpace(id) == "" {
			return ChatRequest{}, dialect.Unusable(errcode.InvalidField, "field \"attachments\" holds file ids")
		}
	}
	if err := dialect.CheckAgentRef(r.Agent(), "agentId", "agentVersion"); err != nil {
		return ChatRequest{}, err
	}
	return r, nil
}

// ConversationRequest is the body of POST /v1/conversations.
type ConversationRequest struct {
	Title string `json:"title"`
	// AgentID binds the conversation to an agent (default: the tenant's);
	// AgentVersion, when given, must be a version the principal may run.
	AgentID      string `json:"agentId"`
	AgentVersion int    `json:"agentVersion"`
}

// Agent is the agent the request names.
func (r ConversationRequest) Agent() dialect.AgentRef {
	return dialect.AgentRef{ID: r.AgentID, Version: r.AgentVersion}
}

// DecodeConversationRequest decodes a conversation to create; an empty
// body is an untitled conversation of the tenant's default agent.
func DecodeConversationRequest(body []byte) (ConversationRequest, error) {
	var r ConversationRequest
	if err := dialect.DecodeJSON(body, &r, dialect.Strict, true); err != nil {
		return ConversationRequest{}, err
	}
	return r, dialect.CheckAgentRef(r.Agent(), "agentId", "agentVersion")
}

// DecodeDecision decodes the body of POST /v1/agent/confirmations/{id}:
// {"decision": "approve"|"reject", "args"?: {…}, "reason"?: "…"}.
func DecodeDecision(body []byte) (chat.Decision, error) {
	var b struct {
		Decision string          `json:"decision"`
		Args     json.RawMessage `json:"args"`
		Reason   string          `json:"reason"`
	}
	if err := dialect.DecodeJSON(body, &b, dialect.Strict, false); err != nil {
		return chat.Decision{}, err
	}
	d := chat.Decision{Reason: b.Reason}
	switch b.Decision {
	case "approve":
		d.Status = chat.ConfirmApproved
	case "reject":
		d.Status = chat.ConfirmRejected
	default:
		return chat.Decision{}, dialect.Unusable(errcode.InvalidField, "field \"decision\" must be \"approve\" or \"reject\"")
	}
	if len(b.Args) > 0 && string(b.Args) != "null" {
		var obj map[string]any
		if json.Unmarshal(b.Args, &obj) != nil {
			return chat.Decision{}, dialect.BadRequest(errcode.InvalidField, "field \"args\" must be an object")
		}
		d.Args = b.Args
	}
	if len(b.Reason) > chat.MaxReasonLength {
		return chat.Decision{}, dialect.Unusable(errcode.InvalidField, "field \"reason\" is longer than %d characters", chat.MaxReasonLength)
	}
	return d, nil
}

// Document is the body of POST /v1/knowledge/documents: a document's text,
// or a stored file to index (FileID: a PDF or a text file), whose name is
// the source unless one is given.
type Document struct {
	Source string `json:"source"`
	FileID string `json:"fileId"`
	// Collection is the knowledge collection the document joins (agents
	// name the collections they search); "default" when omitted.
	Collection string          `json:"collection"`
	Text       string          `json:"text"`
	MediaType  string          `json:"mediaType"`
	Metadata   json.RawMessage `json:"metadata"`
}

// MaxSourceChars bounds a document's source name.
const MaxSourceChars = 300

// DecodeDocument decodes a document to index, of at most maxBytes of text.
// The media type defaults to text/markdown for a .md source, else
// text/plain; metadata, when given, is an object. A document from a file
// has no text, media type or (optionally) source of its own: the handler
// reads them from the file.
func DecodeDocument(body []byte, maxBytes int) (Document, error) {
	var d Document
	if err := dialect.DecodeJSON(body, &d, dialect.Strict, false); err != nil {
		return Document{}, err
	}
	d.Source = strings.TrimSpace(d.Source)
	if d.FileID != "" {
		switch {
		case d.Text != "" || d.MediaType != "":
			return Document{}, dialect.Unusable(errcode.InvalidField, "give either field \"text\" or field \"fileId\", not both; a file's media type is its own")
		case utf8.RuneCountInString(d.Source) > MaxSourceChars:
			return Document{}, dialect.Unusable(errcode.InvalidField, "field \"source\" must name the document in 1 to %d characters", MaxSourceChars)
		}
		return d.checked()
	}
	switch {
	case d.Source == "" || utf8.RuneCountInString(d.Source) > MaxSourceChars:
		return Document{}, dialect.Unusable(errcode.InvalidField, "field \"source\" must name the document in 1 to %d characters", MaxSourceChars)
	case strings.TrimSpace(d.Text) == "":
		return Document{}, dialect.Unusable(errcode.InvalidField, "field \"text\" must hold the document's text")
	case len(d.Text) > maxBytes:
		return Document{}, &dialect.RequestError{Status: http.StatusRequestEntityTooLarge, Code: errcode.DocumentTooLarge,
			Message: fmt.Sprintf("the document is larger than %d bytes; split it into several", maxBytes)}
	case !utf8.ValidString(d.Text):
		return Document{}, dialect.Unusable(errcode.InvalidField, "field \"text\" must be UTF-8 text")
	}
	switch d.MediaType {
	case "":
		d.MediaType = "text/plain"
		if strings.HasSuffix(strings.ToLower(d.Source), ".md") {
			d.MediaType = "text/markdown"
		}
	case "text/plain", "text/markdown":
	default:
		return Document{}, dialect.Unusable(errcode.InvalidField, "field \"mediaType\" must be text/plain or text/markdown")
	}
	return d.checked()
}

// checked is d once its collection and metadata pass.
func (d Document) checked() (Document, error) {
	if err := d.checkCollectionAndMetadata(); err != nil {
		return Document{}, err
	}
	return d, nil
}

// checkCollectionAndMetadata defaults the collection and checks both.
func (d *Document) checkCollectionAndMetadata() error {
	if d.Collection == "" {
		d.Collection = chat.DefaultCollection
	} else if !chat.ValidCollection(d.Collection) {
		return dialect.Unusable(errcode.InvalidField, "field \"collection\" must be 1 to 64 letters, digits and . _ - (starting with a letter or digit)")
	}
	switch m := strings.TrimSpace(string(d.Metadata)); {
	case m == "null":
		d.Metadata = nil
	case m != "" && !strings.HasPrefix(m, "{"):
		return dialect.Unusable(errcode.InvalidField, "field \"metadata\" must be an object")
	}
	return nil
}
