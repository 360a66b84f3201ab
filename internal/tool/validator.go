package tool

import (
	"encoding/json"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Validator checks JSON documents against one JSON Schema, with the same
// rules and readable messages as tool arguments (draft 2020-12 by default,
// no external references). Engines use it for structured model answers.
// It is safe for concurrent use.
type Validator struct {
	schema *jsonschema.Schema
}

// NewValidator compiles schema.
func NewValidator(schema json.RawMessage) (*Validator, error) {
	s, err := compileSchema(schema)
	if err != nil {
		return nil, err
	}
	return &Validator{schema: s}, nil
}

// Check reports what in doc does not match the schema, naming each field;
// nil when it matches.
func (v *Validator) Check(doc json.RawMessage) error {
	_, err := checkArgs(v.schema, doc)
	return err
}
