package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentchat/agentchat/internal/tool"
)

// webhook is send_webhook: a JSON POST of {"text", "title"?} to one
// operator-configured URL (Slack-style incoming webhooks, automation tools,
// an internal notifier).
type webhook struct {
	cfg    WebhookConfig
	client *http.Client
}

func (webhook) Spec() tool.Spec {
	return tool.Spec{
		Name:        "send_webhook",
		Description: "Send a notification (text and optional title) to the team's configured webhook. A person approves each notification before it is sent.",
		Parameters: json.RawMessage(`{
			"type": "object",
			"properties": {
				"text": {"type": "string", "description": "The notification text.", "minLength": 1},
				"title": {"type": "string", "description": "Optional short title."}
			},
			"required": ["text"],
			"additionalProperties": false
		}`),
		Confirm: tool.ConfirmAlways,
		Source:  "builtin",
	}
}

func (w webhook) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if w.cfg.URL == "" {
		return tool.Result{}, errors.New("webhook is not configured (AGENTCHAT_WEBHOOK_URL)")
	}
	var in struct {
		Text  string `json:"text"`
		Title string `json:"title,omitempty"`
	}
	if err := decodeArgs(args, &in); err != nil {
		return tool.Result{}, err
	}
	body, err := json.Marshal(in)
	if err != nil {
		return tool.Result{}, fmt.Errorf("encode notification: %w", err)
	}
	status, reply, err := postJSON(ctx, w.client, w.cfg.URL, body)
	if err != nil {
		return tool.Result{}, ctxErr(ctx, fmt.Errorf("send webhook: %w", err))
	}
	if status/100 != 2 {
		return tool.Result{}, fmt.Errorf("webhook answered HTTP %d: %s", status, snippet(reply))
	}
	return jsonResult(tool.StatusSuccess, fmt.Sprintf("Notification sent (HTTP %d).", status), struct {
		Status int `json:"status"`
	}{status})
}
