package agui

import (
	"bytes"
	"cmp"
	"encoding/json"
	"strings"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/errcode"
)

// RunAgentInput is AG-UI's RunAgentInput, the body of a run request. Unknown fields are ignored, as
// AG-UI peers may send newer ones.
type RunAgentInput struct {
	ThreadID string `json:"threadId"`
	RunID    string `json:"runId"`
	// ProtocolVersion is the AG-UI version the client speaks ("1.0.0"
	// from @ag-ui/client 1.0 on); clients before 1.0 send none.
	ProtocolVersion string          `json:"protocolVersion"`
	ParentRunID     string          `json:"parentRunId"`
	State           json.RawMessage `json:"state"`
	Messages        []InputMessage  `json:"messages"`
	Tools           []InputTool     `json:"tools"`
	Context         []InputContext  `json:"context"`
	ForwardedProps  json.RawMessage `json:"forwardedProps"`
	Resume          []ResumeEntry   `json:"resume"`
}

// InputMessage is a message of the input.
type InputMessage struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"toolCallId"`
	Error      string          `json:"error"`
}

// InputTool is a frontend tool the client offers.
type InputTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// InputContext is a piece of context for the model.
type InputContext struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

// ResumeEntry answers one interrupt: status resolved with payload
// {approved, args?}, or cancelled (a rejection).
type ResumeEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"`
	Payload     json.RawMessage `json:"payload"`
}

// Limits of one input.
const (
	// MaxIDLength bounds the threadId and runId a client chooses.
	MaxIDLength = 128
	// MaxResume bounds the interrupts one input answers: each is looked up.
	MaxResume = 64
)

// DecodeRunAgentInput decodes a run request: one JSON object whose unknown
// fields are ignored (AG-UI peers may send newer ones), whose strings are
// text (dialect.DecodeJSON), and whose threadId and runId, when given, are
// ids that can be stored and echoed safely.
func DecodeRunAgentInput(body []byte) (RunAgentInput, error) {
	var in RunAgentInput
	if err := dialect.DecodeJSON(body, &in, dialect.Lenient, false); err != nil {
		return RunAgentInput{}, err
	}
	if len(in.Resume) > MaxResume {
		return RunAgentInput{}, dialect.Unusable(errcode.InvalidResume, "one input answers at most %d interrupts", MaxResume)
	}
	for _, f := range []struct{ name, id string }{{"threadId", in.ThreadID}, {"runId", in.RunID}} {
		if f.id != "" && !ValidID(f.id) {
			return RunAgentInput{}, dialect.BadRequest(errcode.InvalidField, "field %q must be at most %d letters, digits, '-', '_', '.' or ':'", f.name, MaxIDLength)
		}
	}
	return in, nil
}

// ValidID reports whether a client may name an object with id.
func ValidID(id string) bool {
	if id == "" || len(id) > MaxIDLength {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// Limits on what one input may carry.
const (
	MaxFrontendTools = 64
	MaxContextItems  = 64
)

// Turn is what an input without resume entries asks of the thread: the
// newest message is new (AG-UI sends the whole conversation each time; the
// thread's stored messages are the history of record). A user message
// starts a run; trailing tool messages answer its pending frontend calls.
type Turn struct {
	// Input and Parts are the new user message (Parts nil for plain text).
	Input string
	Parts json.RawMessage
	// ToolAnswers are the trailing tool messages, when the input ends with them.
	ToolAnswers []chat.ToolAnswer
	// FrontendTools are the input's tools, less those the server has
	// (a registry tool of the same name wins).
	FrontendTools []chat.FrontendTool
	Context       []chat.ContextItem
	// Engine is forwardedProps.engine, "" when not given.
	Engine string
	// Agent is forwardedProps.agentId (and agentVersion): the agent that
	// answers the thread.
	Agent dialect.AgentRef
	// State is the thread's shared state as the client holds it (any JSON
	// but null), nil when the input carries none.
	State json.RawMessage
	// Multitask is forwardedProps.multitaskStrategy: what the input does
	// while the thread has an active run.
	Multitask chat.MultitaskStrategy
}

// Turn reads the input's new message, tools and context. serverTool
// reports whether the server has a tool of that name.
func (in RunAgentInput) Turn(serverTool func(name string) bool) (Turn, error) {
	var t Turn
	if len(in.Tools) > MaxFrontendTools {
		return t, dialect.Unusable(errcode.InvalidField, "at most %d tools may be given", MaxFrontendTools)
	}
	for i, tool := range in.Tools {
		if tool.Name == "" || len(tool.Name) > 64 || strings.ContainsFunc(tool.Name, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
		}) {
			return t, dialect.Unusable(errcode.InvalidField, "tools[%d].name must be 1 to 64 letters, digits, _ or -", i)
		}
		if serverTool(tool.Name) {
			continue
		}
		params := tool.Parameters
		if p, ok := jsonObject(params); !ok || p == nil {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		t.FrontendTools = append(t.FrontendTools, chat.FrontendTool{Name: tool.Name, Description: tool.Description, Parameters: params})
	}
	if st := bytes.TrimSpace(in.State); len(st) > 0 && string(st) != "null" {
		if len(st) > chat.MaxStateBytes {
			return t, dialect.Unusable(errcode.InvalidField, "field \"state\" has %d bytes, the limit is %d", len(st), chat.MaxStateBytes)
		}
		t.State = st
	}
	if len(in.Context) > MaxContextItems {
		return t, dialect.Unusable(errcode.InvalidField, "at most %d context items may be given", MaxContextItems)
	}
	for _, c := range in.Context {
		t.Context = append(t.Context, chat.ContextItem{Description: c.Description, Value: c.Value})
	}
	if props, ok := jsonObject(in.ForwardedProps); ok {
		t.Engine, _ = props["engine"].(string)
		if v, has := props["multitaskStrategy"]; has {
			name, _ := v.(string)
			if err := dialect.CheckMultitask(name, "forwardedProps.multitaskStrategy"); err != nil || name == "" {
				return t, dialect.Unusable(errcode.InvalidField, "field \"forwardedProps.multitaskStrategy\" must be reject, enqueue, interrupt or rollback")
			}
			t.Multitask = chat.MultitaskStrategy(name)
		}
		var err error
		if t.Agent, err = agentRef(props); err != nil {
			return t, err
		}
	}

	msgs := in.Messages
	if len(msgs) == 0 {
		return t, dialect.Unusable(errcode.InvalidInput, "field \"messages\" must end with a user message or tool results")
	}
	switch last := msgs[len(msgs)-1]; last.Role {
	case "user":
		parts, err := contentParts(last.Content)
		if err != nil {
			return t, err
		}
		t.Input, t.Parts = chat.Content(parts)
	case "tool":
		first := len(msgs) - 1
		for first > 0 && msgs[first-1].Role == "tool" {
			first--
		}
		for _, m := range msgs[first:] {
			parts, err := contentParts(m.Content)
			if err != nil {
				return t, err
			}
			text, _ := chat.Content(parts)
			t.ToolAnswers = append(t.ToolAnswers, chat.ToolAnswer{ToolCallID: m.ToolCallID, Content: text, Error: m.Error})
		}
	default:
		return t, dialect.Unusable(errcode.InvalidInput, "the last message is a %q message; it must be a user message or tool results", last.Role)
	}
	return t, nil
}

// agentRef reads forwardedProps.agentId and forwardedProps.agentVersion.
func agentRef(props map[string]any) (dialect.AgentRef, error) {
	var r dialect.AgentRef
	if v, ok := props["agentId"]; ok && v != nil {
		id, isString := v.(string)
		if !isString {
			return r, dialect.Unusable(errcode.InvalidField, "field \"forwardedProps.agentId\" must be a string")
		}
		r.ID = id
	}
	if v, ok := props["agentVersion"]; ok && v != nil {
		n, isNumber := v.(float64)
		if !isNumber || n != float64(int(n)) || n < 1 {
			return r, dialect.Unusable(errcode.InvalidField, "field \"forwardedProps.agentVersion\" must be a version number (1 or more)")
		}
		r.Version = int(n)
	}
	return r, dialect.CheckAgentRef(r, "forwardedProps.agentId", "forwardedProps.agentVersion")
}

// Reply is a resume entry read as a decision on the interrupt it names.
type Reply struct {
	InterruptID string
	Decision    chat.Decision
	// Cancelled: the client cancelled the interrupt (a rejection that also
	// accepts an interrupt already expired: it is how a client moves on).
	Cancelled bool
}

// Replies reads the input's resume entries.
func (in RunAgentInput) Replies() ([]Reply, error) {
	out := make([]Reply, 0, len(in.Resume))
	for i, e := range in.Resume {
		d, err := decision(i, e)
		if err != nil {
			return nil, err
		}
		out = append(out, Reply{InterruptID: e.InterruptID, Decision: d, Cancelled: e.Status == "cancelled"})
	}
	return out, nil
}

// decision reads one resume entry.
func decision(i int, e ResumeEntry) (chat.Decision, error) {
	bad := func(format string, a ...any) error {
		return dialect.Unusable(errcode.InvalidResume, "resume[%d]: "+format, append([]any{i}, a...)...)
	}
	if e.InterruptID == "" {
		return chat.Decision{}, bad("interruptId is required")
	}
	switch e.Status {
	case "cancelled":
		return chat.Decision{Status: chat.ConfirmRejected, Reason: "cancelled"}, nil
	case "resolved":
	default:
		return chat.Decision{}, bad("status must be \"resolved\" or \"cancelled\"")
	}
	var p struct {
		Approved *bool           `json:"approved"`
		Args     json.RawMessage `json:"args"`
		Reason   string          `json:"reason"`
	}
	if json.Unmarshal(e.Payload, &p) != nil || p.Approved == nil {
		return chat.Decision{}, bad("payload must be {\"approved\": true|false, \"args\"?: {…}}")
	}
	d := chat.Decision{Status: chat.ConfirmRejected, Reason: p.Reason}
	if *p.Approved {
		d.Status = chat.ConfirmApproved
	}
	if a := bytes.TrimSpace(p.Args); len(a) > 0 && string(a) != "null" {
		if _, ok := jsonObject(a); !ok {
			return chat.Decision{}, bad("payload.args must be an object")
		}
		d.Args = a
	}
	if len(d.Reason) > chat.MaxReasonLength {
		return chat.Decision{}, bad("payload.reason is longer than %d characters", chat.MaxReasonLength)
	}
	return d, nil
}

// contentParts reads a message's content: a string, or AG-UI parts: text,
// and files in AG-UI 1.0's image, audio, video and document parts or the
// older binary part. A file part keeps its URL (a data: URL for inline
// data) for the run service to store, or names a stored file by its
// content route.
func contentParts(raw json.RawMessage) ([]chat.Part, error) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []chat.Part{{Type: chat.PartText, Text: text}}, nil
	}
	var parts []map[string]any
	if json.Unmarshal(raw, &parts) != nil {
		return nil, dialect.BadRequest(errcode.InvalidField, "a user message's content must be a string or an array of parts")
	}
	out := make([]chat.Part, 0, len(parts))
	for _, p := range parts {
		typ, _ := p["type"].(string)
		switch typ {
		case "text":
			t, _ := p["text"].(string)
			out = append(out, chat.Part{Type: chat.PartText, Text: t})
			continue
		case "image", "audio", "video", "document", "binary":
			if fp, ok := filePart(p); ok {
				out = append(out, fp)
				continue
			}
			return nil, dialect.Unusable(errcode.UnsupportedContent, "a %s part needs a source with a url, or data and its mimeType", typ)
		}
		return nil, dialect.Unusable(errcode.UnsupportedContent, "content parts of type %q are not supported; send text and files", typ)
	}
	return out, nil
}

// filePart reads a file part: AG-UI 1.0's {type:"image"|"audio"|"video"|
// "document", source:{type:"url"|"data", value, mimeType}} or the older
// {type:"binary", mimeType, url|data|id, filename}. Inline data becomes a
// data: URL.
func filePart(p map[string]any) (chat.Part, bool) {
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	fp := chat.Part{Type: chat.PartFile, Name: str(p, "filename")}
	var u string
	if src, ok := p["source"].(map[string]any); ok {
		fp.MediaType = str(src, "mimeType")
		switch str(src, "type") {
		case "url":
			u = str(src, "value")
		case "data":
			if v := str(src, "value"); v != "" {
				u = "data:" + cmp.Or(fp.MediaType, "application/octet-stream") + ";base64," + v
			}
		}
	} else {
		fp.MediaType = str(p, "mimeType")
		switch {
		case str(p, "url") != "":
			u = str(p, "url")
		case str(p, "data") != "":
			u = "data:" + cmp.Or(fp.MediaType, "application/octet-stream") + ";base64," + str(p, "data")
		}
	}
	if u == "" {
		return chat.Part{}, false
	}
	if id, ok := dialect.FileIDOf(u); ok {
		fp.FileID = id
	} else if strings.HasPrefix(fp.MediaType, "image/") || p["type"] == "image" {
		// An image by URL, as before files: the run service stores it when
		// the server stores files.
		return chat.Part{Type: chat.PartImage, ImageURL: u}, true
	} else {
		fp.URL = u
	}
	return fp, true
}

func jsonObject(raw json.RawMessage) (map[string]any, bool) {
	var m map[string]any
	if len(bytes.TrimSpace(raw)) == 0 || json.Unmarshal(raw, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

// Text is the message's text: its string content, or the texts of its
// parts joined by newlines ("" when the content is neither).
func (m InputMessage) Text() string {
	parts, err := contentParts(m.Content)
	if err != nil {
		return ""
	}
	text, _ := chat.Content(parts)
	return text
}

// CommandResume reads CopilotKit's way of answering an interrupt:
// forwardedProps.command {resume, interruptEvent}, where interruptEvent is
// the value of the on_interrupt CUSTOM event (an object, or that object as
// JSON text) and resume is the person's answer: {"approved": bool,
// "reason"?, "args"?}, a boolean, or the text "approve" / "reject" (also
// "approved", "rejected", "yes", "no"). ok is false when the input has no
// command.resume. The entry's InterruptID is "" when interruptEvent names
// none: the caller picks the thread's open confirmation.
func (in RunAgentInput) CommandResume() (entry ResumeEntry, ok bool, err error) {
	var props struct {
		Command *struct {
			Resume         json.RawMessage `json:"resume"`
			InterruptEvent json.RawMessage `json:"interruptEvent"`
		} `json:"command"`
	}
	if json.Unmarshal(in.ForwardedProps, &props) != nil || props.Command == nil {
		return ResumeEntry{}, false, nil
	}
	resume := bytes.TrimSpace(props.Command.Resume)
	if len(resume) == 0 || string(resume) == "null" {
		return ResumeEntry{}, false, nil
	}
	bad := func(format string, a ...any) error {
		return dialect.Unusable(errcode.InvalidResume, "forwardedProps.command."+format, a...)
	}
	var payload []byte
	var text string
	var flag bool
	switch {
	case json.Unmarshal(resume, &text) == nil:
		switch strings.ToLower(strings.TrimSpace(text)) {
		case "approve", "approved", "yes", "true":
			payload = []byte(`{"approved":true}`)
		case "reject", "rejected", "no", "false":
			payload = []byte(`{"approved":false}`)
		default:
			return ResumeEntry{}, true, bad("resume must be {\"approved\": true|false, \"reason\"?: …} or \"approve\" / \"reject\"")
		}
	case json.Unmarshal(resume, &flag) == nil:
		payload = []byte(`{"approved":false}`)
		if flag {
			payload = []byte(`{"approved":true}`)
		}
	default:
		if _, isObject := jsonObject(resume); !isObject {
			return ResumeEntry{}, true, bad("resume must be {\"approved\": true|false, \"reason\"?: …} or \"approve\" / \"reject\"")
		}
		payload = resume
	}
	entry = ResumeEntry{Status: "resolved", Payload: payload}
	// The interrupt event as the client got it: the object, or its JSON text.
	ie := bytes.TrimSpace(props.Command.InterruptEvent)
	if err := json.Unmarshal(ie, &text); err == nil {
		ie = []byte(text)
	}
	if m, isObject := jsonObject(ie); isObject {
		id, _ := m["id"].(string)
		entry.InterruptID = id
	}
	if _, err := decision(0, ResumeEntry{InterruptID: "-", Status: entry.Status, Payload: entry.Payload}); err != nil {
		return ResumeEntry{}, true, bad("resume must be {\"approved\": true|false, \"reason\"?: …} or \"approve\" / \"reject\"")
	}
	return entry, true, nil
}

// PreV1 reports whether the input comes from a client of AG-UI before 1.0:
// it declares no protocolVersion, or one whose major version is 0.
func (in RunAgentInput) PreV1() bool { return PreV1(in.ProtocolVersion) }

// PreV1 reports whether version, an AG-UI protocol version a client
// declared ("" for none), is before 1.0.
func PreV1(version string) bool {
	major, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(version), "v"), ".")
	return major == "" || major == "0"
}
