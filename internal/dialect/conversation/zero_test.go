package conversation_test

import (
	"testing"

	"github.com/agentchat/agentchat/internal/dialect/conversation"
	"github.com/agentchat/agentchat/internal/dialect/dialecttest"
)

func TestZeroPayloads(t *testing.T) {
	t.Parallel()
	dialecttest.CheckZeroPayloads(t, conversation.NewEncoder())
}
