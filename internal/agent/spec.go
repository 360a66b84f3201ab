package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/prompt"
)

// Spec is an agent's definition: what one version holds, stored as this
// JSON and shown as it is (GET /v1/agents/{id}/versions/{n}), so two
// versions diff field by field.
type Spec struct {
	// Name is how people know the agent (1 to MaxNameChars characters).
	Name string `json:"name"`
	// Description says what the agent is for.
	Description string `json:"description,omitempty"`
	// Model names a model of the models file (DefaultModel when omitted).
	Model string `json:"model"`
	// Instructions are the agent's own part of the system prompt.
	Instructions string `json:"instructions,omitempty"`
	// Tools names the registry's tools the agent may use: nil (omitted)
	// is the server's default set, an empty list none.
	Tools *[]string `json:"tools,omitempty"`
	// Confirm names tools that must also wait for a person.
	Confirm []string `json:"confirm,omitempty"`
	// Knowledge names the knowledge collections retrieval searches: nil
	// (omitted) every collection, an empty list none.
	Knowledge *[]string `json:"knowledge,omitempty"`
	// Engine is local, chain, openclaw or an OpenClaw gateway's name;
	// empty lets the server choose.
	Engine string `json:"engine,omitempty"`
	// MaxIterations bounds a run's model calls; 0 is the server's bound.
	MaxIterations int `json:"maxIterations,omitempty"`
	// Temperature is the sampling temperature (0 to 2); nil the provider's.
	Temperature *float64 `json:"temperature,omitempty"`
	// MultitaskStrategy is what a new input does, by default, while the
	// conversation has an active run: reject (omitted), enqueue, interrupt
	// or rollback (chat.MultitaskStrategy); a request may choose another.
	MultitaskStrategy string `json:"multitaskStrategy,omitempty"`
	// Starters are suggested first messages.
	Starters []string `json:"starters,omitempty"`
	// Metadata is the client's own, an object kept as it is.
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// Limits of a definition.
const (
	MaxNameChars        = 100
	MaxDescriptionChars = 2000
	// MaxInstructionsChars is the instructions component's own limit:
	// longer instructions would be cut when the prompt is assembled, so
	// they are refused when written.
	MaxInstructionsChars = prompt.ComponentLimit
	MaxListEntries       = 64
	MaxStarters          = 8
	MaxStarterChars      = 500
	MaxIterationsBound   = 50
	MaxMetadataBytes     = 16 << 10
	MaxTemperature       = 2.0
)

// fieldNames are the definition's fields in their JSON order.
var fieldNames = func() []string {
	t := reflect.TypeFor[Spec]()
	out := make([]string, t.NumField())
	for i := range out {
		out[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	return out
}()

// specJSON is a definition as the request carries it: confirm may be a
// list of names or an object of name → bool (what a form of checkboxes
// sends), so that a request taking confirmation off a tool the server
// requires it for is refused rather than read as a list without it.
type specJSON struct {
	Spec
	Confirm json.RawMessage `json:"confirm,omitempty"`
}

// DecodeSpec reads a whole definition (POST /v1/agents): strictly, every
// string text; its validation against what the server has is Validate's.
func DecodeSpec(body []byte) (Spec, map[string]bool, error) {
	var in specJSON
	if err := dialect.DecodeJSON(body, &in, dialect.Strict, false); err != nil {
		return Spec{}, nil, err
	}
	return in.resolve()
}

// resolve reads the confirm field's two forms: the names it adds, and the
// names it explicitly asks not to confirm (checked by Validate).
func (in specJSON) resolve() (Spec, map[string]bool, error) {
	s := in.Spec
	s.Confirm = nil
	off := map[string]bool{}
	raw := bytes.TrimSpace(in.Confirm)
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '[':
		if err := json.Unmarshal(raw, &s.Confirm); err != nil {
			return Spec{}, nil, &ValidationError{Field: "confirm", Message: "must be a list of tool names or an object of tool name → true/false"}
		}
	case raw[0] == '{':
		var m map[string]bool
		if err := json.Unmarshal(raw, &m); err != nil {
			return Spec{}, nil, &ValidationError{Field: "confirm", Message: "must be a list of tool names or an object of tool name → true/false"}
		}
		for name, on := range m {
			if on {
				s.Confirm = append(s.Confirm, name)
			} else {
				off[name] = true
			}
		}
		slices.Sort(s.Confirm)
	default:
		return Spec{}, nil, &ValidationError{Field: "confirm", Message: "must be a list of tool names or an object of tool name → true/false"}
	}
	return s, off, nil
}

// Patch applies a JSON merge patch (RFC 7396) to a definition: a field the
// patch names replaces the stored one, null removes it (back to its
// default), and metadata merges key by key.
func Patch(base Spec, patch []byte) (Spec, map[string]bool, error) {
	var p map[string]json.RawMessage
	if err := dialect.DecodeJSON(patch, &p, dialect.Strict, false); err != nil {
		return Spec{}, nil, err
	}
	for k := range p {
		if !slices.Contains(fieldNames, k) {
			return Spec{}, nil, dialect.BadRequest(errcode.UnknownField, "the body has an unknown field %q", k)
		}
	}
	cur, err := json.Marshal(base)
	if err != nil {
		return Spec{}, nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(cur, &doc); err != nil {
		return Spec{}, nil, err
	}
	var patchDoc map[string]any
	dec := json.NewDecoder(bytes.NewReader(patch))
	dec.UseNumber()
	if err := dec.Decode(&patchDoc); err != nil {
		return Spec{}, nil, dialect.BadRequest(errcode.InvalidJSON, "the request body is not a JSON object")
	}
	merged, _ := json.Marshal(mergePatch(doc, patchDoc))
	var in specJSON
	if err := dialect.DecodeJSON(merged, &in, dialect.Strict, false); err != nil {
		return Spec{}, nil, err
	}
	return in.resolve()
}

// mergePatch is RFC 7396's MergePatch.
func mergePatch(target any, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

// ValidationError names the field of a definition the server cannot use.
type ValidationError struct {
	Field   string
	Message string
}

func (e *ValidationError) Error() string { return "field \"" + e.Field + "\": " + e.Message }

// Catalog is what a definition is checked against: what this server has.
type Catalog struct {
	// Model reports whether the tenant may use a model of that name.
	Model func(name string) bool
	// Tool reports whether the registry has a tool of that name, and
	// whether the server requires a person's confirmation for it.
	Tool func(name string) (exists, confirms bool)
	// Engine reports whether an agent may name that engine (local, chain,
	// openclaw, or an OpenClaw gateway).
	Engine func(name string) bool
}

// Normalize trims what is trimmed and fills the defaults a stored
// definition spells out (the model).
func (s *Spec) Normalize() {
	s.Name = strings.TrimSpace(s.Name)
	s.Description = strings.TrimSpace(s.Description)
	s.Instructions = strings.TrimSpace(s.Instructions)
	s.Engine = strings.TrimSpace(s.Engine)
	if s.Model = strings.TrimSpace(s.Model); s.Model == "" {
		s.Model = DefaultModel
	}
	if m := bytes.TrimSpace(s.Metadata); len(m) == 0 || string(m) == "null" {
		s.Metadata = nil
	}
	if s.Confirm != nil {
		s.Confirm = slices.Compact(slices.Sorted(slices.Values(s.Confirm)))
	}
	if len(s.Confirm) == 0 {
		s.Confirm = nil
	}
	if len(s.Starters) == 0 {
		s.Starters = nil
	}
}

// Validate checks a normalized definition against the catalog; off are
// the tools the request asked not to confirm. The error names the field.
func (s Spec) Validate(c Catalog, off map[string]bool) error {
	bad := func(field, format string, a ...any) error {
		return &ValidationError{Field: field, Message: fmt.Sprintf(format, a...)}
	}
	if n := utf8.RuneCountInString(s.Name); n == 0 || n > MaxNameChars {
		return bad("name", "must be 1 to %d characters", MaxNameChars)
	}
	if utf8.RuneCountInString(s.Description) > MaxDescriptionChars {
		return bad("description", "is longer than %d characters", MaxDescriptionChars)
	}
	if !c.Model(s.Model) {
		return bad("model", "%q is not a model this server offers you (GET /v1/models lists them)", s.Model)
	}
	if n := utf8.RuneCountInString(s.Instructions); n > MaxInstructionsChars {
		return bad("instructions", "has %d characters; the limit is %d", n, MaxInstructionsChars)
	}
	if s.Tools != nil {
		if err := names("tools", *s.Tools, func(i int, name string) error {
			if ok, _ := c.Tool(name); !ok {
				return bad(fmt.Sprintf("tools[%d]", i), "%q is not a tool of this server (GET /v1/tools lists them)", name)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if err := names("confirm", s.Confirm, func(i int, name string) error {
		if ok, _ := c.Tool(name); !ok {
			return bad(fmt.Sprintf("confirm[%d]", i), "%q is not a tool of this server", name)
		}
		return nil
	}); err != nil {
		return err
	}
	offNames := slices.Sorted(func(yield func(string) bool) {
		for n := range off {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range offNames {
		ok, confirms := c.Tool(name)
		switch {
		case !ok:
			return bad("confirm."+name, "%q is not a tool of this server", name)
		case confirms:
			return bad("confirm."+name, "this server requires a person's confirmation for %s; an agent can add confirmation, never remove it", name)
		}
	}
	if s.Knowledge != nil {
		if err := names("knowledge", *s.Knowledge, func(i int, name string) error {
			if !chat.ValidCollection(name) {
				return bad(fmt.Sprintf("knowledge[%d]", i), "%q is not a collection name (1 to 64 letters, digits and . _ -)", name)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if s.Engine != "" && !c.Engine(s.Engine) {
		return bad("engine", "%q is not an engine of this server (local, chain, or a configured OpenClaw gateway)", s.Engine)
	}
	if s.MaxIterations < 0 || s.MaxIterations > MaxIterationsBound {
		return bad("maxIterations", "must be 1 to %d (0 for the server's bound)", MaxIterationsBound)
	}
	if _, ok := chat.ParseMultitaskStrategy(s.MultitaskStrategy); !ok {
		return bad("multitaskStrategy", "must be reject, enqueue, interrupt or rollback")
	}
	if t := s.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > MaxTemperature) {
		return bad("temperature", "must be 0 to %g", MaxTemperature)
	}
	if len(s.Starters) > MaxStarters {
		return bad("starters", "has %d entries; at most %d", len(s.Starters), MaxStarters)
	}
	for i, st := range s.Starters {
		if n := utf8.RuneCountInString(strings.TrimSpace(st)); n == 0 || n > MaxStarterChars {
			return bad(fmt.Sprintf("starters[%d]", i), "must be 1 to %d characters", MaxStarterChars)
		}
	}
	if len(s.Metadata) > 0 {
		if s.Metadata[0] != '{' {
			return bad("metadata", "must be an object")
		}
		if len(s.Metadata) > MaxMetadataBytes {
			return bad("metadata", "is larger than %d bytes", MaxMetadataBytes)
		}
	}
	return nil
}

// names checks a list of names: at most MaxListEntries, no repeats, each by check.
func names(field string, list []string, check func(i int, name string) error) error {
	if len(list) > MaxListEntries {
		return &ValidationError{Field: field, Message: fmt.Sprintf("has %d entries; at most %d", len(list), MaxListEntries)}
	}
	for i, n := range list {
		if slices.Index(list, n) != i {
			return &ValidationError{Field: fmt.Sprintf("%s[%d]", field, i), Message: fmt.Sprintf("%q is named twice", n)}
		}
		if err := check(i, n); err != nil {
			return err
		}
	}
	return nil
}

// Changes names the fields whose values differ between two definitions, in
// the definition's order.
func Changes(before, after Spec) []string {
	b, _ := fields(before)
	a, _ := fields(after)
	var out []string
	for _, name := range fieldNames {
		if !bytes.Equal(b[name], a[name]) {
			out = append(out, name)
		}
	}
	return out
}

func fields(s Spec) (map[string]json.RawMessage, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	err = json.Unmarshal(raw, &m)
	for k, v := range m {
		var buf bytes.Buffer
		if json.Compact(&buf, v) == nil {
			m[k] = buf.Bytes()
		}
	}
	return m, err
}

// Marshal is the stored form of a definition.
func (s Spec) Marshal() json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// ParseSpec reads a stored definition.
func ParseSpec(raw json.RawMessage) (Spec, error) {
	var s Spec
	err := json.Unmarshal(raw, &s)
	return s, err
}
