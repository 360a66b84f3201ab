package event

import "sync"

// BatchLen is the length of a pooled batch's array: more than a live stream
// takes in one wake (one or two tokens), enough for a small burst.
const BatchLen = 32

// batches holds the arrays that carry events between a producer and a
// stream's writer. A thousand streams each keeping its own arrays between
// wakes held ~12 KiB apiece while they waited for the next token; from a
// pool, only the streams being written at that moment hold one.
var batches = sync.Pool{New: func() any { return new([BatchLen]Event) }}

// GetBatch returns an empty slice over a pooled array of BatchLen events.
// Give it back with PutBatch once its events are handed on.
func GetBatch() []Event {
	return batches.Get().(*[BatchLen]Event)[:0]
}

// PutBatch drops the references b holds and returns its array to the pool.
// b must be a slice from GetBatch as filled (its length covers every event
// written into it), or any slice that outgrew it (a burst), which is left to
// the collector. b must not be used after.
func PutBatch(b []Event) {
	if cap(b) != BatchLen {
		return
	}
	clear(b)
	batches.Put((*[BatchLen]Event)(b[:BatchLen]))
}
