package vercel_test

import (
	"testing"

	"github.com/agentchat/agentchat/internal/dialect/dialecttest"
	"github.com/agentchat/agentchat/internal/dialect/vercel"
)

func FuzzDecodeRequest(f *testing.F) {
	dialecttest.FuzzDecoder(f, []string{
		`{"id":"my-chat","trigger":"submit-message","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"What time is it in Tokyo?"}]}]}`,
		`{"id":"c","trigger":"submit-message","messageId":"a1","messages":[{"id":"a1","role":"assistant","parts":[{"type":"tool-send","toolCallId":"k","state":"approval-responded","approval":{"id":"c1","approved":true,"reason":"ok"}}]}]}`,
		`{"id":"c","trigger":"regenerate-message","messageId":"r1","messages":[]}`,
		`{"id":"c","messages":[{"role":"user","parts":[{"type":"file","mediaType":"image/png","url":"data:image/png;base64,AA=="}]}]}`,
		`{"id":""}`, `{"messages":[{"parts":[{"text":"\u0000"}]}]}`,
	}, func(body []byte) (any, error) {
		r, err := vercel.DecodeRequest(body)
		return &r, err
	})
}
