package llm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Defaults of the adapters' Config and of RetryPolicy.
const (
	// DefaultTimeout bounds the wait for a provider to start answering.
	DefaultTimeout = 60 * time.Second
	// DefaultMaxRetries is how often a refused call is retried before any chunk.
	DefaultMaxRetries = 2
)

// RetryPolicy says how WithRetry retries a refused call. The zero value is the default policy.
type RetryPolicy struct {
	// MaxRetries is the number of tries after the first. Default DefaultMaxRetries; negative disables retries.
	MaxRetries int
	// BaseDelay is the wait before the first retry; it doubles for each later one. Default 500ms.
	BaseDelay time.Duration
	// MaxDelay caps one wait. A provider asking (by Retry-After) for a longer
	// wait ends the retries at once: waiting less would only be refused again,
	// and waiting more would hold the run hostage. Default 20s.
	MaxDelay time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	p.MaxRetries = cmp.Or(p.MaxRetries, DefaultMaxRetries)
	p.BaseDelay = cmp.Or(p.BaseDelay, 500*time.Millisecond)
	p.MaxDelay = cmp.Or(p.MaxDelay, 20*time.Second)
	return p
}

// WithRetry returns a Model that retries Stream when it fails with a
// retryable *Error (rate limited, unavailable), with exponential backoff and
// jitter, honouring the provider's Retry-After and ctx.
//
// Only Stream is retried, never a stream that has begun: Stream returns before
// any chunk is delivered, so a retry can never duplicate text the caller saw.
// Adapters disable their SDK's own retries so that this is the only retry loop
// and its waits are bounded and cancellable in one place.
func WithRetry(m Model, policy RetryPolicy) Model {
	if policy.MaxRetries < 0 {
		return m
	}
	return &retrying{Model: m, policy: policy.withDefaults()}
}

type retrying struct {
	Model
	policy RetryPolicy
}

func (r *retrying) Stream(ctx context.Context, req Request) (Stream, error) {
	for attempt := 0; ; attempt++ {
		s, err := r.Model.Stream(ctx, req)
		if err == nil {
			return s, nil
		}
		var lerr *Error
		if !errors.As(err, &lerr) || !lerr.Retryable() || attempt >= r.policy.MaxRetries {
			return nil, err
		}
		wait := r.policy.backoff(attempt)
		if lerr.RetryAfter > 0 {
			if lerr.RetryAfter > r.policy.MaxDelay {
				return nil, err
			}
			wait = lerr.RetryAfter
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, contextError(ctx, err)
		case <-t.C:
		}
	}
}

// backoff is the wait before retry number attempt+1: BaseDelay doubled per
// attempt, capped at MaxDelay, with "equal jitter" (a random point in the
// upper half) so that callers refused together do not retry together.
func (p RetryPolicy) backoff(attempt int) time.Duration {
	d := p.BaseDelay << min(attempt, 30)
	if d <= 0 || d > p.MaxDelay {
		d = p.MaxDelay
	}
	half := d / 2
	return half + rand.N(half+1)
}

// contextError reports why ctx ended while a call was refused: a deadline is
// a timeout *Error (the run gave the provider all the time it had), a
// cancellation is the caller's own decision and is returned as ctx's error.
// Both still wrap the last refusal for the logs.
func contextError(ctx context.Context, last error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &Error{
			Code:    CodeTimeout,
			Message: "the model provider kept refusing until the deadline",
			Err:     errors.Join(ctx.Err(), last),
		}
	}
	return fmt.Errorf("%w (while waiting to retry: %w)", ctx.Err(), last)
}
