// Package payload resolves large payloads stored out of line (seed 002
// 会话消息读取支持解引用). The agent loop stores a tool output above the inline
// limit as a blob and keeps {"_ref": "<blob id>"} in its message; readers of
// message history call Resolve so clients receive the actual object.
//
// A reference whose blob is missing or unreadable becomes
// {"_ref": "<id>", "_error": "payload_unavailable"} in that message only;
// the other messages load normally.
package payload

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/errcode"
)

// Unavailable is the _error of a reference that could not be resolved.
const Unavailable = errcode.PayloadUnavailable

// Getter reads blobs (store.Store is one).
type Getter interface {
	GetBlob(ctx context.Context, s chat.Scope, id string) (chat.Blob, error)
}

// Resolve replaces every reference in the messages' metadata by its
// payload. Messages without a reference are returned as they are, without
// being re-encoded.
func Resolve(ctx context.Context, g Getter, sc chat.Scope, msgs []chat.Message) []chat.Message {
	for i, m := range msgs {
		if !bytes.Contains(m.Metadata, []byte(`"_ref"`)) {
			continue
		}
		var v any
		if err := json.Unmarshal(m.Metadata, &v); err != nil {
			continue
		}
		v = walk(ctx, g, sc, v)
		if b, err := json.Marshal(v); err == nil {
			msgs[i].Metadata = b
		}
	}
	return msgs
}

// walk resolves references anywhere in v. A reference is an object whose
// only key is _ref, with a string value.
func walk(ctx context.Context, g Getter, sc chat.Scope, v any) any {
	switch x := v.(type) {
	case map[string]any:
		if id, ok := x["_ref"].(string); ok && len(x) == 1 {
			b, err := g.GetBlob(ctx, sc, id)
			var out any
			if err == nil && json.Unmarshal(b.Data, &out) == nil {
				return out
			}
			return map[string]any{"_ref": id, "_error": Unavailable}
		}
		for k, e := range x {
			x[k] = walk(ctx, g, sc, e)
		}
	case []any:
		for i, e := range x {
			x[i] = walk(ctx, g, sc, e)
		}
	}
	return v
}
