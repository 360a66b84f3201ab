// Command agentchat is the agentchat server and its small client verbs:
// serve, migrate, bench and healthcheck. serve and migrate build their parts
// from one config.Config (flags and AGENTCHAT_* variables) and hand every
// part its dependencies, logger included.
//
// Invariants:
//
//   - Process-wide state is set here only: the default slog logger, the
//     signal context (SIGINT and SIGTERM end it) and the exit code.
//   - serve shuts down in order: /readyz fails first, then after DrainDelay the
//     API ends its streams, the HTTP server stops, and the run service stops
//     within ShutdownTimeout; the bus and the store close last (deferred in
//     reverse order of opening), so nothing writes to a closed store.
//   - One serve per data directory (and per SQLite file): serve holds an
//     exclusive lock (package lockfile) on <data-dir>/agentchat.lock from
//     before it opens anything until it returns, and a second serve refuses
//     to start, naming the holder's pid.
//   - The binary links no test helper: package testing must not appear in
//     `go list -deps ./cmd/agentchat`, which .ci/run checks.
//   - Security: with neither AGENTCHAT_TOKENS nor a JWT secret, serve uses a
//     development token kept in the data directory with mode 0600, and prints
//     it at start-up so the README's commands work.
package main
