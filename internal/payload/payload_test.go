package payload

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

type blobs map[string]string

func (b blobs) GetBlob(_ context.Context, _ chat.Scope, id string) (chat.Blob, error) {
	d, ok := b[id]
	if !ok {
		return chat.Blob{}, store.ErrNotFound
	}
	return chat.Blob{ID: id, Data: json.RawMessage(d)}, nil
}

func TestResolve(t *testing.T) {
	t.Parallel()
	g := blobs{"ok": `{"chart_data":{"labels":["a"]}}`, "bad": `{not json`}
	msgs := []chat.Message{
		{Metadata: json.RawMessage(`{"tool_agent_output":{"_ref":"ok"},"status":"success"}`)},
		{Metadata: json.RawMessage(`{"tool_agent_output":{"_ref":"gone"}}`)},
		{Metadata: json.RawMessage(`{"list":[{"_ref":"bad"}]}`)},
		{Metadata: json.RawMessage(`{"x": {"_ref":"ok","other":1}}`)}, // not a reference: kept
		{Metadata: json.RawMessage(`{"plain":  true}`)},               // untouched, byte for byte
	}
	out := Resolve(t.Context(), g, chat.Scope{}, msgs)
	want := []string{
		`{"status":"success","tool_agent_output":{"chart_data":{"labels":["a"]}}}`,
		`{"tool_agent_output":{"_error":"payload_unavailable","_ref":"gone"}}`,
		`{"list":[{"_error":"payload_unavailable","_ref":"bad"}]}`,
		`{"x":{"_ref":"ok","other":1}}`,
		`{"plain":  true}`,
	}
	for i, w := range want {
		if string(out[i].Metadata) != w {
			t.Errorf("message %d: %s, want %s", i, out[i].Metadata, w)
		}
	}
}
