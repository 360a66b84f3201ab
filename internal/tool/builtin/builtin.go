package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/agentchat/agentchat/internal/tool"
)

// Config holds what the built-in tools need. Zero values mean the defaults.
type Config struct {
	// Now is the clock for get_current_time and Feishu signatures. Nil
	// means time.Now.
	Now func() time.Time
	// HTTPClient sends the webhook tools' requests. Nil means a client with
	// a 15s timeout. It is not used by http_get, whose client carries the
	// SSRF guard.
	HTTPClient *http.Client
	// HTTPGet configures http_get.
	HTTPGet HTTPGetConfig
	// Feishu configures send_feishu_message.
	Feishu FeishuConfig
	// Webhook configures send_webhook.
	Webhook WebhookConfig
}

// FeishuConfig configures send_feishu_message, which posts to a Feishu/Lark
// custom bot.
type FeishuConfig struct {
	// WebhookURL is the bot's webhook (AGENTCHAT_FEISHU_WEBHOOK_URL), e.g.
	// https://open.feishu.cn/open-apis/bot/v2/hook/<id>. Empty leaves the
	// tool registered but failing with a message that names the setting.
	WebhookURL string
	// Secret is the bot's signature secret, if "signature verification" is
	// on for the bot. Empty sends unsigned messages.
	Secret string
}

// WebhookConfig configures send_webhook.
type WebhookConfig struct {
	// URL receives a POST of {"text", "title"?} (AGENTCHAT_WEBHOOK_URL).
	// Empty leaves the tool registered but failing with a message that
	// names the setting.
	URL string
}

// Validate reports the first bad field.
func (c Config) Validate() error {
	if err := c.HTTPGet.validate(); err != nil {
		return err
	}
	for _, u := range []struct{ field, value string }{
		{"Feishu.WebhookURL", c.Feishu.WebhookURL},
		{"Webhook.URL", c.Webhook.URL},
	} {
		if u.value == "" {
			continue
		}
		p, err := url.Parse(u.value)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			// The URL may carry a token: do not echo it.
			return fmt.Errorf("builtin tools: %s is not an http(s) URL", u.field)
		}
	}
	return nil
}

// New returns every built-in tool, configured by cfg, or an error naming the
// bad field of cfg.
func New(cfg Config) ([]tool.Tool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 15 * time.Second}
	}
	get, err := newHTTPGet(cfg.HTTPGet)
	if err != nil {
		return nil, err
	}
	return []tool.Tool{
		currentTime{now: now},
		calculator{},
		get,
		feishu{cfg: cfg.Feishu, client: client, now: now},
		webhook{cfg: cfg.Webhook, client: client},
		chart{},
	}, nil
}

// Register adds every built-in tool to r.
func Register(r *tool.Registry, cfg Config) error {
	tools, err := New(cfg)
	if err != nil {
		return err
	}
	for _, t := range tools {
		if err := r.Register(t); err != nil {
			return err
		}
	}
	return nil
}

// decodeArgs unmarshals validated arguments into a struct. The registry has
// checked them against the schema, so an error here is a bug, reported as a
// failed call like any other.
func decodeArgs(args json.RawMessage, v any) error {
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("decode arguments: %w", err)
	}
	return nil
}

// jsonResult marshals v as Output with content as the model-facing text.
func jsonResult(status tool.Status, content string, v any) (tool.Result, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return tool.Result{}, fmt.Errorf("encode output: %w", err)
	}
	return tool.Result{Status: status, Output: b, Content: content}, nil
}

// ctxErr is shared by the network tools: a context error means the registry
// timed the call out or the run was cancelled; the registry words that.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
