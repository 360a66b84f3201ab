package chain_test

import (
	"testing"

	"github.com/agentchat/agentchat/internal/dialect/chain"
	"github.com/agentchat/agentchat/internal/dialect/dialecttest"
)

func TestZeroPayloads(t *testing.T) {
	t.Parallel()
	dialecttest.CheckZeroPayloads(t, chain.NewEncoder(chain.Options{}))
}
