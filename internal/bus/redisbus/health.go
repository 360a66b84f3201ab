package redisbus

import "context"

// Ping reports whether Redis answers, for readiness checks.
func (b *Bus) Ping(ctx context.Context) error { return b.rdb.Ping(ctx).Err() }
