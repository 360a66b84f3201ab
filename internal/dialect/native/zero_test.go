package native_test

import (
	"testing"

	"github.com/agentchat/agentchat/internal/dialect/dialecttest"
	"github.com/agentchat/agentchat/internal/dialect/native"
)

func TestZeroPayloads(t *testing.T) {
	t.Parallel()
	dialecttest.CheckZeroPayloads(t, native.NewEncoder())
}
