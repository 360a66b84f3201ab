package chat

import (
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// NewID returns a new sortable opaque id (UUIDv7): the milliseconds since
// the epoch, then 12 bits of sub-millisecond time, then random bits. Ids
// made by this process are strictly increasing, as uuid.NewV7 makes them;
// unlike it, without a lock. Every run's start makes several, and
// uuid.NewV7's one mutex was where a burst of a thousand starts queued in
// the mutex profile (up to 91 s of waiting in one load;
// docs/benchmarks.md, "seventh round").
func NewID() string {
	id := uuid.Must(uuid.NewRandom()) // version 4: the random bits and the variant
	t := v7Time()
	ms, seq := t>>12, t&0xfff
	id[0], id[1], id[2], id[3], id[4], id[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	id[6], id[7] = 0x70|byte(seq>>8)&0x0f, byte(seq)
	return id.String()
}

// lastV7 is the last id's time: milliseconds << 12 | sub-millisecond steps.
var lastV7 atomic.Int64

// v7Time is the next id's time, as uuid's getV7Time makes it (the
// millisecond and the nanoseconds within it / 256, one more than the last
// when the clock has not moved past it), claimed by compare-and-swap.
func v7Time() int64 {
	for {
		nano := time.Now().UnixNano()
		ms := nano / int64(time.Millisecond)
		now := ms<<12 | (nano-ms*int64(time.Millisecond))>>8
		last := lastV7.Load()
		if now <= last {
			now = last + 1
		}
		if lastV7.CompareAndSwap(last, now) {
			return now
		}
	}
}
