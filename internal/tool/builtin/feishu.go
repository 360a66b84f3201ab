package builtin

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentchat/agentchat/internal/tool"
)

// feishuMaxBody is Feishu's limit on a custom bot request body (20 KB);
// checking it here gives the model a clear message instead of Feishu's.
const feishuMaxBody = 20 << 10

// feishu is send_feishu_message: a text message to a Feishu/Lark group
// through a custom bot webhook.
type feishu struct {
	cfg    FeishuConfig
	client *http.Client
	now    func() time.Time
}

func (feishu) Spec() tool.Spec {
	return tool.Spec{
		Name:        "send_feishu_message",
		Description: "Send a plain-text message to the team's Feishu (Lark) group through its bot. A person approves each message before it is sent.",
		Parameters: json.RawMessage(`{
			"type": "object",
			"properties": {
				"text": {"type": "string", "description": "The message text.", "minLength": 1}
			},
			"required": ["text"],
			"additionalProperties": false
		}`),
		Confirm: tool.ConfirmAlways,
		Source:  "builtin",
	}
}

// feishuMessage is the custom bot's request body. Timestamp and Sign are set
// only when the bot has a signature secret.
type feishuMessage struct {
	Timestamp string        `json:"timestamp,omitempty"`
	Sign      string        `json:"sign,omitempty"`
	MsgType   string        `json:"msg_type"`
	Content   feishuContent `json:"content"`
}

type feishuContent struct {
	Text string `json:"text"`
}

// feishuSign computes a custom bot signature as Feishu specifies: HMAC-SHA256
// keyed with timestamp + "\n" + secret over an empty message, base64. (The
// secret goes in the key, not the message; this is Feishu's choice.)
func feishuSign(timestamp int64, secret string) string {
	mac := hmac.New(sha256.New, []byte(strconv.FormatInt(timestamp, 10)+"\n"+secret))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func (f feishu) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if f.cfg.WebhookURL == "" {
		return tool.Result{}, errors.New("Feishu webhook is not configured (AGENTCHAT_FEISHU_WEBHOOK_URL)")
	}
	var in struct {
		Text string `json:"text"`
	}
	if err := decodeArgs(args, &in); err != nil {
		return tool.Result{}, err
	}
	msg := feishuMessage{MsgType: "text", Content: feishuContent{Text: in.Text}}
	if f.cfg.Secret != "" {
		// Feishu accepts a timestamp within an hour of its own clock.
		ts := f.now().Unix()
		msg.Timestamp = strconv.FormatInt(ts, 10)
		msg.Sign = feishuSign(ts, f.cfg.Secret)
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return tool.Result{}, fmt.Errorf("encode message: %w", err)
	}
	if len(body) > feishuMaxBody {
		return tool.Result{}, fmt.Errorf("message is too long for Feishu (%d bytes encoded, at most %d)", len(body), feishuMaxBody)
	}

	status, respBody, err := postJSON(ctx, f.client, f.cfg.WebhookURL, body)
	if err != nil {
		return tool.Result{}, ctxErr(ctx, fmt.Errorf("send to Feishu: %w", err))
	}
	// Feishu answers {"code":0,"msg":"success",...}; older bots answer
	// {"StatusCode":0,"StatusMessage":"success"}. Errors come with HTTP 200
	// too, so the code decides, not the HTTP status.
	var fr struct {
		Code          *int   `json:"code"`
		Msg           string `json:"msg"`
		StatusCode    *int   `json:"StatusCode"`
		StatusMessage string `json:"StatusMessage"`
	}
	if err := json.Unmarshal(respBody, &fr); err != nil || (fr.Code == nil && fr.StatusCode == nil) {
		return tool.Result{}, fmt.Errorf("Feishu answered HTTP %d with an unexpected body: %s", status, snippet(respBody))
	}
	code, text := fr.Code, fr.Msg
	if code == nil {
		code, text = fr.StatusCode, fr.StatusMessage
	}
	if *code != 0 {
		return tool.Result{}, fmt.Errorf("Feishu rejected the message: %s (code %d)", cmp.Or(text, "no reason given"), *code)
	}
	if status/100 != 2 {
		return tool.Result{}, fmt.Errorf("Feishu answered HTTP %d: %s", status, snippet(respBody))
	}
	return jsonResult(tool.StatusSuccess, "Message sent to Feishu.", struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	}{0, text})
}

// postJSON posts body and returns the status and the start of the reply.
func postJSON(ctx context.Context, client *http.Client, endpoint string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		// Not %w: the url.Error would print the URL, and webhook URLs carry
		// their token in the path.
		return 0, nil, errors.New("invalid webhook URL")
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, redactURL(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return 0, nil, redactURL(err)
	}
	return resp.StatusCode, data, nil
}

// redactURL drops the URL from a *url.Error: a webhook URL is a credential,
// and errors reach the model, the event log and the UI.
func redactURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// snippet shortens a reply for an error message.
func snippet(b []byte) string {
	const n = 200
	s := string(bytes.TrimSpace(b))
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	if s == "" {
		return "(empty)"
	}
	return s
}
