package redisbus

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentchat/agentchat/internal/bus"
)

func (b *Bus) controlChannel() string { return b.opts.Prefix + ":control" }

// PublishControl sends c to every replica's Controls streams.
func (b *Bus) PublishControl(ctx context.Context, c bus.Control) error {
	if b.isClosed() {
		return bus.ErrClosed
	}
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := b.rdb.Publish(ctx, b.controlChannel(), data).Err(); err != nil {
		return fmt.Errorf("redisbus: publish control %s: %w", c.Kind, unavailable(err))
	}
	return nil
}

// Controls streams control messages until ctx ends or the bus closes. It
// returns once the subscription is active, so a message published after it
// returns is delivered; a broken connection is re-established by go-redis.
func (b *Bus) Controls(ctx context.Context) (<-chan bus.Control, error) {
	if b.isClosed() {
		return nil, bus.ErrClosed
	}
	ps := b.rdb.Subscribe(ctx, b.controlChannel())
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		ps.Close()
		return nil, fmt.Errorf("redisbus: subscribe to controls: %w", unavailable(err))
	}
	b.mu.Lock()
	if b.closed.Load() {
		b.mu.Unlock()
		ps.Close()
		return nil, bus.ErrClosed
	}
	b.wg.Add(1)
	b.mu.Unlock()

	ch := make(chan bus.Control, 64)
	cctx, cancel := context.WithCancel(ctx)
	stopOnClose := context.AfterFunc(b.ctx, cancel)
	// A blocked receive ignores its context; closing the PubSub ends it.
	closeOnDone := context.AfterFunc(cctx, func() { ps.Close() })
	go func() {
		defer b.wg.Done()
		defer close(ch)
		defer func() {
			cancel()
			stopOnClose()
			if closeOnDone() {
				ps.Close()
			}
		}()
		var delay time.Duration
		for {
			msg, err := ps.ReceiveMessage(cctx)
			if cctx.Err() != nil {
				return
			}
			if err != nil {
				delay = min(max(2*delay, 50*time.Millisecond), maxBackoff)
				b.log.Warn("redisbus: control stream failed; retrying", "err", err, "in", delay)
				select {
				case <-time.After(delay):
				case <-cctx.Done():
					return
				}
				continue
			}
			delay = 0
			var c bus.Control
			if err := json.Unmarshal([]byte(msg.Payload), &c); err != nil {
				b.log.Warn("redisbus: skipping malformed control message", "err", err)
				continue
			}
			select {
			case ch <- c:
			case <-cctx.Done():
				return
			}
		}
	}()
	return ch, nil
}
