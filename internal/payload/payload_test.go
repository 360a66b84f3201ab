package payload

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentchat/agentchat/internal/store"
)

type blobs map[string]string

func (b blobs) GetBlob(_ context.Context, _ store.Scope, id string) (store.Blob, error) {
	d, ok := b[id]
	if !ok {
		return store.Blob{}, store.ErrNotFound
	}
	return store.Blob{ID: id, Data: json.RawMessage(d)}, nil
}

func TestResolve(t *testing.T) {
	t.Parallel()
	g := blobs{"ok": `{"chart_data":{"labels":["a"]}}`, "bad": `{not json`}
	msgs := []store.Message{
		{Metadata: json.RawMessage(`{"tool_agent_output":{"_ref":"ok"},"status":"success"}`)},
		{Metadata: json.RawMessage(`{"tool_agent_output":{"_ref":"gone"}}`)},
		{Metadata: json.RawMessage(`{"list":[{"_ref":"bad"}]}`)},
		{Metadata: json.RawMessage(`{"x": {"_ref":"ok","other":1}}`)}, // not a reference: kept
		{Metadata: json.RawMessage(`{"plain":  true}`)},               // untouched, byte for byte
	}
	out := Resolve(t.Context(), g, store.Scope{}, msgs)
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
