package chat

import (
	"encoding/json"
	"strings"

	"github.com/agentchat/agentchat/internal/event"
)

// A message's Metadata is one of three typed records, chosen by its role:
// UserMeta, AssistantMeta or ToolResultMeta. Their JSON keys are the stored
// contract (seeds 001 and 002 name the tool record's keys); they are written
// here and nowhere else. Parsing is lenient: metadata an older version wrote,
// or none at all, reads as the zero record.

// ToolCall is a tool call an assistant message made, as its metadata records it.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"` // a JSON object as the model wrote it
}

// AssistantMeta is what an engine records on an assistant message.
type AssistantMeta struct {
	// ToolCalls are the calls the message made; a message with calls is a
	// step towards the answer, not the answer.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// Partial marks text kept from a model call that failed midway.
	Partial bool `json:"partial,omitempty"`
	// Interrupted marks a partial answer whose run a new input interrupted
	// (multitaskStrategy interrupt or rollback).
	Interrupted bool `json:"interrupted,omitempty"`
	// Answer is the structured final answer (seed 004), when the engine made one.
	Answer *event.Answer `json:"answer,omitempty"`
	// Reasoning is the reasoning the model streamed in the call that wrote
	// this message, kept so that history shows what the live stream showed.
	Reasoning string `json:"reasoning,omitempty"`
	// Retrieval is what the turn retrieved before its first model call (the
	// retrieval event), kept on the turn's first assistant message.
	Retrieval *event.RetrievalData `json:"retrieval,omitempty"`
}

// ParseAssistantMeta reads an assistant message's metadata.
func ParseAssistantMeta(raw json.RawMessage) AssistantMeta { return parse[AssistantMeta](raw) }

// Marshal returns the metadata as stored.
func (m AssistantMeta) Marshal() json.RawMessage { return marshal(m) }

// ToolResultMeta is the structured record of a tool call on its role=tool
// message (seed 002: tool_name, status, tool_call_id; seed 001: the full
// output in tool_agent_output, content the light summary).
type ToolResultMeta struct {
	ToolName     string          `json:"tool_name"`
	ToolCallID   string          `json:"tool_call_id"`
	ToolCallArgs json.RawMessage `json:"tool_call_args,omitempty"`
	Status       string          `json:"status"`
	Result       string          `json:"result"`
	Error        string          `json:"error,omitempty"`
	Denied       bool            `json:"denied,omitempty"`
	// ToolAgentOutput is the tool's full structured output; a large one is
	// stored out of line as {"_ref": blob id} (package payload resolves it).
	ToolAgentOutput json.RawMessage `json:"tool_agent_output,omitempty"`
	ConfirmationID  string          `json:"confirmation_id,omitempty"`
	// Frontend marks a result the client's own tool gave (AG-UI frontend tools).
	Frontend bool `json:"frontend,omitempty"`
}

// ParseToolResultMeta reads a tool message's metadata.
func ParseToolResultMeta(raw json.RawMessage) ToolResultMeta { return parse[ToolResultMeta](raw) }

// Marshal returns the metadata as stored.
func (m ToolResultMeta) Marshal() json.RawMessage { return marshal(m) }

// UserMeta is what the run service records on a user message.
type UserMeta struct {
	// Regenerates named the run whose answer this message asked for again,
	// before the message tree (tree.go): migration 0008 reads it to make
	// such a message a sibling of that run's first message. Nothing writes
	// it any more.
	Regenerates string `json:"regenerates,omitempty"`
}

// ParseUserMeta reads a user message's metadata.
func ParseUserMeta(raw json.RawMessage) UserMeta { return parse[UserMeta](raw) }

// Marshal returns the metadata as stored.
func (m UserMeta) Marshal() json.RawMessage { return marshal(m) }

// parse reads a metadata record leniently: what is not one reads as the zero record.
func parse[T any](raw json.RawMessage) T {
	var m T
	_ = json.Unmarshal(raw, &m)
	return m
}

func marshal(v any) json.RawMessage {
	// Only a RawMessage holding invalid JSON fails; the message is then
	// stored without metadata rather than not at all.
	b, _ := json.Marshal(v)
	return b
}

// Part is one piece of a user message's content: text, a stored file, or
// (in messages older than files) an image by URL. A message's Parts hold a
// list of them as JSON: stored messages reference files by id, never hold
// their bytes.
type Part struct {
	Type     string `json:"type"` // PartText, PartFile or PartImage
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"imageUrl,omitempty"`
	// A file part: the stored file's id, name, sniffed media type and size.
	FileID    string `json:"fileId,omitempty"`
	Name      string `json:"name,omitempty"`
	MediaType string `json:"mediaType,omitempty"`
	Size      int64  `json:"size,omitempty"`
	// URL is, on a part arriving from a client only, where the file is (a
	// data: or http(s) URL): the run service stores it and keeps the id.
	URL string `json:"url,omitempty"`
}

// Part types.
const (
	PartText  = "text"
	PartFile  = "file"
	PartImage = "image_url"
)

// Content returns a user message's text, the texts of parts joined by
// newlines, and its Parts: nil when parts hold only text, since the text
// says all.
func Content(parts []Part) (string, json.RawMessage) {
	var texts []string
	other := false
	for _, p := range parts {
		switch p.Type {
		case PartText:
			texts = append(texts, p.Text)
		default:
			other = true
		}
	}
	text := strings.Join(texts, "\n")
	if !other {
		return text, nil
	}
	return text, marshal(parts)
}

// ParseParts reads a message's Parts leniently: what is not a list reads as none.
func ParseParts(raw json.RawMessage) []Part { return parse[[]Part](raw) }
