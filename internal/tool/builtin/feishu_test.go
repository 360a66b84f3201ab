package builtin

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/tool"
)

// fakeFeishu is a custom bot endpoint that checks requests the way Feishu
// does: body shape, and for a bot with a secret, a signature computed here
// independently and a timestamp within an hour of the server's clock.
type fakeFeishu struct {
	secret string
	now    time.Time
	reply  string // if set, answered verbatim instead of checking

	mu       sync.Mutex
	received []string // texts accepted
}

func (f *fakeFeishu) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	answer := func(code int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"code":%d,"msg":%q,"data":{}}`, code, msg)
	}
	if f.reply != "" {
		io.WriteString(w, f.reply)
		return
	}
	if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		answer(9499, "Bad Request")
		return
	}
	var body struct {
		Timestamp string `json:"timestamp"`
		Sign      string `json:"sign"`
		MsgType   string `json:"msg_type"`
		Content   struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.MsgType != "text" {
		answer(9499, "Bad Request")
		return
	}
	if f.secret != "" {
		ts, err := strconv.ParseInt(body.Timestamp, 10, 64)
		key := body.Timestamp + "\n" + f.secret
		mac := hmac.New(sha256.New, []byte(key))
		mac.Write([]byte("")) // Feishu signs an empty message with the key
		want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
		age := f.now.Sub(time.Unix(ts, 0))
		if err != nil || body.Sign != want || age > time.Hour || age < -time.Hour {
			answer(19021, "sign match fail or timestamp is not within one hour from current time")
			return
		}
	}
	f.mu.Lock()
	f.received = append(f.received, body.Content.Text)
	f.mu.Unlock()
	answer(0, "success")
}

func (f *fakeFeishu) texts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.received...)
}

func TestFeishu(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		fake      *fakeFeishu
		secret    string
		clock     time.Time
		text      string
		wantError string
	}{
		{"signed", &fakeFeishu{secret: "s3cret", now: fixedNow}, "s3cret", fixedNow, "deploy finished ✅", ""},
		{"unsigned bot", &fakeFeishu{now: fixedNow}, "", fixedNow, "hello", ""},
		{"wrong secret", &fakeFeishu{secret: "s3cret", now: fixedNow}, "other", fixedNow, "hello",
			"Feishu rejected the message: sign match fail or timestamp is not within one hour from current time (code 19021)"},
		{"clock two hours slow", &fakeFeishu{secret: "s3cret", now: fixedNow}, "s3cret", fixedNow.Add(-2 * time.Hour), "hello", "(code 19021)"},
		{"keyword filter", &fakeFeishu{reply: `{"code":19024,"msg":"Key Words Not Found","data":{}}`}, "", fixedNow, "hello",
			"Feishu rejected the message: Key Words Not Found (code 19024)"},
		{"legacy success reply", &fakeFeishu{reply: `{"Extra":null,"StatusCode":0,"StatusMessage":"success"}`}, "", fixedNow, "hello", ""},
		{"not JSON", &fakeFeishu{reply: `<html>gateway error</html>`}, "", fixedNow, "hello", "unexpected body: <html>gateway error</html>"},
		{"too long", &fakeFeishu{now: fixedNow}, "", fixedNow, strings.Repeat("x", 21<<10), "too long for Feishu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tt.fake)
			t.Cleanup(srv.Close)
			r := setup(t, Config{
				Now:        func() time.Time { return tt.clock },
				HTTPClient: srv.Client(),
				Feishu:     FeishuConfig{WebhookURL: srv.URL + "/open-apis/bot/v2/hook/token-123", Secret: tt.secret},
			})
			res := call(t, r, "send_feishu_message", map[string]any{"text": tt.text})
			if tt.wantError != "" {
				if res.Status != tool.StatusFailure || !strings.Contains(res.Error, tt.wantError) {
					t.Fatalf("result %+v\nwant failure containing %q", res, tt.wantError)
				}
				return
			}
			if res.Status != tool.StatusSuccess {
				t.Fatalf("result %+v, want success", res)
			}
			if tt.fake.reply == "" {
				if got := tt.fake.texts(); len(got) != 1 || got[0] != tt.text {
					t.Fatalf("bot received %q, want %q", got, tt.text)
				}
			}
		})
	}
}

// TestFeishuSignKnownValue pins feishuSign to a value computed outside Go
// (Python's hmac/base64, per Feishu's documented recipe):
//
//	base64(hmac.new(b"1599360473\ntest-secret", b"", sha256).digest())
func TestFeishuSignKnownValue(t *testing.T) {
	t.Parallel()
	const want = "wSds2BzzFIIGf/WrhUO+NI1q/9j+FRJd3JNHKAq0NZY="
	if got := feishuSign(1599360473, "test-secret"); got != want {
		t.Fatalf("feishuSign = %s, want %s", got, want)
	}
}

func TestFeishuNotConfigured(t *testing.T) {
	t.Parallel()
	r := setup(t, Config{})
	if _, ok := r.Get("send_feishu_message"); !ok {
		t.Fatal("send_feishu_message is not registered without configuration")
	}
	res := call(t, r, "send_feishu_message", map[string]any{"text": "hi"})
	if res.Status != tool.StatusFailure || res.Error != "Feishu webhook is not configured (AGENTCHAT_FEISHU_WEBHOOK_URL)" {
		t.Fatalf("result %+v", res)
	}
}
