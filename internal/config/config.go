// Package config is agentchat's one typed configuration: flags and AGENTCHAT_*
// environment variables (plus the provider variables other tools already use,
// such as OPENAI_API_KEY), with defaults and validation. A flag beats its
// variable; a variable beats the default. Secrets may also be read from a file
// named by the variable with a _FILE suffix.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is everything `agentchat serve` can be told.
type Config struct {
	// Addr is the listen address. Default 127.0.0.1:8080.
	Addr string
	// DataDir holds the SQLite file and other local state. Default ./data.
	DataDir string
	// Store is the store URL: empty or sqlite:<path> for the embedded SQLite
	// file (default <DataDir>/agentchat.db), postgres://… for PostgreSQL.
	Store string
	// Bus is the bus URL: empty or "memory" for in-process, redis://… for Redis Streams.
	Bus string
	// BusPrefix starts every Redis key and channel of the bus; the replicas of
	// one deployment share it, and deployments sharing a Redis differ in it.
	// Default agentchat.
	BusPrefix string
	// LeaseTTL is how long a replica's heartbeat may go unrenewed (crashed,
	// cut off from the database) before other replicas end its runs. Unused
	// on the embedded SQLite store, which one process owns. Default 15s.
	LeaseTTL time.Duration

	// Tokens are static bearer tokens, "token:tenant:user" comma-separated.
	Tokens string
	// JWTSecret verifies HS256 JWTs carrying sub, tenant and exp.
	JWTSecret string
	// TenantHeader names the header that may name the tenant. Default X-Tenant-ID.
	TenantHeader string
	// CORSOrigins lists the browser origins (scheme://host[:port], exact,
	// comma-separated) whose pages may call the API, or "*" for any page
	// (then never with credentials). Empty (the default) allows none: only
	// same-origin pages such as the console. See CORSOriginList.
	CORSOrigins string

	// MaxBodyBytes bounds request bodies. Default 1 MiB.
	MaxBodyBytes int64
	// MaxInputChars bounds one user input. Default 32000.
	MaxInputChars int
	// PingInterval is the keep-alive period of every stream. Default 15s.
	PingInterval time.Duration
	// ShutdownTimeout bounds a graceful shutdown. Default 20s.
	ShutdownTimeout time.Duration
	// RunRetention is how long finished runs and their timelines are kept. Default 720h (30 days).
	RunRetention time.Duration
	// MaxRunsPerTenant bounds one tenant's executing runs, counted across all
	// replicas. Default 0: no bound.
	MaxRunsPerTenant int

	// LLM picks the model provider: scripted, openai or anthropic. Default:
	// openai when OPENAI_API_KEY or OPENAI_BASE_URL is set, anthropic when
	// ANTHROPIC_API_KEY is set, else scripted (offline).
	LLM string
	// Model is the provider's model name. Defaults per provider.
	Model string
	// OpenAIBaseURL is the OpenAI-compatible API root (OPENAI_BASE_URL).
	OpenAIBaseURL string
	// OpenAIAPIKey authenticates to it (OPENAI_API_KEY).
	OpenAIAPIKey string
	// AnthropicAPIKey authenticates to Anthropic (ANTHROPIC_API_KEY).
	AnthropicAPIKey string
	// AnthropicBaseURL overrides the Anthropic API root (ANTHROPIC_BASE_URL).
	AnthropicBaseURL string
	// LLMTimeout bounds the wait for a provider to start answering. Default 60s.
	LLMTimeout time.Duration
	// LLMRetries is how often a 429 or 5xx before the first token is retried. Default 2.
	LLMRetries int
	// ScriptedTokenDelay paces the offline model's tokens. Default 15ms.
	ScriptedTokenDelay time.Duration
	// SystemPrompt is sent first to the model.
	SystemPrompt string

	// MaxIterations bounds model calls per run. Default 8.
	MaxIterations int
	// ConfirmTTL is how long a confirmation waits for a person. Default 15m.
	ConfirmTTL time.Duration
	// ToolTimeout bounds one tool call. Default 30s.
	ToolTimeout time.Duration
	// ToolConfirm overrides confirmation per tool: "name=always,other=never".
	ToolConfirm string
	// HTTPGetAllow lists hosts or CIDRs http_get may reach despite the SSRF guard.
	HTTPGetAllow string
	// FeishuWebhookURL is the Feishu custom-bot webhook of send_feishu_message.
	FeishuWebhookURL string
	// FeishuSecret signs Feishu webhook calls when set.
	FeishuSecret string
	// WebhookURL is the target of send_webhook.
	WebhookURL string
	// MCPConfig is a JSON file listing MCP servers ({"mcpServers":{…}}).
	MCPConfig string

	// HistoryTimeZone is the IANA time zone whose midnights cut
	// GET /api/v1/agent/history into days. Default UTC.
	HistoryTimeZone string

	// Engine is the default engine: local, openclaw or chain. Default local.
	Engine string
	// ChainHardLimit caps a chain's max_steps (CHAIN_HARD_LIMIT); a request
	// asking for more is refused with one final frame. Default 20.
	ChainHardLimit int
	// EngineFallback is the engine that takes a new run whose OpenClaw
	// gateway fails before its first token: local, or empty for none.
	EngineFallback string
	// EngineConfig is a JSON file of per-tenant gateways and routing rules (see Engines).
	EngineConfig string
	// OpenClawGatewayURL is the default OpenClaw Gateway's root (OPENCLAW_GATEWAY_URL).
	OpenClawGatewayURL string
	// OpenClawGatewayToken is its bearer token (OPENCLAW_GATEWAY_TOKEN).
	OpenClawGatewayToken string
	// OpenClawAgentID is the OpenClaw agent that answers (OPENCLAW_AGENT_ID). Default main.
	OpenClawAgentID string

	// Retrieval is on or off: whether turns search the tenant's knowledge base. Default on.
	Retrieval string
	// Memory is on or off: whether turns also search the user's own earlier conversations. Default off.
	Memory string
	// RetrievalTopK is how many hits a turn gets at most, per source. Default 4.
	RetrievalTopK int
	// KnowledgeMaxBytes bounds one uploaded document's text. Default 524288 (512 KiB).
	KnowledgeMaxBytes int
	// EmbeddingsModel, when set, makes retrieval hybrid with that model of an
	// OpenAI-compatible /v1/embeddings endpoint.
	EmbeddingsModel string
	// EmbeddingsBaseURL is the embeddings API root. Default OpenAIBaseURL, else the official one.
	EmbeddingsBaseURL string
	// EmbeddingsAPIKey authenticates to it. Default OpenAIAPIKey.
	EmbeddingsAPIKey string
	// CompactMinMessages is the fewest messages since the last compaction
	// that a conversation needs to be compacted. Default 20.
	CompactMinMessages int
	// CompactKeepMessages is how many recent messages compaction keeps verbatim. Default 6.
	CompactKeepMessages int
	// AutoCompactTokens, when positive, compacts a conversation before a turn
	// whose context would exceed it (estimated at 4 characters a token). Default 0: off.
	AutoCompactTokens int
	// PromptDir holds the system prompt's component files; empty uses SystemPrompt.
	PromptDir string
	// InlinePayloadBytes is the largest tool output stored inline in its
	// message; larger ones are stored by reference. Default 16384; -1 keeps all inline.
	InlinePayloadBytes int

	// DebugAddr, when set, serves Go's pprof profiles there (keep it private).
	DebugAddr string

	// MetricsAddr, when set, serves GET /metrics (Prometheus) on a listener
	// of its own there. Default off.
	MetricsAddr string
	// MetricsToken, when set, also serves GET /metrics on the main listener
	// to requests bearing it (Authorization: Bearer <token>).
	MetricsToken string
	// MetricsTenantLabels adds a tenant label to the run and token series.
	// Default false: one series per tenant grows without bound.
	MetricsTenantLabels bool
	// DrainDelay is how long, at shutdown, /readyz answers 503 "draining"
	// before the listener stops accepting, so load balancers route away
	// first. Default 0s.
	DrainDelay time.Duration

	// LogLevel is debug, info, warn or error. Default info.
	LogLevel string
	// LogFormat is text or json. Default text.
	LogFormat string
}

type field struct {
	flag, env, usage string
	secret           bool
	binding
}

// binding parses a setting into its Config field.
type binding struct {
	set func(c *Config, v string) error
}

func str(p func(*Config) *string) binding {
	return binding{func(c *Config, v string) error { *p(c) = v; return nil }}
}

func dur(p func(*Config) *time.Duration) binding {
	return binding{func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("not a duration (like 15s or 2m): %q", v)
		}
		*p(c) = d
		return nil
	}}
}

func boolean(p func(*Config) *bool) binding {
	return binding{func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("not a boolean (true or false): %q", v)
		}
		*p(c) = b
		return nil
	}}
}

func integer[T int | int64](p func(*Config) *T) binding {
	return binding{func(c *Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer: %q", v)
		}
		*p(c) = T(n)
		return nil
	}}
}

// fields lists every setting once: its flag, variable, help and parser.
func fields() []field {
	f := []field{}
	add := func(flagName, env, usage string, secret bool, b binding) {
		f = append(f, field{flagName, env, usage, secret, b})
	}
	add("addr", "AGENTCHAT_ADDR", "listen address (default 127.0.0.1:8080)", false, str(func(c *Config) *string { return &c.Addr }))
	add("data-dir", "AGENTCHAT_DATA_DIR", "data directory for the SQLite file (default ./data)", false, str(func(c *Config) *string { return &c.DataDir }))
	add("store", "AGENTCHAT_STORE", "store: empty or sqlite:<path> for SQLite in the data directory, postgres://… for PostgreSQL", true, str(func(c *Config) *string { return &c.Store }))
	add("bus", "AGENTCHAT_BUS", "bus: empty or memory for in-process, redis://… for Redis Streams", true, str(func(c *Config) *string { return &c.Bus }))
	add("bus-prefix", "AGENTCHAT_BUS_PREFIX", "prefix of the Redis bus's keys, shared by the replicas of one deployment (default agentchat)", false, str(func(c *Config) *string { return &c.BusPrefix }))
	add("lease-ttl", "AGENTCHAT_LEASE_TTL", "how long a replica's heartbeat may go unrenewed before other replicas end its runs (default 15s; unused on SQLite)", false, dur(func(c *Config) *time.Duration { return &c.LeaseTTL }))
	add("tokens", "AGENTCHAT_TOKENS", "static bearer tokens, comma-separated token:tenant:user", true, str(func(c *Config) *string { return &c.Tokens }))
	add("jwt-secret", "AGENTCHAT_JWT_SECRET", "HS256 secret for JWTs carrying sub, tenant, exp", true, str(func(c *Config) *string { return &c.JWTSecret }))
	add("tenant-header", "TENANT_ID_HEADER", "header that may name the tenant (default X-Tenant-ID)", false, str(func(c *Config) *string { return &c.TenantHeader }))
	add("cors-origins", "AGENTCHAT_CORS_ORIGINS", "browser origins allowed to call the API, exact and comma-separated, e.g. http://localhost:3000, or * for any (default none)", false, str(func(c *Config) *string { return &c.CORSOrigins }))
	add("max-body-bytes", "AGENTCHAT_MAX_BODY_BYTES", "request body limit in bytes (default 1048576)", false, integer(func(c *Config) *int64 { return &c.MaxBodyBytes }))
	add("max-input-chars", "AGENTCHAT_MAX_INPUT_CHARS", "limit on one user input in characters (default 32000)", false, integer(func(c *Config) *int { return &c.MaxInputChars }))
	add("ping-interval", "AGENTCHAT_PING_INTERVAL", "keep-alive period of streams (default 15s)", false, dur(func(c *Config) *time.Duration { return &c.PingInterval }))
	add("shutdown-timeout", "AGENTCHAT_SHUTDOWN_TIMEOUT", "graceful shutdown limit (default 20s)", false, dur(func(c *Config) *time.Duration { return &c.ShutdownTimeout }))
	add("run-retention", "AGENTCHAT_RUN_RETENTION", "how long finished runs and timelines are kept (default 720h)", false, dur(func(c *Config) *time.Duration { return &c.RunRetention }))
	add("max-runs-per-tenant", "AGENTCHAT_MAX_RUNS_PER_TENANT", "executing runs per tenant, counted across all replicas; above it a start is 429 too_many_runs (default 0: no limit)", false, integer(func(c *Config) *int { return &c.MaxRunsPerTenant }))
	add("llm", "AGENTCHAT_LLM", "model provider: scripted, openai or anthropic (default: by configured key, else scripted)", false, str(func(c *Config) *string { return &c.LLM }))
	add("model", "AGENTCHAT_MODEL", "model name (default gpt-4o-mini for openai, claude-sonnet-4-5 for anthropic)", false, str(func(c *Config) *string { return &c.Model }))
	add("openai-base-url", "OPENAI_BASE_URL", "OpenAI-compatible API root, e.g. http://127.0.0.1:11434/v1", false, str(func(c *Config) *string { return &c.OpenAIBaseURL }))
	add("openai-api-key", "OPENAI_API_KEY", "API key of the OpenAI-compatible provider", true, str(func(c *Config) *string { return &c.OpenAIAPIKey }))
	add("anthropic-api-key", "ANTHROPIC_API_KEY", "Anthropic API key", true, str(func(c *Config) *string { return &c.AnthropicAPIKey }))
	add("anthropic-base-url", "ANTHROPIC_BASE_URL", "Anthropic API root (default the official one)", false, str(func(c *Config) *string { return &c.AnthropicBaseURL }))
	add("llm-timeout", "AGENTCHAT_LLM_TIMEOUT", "wait for a provider to start answering (default 60s)", false, dur(func(c *Config) *time.Duration { return &c.LLMTimeout }))
	add("llm-retries", "AGENTCHAT_LLM_RETRIES", "retries of a 429/5xx before the first token (default 2; -1 for none)", false, integer(func(c *Config) *int { return &c.LLMRetries }))
	add("scripted-token-delay", "AGENTCHAT_SCRIPTED_TOKEN_DELAY", "pace of the offline model's tokens (default 15ms)", false, dur(func(c *Config) *time.Duration { return &c.ScriptedTokenDelay }))
	add("system-prompt", "AGENTCHAT_SYSTEM_PROMPT", "system prompt sent first to the model", false, str(func(c *Config) *string { return &c.SystemPrompt }))
	add("max-iterations", "AGENTCHAT_MAX_ITERATIONS", "model calls per run (default 8)", false, integer(func(c *Config) *int { return &c.MaxIterations }))
	add("confirm-ttl", "AGENTCHAT_CONFIRM_TTL", "how long a tool confirmation waits for a person (default 15m)", false, dur(func(c *Config) *time.Duration { return &c.ConfirmTTL }))
	add("tool-timeout", "AGENTCHAT_TOOL_TIMEOUT", "limit on one tool call (default 30s)", false, dur(func(c *Config) *time.Duration { return &c.ToolTimeout }))
	add("tool-confirm", "AGENTCHAT_TOOL_CONFIRM", "confirmation overrides, e.g. http_get=always,send_webhook=never", false, str(func(c *Config) *string { return &c.ToolConfirm }))
	add("http-get-allow", "AGENTCHAT_HTTP_GET_ALLOW", "hosts or CIDRs http_get may reach despite the SSRF guard, comma-separated", false, str(func(c *Config) *string { return &c.HTTPGetAllow }))
	add("feishu-webhook-url", "AGENTCHAT_FEISHU_WEBHOOK_URL", "Feishu (Lark) custom-bot webhook for send_feishu_message", true, str(func(c *Config) *string { return &c.FeishuWebhookURL }))
	add("feishu-secret", "AGENTCHAT_FEISHU_SECRET", "Feishu webhook signing secret", true, str(func(c *Config) *string { return &c.FeishuSecret }))
	add("webhook-url", "AGENTCHAT_WEBHOOK_URL", "target of the send_webhook tool", true, str(func(c *Config) *string { return &c.WebhookURL }))
	add("mcp-config", "AGENTCHAT_MCP_CONFIG", "JSON file listing MCP servers ({\"mcpServers\":{…}})", false, str(func(c *Config) *string { return &c.MCPConfig }))
	add("history-time-zone", "AGENTCHAT_HISTORY_TIME_ZONE", "IANA time zone that cuts the AG-UI history into days, e.g. Asia/Shanghai (default UTC)", false, str(func(c *Config) *string { return &c.HistoryTimeZone }))
	add("engine", "AGENTCHAT_ENGINE", "default engine: local, openclaw or chain (default local)", false, str(func(c *Config) *string { return &c.Engine }))
	add("chain-hard-limit", "CHAIN_HARD_LIMIT", "most steps a chain may take; a larger max_steps runs nothing (default 20)", false, integer(func(c *Config) *int { return &c.ChainHardLimit }))
	add("engine-fallback", "AGENTCHAT_ENGINE_FALLBACK", "engine that takes a run whose OpenClaw gateway fails before its first token: local (default none)", false, str(func(c *Config) *string { return &c.EngineFallback }))
	add("engine-config", "AGENTCHAT_ENGINE_CONFIG", "JSON file of per-tenant OpenClaw gateways and engine rules", false, str(func(c *Config) *string { return &c.EngineConfig }))
	add("openclaw-gateway-url", "OPENCLAW_GATEWAY_URL", "OpenClaw Gateway root, e.g. http://127.0.0.1:18789 (its /v1/chat/completions is called)", false, str(func(c *Config) *string { return &c.OpenClawGatewayURL }))
	add("openclaw-gateway-token", "OPENCLAW_GATEWAY_TOKEN", "OpenClaw Gateway bearer token", true, str(func(c *Config) *string { return &c.OpenClawGatewayToken }))
	add("openclaw-agent-id", "OPENCLAW_AGENT_ID", "OpenClaw agent that answers (default main)", false, str(func(c *Config) *string { return &c.OpenClawAgentID }))
	add("retrieval", "AGENTCHAT_RETRIEVAL", "on or off: turns search the tenant's knowledge base (default on)", false, str(func(c *Config) *string { return &c.Retrieval }))
	add("memory", "AGENTCHAT_MEMORY", "on or off: turns also search the user's own earlier conversations (default off)", false, str(func(c *Config) *string { return &c.Memory }))
	add("retrieval-top-k", "AGENTCHAT_RETRIEVAL_TOP_K", "most retrieval hits per turn and source (default 4)", false, integer(func(c *Config) *int { return &c.RetrievalTopK }))
	add("knowledge-max-bytes", "AGENTCHAT_KNOWLEDGE_MAX_BYTES", "largest knowledge-base document in bytes; larger uploads get 413 (default 524288)", false, integer(func(c *Config) *int { return &c.KnowledgeMaxBytes }))
	add("embeddings-model", "AGENTCHAT_EMBEDDINGS_MODEL", "embedding model of an OpenAI-compatible /v1/embeddings endpoint; set, retrieval ranks hybrid (default none: text rank)", false, str(func(c *Config) *string { return &c.EmbeddingsModel }))
	add("embeddings-base-url", "AGENTCHAT_EMBEDDINGS_BASE_URL", "embeddings API root (default OPENAI_BASE_URL, else the official one)", false, str(func(c *Config) *string { return &c.EmbeddingsBaseURL }))
	add("embeddings-api-key", "AGENTCHAT_EMBEDDINGS_API_KEY", "embeddings API key (default OPENAI_API_KEY)", true, str(func(c *Config) *string { return &c.EmbeddingsAPIKey }))
	add("compact-min-messages", "AGENTCHAT_COMPACT_MIN_MESSAGES", "fewest messages since the last compaction for a conversation to be compacted (default 20)", false, integer(func(c *Config) *int { return &c.CompactMinMessages }))
	add("compact-keep-messages", "AGENTCHAT_COMPACT_KEEP_MESSAGES", "recent messages compaction keeps verbatim, from the start of their turn (default 6)", false, integer(func(c *Config) *int { return &c.CompactKeepMessages }))
	add("auto-compact-tokens", "AGENTCHAT_AUTO_COMPACT_TOKENS", "compact before a turn whose context would exceed this many tokens (default 0: off)", false, integer(func(c *Config) *int { return &c.AutoCompactTokens }))
	add("prompt-dir", "AGENTCHAT_PROMPT_DIR", "directory of system prompt component files (default none: AGENTCHAT_SYSTEM_PROMPT)", false, str(func(c *Config) *string { return &c.PromptDir }))
	add("inline-payload-bytes", "AGENTCHAT_INLINE_PAYLOAD_BYTES", "largest tool output kept inline in its message; larger ones are stored by reference (default 16384; -1 for never)", false, integer(func(c *Config) *int { return &c.InlinePayloadBytes }))
	add("debug-addr", "AGENTCHAT_DEBUG_ADDR", "address for pprof profiles, e.g. 127.0.0.1:6060 (default off; keep it private)", false, str(func(c *Config) *string { return &c.DebugAddr }))
	add("metrics-addr", "AGENTCHAT_METRICS_ADDR", "address of a separate listener for GET /metrics (Prometheus), e.g. 127.0.0.1:9090 (default off)", false, str(func(c *Config) *string { return &c.MetricsAddr }))
	add("metrics-token", "AGENTCHAT_METRICS_TOKEN", "bearer token that may read GET /metrics on the main listener (default: not served there)", true, str(func(c *Config) *string { return &c.MetricsToken }))
	add("metrics-tenant-labels", "AGENTCHAT_METRICS_TENANT_LABELS", "true adds a tenant label to run and token series (default false: unbounded cardinality)", false, boolean(func(c *Config) *bool { return &c.MetricsTenantLabels }))
	add("drain-delay", "AGENTCHAT_DRAIN_DELAY", "at shutdown, how long /readyz reports draining before the listener closes (default 0s)", false, dur(func(c *Config) *time.Duration { return &c.DrainDelay }))
	add("log-level", "AGENTCHAT_LOG_LEVEL", "debug, info, warn or error (default info)", false, str(func(c *Config) *string { return &c.LogLevel }))
	add("log-format", "AGENTCHAT_LOG_FORMAT", "text or json (default text)", false, str(func(c *Config) *string { return &c.LogFormat }))
	return f
}

// Load reads the environment (through getenv) and then the flags in args.
// Usage goes to out for -h.
func Load(name string, args []string, getenv func(string) string, out io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	all := fields()
	for _, f := range all {
		v := getenv(f.env)
		if v == "" && f.secret {
			if path := getenv(f.env + "_FILE"); path != "" {
				b, err := os.ReadFile(path)
				if err != nil {
					return c, fmt.Errorf("%s_FILE: %w", f.env, err)
				}
				v = strings.TrimSpace(string(b))
			}
		}
		if v != "" {
			if err := f.set(&c, v); err != nil {
				return c, fmt.Errorf("%s: %w", f.env, err)
			}
		}
		fs.Func(f.flag, f.usage+" ["+f.env+"]", func(v string) error { return f.set(&c, v) })
	}
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: agentchat %s [flags]\n\nEvery flag can also be set by the environment variable in brackets.\n\n", name)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.applyDefaults()
	return c, c.Validate()
}

func (c *Config) applyDefaults() {
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&c.Addr, "127.0.0.1:8080")
	def(&c.DataDir, "./data")
	def(&c.TenantHeader, "X-Tenant-ID")
	def(&c.LogLevel, "info")
	def(&c.LogFormat, "text")
	def(&c.BusPrefix, "agentchat")
	def(&c.HistoryTimeZone, "UTC")
	def(&c.Retrieval, "on")
	def(&c.Memory, "off")
	def(&c.EmbeddingsBaseURL, c.OpenAIBaseURL)
	def(&c.EmbeddingsAPIKey, c.OpenAIAPIKey)
	if c.RetrievalTopK == 0 {
		c.RetrievalTopK = 4
	}
	if c.KnowledgeMaxBytes == 0 {
		c.KnowledgeMaxBytes = 512 << 10
	}
	if c.CompactMinMessages == 0 {
		c.CompactMinMessages = 20
	}
	if c.CompactKeepMessages == 0 {
		c.CompactKeepMessages = 6
	}
	if c.InlinePayloadBytes == 0 {
		c.InlinePayloadBytes = 16 << 10
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = 15 * time.Second
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.MaxInputChars == 0 {
		c.MaxInputChars = 32000
	}
	if c.PingInterval == 0 {
		c.PingInterval = 15 * time.Second
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 20 * time.Second
	}
	if c.RunRetention == 0 {
		c.RunRetention = 720 * time.Hour
	}
	if c.ChainHardLimit == 0 {
		c.ChainHardLimit = 20
	}
	if c.LLM == "" {
		switch {
		case c.OpenAIAPIKey != "" || c.OpenAIBaseURL != "":
			c.LLM = "openai"
		case c.AnthropicAPIKey != "":
			c.LLM = "anthropic"
		default:
			c.LLM = "scripted"
		}
	}
	if c.LLMTimeout == 0 {
		c.LLMTimeout = 60 * time.Second
	}
	if c.LLMRetries == 0 {
		c.LLMRetries = 2
	}
	if c.MaxIterations == 0 {
		c.MaxIterations = 8
	}
	if c.ConfirmTTL == 0 {
		c.ConfirmTTL = 15 * time.Minute
	}
	if c.ToolTimeout == 0 {
		c.ToolTimeout = 30 * time.Second
	}
}

// Validate names the first bad setting.
func (c Config) Validate() error {
	var errs []error
	bad := func(name, format string, a ...any) { errs = append(errs, fmt.Errorf(name+": "+format, a...)) }
	if c.MaxBodyBytes < 1024 {
		bad("max-body-bytes", "must be at least 1024")
	}
	if c.PingInterval < 10*time.Millisecond {
		bad("ping-interval", "must be at least 10ms")
	}
	if c.MaxIterations < 1 {
		bad("max-iterations", "must be at least 1")
	}
	if c.ChainHardLimit < 1 {
		bad("chain-hard-limit", "must be at least 1")
	}
	for name, v := range map[string]string{"retrieval": c.Retrieval, "memory": c.Memory} {
		if v != "on" && v != "off" {
			bad(name, "must be on or off, not %q", v)
		}
	}
	if c.RetrievalTopK < 1 || c.RetrievalTopK > 50 {
		bad("retrieval-top-k", "must be from 1 to 50")
	}
	if c.KnowledgeMaxBytes < 1 {
		bad("knowledge-max-bytes", "must be positive")
	}
	if c.CompactMinMessages < 2 {
		bad("compact-min-messages", "must be at least 2")
	}
	if c.CompactKeepMessages < 1 {
		bad("compact-keep-messages", "must be at least 1")
	}
	if c.AutoCompactTokens < 0 {
		bad("auto-compact-tokens", "must not be negative")
	}
	if _, err := time.LoadLocation(c.HistoryTimeZone); err != nil {
		bad("history-time-zone", "not a known IANA time zone: %q", c.HistoryTimeZone)
	}
	switch c.LLM {
	case "scripted", "openai", "anthropic":
	default:
		bad("llm", "must be scripted, openai or anthropic, not %q", c.LLM)
	}
	if c.LLM == "anthropic" && c.AnthropicAPIKey == "" {
		bad("anthropic-api-key", "ANTHROPIC_API_KEY is required with --llm anthropic")
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		bad("log-format", "must be text or json")
	}
	if _, err := c.StoreKind(); err != nil {
		bad("store", "%v", err)
	}
	if c.Bus != "" && c.Bus != "memory" && !strings.HasPrefix(c.Bus, "redis://") && !strings.HasPrefix(c.Bus, "rediss://") {
		bad("bus", "must be memory or a redis:// URL")
	}
	if strings.ContainsAny(c.BusPrefix, " \t\r\n{}") {
		bad("bus-prefix", "must not contain spaces or braces")
	}
	if c.LeaseTTL < 500*time.Millisecond {
		bad("lease-ttl", "must be at least 500ms")
	}
	if c.MaxRunsPerTenant < 0 {
		bad("max-runs-per-tenant", "must not be negative")
	}
	if _, err := ParseTokens(c.Tokens); err != nil {
		bad("tokens", "%v", err)
	}
	if _, err := c.CORSOriginList(); err != nil {
		bad("cors-origins", "%v", err)
	}
	if c.MetricsToken != "" && len(c.MetricsToken) < 16 {
		bad("metrics-token", "must be at least 16 bytes")
	}
	if c.DrainDelay < 0 {
		bad("drain-delay", "must not be negative")
	}
	if c.JWTSecret != "" && len(c.JWTSecret) < 16 {
		bad("jwt-secret", "must be at least 16 bytes")
	}
	return errors.Join(errs...)
}

// StoreKind says which backend Store names: "sqlite" or "postgres".
func (c Config) StoreKind() (string, error) {
	switch {
	case c.Store == "" || strings.HasPrefix(c.Store, "sqlite:"):
		return "sqlite", nil
	case strings.HasPrefix(c.Store, "postgres://") || strings.HasPrefix(c.Store, "postgresql://"):
		if _, err := url.Parse(c.Store); err != nil {
			return "", errors.New("not a valid postgres URL")
		}
		return "postgres", nil
	}
	return "", errors.New("must be empty, sqlite:<path> or a postgres:// URL")
}

// HistoryLocation is the time zone of HistoryTimeZone (UTC if it cannot be loaded).
func (c Config) HistoryLocation() *time.Location {
	loc, err := time.LoadLocation(c.HistoryTimeZone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// SQLitePath is the SQLite file the store uses.
func (c Config) SQLitePath() string {
	if p, ok := strings.CutPrefix(c.Store, "sqlite:"); ok && p != "" {
		return p
	}
	return filepath.Join(c.DataDir, "agentchat.db")
}

// Token is one static bearer token.
type Token struct {
	Token, Tenant, User string
}

// ParseTokens reads "token:tenant:user" entries.
func ParseTokens(s string) ([]Token, error) {
	var out []Token
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		parts := strings.Split(item, ":")
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			return nil, fmt.Errorf("entry %d is not token:tenant:user", len(out)+1)
		}
		out = append(out, Token{parts[0], parts[1], parts[2]})
	}
	return out, nil
}

// Help lists every setting as Markdown table rows, for the README.
func Help() string {
	var b strings.Builder
	for _, f := range fields() {
		fmt.Fprintf(&b, "| `--%s` | `%s` | %s |\n", f.flag, f.env, f.usage)
	}
	return b.String()
}
