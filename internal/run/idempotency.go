package run

import (
	"context"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// IdempotencyWindow is how long an Idempotency-Key holds: a repeat within
// it attaches to the run the key started; after it the key is new again.
const IdempotencyWindow = 24 * time.Hour

// KeyClaim is the outcome of claiming a run-starting request's key.
type KeyClaim struct {
	// Claimed: this request holds the key and starts the run; it then calls
	// Started or Release.
	Claimed bool
	// Prior is the stored record when another request holds the key.
	Prior store.IdempotencyKey
}

// ClaimKey claims key for a request whose body hashes to hash. Keys are
// the principal's and hold across replicas and restarts (the store keeps
// them).
func (s *Service) ClaimKey(ctx context.Context, sc chat.Scope, key, hash string) (KeyClaim, error) {
	rec, claimed, err := s.st.ClaimIdempotencyKey(ctx, sc, store.IdempotencyKey{Key: key, BodyHash: hash}, time.Now().Add(-IdempotencyWindow))
	if err != nil {
		return KeyClaim{}, err
	}
	return KeyClaim{Claimed: claimed, Prior: rec}, nil
}

// KeyStarted records the run a claimed key started.
func (s *Service) KeyStarted(ctx context.Context, sc chat.Scope, key string, r chat.Run) error {
	return s.st.SetIdempotencyRun(context.WithoutCancel(ctx), sc, key, r.ID, r.ConversationID)
}

// ReleaseKey gives up a claimed key whose start failed: the request may be
// tried again with it.
func (s *Service) ReleaseKey(ctx context.Context, sc chat.Scope, key string) {
	if err := s.st.ReleaseIdempotencyKey(context.WithoutCancel(ctx), sc, key); err != nil {
		s.log.WarnContext(ctx, "release idempotency key", "err", err)
	}
}
