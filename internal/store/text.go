package store

// Text a store holds: every string a caller gives a Store (ids, titles,
// contents, names, reasons, scope tenants and users, the strings inside
// JSON values) is text by chat.ValidText: valid UTF-8 without NUL
// (U+0000). Every other Unicode scalar value, supplementary planes,
// noncharacters and control characters included, is stored and returned
// unchanged by every backend (the storetest suite proves it). PostgreSQL
// cannot hold NUL in text or invalid UTF-8 at all, and SQLite would keep
// them byte for byte, so what lies outside this rule has no common
// meaning: the callers (the HTTP edge) refuse it before it reaches a
// store, and a backend's behaviour for it is not part of the contract.

// MaxKeyBytes bounds the strings a store indexes: ids, scope tenants and
// users, tool names and tool call ids. Longer ones are not part of the
// contract (PostgreSQL refuses index rows over 8 kB).
const MaxKeyBytes = 255
