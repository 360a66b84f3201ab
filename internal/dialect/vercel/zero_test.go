package vercel_test

import (
	"testing"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/dialect/dialecttest"
	"github.com/agentchat/agentchat/internal/dialect/vercel"
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
	return []dialect.Encoder{vercel.NewEncoder(vercel.Options{}), vercel.NewEncoder(vercel.Options{AISDK5: true})}
}
