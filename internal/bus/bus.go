// Package bus fans events out live: the executing run publishes each event of
// a thread, and every stream following that thread receives it.
//
// Ordering: events of one thread are published by one publisher at a time (the
// replica executing the thread's active run) in seq order, and every
// subscription delivers them in that order. The bus is not the record: the
// store's event log is. A subscriber replays the log for what the bus no
// longer holds, and drops duplicates by seq.
//
// Backpressure: publishing never blocks on a subscriber. Each subscription has
// a bounded queue; a subscriber that falls too far behind is ended with
// ErrSlowConsumer, and resumes from the log by its last seq.
package bus

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/agentchat/agentchat/internal/event"
)

// ErrSlowConsumer ends a subscription whose queue overflowed.
var ErrSlowConsumer = errors.New("bus: subscriber too slow, resume from the last event id")

// ErrClosed ends subscriptions when the bus closes.
var ErrClosed = errors.New("bus: closed")

// ErrUnavailable wraps errors of a bus backend that cannot be reached now
// (Redis down or restarting); the caller may retry.
var ErrUnavailable = errors.New("bus unavailable")

// Control kinds.
const (
	ControlCancel  = "cancel"  // stop the run
	ControlDecided = "decided" // a confirmation of the run was decided
	// ControlAgent says a tenant's agent (AgentID), or its settings (no
	// AgentID), changed: every replica drops what it cached of it.
	ControlAgent = "agent"
)

// Control is a message to every replica: to whichever executes a run, or
// to each one's caches.
type Control struct {
	Kind           string `json:"kind"`
	Tenant         string `json:"tenant"`
	RunID          string `json:"runId,omitempty"`
	ConfirmationID string `json:"confirmationId,omitempty"`
	AgentID        string `json:"agentId,omitempty"`
	// Reason, on a cancel, says why: ReasonInterrupt when a new input
	// interrupted the run (double-texting); "" when a person stopped it.
	Reason string `json:"reason,omitempty"`
}

// ReasonInterrupt is a cancel's Reason when a new input interrupts the run.
const ReasonInterrupt = "interrupt"

// Bus is the live fan-out of events and control messages.
type Bus interface {
	// Publish delivers ev to the subscribers of its thread. It may return
	// before the bus holds ev (or has failed to): an error publishing ev
	// may be returned by a later Publish of the thread instead, once. A
	// thread's end (ev.Terminal) or pause for a decision
	// (event.ToolAwaiting) is held when Publish returns, with every earlier
	// event of the thread, or Publish returns an error: the thread's next
	// events may be published by another replica.
	Publish(ctx context.Context, ev event.Event) error
	// Subscribe follows a thread of a tenant. The subscription receives every
	// event published after Subscribe returns, in order; it may first receive
	// events the bus retained with seq > after (and the caller drops any it
	// already has). The subscription ends when ctx ends or Close is called.
	Subscribe(ctx context.Context, tenant, thread string, after int64) (*Queue, error)
	// Retained returns the events of a thread the bus still holds with seq >
	// after, in seq order: a suffix, without holes, of what was published
	// (the newest last; what was published since the thread's last end or
	// pause may not all be held yet), possibly empty, and always empty for
	// a bus that retains nothing. A replica taking over a run reads it to
	// learn what the dead executor published but may not have written to
	// the log; what it published and the bus never held, the run's reserved
	// seqs cover (run/recovery.go).
	Retained(ctx context.Context, tenant, thread string, after int64) ([]event.Event, error)
	// PublishControl sends a control message to every replica.
	PublishControl(ctx context.Context, c Control) error
	// Controls delivers control messages until ctx ends. Each call gets its own stream.
	Controls(ctx context.Context) (<-chan Control, error)
	// Close ends every subscription with ErrClosed.
	Close() error
}

// Lossless reports whether b says that it hands every event published on
// it to the queue of every subscription open at the time, before Publish
// returns, without blocking, and fails only once closed (the in-process
// bus). Where that bus's process is also the only one writing events, a
// subscriber misses no event it needs to look for in the log, and a
// publish needs no deadline. A bus says so with a method Lossless() bool; a
// wrapper that may drop or delay events answers false.
func Lossless(b Bus) bool {
	l, ok := b.(interface{ Lossless() bool })
	return ok && l.Lossless()
}

// DefaultQueueLimit bounds a subscription's backlog: generous for bursts of
// token deltas, small enough that a stalled client costs little.
const DefaultQueueLimit = 4096

// Queue is a subscription's bounded, growable backlog. Producers Push and never
// block; the consumer waits on Ready and takes everything with Drain, so a
// burst becomes one write and one flush. An empty queue holds no buffer: its
// array comes from event.GetBatch with the first event and goes back when
// drained.
type Queue struct {
	mu     sync.Mutex
	items  []event.Event
	limit  int
	err    error
	ready  chan struct{}
	onStop func()
	notify atomic.Pointer[func()] // see Notify
}

// NewQueue makes a queue holding at most limit events (DefaultQueueLimit when
// limit <= 0); onStop, if set, runs once when the queue ends.
func NewQueue(limit int, onStop func()) *Queue {
	if limit <= 0 {
		limit = DefaultQueueLimit
	}
	return &Queue{limit: limit, ready: make(chan struct{}, 1), onStop: onStop}
}

// Push appends ev; on overflow the queue ends with ErrSlowConsumer. It reports
// whether the queue is still open; when it is not, the producer detaches it
// (Push does not run onStop, so a producer may call it under its own lock).
func (q *Queue) Push(ev event.Event) bool {
	q.mu.Lock()
	if q.err != nil {
		q.mu.Unlock()
		return false
	}
	if len(q.items) >= q.limit {
		q.err = ErrSlowConsumer
		q.mu.Unlock()
		q.signal()
		return false
	}
	if q.items == nil {
		q.items = event.GetBatch()
	}
	q.items = append(q.items, ev)
	q.mu.Unlock()
	q.signal()
	return true
}

func (q *Queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
	if f := q.notify.Load(); f != nil {
		(*f)()
	}
}

// Notify makes f run each time Ready is signalled, for a consumer that
// waits with no goroutine on Ready: f wakes it, and it then takes Ready's
// signal without blocking. f runs on the producer's goroutine, sometimes
// under the queue's lock: it must not block or call the queue. A signal
// sent before Notify is on Ready only.
func (q *Queue) Notify(f func()) { q.notify.Store(&f) }

// Ready is signalled when events or the end are waiting.
func (q *Queue) Ready() <-chan struct{} { return q.ready }

// Drain appends the waiting events to buf and returns it, with the error that
// ended the queue once nothing is left to deliver (nil while it is open).
// Given a nil buf it hands over the queue's own array instead of copying it
// (every token of a live stream is drained): an event.GetBatch array, or
// one a burst grew, which the caller may give back with event.PutBatch.
func (q *Queue) Drain(buf []event.Event) ([]event.Event, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if buf == nil {
		buf = q.items
	} else {
		buf = append(buf, q.items...)
		event.PutBatch(q.items)
	}
	q.items = nil
	if len(buf) > 0 {
		if q.err != nil {
			q.signal() // the end is still to be told
		}
		return buf, nil
	}
	return buf, q.err
}

// Stop ends the queue with err (nil means a clean close). Events already
// queued are still delivered before the error. Safe to call more than once.
func (q *Queue) Stop(err error) {
	q.mu.Lock()
	if q.err != nil {
		q.mu.Unlock()
		return
	}
	if err == nil {
		err = ErrClosed
	}
	q.err = err
	stop := q.onStop
	q.onStop = nil
	q.mu.Unlock()
	q.signal()
	if stop != nil {
		stop()
	}
}

// Err is the error that ended the queue, nil while it is open.
func (q *Queue) Err() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}
