package agui_test

import (
	"testing"

	"github.com/agentchat/agentchat/internal/dialect/agui"
	"github.com/agentchat/agentchat/internal/dialect/dialecttest"
)

func TestZeroPayloads(t *testing.T) {
	t.Parallel()
	dialecttest.CheckZeroPayloads(t, agui.NewEncoder(agui.Options{}), agui.NewEncoder(agui.Options{Mode: agui.Seed}))
}
