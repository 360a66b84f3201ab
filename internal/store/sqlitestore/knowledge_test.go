package sqlitestore_test

import (
	"testing"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/store/sqlitestore"
	"github.com/agentchat/agentchat/internal/store/sqlitestore/sqlitetest"
	"github.com/agentchat/agentchat/internal/store/storetest"
)

func TestKnowledgeContract(t *testing.T) {
	t.Parallel()
	storetest.RunKnowledge(t, func(t *testing.T) store.Store {
		// A copy of a migrated database, as TestContract's stores.
		s, err := sqlitestore.Open(t.Context(), sqlitetest.Path(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestKnowledgeFoundAfterReopen: the documents a store counts (to skip
// searching an empty knowledge base) are counted again when it reopens.
func TestKnowledgeFoundAfterReopen(t *testing.T) {
	t.Parallel()
	path := sqlitetest.Path(t)
	sc := chat.Scope{Tenant: "acme", User: "alice"}
	s, err := sqlitestore.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateDocument(t.Context(), sc, store.Document{Source: "fruit"}, []store.Chunk{{Content: "kiwi", Terms: "kiwi"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = sqlitestore.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hits, err := s.SearchKnowledge(t.Context(), sc, store.KnowledgeQuery{Terms: []string{"kiwi"}, Limit: 5})
	if err != nil || len(hits) != 1 {
		t.Fatalf("after reopening: %d hits, %v", len(hits), err)
	}
}
