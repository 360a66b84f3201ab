package redisbus

import "time"

// SetBlock changes how long b's XREADs block, so that a test can tell a
// wake-up by CLIENT UNBLOCK from an XREAD timing out.
func SetBlock(b *Bus, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.block = d
}

// ReadBack is how many stream entries b's readers have read from Redis.
func ReadBack(b *Bus) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	var n int64
	for _, r := range b.readers {
		n += r.read.Load()
	}
	return n
}
