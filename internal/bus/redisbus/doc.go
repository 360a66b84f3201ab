// Package redisbus is the scale-out bus.Bus: Redis Streams for events and
// Redis Pub/Sub for control messages, through go-redis v9, so that a client
// attached to any replica follows a run executing on any other.
//
// # Keys
//
// With Options.Prefix p (default "agentchat"):
//
//	p:{<tenant>}:thread:<thread>   a stream per thread, one entry per event
//	p:control                      the Pub/Sub channel of bus.Control messages
//
// The tenant is a Redis Cluster hash tag, so a tenant's streams share a slot
// (this package itself talks to a single Redis node). The characters % : { }
// in a tenant are percent-escaped so that no two (tenant, thread) pairs share
// a key; the thread, last in the key, needs no escaping.
//
// A stream entry holds one event or several consecutive ones of its thread:
// its id is "<seq>-0", seq being its (last) event's, and its one field is
// "ev" (the event as event.Event.MarshalJSON encodes it) or "evs" (a JSON
// array of such events, in increasing seq). Entries written with a "seq"
// field besides, before it was dropped, read the same. Seq increases per
// thread across runs, so these ids increase as Redis requires, and the seq
// of a Last-Event-ID (dialect.ID.Replay) is directly a stream position on
// every replica: a position inside an entry reads the entry and drops its
// events at or before the position (and any event a republish stored
// twice). Publishing an entry whose seq is not above the stream's last id
// (a retry, or a re-publish after a takeover) is accepted as a no-op rather
// than an error, which also makes go-redis's network retries of XADD safe.
// Each entry is an XADD with MAXLEN ~ Options.MaxLen (in entries); a
// stream's EXPIRE Options.TTL is refreshed at most once a minute rather
// than with every event.
//
// Publishing is group-committed: one writer sends whatever publishes
// accumulated while its previous pipeline was in flight as one pipeline,
// under load at most one pipeline every sendEvery (2 ms; a publish that
// waits, or a full pipeline, goes at once), so a thousand streams
// publishing cost a pipeline of dozens of events per round trip, not one
// round trip and syscall pair per few events. A thread's publishes in one
// pipeline are one entry, one XADD. A
// Publish does not wait for its XADD: a run
// parked and woken per event was 5 % of a replica's CPU, and a
// wait per event is one round trip per event again when a run's tokens
// come in a burst. A failed XADD is the thread's next Publish's error. A
// run's end and a pause for a decision wait for their own XADD, and with it
// every earlier one of the thread: the thread's next events may come from
// another replica, and an earlier seq arriving after them would be refused.
// A queue past maxQueued makes each Publish wait for its own too, so that
// a slow Redis slows the runs rather than the queue growing; a pipeline not
// sent within sendTimeout fails, so that an outage is the runs' error
// (they pause publishing, and streams fill from the log) rather than a
// backlog.
//
// What a replica that dies publishes and Redis never gets reached at most
// its own subscriptions, whose clients reconnect elsewhere: the replica
// ending the run skips every seq the run reserved (run/recovery.go), so no
// seq a client saw is given to other content.
//
// # Subscriptions
//
// Events published by this process reach its own subscriptions directly, as
// on the in-process bus; the reader drops them again by seq.
//
// Subscriptions of one process are multiplexed: all subscriptions to a thread
// share one position in its stream, and readers, each holding one connection,
// follow up to 128 streams with a single blocking XREAD. A thousand
// subscriptions cost a thousand queues but only a handful of connections. A
// reader is woken with CLIENT UNBLOCK when a stream is added to it.
//
// A thread this process publishes to is left out of its reader's XREAD until
// its publishes pause for localQuiet or the run's end (or a pause for a
// decision) is published: every
// subscription here has those events already, and reading them back cost
// Redis an XREAD and the reader a wake-up per event. Events another replica
// publishes to such a thread (a run taken over from a replica still alive)
// reach subscriptions here at most localQuiet late.
//
// Subscribe(after) first delivers the events the stream retains with seq >
// after, at most half a queue of them (older ones come from the store), then
// every event published later, in seq order. On a Redis error a reader keeps
// its positions and retries with bounded backoff, so a reconnect loses nothing
// the stream still holds. If entries are gone (trimmed by MaxLen, expired, or
// Redis restarted empty), delivery simply continues with what is there: the
// bus is not the record, and the caller fills gaps from the store's log, as
// the bus package says.
//
// Control messages are Pub/Sub: delivered to every replica connected at the
// time, and lost for one that is reconnecting. They are a fast path; the state
// they announce (a cancelled run, a decided confirmation) is in the store.
//
// # Invariants
//
//   - Order: each subscription receives events in strictly increasing seq,
//     each at most once (whether it came from a local publish, the catch-up
//     read or the reader); it may see gaps, never a repeat or a step back.
//     The stream holds a thread's events in seq order because its publishes
//     do not overlap (the caller's duty) and the bus's one publisher
//     goroutine sends them in arrival order.
//   - Concurrency: a Bus is safe for concurrent use. Topics live in shards
//     by stream key (shardCount of them), each with its own readers; a
//     shard's mu guards its topics, their subscriptions and its readers'
//     topic sets and flags; no code holds two shards' locks at once. A
//     publishQueue's mu guards its requests and its closed flag; its
//     publisher goroutine alone touches its expireSeen; b.mu only orders
//     Close (which sets the atomic closed flag under it, then visits the
//     shards) against a control stream starting.
//     No Redis call is made with a shard's lock held. A shard's lock is
//     taken before a Queue's own lock, never after: a Push happens under it
//     and never blocks, and a Queue's Stop (whose onStop takes the shard's
//     lock) is never called under it.
//   - Ownership: the bus owns its connections: one shared client, one client
//     per reader (whose blocking XREAD holds its only connection), and one
//     Pub/Sub connection per Controls call. The consumer owns a Queue and
//     stops it (or lets its ctx end) to unsubscribe; the bus owns and closes
//     every Controls channel.
//   - Close ends every subscription with bus.ErrClosed, closes every Controls
//     channel, and returns once all the bus's goroutines (publisher,
//     readers, unblockers, control streams) have ended; publishes waiting
//     then get bus.ErrClosed (those in a pipeline already sent, once it
//     returns), and a publishing queue refuses publishes once its
//     publisher has ended.
//   - Security: the Redis URL may carry a password; no error quotes it.
//
// Files: publish.go (the batched publisher), subscribe.go and reader.go (the
// multiplexed reader), control.go (the control channel).
package redisbus
