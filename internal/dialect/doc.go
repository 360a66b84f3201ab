// Package dialect turns canonical events into the SSE frames of each wire
// format. The framing rules live here, once; each format is a child package
// with an Encoder.
//
// An Encoder is a translation with per-stream state (AG-UI, for example, must
// open a text message before its content). It knows no store and no HTTP: it
// appends whole frames to a byte slice, and the caller writes and flushes them.
// An Encoder is used by one stream, from one goroutine.
//
// Invariants: an Encoder or Exchange serves one response, from one
// goroutine, and appends whole frames only, so frames never interleave; it
// never reads a store or writes to a connection. Every frame that is a
// position in the stream carries its own id (ID, numbered by a Framer), so a
// client that resumes after any frame, by Last-Event-ID, misses nothing and
// gets nothing twice: one canonical event may become several frames, and the
// cut may fall between them (Encoder.Resume). Request decoders refuse
// rather than mend: a string that is not text is a 400 naming where it is.
// Each format documents what it drops, and a golden file proves it.
package dialect
