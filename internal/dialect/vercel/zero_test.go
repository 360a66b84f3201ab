package vercel_test

import (
	"testing"

	"github.com/agentchat/agentchat/internal/dialect/dialecttest"
	"github.com/agentchat/agentchat/internal/dialect/vercel"
)

func TestZeroPayloads(t *testing.T) {
	t.Parallel()
	dialecttest.CheckZeroPayloads(t, vercel.NewEncoder(vercel.Options{}), vercel.NewEncoder(vercel.Options{AISDK5: true}))
}
