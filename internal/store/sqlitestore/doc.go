// Package sqlitestore is the embedded store.Store: one SQLite file in WAL mode,
// driven by the pure-Go modernc.org/sqlite driver (no cgo, one static binary).
//
// SQLite allows one writer at a time, so writes go through a single-connection
// pool with IMMEDIATE transactions (no lock upgrades, no SQLITE_BUSY mid-
// transaction), while reads use a separate pool that WAL lets run beside it.
//
// Invariants:
//   - A Store is safe for concurrent use by one process. One server owns the
//     file: the run service treats it as the sole replica (scale-out needs
//     pgstore). The Store relies on it: it counts each tenant's knowledge
//     documents in memory to skip searching an empty knowledge base, and no
//     other process adds one behind its back.
//   - Writes run on the one write connection, transactions as BEGIN
//     IMMEDIATE, so they are serialised and never fail half-way on a lock
//     upgrade; busy_timeout covers another process (migrate) holding the
//     file. The read pool is opened read-only (mode=ro).
//   - Foreign keys are on; driver errors become store sentinels in one
//     place, interpret.
//   - Semantics mirror pgstore exactly: both pass storetest unchanged.
//   - The Store owns both pools; Close closes both.
package sqlitestore
