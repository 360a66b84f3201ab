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

// SendAsOneEntry sends evs, one thread's in increasing seq, in one pipeline,
// as a publisher does with the publishes that queued while its previous
// pipeline was in flight, and waits for it.
func SendAsOneEntry(b *Bus, evs ...event.Event) error {
	reqs := make([]*publishReq, len(evs))
	q := &b.pub
	for i, ev := range evs {
		data, err := ev.MarshalJSON()
		if err != nil {
			return err
		}
		key := StreamKey(b.opts.Prefix, ev.Tenant, ev.Thread)
		reqs[i] = &publishReq{key: key, seq: ev.Seq, data: data}
	}
	b.send(q, reqs)
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, r := range reqs {
		if err := q.failed[r.key]; err != nil {
			delete(q.failed, r.key)
			return err
		}
	}
	return nil
}
