// Package tool holds the tools an agent may call: the registry, argument
// validation against each tool's JSON Schema, the confirmation policy, and the
// built-in tools. MCP servers' tools join the registry through package mcptool.
//
// Invariants:
//   - Concurrency: a Tool is safe for concurrent calls; the Registry and a
//     Validator are safe for concurrent use.
//   - Every call goes through Registry.Call, which returns a Result, never an
//     error or a panic: arguments are validated first, the call is bounded by
//     its timeout (a tool that ignores its context is abandoned, its late
//     result discarded), and output is capped.
//   - Confirmation is the run service's: Registry.Call never asks, so the
//     caller checks Get(name).Confirm and obtains approval before calling.
//   - Security: schemas may not load external $refs; a panic's value and
//     stack go to the log, never to the model.
package tool
