// Package llm is the seam between the agent loop and language-model providers.
//
// A Model streams one completion as a sequence of Chunks. Adapters (openai,
// anthropic, scripted) live in their own packages and are the only importers of
// a provider SDK. Every adapter:
//   - streams text, reasoning and tool-call deltas as they arrive, in order;
//   - reports usage when the provider sends it;
//   - maps provider failures to *Error with a stable Code;
//   - stops the upstream request when ctx is cancelled or Stream.Close is called.
//
// Invariants:
//   - Concurrency: a Model (and an Embedder) is shared by every run and safe
//     for concurrent use; a Stream and an Accumulator are used by one goroutine.
//   - Ownership: the caller of Model.Stream owns the Stream and closes it,
//     whether Next returned false or the caller stopped early; Close may be
//     called more than once.
//   - Order: chunks arrive in the provider's order; a tool call's deltas share
//     its Index, the first carrying its ID and Name. A stream that stops
//     before the provider's end marker ends with an error wrapping
//     ErrStreamCut, never as a clean end.
//   - Retries (WithRetry) happen only before the first chunk, so nothing is
//     streamed twice.
//   - Security: an Error's Message is safe to show a user and no error text
//     holds the API key; the cause (Err) is for logs.
package llm
