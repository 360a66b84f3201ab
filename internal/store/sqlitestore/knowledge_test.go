package sqlitestore_test

import (
	"path/filepath"
	"testing"

	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/store/sqlitestore"
	"github.com/agentchat/agentchat/internal/store/storetest"
)

func TestKnowledgeContract(t *testing.T) {
	t.Parallel()
	storetest.RunKnowledge(t, func(t *testing.T) store.Store {
		s, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "agentchat.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
