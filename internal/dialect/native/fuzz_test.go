package native_test

import (
	"testing"

	"github.com/agentchat/agentchat/internal/dialect/dialecttest"
	"github.com/agentchat/agentchat/internal/dialect/native"
)

func FuzzDecodeChatRequest(f *testing.F) {
	dialecttest.FuzzDecoder(f, []string{
		`{"input":"Hello! What time is it in Tokyo?"}`,
		`{"conversationId":"01900000-0000-7000-8000-000000000000","input":"hi","title":"T","engine":"local"}`,
		`{"input":"a\u0000b"}`, `{"input":"\ud83d\ude00 \ud800"}`, "{\"title\":\"\xff\"}", `{"input":1}`, `[]`, `{"x":1}`,
	}, func(body []byte) (any, error) {
		r, err := native.DecodeChatRequest(body)
		return &r, err
	})
}
