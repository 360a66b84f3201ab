package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Config is everything `agentchat serve` can be told. Each field is one row
// of the settings table (options.go), which holds its default, type and rules.
type Config struct {
	// Addr is the listen address.
	Addr string
	// DataDir holds the SQLite file and other local state.
	DataDir string
	// Store is the store URL: empty or sqlite:<path> for the embedded SQLite
	// file (default <DataDir>/agentchat.db), postgres://… for PostgreSQL.
	Store string
	// Bus is the bus URL: empty or "memory" for in-process, redis://… for Redis Streams.
	Bus string
	// BusPrefix starts every Redis key and channel of the bus; the replicas of
	// one deployment share it, and deployments sharing a Redis differ in it.
	BusPrefix string
	// LeaseTTL is how long a replica's heartbeat may go unrenewed (crashed,
	// cut off from the database) before other replicas end its runs. Unused
	// on the embedded SQLite store, which one process owns.
	LeaseTTL time.Duration

	// Tokens are the static bearer tokens, each naming its principal's role.
	Tokens []Token
	// JWTSecret verifies HS256 JWTs carrying sub, tenant and exp (and role).
	JWTSecret string
	// OIDCIssuer, JWKSURL and the JWT… fields trust one OpenID provider;
	// JWTIssuers (a JSON list, or a file's path) adds more. See oidc.go.
	OIDCIssuer, JWKSURL, JWTIssuer, JWTAudience           string
	JWTUserClaim, JWTTenantClaim, JWTTenant, JWTRoleClaim string
	JWTAdminValue                                         string
	JWTClockSkew                                          time.Duration
	OIDCClientID, OIDCName, OIDCScopes                    string
	JWTIssuers                                            string
	// TenantHeader names the header that may name the tenant.
	TenantHeader string
	// CORSOrigins lists the browser origins (scheme://host[:port], exact and
	// normalised) whose pages may call the API, or "*" alone for any page
	// (then never with credentials). Empty allows none: only same-origin
	// pages such as the console.
	CORSOrigins []string

	// MaxBodyBytes bounds request bodies.
	MaxBodyBytes int64
	// FileStorage is where uploaded files live: disk, s3 or postgres;
	// empty derives it (FileStorageKind).
	FileStorage string
	// S3Bucket, S3Endpoint, S3Region, S3Prefix, S3PathStyle,
	// S3AccessKeyID and S3SecretAccessKey configure the s3 file storage
	// (s3file.Config); empty endpoint means AWS, empty keys the AWS
	// default credential chain.
	S3Bucket, S3Endpoint, S3Region, S3Prefix string
	S3PathStyle                              bool
	S3AccessKeyID, S3SecretAccessKey         string
	// FileRetention is how long an unreferenced upload is kept.
	FileRetention time.Duration
	// FileMaxBytes is the largest upload (default 20 MiB).
	FileMaxBytes int64
	// FileTypes are the media types an upload may have (default file.DefaultTypes).
	FileTypes []string
	// FileTenantQuota bounds a tenant's file bytes (default 1 GiB; -1 none).
	FileTenantQuota int64
	// MaxInputChars bounds one user input.
	MaxInputChars int
	// PingInterval is the keep-alive period of every stream.
	PingInterval time.Duration
	// ShutdownTimeout bounds a graceful shutdown.
	ShutdownTimeout time.Duration
	// RunRetention is how long finished runs and their timelines are kept.
	RunRetention time.Duration
	// MaxRunsPerTenant bounds one tenant's executing runs, counted across all
	// replicas; 0 means no bound.
	MaxRunsPerTenant int
	// RunsPerMinute, TokensPerDay, TokensPerMonth and CostPerMonth (in
	// currency units) are every tenant's default limits (package usage);
	// 0 means none. The engine file's "limits" override them.
	RunsPerMinute  int64
	TokensPerDay   int64
	TokensPerMonth int64
	CostPerMonth   float64
	// MaxExecutingRuns bounds the runs this process executes at once; 0
	// lets the open-files limit decide (fdbudget), and the limit also caps
	// a larger value.
	MaxExecutingRuns int

	// LLM picks the model provider: LLMScripted, LLMOpenAI or LLMAnthropic.
	// Unset, derive picks it from the keys given.
	LLM string
	// Model is the provider's model name; unset, derive picks the
	// provider's default (empty for the scripted model).
	Model string
	// OpenAIBaseURL is the OpenAI-compatible API root (OPENAI_BASE_URL).
	OpenAIBaseURL string
	// OpenAIAPIKey authenticates to it (OPENAI_API_KEY).
	OpenAIAPIKey string
	// AnthropicAPIKey authenticates to Anthropic (ANTHROPIC_API_KEY).
	AnthropicAPIKey string
	// AnthropicBaseURL overrides the Anthropic API root (ANTHROPIC_BASE_URL).
	AnthropicBaseURL string
	// ModelsFile is a JSON file naming the models agents may use (package
	// agent's ModelsFile), reloaded when it changes; the provider settings
	// above are the model it calls "default". Empty: the default model only.
	ModelsFile string
	// LLMTimeout bounds the wait for a provider to start answering.
	LLMTimeout time.Duration
	// LLMRetries is how often a 429 or 5xx before the first token is retried; -1 for never.
	LLMRetries int
	// ScriptedTokenDelay paces the offline model's tokens.
	ScriptedTokenDelay time.Duration
	// SystemPrompt is sent first to the model.
	SystemPrompt string

	// MaxIterations bounds model calls per run.
	MaxIterations int
	// ConfirmTTL is how long a confirmation waits for a person.
	ConfirmTTL time.Duration
	// ToolTimeout bounds one tool call.
	ToolTimeout time.Duration
	// ToolConfirm overrides the confirmation policy of tools by name (see ToolOverrides).
	ToolConfirm []ToolConfirm
	// HTTPGetAllow lists hosts, IPs or CIDRs http_get may reach despite the SSRF guard.
	HTTPGetAllow []string
	// FeishuWebhookURL is the Feishu custom-bot webhook of send_feishu_message.
	FeishuWebhookURL string
	// FeishuSecret signs Feishu webhook calls when set.
	FeishuSecret string
	// WebhookURL is the target of send_webhook.
	WebhookURL string
	// MCPConfig is a JSON file listing MCP servers ({"mcpServers":{…}}).
	MCPConfig string

	// HistoryTimeZone is the IANA time zone whose midnights cut
	// GET /api/v1/agent/history into days.
	HistoryTimeZone string

	// Engine is the default engine: EngineLocal, EngineOpenClaw or EngineChain.
	Engine string
	// ChainHardLimit caps a chain's max_steps (CHAIN_HARD_LIMIT); a request
	// asking for more is refused with one final frame.
	ChainHardLimit int
	// EngineFallback is the engine that takes a new run whose OpenClaw
	// gateway fails before its first token: EngineLocal, or empty for none.
	EngineFallback string
	// EngineConfig is a JSON file of per-tenant gateways and routing rules (see Engines).
	EngineConfig string
	// OpenClawGatewayURL is the default OpenClaw Gateway's root (OPENCLAW_GATEWAY_URL).
	OpenClawGatewayURL string
	// OpenClawGatewayToken is its bearer token (OPENCLAW_GATEWAY_TOKEN).
	OpenClawGatewayToken string
	// OpenClawAgentID is the OpenClaw agent that answers (OPENCLAW_AGENT_ID);
	// empty leaves the choice to package openclaw.
	OpenClawAgentID string

	// Retrieval is on or off: whether turns search the tenant's knowledge base.
	Retrieval string
	// Memory is on or off: whether turns also search the user's own earlier conversations.
	Memory string
	// RetrievalTopK is how many hits a turn gets at most, per source.
	RetrievalTopK int
	// KnowledgeMaxBytes bounds one uploaded document's text.
	KnowledgeMaxBytes int
	// EmbeddingsModel, when set, makes retrieval hybrid with that model of an
	// OpenAI-compatible /v1/embeddings endpoint.
	EmbeddingsModel string
	// EmbeddingsBaseURL is the embeddings API root; unset, OpenAIBaseURL's.
	EmbeddingsBaseURL string
	// EmbeddingsAPIKey authenticates to it; unset, OpenAIAPIKey.
	EmbeddingsAPIKey string
	// CompactMinMessages is how many messages since the last compaction make
	// a conversation worth compacting.
	CompactMinMessages int
	// CompactKeepMessages is how many recent messages a compaction keeps
	// verbatim (from the start of their turn).
	CompactKeepMessages int
	// AutoCompactTokens, when positive, compacts a conversation before a turn
	// whose context would exceed it (estimated at 4 characters a token); 0 is off.
	AutoCompactTokens int
	// PromptDir holds the system prompt's component files; empty uses SystemPrompt.
	PromptDir string
	// InlinePayloadBytes is the largest tool output stored inline in its
	// message; larger ones are stored by reference; -1 keeps all inline.
	InlinePayloadBytes int

	// DebugAddr, when set, serves Go's pprof profiles there (keep it private).
	DebugAddr string

	// MetricsAddr, when set, serves GET /metrics (Prometheus) on a listener
	// of its own there.
	MetricsAddr string
	// MetricsToken, when set, also serves GET /metrics on the main listener
	// to requests bearing it (Authorization: Bearer <token>).
	MetricsToken string
	// MetricsTenantLabels adds a tenant label to the run and token series;
	// off, because one series per tenant grows without bound.
	MetricsTenantLabels bool
	// DrainDelay is how long, at shutdown, /readyz answers 503 "draining"
	// before the listener stops accepting, so load balancers route away first.
	DrainDelay time.Duration

	// LogLevel is debug, info, warn or error.
	LogLevel string
	// LogFormat is text or json.
	LogFormat string
}

// Load reads the environment (through getenv) and then the flags in args,
// applies the defaults and checks the result. -h or --help writes Usage to
// out and returns flag.ErrHelp; a flag the table lacks, or a flag without
// its value, is a *FlagError. Any other error names the setting (its
// variable or its flag) and, for a list, the entry.
func Load(name string, args []string, getenv func(string) string, out io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// Help is Usage's, and errors are returned to be written once by the
	// caller: the flag package's own would quote the value, secret or not.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var valueErr error // the parser's error for the flag the parse stopped at
	for _, o := range options {
		v := getenv(o.env)
		if v == "" && o.secret {
			if path := getenv(o.env + "_FILE"); path != "" {
				b, err := os.ReadFile(path)
				if err != nil {
					return c, fmt.Errorf("%s_FILE: %w", o.env, err)
				}
				v = strings.TrimSpace(string(b))
			}
		}
		if v != "" {
			if err := o.set(&c, v); err != nil {
				return c, fmt.Errorf("%s (--%s): %w", o.env, o.name, err)
			}
		}
		fs.Func(o.name, o.help, func(v string) error {
			if err := o.set(&c, v); err != nil {
				valueErr = fmt.Errorf("--%s (%s): %w", o.name, o.env, err)
				return err
			}
			return nil
		})
	}
	if err := fs.Parse(args); err != nil {
		switch {
		case errors.Is(err, flag.ErrHelp):
			Usage(out, name)
			return c, err
		case valueErr != nil:
			return c, &FlagError{Err: valueErr}
		}
		return c, &FlagError{Err: err}
	}
	if fs.NArg() > 0 {
		return c, &FlagError{Err: fmt.Errorf("unexpected argument %q (settings are flags: --name value)", fs.Arg(0))}
	}
	for _, o := range options {
		if o.fill != nil {
			o.fill(&c)
		}
	}
	c.derive()
	return c, c.Validate()
}

// FlagError is a command line the flag parser refused: an unknown flag, a
// flag without its value, a value its parser refused, a stray argument.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// Validate checks every setting by its row's rules, then the rules between
// settings, and names each bad setting by its flag and its variable.
func (c Config) Validate() error {
	var errs []error
	for _, o := range options {
		if o.check == nil {
			continue
		}
		if err := o.check(&c); err != nil {
			errs = append(errs, fmt.Errorf("%s (%s): %w", o.name, o.env, err))
		}
	}
	if _, err := c.Issuers(); err != nil {
		errs = append(errs, err)
	}
	switch kind, _ := c.StoreKind(); {
	case c.FileStorageKind() == "s3" && c.S3Bucket == "":
		errs = append(errs, errors.New("s3-bucket (AGENTCHAT_S3_BUCKET): required with --file-storage s3"))
	case c.FileStorageKind() == "postgres" && kind != "postgres":
		errs = append(errs, errors.New("file-storage (AGENTCHAT_FILE_STORAGE): postgres needs a PostgreSQL store (--store postgres://…)"))
	}
	if c.LLM == LLMAnthropic && c.AnthropicAPIKey == "" {
		errs = append(errs, errors.New("anthropic-api-key (ANTHROPIC_API_KEY): required with --llm anthropic"))
	}
	return errors.Join(errs...)
}

// StoreKind says which backend Store names: "sqlite" or "postgres".
func (c Config) StoreKind() (string, error) { return storeKind(c.Store) }

func storeKind(store string) (string, error) {
	switch {
	case store == "" || strings.HasPrefix(store, "sqlite:"):
		return "sqlite", nil
	case strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://"):
		if _, err := url.Parse(store); err != nil {
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

// FileStorageKind is where uploaded files live: the file-storage setting,
// else s3 when a bucket is set, else postgres when the store is (so two
// replicas share files with nothing new), else disk.
func (c Config) FileStorageKind() string {
	switch kind, _ := c.StoreKind(); {
	case c.FileStorage != "":
		return c.FileStorage
	case c.S3Bucket != "":
		return "s3"
	case kind == "postgres":
		return "postgres"
	}
	return "disk"
}
