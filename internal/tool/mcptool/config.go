package mcptool

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
)

// ServerConfig is one entry of "mcpServers", in the format Claude Desktop,
// Cursor and most MCP clients share: a command to run (stdio) or a URL to
// reach (streamable HTTP). Fields other clients add are ignored.
type ServerConfig struct {
	// Command starts a stdio server, e.g. "npx"; Args are its arguments.
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	// Env is added to the child's environment. The child does not inherit
	// this process's environment (which holds API keys and secrets), only
	// a few basics such as PATH and HOME; see inheritedEnv.
	Env map[string]string `json:"env,omitempty"`
	// Cwd is the child's working directory; empty means ours.
	Cwd string `json:"cwd,omitempty"`

	// URL reaches a streamable HTTP server; Headers are sent with every
	// request (typically Authorization).
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`

	// Type is "stdio", "http" (also "streamable-http", "streamableHttp") or
	// "sse" (the older HTTP+SSE transport). Empty infers stdio from Command
	// and http from URL.
	Type string `json:"type,omitempty"`
	// Disabled skips the server without removing it from the file.
	Disabled bool `json:"disabled,omitempty"`
}

// Transports, after inference.
const (
	transportStdio = "stdio"
	transportHTTP  = "http"
	transportSSE   = "sse"
)

// transport returns the transport the entry asks for, or an error naming
// the bad field.
func (c ServerConfig) transport() (string, error) {
	kind := c.Type
	switch kind {
	case "":
		switch {
		case c.Command != "" && c.URL != "":
			return "", errors.New(`both "command" and "url" are set; set one`)
		case c.Command != "":
			kind = transportStdio
		case c.URL != "":
			kind = transportHTTP
		default:
			return "", errors.New(`neither "command" nor "url" is set`)
		}
	case "stdio":
	case "http", "streamable-http", "streamableHttp", "streamable_http":
		kind = transportHTTP
	case "sse":
		kind = transportSSE
	default:
		return "", fmt.Errorf(`"type" is %q, want stdio, http or sse`, c.Type)
	}
	if kind == transportStdio {
		if c.Command == "" {
			return "", errors.New(`"command" is not set`)
		}
		return kind, nil
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New(`"url" is not an http(s) URL`)
	}
	return kind, nil
}

// configFile is the JSON file's shape.
type configFile struct {
	MCPServers map[string]ServerConfig `json:"mcpServers"`
}

// ParseConfig reads a config document: {"mcpServers": {"<name>": {...}}}.
// It fails only if the document itself is malformed; a bad server entry is
// reported by Connect as that server's failure, so one typo does not take
// every other server down.
func ParseConfig(data []byte) (map[string]ServerConfig, error) {
	var f configFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse MCP config: %w", err)
	}
	if f.MCPServers == nil {
		return nil, errors.New(`parse MCP config: no "mcpServers" object`)
	}
	return f.MCPServers, nil
}

// LoadConfig reads and parses the config file at path.
func LoadConfig(path string) (map[string]ServerConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read MCP config: %w", err)
	}
	return ParseConfig(data)
}
