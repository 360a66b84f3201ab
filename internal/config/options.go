package config

import (
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/url"
	"strings"
	"time"

	"github.com/agentchat/agentchat/internal/auth"
	"github.com/agentchat/agentchat/internal/bus/redisbus"
	"github.com/agentchat/agentchat/internal/compaction"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/engine/chain"
	"github.com/agentchat/agentchat/internal/engine/openclaw"
	"github.com/agentchat/agentchat/internal/file"
	"github.com/agentchat/agentchat/internal/httpapi"
	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/scripted"
	"github.com/agentchat/agentchat/internal/retrieval"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/tool"
	"github.com/agentchat/agentchat/internal/tool/builtin"
)

// Defaults that belong to no other package: the binary's own choices.
const (
	// DefaultAddr is where serve listens, and where healthcheck asks.
	DefaultAddr = "127.0.0.1:8080"
	// DefaultOpenAIModel is the model of --llm openai when --model names none.
	DefaultOpenAIModel = "gpt-4o-mini"
	// DefaultAnthropicModel is the model of --llm anthropic when --model names none.
	DefaultAnthropicModel = "claude-sonnet-4-5"
	// DefaultInlinePayloadBytes is the largest tool output kept inline.
	DefaultInlinePayloadBytes = 16 << 10
)

// Group gathers related settings under one heading of --help and the README.
type Group string

// The groups, in the order --help and the README show them.
const (
	GroupServer        Group = "Server"
	GroupAuth          Group = "Auth"
	GroupModel         Group = "Model"
	GroupEngines       Group = "Engines"
	GroupTools         Group = "Tools"
	GroupContext       Group = "Context"
	GroupStorage       Group = "Storage"
	GroupLimits        Group = "Limits"
	GroupObservability Group = "Observability"
)

var groups = []Group{GroupServer, GroupAuth, GroupModel, GroupEngines, GroupTools, GroupContext, GroupStorage, GroupLimits, GroupObservability}

// option is one row of the settings table.
type option struct {
	name   string // the flag, without dashes
	env    string // the environment variable
	group  Group
	secret bool   // also read from the file named by env+"_FILE"
	help   string // one line, lower case, no default (value.def says it)
	value
}

// options is the settings table: every setting of serve and migrate, once.
// Its default column (the second argument of each value) is what Load
// applies, what --help prints and what the README's table says; a
// setting whose default lives in the package that uses it names that
// package's Default… constant here. Add a setting by adding its Config
// field and one row; then `go test ./internal/config -run TestREADME -update`
// rewrites the README's table.
var options = []option{
	// Server
	{name: "addr", env: "AGENTCHAT_ADDR", group: GroupServer, help: "listen address",
		value: text(func(c *Config) *string { return &c.Addr }, DefaultAddr)},
	{name: "cors-origins", env: "AGENTCHAT_CORS_ORIGINS", group: GroupServer, help: "browser origins allowed to call the API, exact and comma-separated, e.g. http://localhost:3000, or * for any",
		value: list(func(c *Config) *[]string { return &c.CORSOrigins }, parseOrigin, checkOrigins).shows("none: same-origin pages only")},
	{name: "ping-interval", env: "AGENTCHAT_PING_INTERVAL", group: GroupServer, help: "keep-alive period of streams",
		value: duration(func(c *Config) *time.Duration { return &c.PingInterval }, httpapi.DefaultPingInterval, atLeast(10*time.Millisecond))},
	{name: "shutdown-timeout", env: "AGENTCHAT_SHUTDOWN_TIMEOUT", group: GroupServer, help: "graceful shutdown limit",
		value: duration(func(c *Config) *time.Duration { return &c.ShutdownTimeout }, 20*time.Second, atLeast(time.Duration(0)))},
	{name: "drain-delay", env: "AGENTCHAT_DRAIN_DELAY", group: GroupServer, help: "at shutdown, how long /readyz reports draining before the listener closes",
		value: duration(func(c *Config) *time.Duration { return &c.DrainDelay }, 0, atLeast(time.Duration(0))).shows("0s")},
	{name: "history-time-zone", env: "AGENTCHAT_HISTORY_TIME_ZONE", group: GroupServer, help: "IANA time zone that cuts the AG-UI history into days, e.g. Asia/Shanghai",
		value: text(func(c *Config) *string { return &c.HistoryTimeZone }, "UTC", checkTimeZone)},

	// Auth
	{name: "tokens", env: "AGENTCHAT_TOKENS", group: GroupAuth, secret: true, help: "static bearer tokens, comma-separated token:tenant:user, or token:tenant:user:admin for a tenant admin",
		value: list(func(c *Config) *[]Token { return &c.Tokens }, parseToken, nil).shows("none: a development token")},
	{name: "jwt-secret", env: "AGENTCHAT_JWT_SECRET", group: GroupAuth, secret: true, help: "HS256 secret (16 bytes or more) for JWTs carrying sub, tenant, exp and optionally role (admin or member)",
		value: text(func(c *Config) *string { return &c.JWTSecret }, "", minLength(16))},
	{name: "oidc-issuer", env: "AGENTCHAT_OIDC_ISSUER", group: GroupAuth, help: "OpenID provider whose tokens are trusted (RS256, ES256, EdDSA); its discovery document gives the key set, e.g. https://acme.eu.auth0.com/",
		value: text(func(c *Config) *string { return &c.OIDCIssuer }, "", httpURL).shows("none")},
	{name: "jwks-url", env: "AGENTCHAT_JWKS_URL", group: GroupAuth, help: "key set (JWKS) of a token issuer without discovery; needs --jwt-issuer",
		value: text(func(c *Config) *string { return &c.JWKSURL }, "", httpURL).shows("none")},
	{name: "jwt-issuer", env: "AGENTCHAT_JWT_ISSUER", group: GroupAuth, help: "the exact iss of the provider's tokens",
		value: text(func(c *Config) *string { return &c.JWTIssuer }, "").shows("the OIDC issuer")},
	{name: "jwt-audience", env: "AGENTCHAT_JWT_AUDIENCE", group: GroupAuth, help: "the aud every token of the provider must carry (required with an issuer)",
		value: text(func(c *Config) *string { return &c.JWTAudience }, "").shows("none")},
	{name: "jwt-user-claim", env: "AGENTCHAT_JWT_USER_CLAIM", group: GroupAuth, help: "claim naming the user",
		value: text(func(c *Config) *string { return &c.JWTUserClaim }, auth.DefaultUserClaim)},
	{name: "jwt-tenant-claim", env: "AGENTCHAT_JWT_TENANT_CLAIM", group: GroupAuth, help: "claim naming the tenant (a dotted path reads nested claims; a one-entry list works), e.g. org_id",
		value: text(func(c *Config) *string { return &c.JWTTenantClaim }, auth.DefaultTenantClaim)},
	{name: "jwt-tenant", env: "AGENTCHAT_JWT_TENANT", group: GroupAuth, help: "one fixed tenant for every token of the provider, instead of a claim",
		value: text(func(c *Config) *string { return &c.JWTTenant }, "").shows("none: from the claim")},
	{name: "jwt-role-claim", env: "AGENTCHAT_JWT_ROLE_CLAIM", group: GroupAuth, help: "claim naming the role, a string or a list such as roles or groups",
		value: text(func(c *Config) *string { return &c.JWTRoleClaim }, auth.DefaultRoleClaim)},
	{name: "jwt-admin-value", env: "AGENTCHAT_JWT_ADMIN_VALUE", group: GroupAuth, help: "the role claim's value (or list entry) that makes a tenant admin; anything else is a member",
		value: text(func(c *Config) *string { return &c.JWTAdminValue }, auth.DefaultAdminValue)},
	{name: "jwt-clock-skew", env: "AGENTCHAT_JWT_CLOCK_SKEW", group: GroupAuth, help: "leeway for the provider's exp, nbf and iat",
		value: duration(func(c *Config) *time.Duration { return &c.JWTClockSkew }, auth.DefaultClockSkew, between(time.Duration(0), 5*time.Minute))},
	{name: "oidc-client-id", env: "AGENTCHAT_OIDC_CLIENT_ID", group: GroupAuth, help: "public client (no secret) of the console's Sign in with the provider; its redirect URI is the console's URL",
		value: text(func(c *Config) *string { return &c.OIDCClientID }, "").shows("none: pasted tokens only")},
	{name: "oidc-name", env: "AGENTCHAT_OIDC_NAME", group: GroupAuth, help: "the provider's name on the console's sign-in button",
		value: text(func(c *Config) *string { return &c.OIDCName }, "").shows("the issuer's host")},
	{name: "oidc-scopes", env: "AGENTCHAT_OIDC_SCOPES", group: GroupAuth, help: "scopes the console asks for at sign-in",
		value: text(func(c *Config) *string { return &c.OIDCScopes }, "openid profile email")},
	{name: "jwt-issuers", env: "AGENTCHAT_JWT_ISSUERS", group: GroupAuth, help: "more trusted issuers, each with its own audience and claims: a JSON list, or the path of a file holding one (see docs/oidc.md)",
		value: text(func(c *Config) *string { return &c.JWTIssuers }, "").shows("none")},
	{name: "tenant-header", env: "TENANT_ID_HEADER", group: GroupAuth, help: "header that may name the tenant",
		value: text(func(c *Config) *string { return &c.TenantHeader }, httpapi.DefaultTenantHeader)},

	// Model
	{name: "llm", env: "AGENTCHAT_LLM", group: GroupModel, help: "model provider",
		value: choice(func(c *Config) *string { return &c.LLM }, "", LLMScripted, LLMOpenAI, LLMAnthropic).shows("openai with an OpenAI key or base URL, else anthropic with an Anthropic key, else scripted")},
	{name: "model", env: "AGENTCHAT_MODEL", group: GroupModel, help: "model name",
		value: text(func(c *Config) *string { return &c.Model }, "").shows(DefaultOpenAIModel + " for openai, " + DefaultAnthropicModel + " for anthropic")},
	{name: "openai-base-url", env: "OPENAI_BASE_URL", group: GroupModel, help: "OpenAI-compatible API root, e.g. http://127.0.0.1:11434/v1",
		value: text(func(c *Config) *string { return &c.OpenAIBaseURL }, "").shows("the official one")},
	{name: "openai-api-key", env: "OPENAI_API_KEY", group: GroupModel, secret: true, help: "API key of the OpenAI-compatible provider",
		value: text(func(c *Config) *string { return &c.OpenAIAPIKey }, "")},
	{name: "anthropic-api-key", env: "ANTHROPIC_API_KEY", group: GroupModel, secret: true, help: "Anthropic API key",
		value: text(func(c *Config) *string { return &c.AnthropicAPIKey }, "")},
	{name: "anthropic-base-url", env: "ANTHROPIC_BASE_URL", group: GroupModel, help: "Anthropic API root",
		value: text(func(c *Config) *string { return &c.AnthropicBaseURL }, "").shows("the official one")},
	{name: "models-file", env: "AGENTCHAT_MODELS_FILE", group: GroupModel, help: "JSON file naming the models agents may use ({\"models\":{…}}), reloaded when it changes; the settings above are the model named default",
		value: text(func(c *Config) *string { return &c.ModelsFile }, "").shows("none: the default model only")},
	{name: "llm-timeout", env: "AGENTCHAT_LLM_TIMEOUT", group: GroupModel, help: "wait for a provider to start answering",
		value: duration(func(c *Config) *time.Duration { return &c.LLMTimeout }, llm.DefaultTimeout)},
	{name: "llm-retries", env: "AGENTCHAT_LLM_RETRIES", group: GroupModel, help: "retries of a 429/5xx before the first token; -1 for none",
		value: number(func(c *Config) *int { return &c.LLMRetries }, llm.DefaultMaxRetries, atLeast(-1))},
	{name: "scripted-token-delay", env: "AGENTCHAT_SCRIPTED_TOKEN_DELAY", group: GroupModel, help: "pace of the offline model's tokens",
		value: duration(func(c *Config) *time.Duration { return &c.ScriptedTokenDelay }, scripted.DefaultTokenDelay)},
	{name: "system-prompt", env: "AGENTCHAT_SYSTEM_PROMPT", group: GroupModel, help: "system prompt sent first to the model",
		value: text(func(c *Config) *string { return &c.SystemPrompt }, "")},
	{name: "prompt-dir", env: "AGENTCHAT_PROMPT_DIR", group: GroupModel, help: "directory of system prompt component files",
		value: text(func(c *Config) *string { return &c.PromptDir }, "").shows("none: AGENTCHAT_SYSTEM_PROMPT")},

	// Engines
	{name: "engine", env: "AGENTCHAT_ENGINE", group: GroupEngines, help: "default engine",
		value: choice(func(c *Config) *string { return &c.Engine }, EngineLocal, EngineLocal, EngineOpenClaw, EngineChain)},
	{name: "engine-fallback", env: "AGENTCHAT_ENGINE_FALLBACK", group: GroupEngines, help: "engine that takes a run whose OpenClaw gateway fails before its first token",
		value: choice(func(c *Config) *string { return &c.EngineFallback }, "", EngineLocal).shows("none")},
	{name: "engine-config", env: "AGENTCHAT_ENGINE_CONFIG", group: GroupEngines, help: "JSON file of per-tenant OpenClaw gateways and engine rules",
		value: text(func(c *Config) *string { return &c.EngineConfig }, "")},
	{name: "openclaw-gateway-url", env: "OPENCLAW_GATEWAY_URL", group: GroupEngines, help: "OpenClaw Gateway root, e.g. http://127.0.0.1:18789 (its /v1/chat/completions is called)",
		value: text(func(c *Config) *string { return &c.OpenClawGatewayURL }, "")},
	{name: "openclaw-gateway-token", env: "OPENCLAW_GATEWAY_TOKEN", group: GroupEngines, secret: true, help: "OpenClaw Gateway bearer token",
		value: text(func(c *Config) *string { return &c.OpenClawGatewayToken }, "")},
	{name: "openclaw-agent-id", env: "OPENCLAW_AGENT_ID", group: GroupEngines, help: "OpenClaw agent that answers",
		value: text(func(c *Config) *string { return &c.OpenClawAgentID }, "").shows(openclaw.DefaultAgentID)},

	// Tools
	{name: "tool-confirm", env: "AGENTCHAT_TOOL_CONFIRM", group: GroupTools, help: "confirmation overrides, comma-separated tool=always or tool=never, e.g. http_get=always,send_webhook=never",
		value: list(func(c *Config) *[]ToolConfirm { return &c.ToolConfirm }, parseToolConfirm, checkToolConfirm).shows("none: each tool's own")},
	{name: "confirm-ttl", env: "AGENTCHAT_CONFIRM_TTL", group: GroupTools, help: "how long a tool confirmation waits for a person",
		value: duration(func(c *Config) *time.Duration { return &c.ConfirmTTL }, run.DefaultConfirmTTL, atLeast(time.Duration(0)))},
	{name: "tool-timeout", env: "AGENTCHAT_TOOL_TIMEOUT", group: GroupTools, help: "limit on one tool call",
		value: duration(func(c *Config) *time.Duration { return &c.ToolTimeout }, tool.DefaultTimeout, atLeast(time.Duration(0)))},
	{name: "http-get-allow", env: "AGENTCHAT_HTTP_GET_ALLOW", group: GroupTools, help: "hosts, IPs or CIDRs http_get may reach despite the SSRF guard, comma-separated",
		value: list(func(c *Config) *[]string { return &c.HTTPGetAllow }, parseAllow, nil).shows("none: public addresses only")},
	{name: "feishu-webhook-url", env: "AGENTCHAT_FEISHU_WEBHOOK_URL", group: GroupTools, secret: true, help: "Feishu (Lark) custom-bot webhook for send_feishu_message",
		value: text(func(c *Config) *string { return &c.FeishuWebhookURL }, "")},
	{name: "feishu-secret", env: "AGENTCHAT_FEISHU_SECRET", group: GroupTools, secret: true, help: "Feishu webhook signing secret",
		value: text(func(c *Config) *string { return &c.FeishuSecret }, "")},
	{name: "webhook-url", env: "AGENTCHAT_WEBHOOK_URL", group: GroupTools, secret: true, help: "target of the send_webhook tool",
		value: text(func(c *Config) *string { return &c.WebhookURL }, "")},
	{name: "mcp-config", env: "AGENTCHAT_MCP_CONFIG", group: GroupTools, help: "JSON file listing MCP servers ({\"mcpServers\":{…}})",
		value: text(func(c *Config) *string { return &c.MCPConfig }, "")},

	// Context
	{name: "retrieval", env: "AGENTCHAT_RETRIEVAL", group: GroupContext, help: "turns search the tenant's knowledge base",
		value: choice(func(c *Config) *string { return &c.Retrieval }, "on", "on", "off")},
	{name: "memory", env: "AGENTCHAT_MEMORY", group: GroupContext, help: "turns also search the user's own earlier conversations",
		value: choice(func(c *Config) *string { return &c.Memory }, "off", "on", "off")},
	{name: "retrieval-top-k", env: "AGENTCHAT_RETRIEVAL_TOP_K", group: GroupContext, help: "most retrieval hits per turn and source",
		value: number(func(c *Config) *int { return &c.RetrievalTopK }, retrieval.DefaultTopK, between(1, 50))},
	{name: "embeddings-model", env: "AGENTCHAT_EMBEDDINGS_MODEL", group: GroupContext, help: "embedding model of an OpenAI-compatible /v1/embeddings endpoint; set, retrieval ranks hybrid",
		value: text(func(c *Config) *string { return &c.EmbeddingsModel }, "").shows("none: text rank")},
	{name: "embeddings-base-url", env: "AGENTCHAT_EMBEDDINGS_BASE_URL", group: GroupContext, help: "embeddings API root",
		value: text(func(c *Config) *string { return &c.EmbeddingsBaseURL }, "").shows("OPENAI_BASE_URL, else the official one")},
	{name: "embeddings-api-key", env: "AGENTCHAT_EMBEDDINGS_API_KEY", group: GroupContext, secret: true, help: "embeddings API key",
		value: text(func(c *Config) *string { return &c.EmbeddingsAPIKey }, "").shows("OPENAI_API_KEY")},
	{name: "compact-min-messages", env: "AGENTCHAT_COMPACT_MIN_MESSAGES", group: GroupContext, help: "fewest messages since the last compaction for a conversation to be compacted",
		value: number(func(c *Config) *int { return &c.CompactMinMessages }, compaction.DefaultMinMessages, atLeast(2))},
	{name: "compact-keep-messages", env: "AGENTCHAT_COMPACT_KEEP_MESSAGES", group: GroupContext, help: "recent messages compaction keeps verbatim, from the start of their turn",
		value: number(func(c *Config) *int { return &c.CompactKeepMessages }, compaction.DefaultKeep, atLeast(1))},
	{name: "auto-compact-tokens", env: "AGENTCHAT_AUTO_COMPACT_TOKENS", group: GroupContext, help: "compact before a turn whose context would exceed this many tokens; 0 for never",
		value: number(func(c *Config) *int { return &c.AutoCompactTokens }, 0, atLeast(0)).shows("0")},
	{name: "inline-payload-bytes", env: "AGENTCHAT_INLINE_PAYLOAD_BYTES", group: GroupContext, help: "largest tool output kept inline in its message; larger ones are stored by reference; -1 for never",
		value: number(func(c *Config) *int { return &c.InlinePayloadBytes }, DefaultInlinePayloadBytes, atLeast(-1))},

	// Storage
	{name: "data-dir", env: "AGENTCHAT_DATA_DIR", group: GroupStorage, help: "data directory for the SQLite file and the development token; one serve at a time uses it (a lock file)",
		value: text(func(c *Config) *string { return &c.DataDir }, "./data")},
	{name: "store", env: "AGENTCHAT_STORE", group: GroupStorage, secret: true, help: "store: sqlite:<path> for SQLite, postgres://… for PostgreSQL",
		value: text(func(c *Config) *string { return &c.Store }, "", checkStore).shows("SQLite in the data directory")},
	{name: "bus", env: "AGENTCHAT_BUS", group: GroupStorage, secret: true, help: "bus: memory for in-process, redis://… for Redis Streams",
		value: text(func(c *Config) *string { return &c.Bus }, "", checkBus).shows("memory")},
	{name: "bus-prefix", env: "AGENTCHAT_BUS_PREFIX", group: GroupStorage, help: "prefix of the Redis bus's keys, shared by the replicas of one deployment",
		value: text(func(c *Config) *string { return &c.BusPrefix }, redisbus.DefaultPrefix, checkBusPrefix)},
	{name: "lease-ttl", env: "AGENTCHAT_LEASE_TTL", group: GroupStorage, help: "how long a replica's heartbeat may go unrenewed before other replicas end its runs (unused on SQLite)",
		value: duration(func(c *Config) *time.Duration { return &c.LeaseTTL }, run.DefaultLeaseTTL, atLeast(500*time.Millisecond))},
	{name: "run-retention", env: "AGENTCHAT_RUN_RETENTION", group: GroupStorage, help: "how long finished runs and timelines are kept",
		value: duration(func(c *Config) *time.Duration { return &c.RunRetention }, run.DefaultRunRetention, atLeast(time.Duration(0)))},
	{name: "file-storage", env: "AGENTCHAT_FILE_STORAGE", group: GroupStorage, help: "where uploaded files' bytes live: disk (the data directory's files/), s3 (an S3-compatible bucket, the s3-* settings) or postgres (the store's database, for replicas sharing PostgreSQL)",
		value: choice(func(c *Config) *string { return &c.FileStorage }, "", "disk", "s3", "postgres").shows("s3 when s3-bucket is set, else postgres with a PostgreSQL store, else disk")},
	{name: "s3-bucket", env: "AGENTCHAT_S3_BUCKET", group: GroupStorage, help: "bucket of the s3 file storage; it must exist",
		value: text(func(c *Config) *string { return &c.S3Bucket }, "").shows("none")},
	{name: "s3-endpoint", env: "AGENTCHAT_S3_ENDPOINT", group: GroupStorage, help: "URL of an S3-compatible store (MinIO, Cloudflare R2, Alibaba OSS, …)",
		value: text(func(c *Config) *string { return &c.S3Endpoint }, "", checkS3Endpoint).shows("AWS S3")},
	{name: "s3-region", env: "AGENTCHAT_S3_REGION", group: GroupStorage, help: "region of the bucket",
		value: text(func(c *Config) *string { return &c.S3Region }, "").shows("AWS_REGION, else us-east-1")},
	{name: "s3-prefix", env: "AGENTCHAT_S3_PREFIX", group: GroupStorage, help: "prefix of the objects' keys, so a bucket can hold other things (e.g. agentchat/files/)",
		value: text(func(c *Config) *string { return &c.S3Prefix }, "", checkS3Prefix).shows("none")},
	{name: "s3-path-style", env: "AGENTCHAT_S3_PATH_STYLE", group: GroupStorage, help: "address the bucket in the URL's path (endpoint/bucket/key), as MinIO and most self-hosted stores need, not as a subdomain",
		value: boolean(func(c *Config) *bool { return &c.S3PathStyle }, false).shows("false")},
	{name: "s3-access-key-id", env: "AGENTCHAT_S3_ACCESS_KEY_ID", group: GroupStorage, help: "access key of the s3 file storage",
		value: text(func(c *Config) *string { return &c.S3AccessKeyID }, "").shows("the AWS default chain (AWS_ACCESS_KEY_ID, ~/.aws, the instance role)")},
	{name: "s3-secret-access-key", env: "AGENTCHAT_S3_SECRET_ACCESS_KEY", group: GroupStorage, secret: true, help: "secret key of the s3 file storage",
		value: text(func(c *Config) *string { return &c.S3SecretAccessKey }, "").shows("the AWS default chain")},
	{name: "file-retention", env: "AGENTCHAT_FILE_RETENTION", group: GroupStorage, help: "how long an upload no message references is kept",
		value: duration(func(c *Config) *time.Duration { return &c.FileRetention }, file.DefaultRetention, atLeast(time.Minute))},

	// Limits
	{name: "max-body-bytes", env: "AGENTCHAT_MAX_BODY_BYTES", group: GroupLimits, help: "request body limit in bytes",
		value: number(func(c *Config) *int64 { return &c.MaxBodyBytes }, httpapi.DefaultMaxBodyBytes, atLeast[int64](1024))},
	{name: "max-input-chars", env: "AGENTCHAT_MAX_INPUT_CHARS", group: GroupLimits, help: "limit on one user input in characters",
		value: number(func(c *Config) *int { return &c.MaxInputChars }, run.DefaultMaxInputChars, atLeast(1))},
	{name: "max-runs-per-tenant", env: "AGENTCHAT_MAX_RUNS_PER_TENANT", group: GroupLimits, help: "executing runs per tenant, counted across all replicas; above it a start is 429 too_many_runs; 0 for no limit",
		value: number(func(c *Config) *int { return &c.MaxRunsPerTenant }, 0, atLeast(0)).shows("0")},
	{name: "runs-per-minute", env: "AGENTCHAT_RUNS_PER_MINUTE", group: GroupLimits, help: "runs a tenant may start per minute, across all replicas; above it a start is 429 rate_limited; 0 for no limit (the engine file's \"limits\" override it per tenant, user and agent)",
		value: number(func(c *Config) *int64 { return &c.RunsPerMinute }, 0, atLeast[int64](0)).shows("0")},
	{name: "tokens-per-day", env: "AGENTCHAT_TOKENS_PER_DAY", group: GroupLimits, help: "input plus output tokens a tenant may use per UTC day; then runs are 429 quota_exceeded and a running run stops between model calls; 0 for no limit",
		value: number(func(c *Config) *int64 { return &c.TokensPerDay }, 0, atLeast[int64](0)).shows("0")},
	{name: "tokens-per-month", env: "AGENTCHAT_TOKENS_PER_MONTH", group: GroupLimits, help: "input plus output tokens a tenant may use per UTC month; 0 for no limit",
		value: number(func(c *Config) *int64 { return &c.TokensPerMonth }, 0, atLeast[int64](0)).shows("0")},
	{name: "cost-per-month", env: "AGENTCHAT_COST_PER_MONTH", group: GroupLimits, help: "cost a tenant may incur per UTC month, in the models file's currency (its prices); 0 for no limit",
		value: decimal(func(c *Config) *float64 { return &c.CostPerMonth }, 0, atLeast(0.0)).shows("0")},
	{name: "max-executing-runs", env: "AGENTCHAT_MAX_EXECUTING_RUNS", group: GroupLimits, help: "runs this process executes at once; beyond it a new run is 503 overloaded; never more than the open-files limit allows",
		value: number(func(c *Config) *int { return &c.MaxExecutingRuns }, 0, atLeast(0)).shows("as many as the open-files limit allows")},
	{name: "max-iterations", env: "AGENTCHAT_MAX_ITERATIONS", group: GroupLimits, help: "model calls per run",
		value: number(func(c *Config) *int { return &c.MaxIterations }, engine.DefaultMaxIterations, atLeast(1))},
	{name: "chain-hard-limit", env: "CHAIN_HARD_LIMIT", group: GroupLimits, help: "most steps a chain may take; a larger max_steps runs nothing",
		value: number(func(c *Config) *int { return &c.ChainHardLimit }, chain.DefaultHardLimit, atLeast(1))},
	{name: "knowledge-max-bytes", env: "AGENTCHAT_KNOWLEDGE_MAX_BYTES", group: GroupLimits, help: "largest knowledge-base document in bytes; larger uploads get 413",
		value: number(func(c *Config) *int { return &c.KnowledgeMaxBytes }, retrieval.DefaultMaxDocBytes, atLeast(1))},
	{name: "file-max-bytes", env: "AGENTCHAT_FILE_MAX_BYTES", group: GroupLimits, help: "largest uploaded file in bytes; larger uploads get 413 before anything is stored",
		value: number(func(c *Config) *int64 { return &c.FileMaxBytes }, file.DefaultMaxBytes, atLeast[int64](1))},
	{name: "file-types", env: "AGENTCHAT_FILE_TYPES", group: GroupLimits, help: "media types an upload may have, comma-separated; the type is sniffed from the bytes, never taken from the client",
		value: list(func(c *Config) *[]string { return &c.FileTypes }, parseMediaType, nil).shows(strings.Join(file.DefaultTypes, ", "))},
	{name: "file-tenant-quota", env: "AGENTCHAT_FILE_TENANT_QUOTA", group: GroupLimits, help: "bytes of files one tenant may store; beyond it an upload gets 507; -1 for no limit",
		value: number(func(c *Config) *int64 { return &c.FileTenantQuota }, file.DefaultTenantQuota, atLeast[int64](-1))},

	// Observability
	{name: "log-level", env: "AGENTCHAT_LOG_LEVEL", group: GroupObservability, help: "least severe level logged: debug, info, warn or error",
		value: text(func(c *Config) *string { return &c.LogLevel }, "info", checkLogLevel)},
	{name: "log-format", env: "AGENTCHAT_LOG_FORMAT", group: GroupObservability, help: "log line format",
		value: choice(func(c *Config) *string { return &c.LogFormat }, "text", "text", "json")},
	{name: "debug-addr", env: "AGENTCHAT_DEBUG_ADDR", group: GroupObservability, help: "address for pprof profiles, e.g. 127.0.0.1:6060 (keep it private)",
		value: text(func(c *Config) *string { return &c.DebugAddr }, "").shows("off")},
	{name: "metrics-addr", env: "AGENTCHAT_METRICS_ADDR", group: GroupObservability, help: "address of a separate listener for GET /metrics (Prometheus), e.g. 127.0.0.1:9090",
		value: text(func(c *Config) *string { return &c.MetricsAddr }, "").shows("off")},
	{name: "metrics-token", env: "AGENTCHAT_METRICS_TOKEN", group: GroupObservability, secret: true, help: "bearer token (16 bytes or more) that may read GET /metrics on the main listener",
		value: text(func(c *Config) *string { return &c.MetricsToken }, "", minLength(16)).shows("none: not served there")},
	{name: "metrics-tenant-labels", env: "AGENTCHAT_METRICS_TENANT_LABELS", group: GroupObservability, help: "add a tenant label to run and token series (unbounded cardinality)",
		value: boolean(func(c *Config) *bool { return &c.MetricsTenantLabels }, false).shows("false")},
}

// derive fills the defaults that depend on other settings; Load calls it
// after the table's defaults are in.
func (c *Config) derive() {
	if c.LLM == "" {
		switch {
		case c.OpenAIAPIKey != "" || c.OpenAIBaseURL != "":
			c.LLM = LLMOpenAI
		case c.AnthropicAPIKey != "":
			c.LLM = LLMAnthropic
		default:
			c.LLM = LLMScripted
		}
	}
	if c.Model == "" {
		switch c.LLM {
		case LLMOpenAI:
			c.Model = DefaultOpenAIModel
		case LLMAnthropic:
			c.Model = DefaultAnthropicModel
		}
	}
	if c.EmbeddingsBaseURL == "" {
		c.EmbeddingsBaseURL = c.OpenAIBaseURL
	}
	if c.EmbeddingsAPIKey == "" {
		c.EmbeddingsAPIKey = c.OpenAIAPIKey
	}
}

// The model providers --llm names.
const (
	LLMScripted  = "scripted"
	LLMOpenAI    = "openai"
	LLMAnthropic = "anthropic"
)

func checkTimeZone(s string) error {
	if _, err := time.LoadLocation(s); err != nil {
		return fmt.Errorf("not a known IANA time zone: %q", s)
	}
	return nil
}

func checkLogLevel(s string) error {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return fmt.Errorf("must be debug, info, warn or error, not %q", s)
	}
	return nil
}

func checkStore(s string) error {
	_, err := storeKind(s)
	return err
}

func checkBus(s string) error {
	if s != "" && s != "memory" && !strings.HasPrefix(s, "redis://") && !strings.HasPrefix(s, "rediss://") {
		return errors.New("must be memory or a redis:// URL")
	}
	return nil
}

func checkBusPrefix(s string) error {
	if strings.ContainsAny(s, " \t\r\n{}") {
		return errors.New("must not contain spaces or braces")
	}
	return nil
}

// parseAllow reads one entry of http-get-allow, by the guard's own rule.
func parseAllow(s string, _ int) (string, error) {
	if err := builtin.CheckAllow(s); err != nil {
		return "", err
	}
	return s, nil
}

func checkS3Endpoint(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	return nil
}

func checkS3Prefix(s string) error {
	if strings.HasPrefix(s, "/") || strings.Contains(s, "..") {
		return fmt.Errorf("%q must not start with / or contain ..", s)
	}
	return nil
}

// parseMediaType reads one entry of a media type list: type/subtype, lower case.
func parseMediaType(s string, _ int) (string, error) {
	mt, params, err := mime.ParseMediaType(s)
	if err != nil || len(params) > 0 || !strings.Contains(mt, "/") || strings.Contains(mt, "*") {
		return "", fmt.Errorf("%q is not a media type (type/subtype, e.g. image/png)", s)
	}
	return mt, nil
}
