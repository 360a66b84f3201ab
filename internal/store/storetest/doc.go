// Package storetest is the contract every store.Store backend must pass.
// A behaviour change lands here, not in one backend's tests.
//
// Run holds the core contract and RunKnowledge that of store.Knowledge; the
// files split it by concern (the event log's delta ranges, replica terms,
// text, knowledge). BenchAppendEvents and CountRows serve the backends' own
// benchmarks and tests.
//
// Invariants:
//   - Each case runs in parallel on its own store from newStore, which must
//     return an empty store sharing nothing with any other (its own file,
//     schema or database) and close it in t.Cleanup: the suite never closes
//     a store.
//   - The cases use only the store.Store interface, so a backend passes by
//     behaviour, never by its internals; tenant scoping (another tenant's
//     object is not found) is part of the contract.
//   - Only tests import storetest (it imports testing).
package storetest
