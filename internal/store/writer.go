package store

import "time"

// SerialWriter is a store whose writes pass one at a time through one
// connection (SQLite has a single writer). Everything that writes waits for
// that connection, so it is what a busy node saturates first: its busy
// fraction (Busy over wall time) says how near, and a part's throughput over
// its share of the busy time is the most the connection could carry.
type SerialWriter interface {
	// WriterStats is what the connection has done since the store opened.
	WriterStats() WriterStats
}

// WriterStats counts a serial writer's work since the store opened. The
// counts only grow.
type WriterStats struct {
	// Parts are the kinds of work the connection does, in a fixed order.
	Parts []WriterPart
	// Waited is how long callers waited for the connection while another
	// held it, over Waits waits.
	Waited time.Duration
	Waits  int64
}

// WriterPart is one kind of the writer's work.
type WriterPart struct {
	// Name says what it is: "events" (the event log's batches), "runs"
	// (the runs' group-committed starts, messages and ends), "other" (every
	// other transaction), "reads" (reads served by the write connection,
	// which must see the latest commit: a thread's last seq) or
	// "checkpoint" (a WAL checkpoint run in the writer's turn, SQLite's).
	Name string
	// Busy is how long the connection was held for it: from a transaction's
	// begin to its commit, or a read's start (its wait for the connection
	// included) to its end.
	Busy time.Duration
	// Transactions is how many transactions (or reads) it held the
	// connection for, and Writes how many writes they carried: events
	// (not rows) for the event log, grouped calls for the runs, one per
	// transaction else.
	Transactions int64
	Writes       int64
}
