package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/agentchat/agentchat/internal/auth"
	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/tool"
)

// The list settings' entries. Each parser gets one trimmed, non-blank entry
// and its position, and returns an error that names the entry: by its text,
// or by its position for a secret list, whose text must not reach a log.

// Token is one static bearer token (AGENTCHAT_TOKENS).
type Token = auth.Token

// ParseTokens reads comma-separated "token:tenant:user" entries, each
// optionally with a fourth field naming the role ("admin" or "member";
// three fields mean member).
func ParseTokens(s string) ([]Token, error) {
	return parseList(s, parseToken, nil)
}

func parseToken(s string, n int) (Token, error) {
	parts := strings.Split(s, ":")
	if (len(parts) != 3 && len(parts) != 4) || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return Token{}, fmt.Errorf("entry %d is not token:tenant:user or token:tenant:user:role", n)
	}
	t := Token{Token: parts[0], Tenant: parts[1], User: parts[2]} // no role: a member
	if len(parts) == 4 {
		role, ok := chat.ParseRole(parts[3])
		if !ok || parts[3] == "" {
			// The role is not secret: naming it helps, and the token stays unsaid.
			return Token{}, fmt.Errorf("entry %d: role %q is not admin or member", n, parts[3])
		}
		t.Role = role
	}
	return t, nil
}

// parseOrigin reads one CORS origin and normalises it (lower-case scheme
// and host; a default port is not dropped: browsers send the port they
// used, and an origin is compared as the exact string the browser sends).
// "*" means any origin. An entry with a path, query, user or a scheme other
// than http and https is refused, because the browser's Origin header never
// carries one and a near-miss would silently allow nothing.
func parseOrigin(item string, _ int) (string, error) {
	if item == "*" {
		return item, nil
	}
	u, err := url.Parse(item)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an origin like https://app.example.com or http://localhost:3000", item)
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q is not an origin: give scheme://host[:port] only, with no path", item)
	}
	if u.Path == "/" {
		return "", fmt.Errorf("%q ends with a slash, which the browser's Origin header never has", item)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// checkOrigins refuses "*" beside other origins: it already allows them all,
// so the pair is a mistake whichever was meant.
func checkOrigins(origins []string) error {
	if len(origins) > 1 {
		for _, o := range origins {
			if o == "*" {
				return errors.New("* allows every origin and cannot be combined with others")
			}
		}
	}
	return nil
}

// ToolConfirm is one entry of AGENTCHAT_TOOL_CONFIRM: the operator's
// confirmation policy for a tool, which beats the tool's own.
type ToolConfirm struct {
	Tool    string
	Confirm tool.Confirm
}

func parseToolConfirm(s string, _ int) (ToolConfirm, error) {
	name, policy, ok := strings.Cut(s, "=")
	name, policy = strings.TrimSpace(name), strings.TrimSpace(policy)
	switch {
	case !ok:
		return ToolConfirm{}, fmt.Errorf("entry %q is not tool=always or tool=never", s)
	case !tool.ValidName(name):
		return ToolConfirm{}, fmt.Errorf("entry %q: %q is not a tool name (letters, digits, _ and -)", s, name)
	case policy != string(tool.ConfirmAlways) && policy != string(tool.ConfirmNever):
		return ToolConfirm{}, fmt.Errorf("entry %q: the policy must be always or never, not %q", s, policy)
	}
	return ToolConfirm{Tool: name, Confirm: tool.Confirm(policy)}, nil
}

func checkToolConfirm(entries []ToolConfirm) error {
	seen := map[string]bool{}
	for _, e := range entries {
		if seen[e.Tool] {
			return fmt.Errorf("tool %q is named twice", e.Tool)
		}
		seen[e.Tool] = true
	}
	return nil
}

// ToolOverrides is ToolConfirm as the tool registry takes it.
func (c Config) ToolOverrides() map[string]tool.Confirm {
	out := make(map[string]tool.Confirm, len(c.ToolConfirm))
	for _, e := range c.ToolConfirm {
		out[e.Tool] = e.Confirm
	}
	return out
}
