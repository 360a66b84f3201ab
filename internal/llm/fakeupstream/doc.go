// Package fakeupstream holds fake model provider upstreams: HTTP handlers
// that speak the real streaming wire formats of the OpenAI Chat Completions
// API (chat.completion.chunk events ending in data: [DONE]), of the
// Anthropic Messages API (message_start … message_stop) and of the OpenAI
// embeddings endpoint, so that the adapters are tested through the real SDKs,
// byte for byte as in production, and a load benchmark has an upstream whose
// pace it sets.
//
// Both chat fakes play the same script, a Reply: reasoning, text and
// tool-call deltas, usage and a finish reason, or a failure (an error
// status, a connection cut mid-stream, a malformed event, a hang, a stream
// without its end marker, an error event). Each request is recorded (headers
// and decoded body) so that tests can assert on what the adapter sent, and
// each records whether the client went away before the answer was finished.
//
// The package is not a test helper: it needs no testing.T and does not import
// package testing, because `agentchat bench` serves it from the binary.
// llmtest wraps it for tests (a server closed with the test, the adapter
// contract suite).
//
// Invariants: a Handler is safe for concurrent requests; requests are
// numbered and answered from Options.Replies in arrival order. Close releases
// every request still waiting (hanging, stalled or paced); call it before
// closing a server that waits for its handlers, as httptest's does.
package fakeupstream
