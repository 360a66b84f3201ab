// Package store defines the persistence seam of agentchat: conversations,
// messages, runs, the per-thread event log and tool confirmations.
//
// Security invariant: every method that reads or changes a tenant's data takes
// a Scope, and a backend never returns or touches a row outside it. A row of
// another tenant or owner is indistinguishable from a missing one: ErrNotFound.
//
// Backends (sqlitestore, pgstore) map their driver errors to the sentinel
// errors below in one place and pass the storetest contract suite unchanged.
// All methods are safe for concurrent use.
package store
