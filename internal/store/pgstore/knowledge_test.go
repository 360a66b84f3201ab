package pgstore_test

import (
	"testing"

	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/store/storetest"
	"github.com/agentchat/agentchat/internal/testenv"
)

func TestKnowledgeContract(t *testing.T) {
	t.Parallel()
	dbURL := testenv.Postgres(t)
	storetest.RunKnowledge(t, func(t *testing.T) store.Store {
		return open(t, withParam(t, dbURL, "schema", newSchema(t, dbURL)))
	})
}
