package redisbus

import "time"

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
