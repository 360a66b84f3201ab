package llm_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentchat/agentchat/internal/llm"
)

// flaky fails its first calls with errs, then streams one text chunk.
type flaky struct {
	errs  []error
	calls int
	at    []time.Time
}

func (f *flaky) Name() string { return "flaky" }

func (f *flaky) Stream(ctx context.Context, req llm.Request) (llm.Stream, error) {
	f.calls++
	f.at = append(f.at, time.Now())
	if f.calls <= len(f.errs) {
		return nil, f.errs[f.calls-1]
	}
	return &sliceStream{chunks: []llm.Chunk{{Text: "ok"}}}, nil
}

type sliceStream struct {
	chunks []llm.Chunk
	cur    llm.Chunk
	err    error
}

func (s *sliceStream) Next() bool {
	if len(s.chunks) == 0 {
		return false
	}
	s.cur, s.chunks = s.chunks[0], s.chunks[1:]
	return true
}
func (s *sliceStream) Chunk() llm.Chunk { return s.cur }
func (s *sliceStream) Err() error       { return s.err }
func (s *sliceStream) Close() error     { return nil }

var (
	rateLimited = &llm.Error{Code: llm.CodeRateLimited, Status: 429, Message: "slow down"}
	unavailable = &llm.Error{Code: llm.CodeUnavailable, Status: 503, Message: "down"}
	badKey      = &llm.Error{Code: llm.CodeUnauthorized, Status: 401, Message: "bad key"}
)

func TestRetry(t *testing.T) {
	t.Parallel()
	policy := llm.RetryPolicy{MaxRetries: 3, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	tests := []struct {
		name      string
		errs      []error
		wantCalls int
		wantErr   error
	}{
		{"success first", nil, 1, nil},
		{"429 then success", []error{rateLimited}, 2, nil},
		{"5xx twice then success", []error{unavailable, unavailable}, 3, nil},
		{"401 is not retried", []error{badKey, nil}, 1, badKey},
		{"other errors are not retried", []error{errors.New("boom")}, 1, nil},
		{"gives up after MaxRetries", []error{rateLimited, rateLimited, rateLimited, rateLimited, rateLimited}, 4, rateLimited},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				f := &flaky{errs: tt.errs}
				s, err := llm.WithRetry(f, policy).Stream(t.Context(), llm.Request{})
				if f.calls != tt.wantCalls {
					t.Errorf("calls = %d, want %d", f.calls, tt.wantCalls)
				}
				switch {
				case tt.wantErr != nil && err != tt.wantErr:
					t.Errorf("err = %v, want %v", err, tt.wantErr)
				case tt.wantErr == nil && len(tt.errs) < tt.wantCalls && err != nil:
					t.Errorf("err = %v, want success", err)
				case err == nil && s == nil:
					t.Error("nil stream without error")
				}
				// Backoff: BaseDelay doubled per retry, capped, jittered in the upper half.
				for i := 1; i < len(f.at); i++ {
					d := min(policy.BaseDelay<<(i-1), policy.MaxDelay)
					if gap := f.at[i].Sub(f.at[i-1]); gap < d/2 || gap > d {
						t.Errorf("wait before retry %d = %v, want within [%v, %v]", i, gap, d/2, d)
					}
				}
			})
		})
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		limited := &llm.Error{Code: llm.CodeRateLimited, RetryAfter: 3 * time.Second}
		f := &flaky{errs: []error{limited}}
		start := time.Now()
		if _, err := llm.WithRetry(f, llm.RetryPolicy{}).Stream(t.Context(), llm.Request{}); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 3*time.Second {
			t.Errorf("waited %v, want the provider's Retry-After, 3s", got)
		}
	})
}

func TestRetryAfterTooLong(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		limited := &llm.Error{Code: llm.CodeRateLimited, RetryAfter: time.Hour}
		f := &flaky{errs: []error{limited}}
		start := time.Now()
		_, err := llm.WithRetry(f, llm.RetryPolicy{MaxDelay: 10 * time.Second}).Stream(t.Context(), llm.Request{})
		if err != limited || f.calls != 1 || time.Since(start) != 0 {
			t.Fatalf("err %v after %d calls and %v: want the refusal at once", err, f.calls, time.Since(start))
		}
	})
}

func TestRetryHonoursContext(t *testing.T) {
	t.Parallel()
	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			limited := &llm.Error{Code: llm.CodeRateLimited, RetryAfter: 10 * time.Second}
			f := &flaky{errs: []error{limited}}
			time.AfterFunc(time.Second, cancel)
			start := time.Now()
			_, err := llm.WithRetry(f, llm.RetryPolicy{}).Stream(ctx, llm.Request{})
			if !errors.Is(err, context.Canceled) || time.Since(start) != time.Second || f.calls != 1 {
				t.Fatalf("err %v after %v and %d calls: want context.Canceled at the cancel", err, time.Since(start), f.calls)
			}
			var lerr *llm.Error
			if !errors.As(err, &lerr) || lerr != limited {
				t.Errorf("err %v does not wrap the last refusal", err)
			}
		})
	})
	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			f := &flaky{errs: []error{&llm.Error{Code: llm.CodeUnavailable, RetryAfter: 5 * time.Second}}}
			_, err := llm.WithRetry(f, llm.RetryPolicy{}).Stream(ctx, llm.Request{})
			var lerr *llm.Error
			if !errors.As(err, &lerr) || lerr.Code != llm.CodeTimeout || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want a timeout *llm.Error", err)
			}
		})
	})
}

func TestRetryDisabled(t *testing.T) {
	t.Parallel()
	f := &flaky{}
	if m := llm.WithRetry(f, llm.RetryPolicy{MaxRetries: -1}); m != llm.Model(f) {
		t.Errorf("WithRetry with MaxRetries < 0 = %T, want the model itself", m)
	}
	if got := llm.WithRetry(f, llm.RetryPolicy{}).Name(); got != "flaky" {
		t.Errorf("Name() = %q, want the wrapped model's", got)
	}
}
