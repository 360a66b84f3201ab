package redisbus

import (
	"context"
	"time"

	"github.com/agentchat/agentchat/internal/event"
)

// Shards is how many shards a bus spreads its subscriptions over.
const Shards = shardCount

// SetBlock changes how long b's XREADs block, so that a test can tell a
// wake-up by CLIENT UNBLOCK from an XREAD timing out.
func SetBlock(b *Bus, d time.Duration) {
	b.block.Store(int64(d))
}

// SetLocalQuiet changes how long b leaves a thread it published to out of
// its XREADs, so that a test can tell a run's end bringing the thread back
// from the quiet time running out.
func SetLocalQuiet(b *Bus, d time.Duration) { b.quiet.Store(int64(d)) }

// ReadBack is how many stream entries b's readers have read from Redis.
func ReadBack(b *Bus) int64 {
	var n int64
	for i := range b.shards {
		sh := &b.shards[i]
		sh.mu.Lock()
		for _, r := range sh.readers {
			n += r.read.Load()
		}
		sh.mu.Unlock()
	}
	return n
}

// PublishWaited publishes ev as a run's end is published: it returns once
// Redis has ev and every earlier event of its thread, so that a test can
// read the stream next.
func PublishWaited(ctx context.Context, b *Bus, ev event.Event) error {
	return b.publish(ctx, ev, true)
}
