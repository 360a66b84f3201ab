package redisbus

import "time"

// SetBlock changes how long b's XREADs block, so that a test can tell a
// wake-up by CLIENT UNBLOCK from an XREAD timing out.
func SetBlock(b *Bus, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.block = d
}
