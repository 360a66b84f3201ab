// Package local is the in-process agent loop: model → tool calls (run
// concurrently) → results back to the model → … until a final answer, with a
// person's approval before any tool that writes or sends.
//
// Every model call is one iteration. Everything the model saw is stored as
// messages (the assistant's tool calls in metadata, each result as a role=tool
// message), so the context rebuilt from the store after a restart is the
// history the model saw, and a paused run resumes from the store alone.
//
// Invariants: one runner per execution; tool calls of one model turn run
// concurrently and emit through the host, which is safe for concurrent use;
// a call needing a person stores its confirmation and pauses the run with
// its state, and no goroutine waits for the decision.
package local
