// Package run is the run service: it starts runs, executes them through an
// engine independently of any connection, records every event in the
// per-thread log and publishes it on the bus, and lets any client attach,
// replay, cancel and decide confirmations.
//
// Invariants:
//   - A run is never owned by an HTTP request: closing a stream does not stop it.
//   - Events of a thread get consecutive seqs from the one execution holding
//     the thread's active run; they are enqueued to the log before they are
//     published, and a run's last event is written before it is published,
//     so a finished run's timeline is complete when clients see its end.
//   - A run waiting for a person has no goroutine: its state is stored, and a
//     decision on any replica continues it.
//   - An executor publishes only seqs its run has reserved in the store, so a
//     replica ending the run after its executor died continues after them
//     and an id a client saw never names another event.
//
// What a run does is decided here for every surface: start (with a client's
// tool answers resolved against the thread's open calls), continue after
// decisions (Continue, WaitOf), the message tree: regenerate, edit, fork and branches (replace.go, tree.go),
// cancel, and where a client loading a thread should follow it from
// (History, Snapshot, RunUpTo). The HTTP handlers and the wire formats call
// these; none of them needs the store for run semantics.
package run
