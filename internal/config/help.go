package config

import (
	"fmt"
	"io"
	"strings"
)

// Usage writes the settings of `agentchat <name>` by group, with each
// flag's type, variable, help and default: the text of `serve --help`.
func Usage(w io.Writer, name string) {
	fmt.Fprintf(w, "Usage: agentchat %s [flags]\n\n", name)
	fmt.Fprint(w, "Every flag can also be set by the environment variable after it; a flag wins\n"+
		"over its variable. A variable marked (or _FILE) may instead name a file\n"+
		"holding the secret, as AGENTCHAT_TOKENS_FILE=/run/secrets/tokens.\n")
	for _, g := range groups {
		fmt.Fprintf(w, "\n%s:\n", g)
		for _, o := range options {
			if o.group != g {
				continue
			}
			env := o.env
			if o.secret {
				env += " (or _FILE)"
			}
			fmt.Fprintf(w, "  --%s %s  [%s]\n", o.name, o.typ, env)
			line := o.help
			if o.def != "" {
				line += " (default " + o.def + ")"
			}
			fmt.Fprintf(w, "        %s\n", line)
		}
	}
}

// Markdown renders the settings table as the README shows it: one table
// per group, with flag, variable, type, default and meaning.
func Markdown() string {
	var b strings.Builder
	for i, g := range groups {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "**%s**\n\n| flag | variable | type | default | meaning |\n| --- | --- | --- | --- | --- |\n", g)
		for _, o := range options {
			if o.group != g {
				continue
			}
			env := "`" + o.env + "`"
			if o.secret {
				env += " (or `_FILE`)"
			}
			def := ""
			if o.def != "" {
				def = "`" + o.def + "`"
				if strings.Contains(o.def, " ") {
					def = o.def // words, not a value to type
				}
			}
			fmt.Fprintf(&b, "| `--%s` | %s | %s | %s | %s |\n", o.name, env, mdEscape(o.typ), def, mdEscape(o.help))
		}
	}
	return b.String()
}

// mdEscape keeps a cell's text from ending the cell.
func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
