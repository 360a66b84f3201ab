package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// emptyObjectSchema is what a tool with no Parameters takes: an object with
// any properties. OpenAI-style function calling wants an object schema even
// for tools without arguments.
var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// maxSchemaErrors bounds how many problems one "invalid arguments" message
// lists: enough for the model to fix its call, short enough to stay readable.
const maxSchemaErrors = 5

// schemaURL names the one in-memory resource each compiler holds. It never
// leaves this file: error messages speak of argument fields, not schema URLs.
const schemaURL = "mem:///parameters.json"

// english renders the validator's messages. The validator is localised
// through golang.org/x/text; the model reads English.
var english = message.NewPrinter(language.English)

// noLoader refuses every external $ref. Tool schemas come from MCP
// servers the operator configured but does not control line by line; a
// schema must not make this process read local files (file:// refs) or
// fetch URLs when it is compiled.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema reference %q is not allowed", url)
}

// compileSchema compiles a tool's parameter schema. Schemas without
// "$schema" are read as draft 2020-12, the draft MCP names as default;
// servers that declare draft-04 or draft-07 (common in the wild) are honoured.
func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parameters are not valid JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("parameters schema: %w", err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("parameters schema: %w", err)
	}
	return s, nil
}

// checkArgs parses args and validates them against s. It returns the
// arguments to hand to the tool (JSON "null" or nothing becomes "{}": models
// send either for a tool without parameters) and, on failure, a message for
// the model that names each offending field and why.
func checkArgs(s *jsonschema.Schema, args json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		trimmed = []byte("{}")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(trimmed))
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if err := s.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, err
		}
		return nil, errors.New(describeValidation(ve))
	}
	return json.RawMessage(trimmed), nil
}

// describeValidation flattens the validator's error tree into its leaves:
// the leaves say what is wrong ("missing property 'url'", "got number, want
// string"), the inner nodes only say which keyword grouped them.
func describeValidation(ve *jsonschema.ValidationError) string {
	var parts []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			parts = append(parts, fieldName(e.InstanceLocation)+e.ErrorKind.LocalizedString(english))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(parts) == 0 {
		return "arguments do not match the schema"
	}
	extra := len(parts) - maxSchemaErrors
	if extra > 0 {
		parts = parts[:maxSchemaErrors]
	}
	msg := strings.Join(parts, "; ")
	if extra > 0 {
		msg += fmt.Sprintf(" (and %d more)", extra)
	}
	return msg
}

// fieldName renders an instance location as a prefix: "" for the arguments
// object itself, else "timezone: " or "items/2/name: " (JSON Pointer without
// the leading slash, the form a model can map back to its own JSON).
func fieldName(loc []string) string {
	if len(loc) == 0 {
		return ""
	}
	esc := make([]string, len(loc))
	for i, tok := range loc {
		esc[i] = strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
	}
	return strings.Join(esc, "/") + ": "
}
