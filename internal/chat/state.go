package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

// MaxStateBytes bounds a thread's shared state (AG-UI RunAgentInput.state),
// as a client sends it and as a patch leaves it.
const MaxStateBytes = 256 << 10

// maxPatchOps bounds the operations of one state patch.
const maxPatchOps = 256

// ErrInvalidPatch is a state patch that is not a valid RFC 6902 JSON Patch
// of the state, or that would leave the state too large. Its message says
// why (PatchState wraps it), safe to show to a model or a person.
var ErrInvalidPatch = errors.New("invalid state patch")

// PatchState applies patch, an RFC 6902 JSON Patch (an array of
// operations), to state, a thread's shared state (nil: none yet, patched as
// {}). Every operation must be one of RFC 6902's six with a JSON Pointer
// path, and every one must apply: a patch applies whole or not at all
// (a failed "test" refuses it too). It returns the new state, compact, and
// the patch in its canonical form (compact), for the event that announces
// the change.
func PatchState(state, patch json.RawMessage) (next, canonical json.RawMessage, err error) {
	patch = bytes.TrimSpace(patch)
	var ops []map[string]json.RawMessage
	if err := json.Unmarshal(patch, &ops); err != nil || len(patch) == 0 || patch[0] != '[' {
		return nil, nil, fmt.Errorf("%w: the patch must be a JSON array of operations", ErrInvalidPatch)
	}
	if len(ops) == 0 {
		return nil, nil, fmt.Errorf("%w: the patch has no operations", ErrInvalidPatch)
	}
	if len(ops) > maxPatchOps {
		return nil, nil, fmt.Errorf("%w: the patch has %d operations, the limit is %d", ErrInvalidPatch, len(ops), maxPatchOps)
	}
	for i, op := range ops {
		var name, path string
		if json.Unmarshal(op["op"], &name) != nil || json.Unmarshal(op["path"], &path) != nil {
			return nil, nil, fmt.Errorf("%w: operation %d needs string fields \"op\" and \"path\"", ErrInvalidPatch, i)
		}
		if path != "" && path[0] != '/' {
			return nil, nil, fmt.Errorf("%w: operation %d: path %q is not a JSON Pointer (it starts with /)", ErrInvalidPatch, i, path)
		}
		switch name {
		case "add", "replace", "test":
			if _, ok := op["value"]; !ok {
				return nil, nil, fmt.Errorf("%w: operation %d (%s) needs a \"value\"", ErrInvalidPatch, i, name)
			}
		case "move", "copy":
			var from string
			if json.Unmarshal(op["from"], &from) != nil {
				return nil, nil, fmt.Errorf("%w: operation %d (%s) needs a string \"from\"", ErrInvalidPatch, i, name)
			}
		case "remove":
		default:
			return nil, nil, fmt.Errorf("%w: operation %d: unknown op %q", ErrInvalidPatch, i, name)
		}
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidPatch, err)
	}
	doc := bytes.TrimSpace(state)
	if len(doc) == 0 || string(doc) == "null" {
		doc = []byte(`{}`)
	}
	opts := jsonpatch.NewApplyOptions()
	opts.EnsurePathExistsOnAdd = false // RFC 6902: add needs its parent
	out, err := p.ApplyWithOptions(doc, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidPatch, err)
	}
	if len(out) > MaxStateBytes {
		return nil, nil, fmt.Errorf("%w: the state would have %d bytes, the limit is %d", ErrInvalidPatch, len(out), MaxStateBytes)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, out); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidPatch, err)
	}
	var c bytes.Buffer
	_ = json.Compact(&c, patch) // valid: it decoded
	return b.Bytes(), c.Bytes(), nil
}
