// Package llmtest provides fake model providers for tests: the upstreams of
// package fakeupstream served on a local port and closed when the test ends,
// and RunAdapter, the contract suite every HTTP provider adapter passes,
// with IgnoresEnvironment (its one case that cannot run in parallel) and
// BenchmarkAdapter, the stream benchmark every adapter runs.
//
// The script types (Reply, Options, Request, …) are fakeupstream's, named
// here too so that a test needs one import.
//
// Invariants:
//   - Only tests import llmtest (it imports testing); code that serves a
//     fake upstream outside a test, such as `agentchat bench`, uses
//     fakeupstream.
//   - Each server belongs to the test that started it: the test's cleanup
//     releases the requests still waiting and then closes the server, so
//     nothing outlives the test. Servers share no state and are safe for
//     parallel tests and concurrent requests.
//   - RunAdapter is the adapters' one contract: a behaviour change lands in
//     the suite, not in one adapter's tests, and both adapters run the same
//     cases. It fails whenever TestKey appears in an error text. An
//     adapter's own tests keep only what is its provider's alone (the
//     request body it sends, a compatible server's quirks).
package llmtest
