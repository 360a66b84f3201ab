// Package config is agentchat's one typed configuration: flags and AGENTCHAT_*
// environment variables (plus the provider variables other tools already use,
// such as OPENAI_API_KEY), with defaults and validation. A flag beats its
// variable; a variable beats the default; a zero value means the default.
// Secrets may also be read from a file named by the variable with a _FILE
// suffix.
//
// Every setting is one row of the table in options.go: its flag, variable,
// group, help line, type, default and rules, next to its parser. The table
// is the only place a default is written (or, for a default that belongs to
// the package using the setting, the only place that package's Default…
// constant is named): Load applies it, Usage prints it under its group for
// `serve --help`, and Markdown renders the README's settings table, which a
// test keeps equal to it.
//
// To add a setting: add its field to Config and one row to options, then run
// `go test ./internal/config -run TestREADME -update` to rewrite the README's
// table. A list setting is parsed and checked entry by entry here (list and
// parseList), so a malformed entry stops `serve` with an error naming the
// setting and the entry, and consumers receive typed values.
//
// Invariants: Load reads the environment only through the getenv it is
// given, keeps no package state, and returns a Config whose every field has
// passed its row's rules and Validate's rules between settings.
package config
