package agui_test

import (
	"errors"
	"testing"

	"github.com/agentchat/agentchat/internal/dialect/agui"
	"github.com/agentchat/agentchat/internal/dialect/dialecttest"
)

func FuzzDecodeRunAgentInput(f *testing.F) {
	dialecttest.FuzzDecoder(f, []string{
		`{"threadId":"t1","runId":"r1","messages":[{"id":"m1","role":"user","content":"hi"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`,
		`{"threadId":"t1","runId":"r2","messages":[],"resume":[{"interruptId":"c1","status":"resolved","payload":{"approved":true,"args":{"text":"x"}}}]}`,
		`{"messages":[{"id":"m","role":"user","content":[{"type":"text","text":"look"},{"type":"image","source":{"type":"url","value":"https://x/y.png"}}]}]}`,
		`{"messages":[{"role":"tool","toolCallId":"c","content":"{\"ok\":true}"}],"tools":[{"name":"f","parameters":{"type":"object"}}]}`,
		`{"threadId":"a\u0000"}`, `{"state":{"\udfff":1}}`, `{"threadId":"bad id!"}`,
	}, func(body []byte) (any, error) {
		in, err := agui.DecodeRunAgentInput(body)
		if err == nil {
			for _, id := range []string{in.ThreadID, in.RunID} {
				if id != "" && !agui.ValidID(id) {
					return nil, errors.New("accepted the id " + id) // not a client error: fails the target
				}
			}
		}
		return &in, err
	})
}
