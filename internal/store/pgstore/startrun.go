package pgstore

import (
	"context"

	"github.com/agentchat/agentchat/internal/store"
)

// StartRun writes a run's start. PostgreSQL writers do not queue behind one
// another, so the parts are written as they are elsewhere in this store.
func (s *Store) StartRun(ctx context.Context, sc store.Scope, in store.RunStart) (store.RunStarted, error) {
	return store.StartRunSeparately(ctx, s, sc, in)
}
