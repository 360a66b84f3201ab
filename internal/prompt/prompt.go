// Package prompt assembles the system prompt from component files (seed 002
// Prompt 组件化装配).
//
// The components, in this fixed order, are the files identity.md,
// instructions.md, tools.md, user_profile.md and tenant_policy.md of the
// prompt directory. A tenant's file tenants/<tenant>/<name>.md replaces the
// component of the same name for that tenant. Each component is wrapped as
// <component name="…">…</component>.
//
// Limits: a component keeps at most ComponentLimit characters and the whole
// prompt at most TotalLimit; what is cut is replaced by the visible marker
// "…[truncated N chars]", and nothing fails. Content is sanitised: control
// characters other than newline and tab are stripped, and component tags
// inside a file are removed, so no file can close its component and pose as
// another.
//
// An agent's instructions (its own part of the prompt) take the place of the
// instructions component: the other components still wrap them in the
// fixed order, so identity comes first and tenant policy last whatever an
// agent says. They are sanitised and limited like a file.
//
// Edits take effect on the next turn without a restart: each turn stats the
// component files (a handful of stat calls) and re-reads only a file whose
// modification time or size changed. A missing or unreadable component is
// logged once (until it is back) and skipped.
package prompt

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// Components are the component names in assembly order.
var Components = []string{"identity", "instructions", "tools", "user_profile", "tenant_policy"}

// Limits, in characters.
const (
	ComponentLimit = 4000
	TotalLimit     = 12000
)

// Assembler builds system prompts from a directory. Safe for concurrent use.
type Assembler struct {
	dir string
	log *slog.Logger

	mu     sync.Mutex
	files  map[string]file
	warned map[string]bool
}

type file struct {
	mod  time.Time
	size int64
	text string // sanitised
}

// New returns an assembler over dir.
func New(dir string, log *slog.Logger) *Assembler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Assembler{dir: dir, log: log, files: map[string]file{}, warned: map[string]bool{}}
}

// validTenant keeps tenant names that are safe as one path element.
var validTenant = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

// SystemPrompt assembles the prompt for a tenant from the current files,
// with an agent's instructions, when not blank, in place of the
// instructions component.
func (a *Assembler) SystemPrompt(tenant, instructions string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var parts []string
	for _, name := range Components {
		text, ok := "", false
		if name == InstructionsComponent && strings.TrimSpace(instructions) != "" {
			text, ok = Sanitise(instructions), true
		} else if validTenant.MatchString(tenant) {
			text, ok = a.read(filepath.Join(a.dir, "tenants", tenant, name+".md"), false)
		}
		if !ok {
			text, ok = a.read(filepath.Join(a.dir, name+".md"), true)
		}
		if !ok || strings.TrimSpace(text) == "" {
			continue
		}
		parts = append(parts, fmt.Sprintf("<component name=%q>\n%s\n</component>", name, Truncate(strings.TrimSpace(text), ComponentLimit)))
	}
	return Truncate(strings.Join(parts, "\n\n"), TotalLimit)
}

// InstructionsComponent is the component an agent's instructions fill.
const InstructionsComponent = "instructions"

// WithInstructions is the system prompt of a server without component
// files: its configured prompt, then the agent's instructions (when not
// blank) as the instructions component, sanitised and limited as a file
// would be.
func WithInstructions(system, instructions string) string {
	instructions = strings.TrimSpace(Sanitise(instructions))
	if instructions == "" {
		return system
	}
	c := fmt.Sprintf("<component name=%q>\n%s\n</component>", InstructionsComponent, Truncate(instructions, ComponentLimit))
	if system == "" {
		return c
	}
	return system + "\n\n" + c
}

// read returns a file's sanitised text, re-reading it only when it changed.
// A missing base component is logged once; a missing override is normal.
func (a *Assembler) read(path string, logMissing bool) (string, bool) {
	fi, err := os.Stat(path)
	if err != nil || fi.IsDir() {
		delete(a.files, path)
		if logMissing && !a.warned[path] {
			a.warned[path] = true
			a.log.Warn("prompt component missing or unreadable; skipped", "path", path)
		}
		return "", false
	}
	if f, ok := a.files[path]; ok && f.mod.Equal(fi.ModTime()) && f.size == fi.Size() {
		return f.text, true
	}
	b, err := os.ReadFile(path)
	if err != nil {
		if !a.warned[path] {
			a.warned[path] = true
			a.log.Warn("prompt component unreadable; skipped", "path", path, "err", err)
		}
		return "", false
	}
	delete(a.warned, path)
	f := file{mod: fi.ModTime(), size: fi.Size(), text: Sanitise(string(b))}
	a.files[path] = f
	return f.text, true
}

// tagRe finds component tags, which only the assembler may write.
var tagRe = regexp.MustCompile(`(?i)<\s*/?\s*component\b[^>]*>`)

// Sanitise strips control characters (but newlines and tabs), invalid
// UTF-8, and component tags.
func Sanitise(s string) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
	for {
		t := tagRe.ReplaceAllString(s, "")
		if t == s {
			return s
		}
		s = t // removing one tag may join the halves of another
	}
}

// Truncate cuts s to limit characters, marking what was cut.
func Truncate(s string, limit int) string {
	n := utf8.RuneCountInString(s)
	if n <= limit {
		return s
	}
	return string([]rune(s)[:limit]) + fmt.Sprintf("…[truncated %d chars]", n-limit)
}
