package agui_test

import (
	"testing"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/dialect/agui"
	"github.com/agentchat/agentchat/internal/dialect/dialecttest"
)

func TestZeroPayloads(t *testing.T) {
	t.Parallel()
	for _, enc := range encoders() {
		for _, f := range dialecttest.ParseSSE(t, dialecttest.Encode(enc, dialecttest.ZeroEvents())) {
			if f.Data != "[DONE]" {
				dialecttest.Object(t, f.Data)
			}
		}
	}
}

func encoders() []dialect.Encoder {
	return []dialect.Encoder{agui.NewEncoder(agui.Options{}), agui.NewEncoder(agui.Options{Mode: agui.Seed})}
}
