// Package groupcommit is the queue behind the stores' group commits (the
// SQLite and PostgreSQL stores' grouped writes).
//
// A write joins the queue; the caller that finds no group in progress
// leads: it takes the queued writes (its own first) and commits them as one,
// then hands the lead to the first write queued meanwhile. So each caller
// leads at most once, and nobody lingers: a write that finds no group in
// progress goes at once. What a group is (a transaction with savepoints, a
// pipelined batch) is the store's; the queue only decides who leads and when
// each caller's wait ends.
package groupcommit

import "sync"

// Turn is what a queued write embeds: its caller's wait for its group.
type Turn struct {
	done chan bool // receives true: lead the next group; false: the write was sent
}

func (t *Turn) turn() *Turn { return t }

// Write is a queued write: a pointer to a struct that embeds Turn.
type Write interface {
	turn() *Turn
}

// Queue is the writes waiting for a group. The zero value is ready.
type Queue[W Write] struct {
	mu      sync.Mutex
	queue   []W
	leading bool // a group is in progress; the next leader is handed over
}

// Join queues w and waits for its turn. It reports true when w's caller is
// to lead a group now (at once when none was in progress, else when the
// group before hands it the lead), and false once a leader has sent w with
// its group.
//
// The wait takes no context: a leader looks at each write's context before
// sending it and skips it when it is done, so the wait is bounded by one
// group, and a caller never leaves a write that is then committed behind its
// back.
func (q *Queue[W]) Join(w W) bool {
	t := w.turn()
	t.done = make(chan bool, 1)
	q.mu.Lock()
	q.queue = append(q.queue, w)
	lead := !q.leading
	q.leading = true
	q.mu.Unlock()
	return lead || <-t.done
}

// First returns the leader's own write: writes leave the queue only in
// groups, and the lead goes to the first one left.
func (q *Queue[W]) First() W {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.queue[0]
}

// Take takes the leader's group: up to max queued writes, oldest first.
// A leader takes it once it holds what it commits with (a connection, a
// transaction), not before, so that the writes queued while it waited for
// that join its group.
func (q *Queue[W]) Take(max int) []W {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(len(q.queue), max)
	group := q.queue[:n:n]
	// A new array: the taken writes' references leave with the group.
	q.queue = append([]W(nil), q.queue[n:]...)
	return group
}

// Done ends the waits of group's callers (whose writes' outcomes the leader
// has set) and hands the lead to the first write queued meanwhile, if any.
func (q *Queue[W]) Done(group []W) {
	q.mu.Lock()
	var next W
	more := len(q.queue) > 0
	if more {
		next = q.queue[0]
	} else {
		q.leading = false
	}
	q.mu.Unlock()
	for _, w := range group {
		w.turn().done <- false
	}
	if more {
		next.turn().done <- true
	}
}
