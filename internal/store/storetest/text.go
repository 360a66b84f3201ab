package storetest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// texts are strings of every kind chat.ValidText admits. Each backend must
// return every one of them unchanged, wherever a string is stored.
func texts() map[string]string {
	var bmp, planes strings.Builder
	for r := rune(1); r <= 0xFFFF; r++ {
		if r < 0xD800 || r > 0xDFFF {
			bmp.WriteRune(r)
		}
	}
	for r := rune(0x10000); r <= 0x10FFFF; r += 61 {
		planes.WriteRune(r)
	}
	planes.WriteRune(0x10FFFF)
	return map[string]string{
		"empty":          "",
		"ascii":          "plain words",
		"latin":          "é ü ß ñ Ø",
		"cjk":            "中文 日本語 한국어",
		"astral":         "😀🎉 𝄞 𐍈 🇯🇵 👩‍👩‍👧 \U000E0001",
		"edges":          "\u0080 \u07FF \u0800 \uFFFD \uFEFF \uFFFE \uFFFF \U00010000 \U0010FFFF",
		"controls":       "a\x01b\x1fc\x7fd\u0085e\u009f",
		"line breaks":    "line\nbreak\r\nreturn\rtab\t\u2028\u2029",
		"bidi":           "\u200b\u200e\u202e عربى עברית",
		"combining":      "e\u0301 n\u0303 \u0e01\u0e34",
		"sql and like":   `'; DROP TABLE conversations; -- %_\ "quoted"`,
		"escape lookers": `\u0000 \x00 %00`,
		"long astral":    strings.Repeat("😀", 5000),
		"every bmp":      bmp.String(),
		"every plane":    planes.String(),
	}
}

// testTextRoundTrip: every valid text comes back unchanged as a title, a
// scope, a message's content, tool name and JSON, a run's input, a
// confirmation's reason and args, and an event's payload.
func testTextRoundTrip(t *testing.T, s store.Store) {
	for name, text := range texts() {
		if !chat.ValidText(text) {
			t.Fatalf("%s: the sample is not valid text", name)
		}
		check := func(field, got string) {
			t.Helper()
			if got != text {
				t.Fatalf("%s: %s came back changed (%d bytes, want %d)", name, field, len(got), len(text))
			}
		}
		jsonText := func(field string, raw json.RawMessage) {
			t.Helper()
			var v struct{ S string }
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatalf("%s: %s is no longer JSON: %v", name, field, err)
			}
			check(field, v.S)
		}
		raw, err := json.Marshal(struct{ S string }{text})
		if err != nil {
			t.Fatal(err)
		}
		// Keys (scopes, tool names, call ids) are short: the text's start.
		key := text
		for len(key) > store.MaxKeyBytes-8 {
			_, n := utf8.DecodeLastRuneInString(key)
			key = key[:len(key)-n]
		}
		checkKey := func(field, got string) {
			t.Helper()
			if got != key {
				t.Fatalf("%s: %s came back changed: %q, want %q", name, field, got, key)
			}
		}
		sc := chat.Scope{Tenant: "t-" + key, User: "u-" + key}

		c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), sc, chat.Conversation{Title: text}))
		got := must[chat.Conversation](t)(s.GetConversation(ctx(t), sc, c.ID))
		check("title", got.Title)
		checkKey("tenant", strings.TrimPrefix(got.Tenant, "t-"))
		checkKey("owner", strings.TrimPrefix(got.Owner, "u-"))
		renamed := "x" + text
		up := must[chat.Conversation](t)(s.UpdateConversation(ctx(t), sc, c.ID, &renamed, nil))
		check("renamed title", strings.TrimPrefix(up.Title, "x"))
		list, _ := mustPage[chat.Conversation](t)(s.ListConversations(ctx(t), sc, store.ConversationFilter{}, store.Page{Limit: 10}))
		if len(list) != 1 {
			t.Fatalf("%s: the scope lists %d conversations", name, len(list))
		}

		m := must[chat.Message](t)(s.AppendMessage(ctx(t), sc, chat.Message{ConversationID: c.ID, Role: chat.RoleTool, Content: text,
			ToolName: "tool-" + key, ToolCallID: "call-" + key, Metadata: raw, Parts: raw}))
		msgs, _ := mustPage[chat.Message](t)(s.ListMessages(ctx(t), sc, c.ID, store.MessageFilter{ToolName: "tool-" + key}, store.Page{Limit: 10}))
		if len(msgs) != 1 || msgs[0].ID != m.ID {
			t.Fatalf("%s: the tool name filter finds %d messages", name, len(msgs))
		}
		check("content", msgs[0].Content)
		checkKey("tool name", strings.TrimPrefix(msgs[0].ToolName, "tool-"))
		checkKey("tool call id", strings.TrimPrefix(msgs[0].ToolCallID, "call-"))
		jsonText("metadata", msgs[0].Metadata)
		jsonText("parts", msgs[0].Parts)

		r := must[chat.Run](t)(s.CreateRun(ctx(t), sc, chat.Run{ConversationID: c.ID, Input: text, Status: chat.RunRunning}))
		ended := time.Now()
		must[chat.Run](t)(s.UpdateRun(ctx(t), sc.Tenant, r.ID, store.RunUpdate{Status: chat.RunFailed, EndedAt: &ended,
			Error: &event.ErrorInfo{Code: "x", Message: text}}))
		gr := must[chat.Run](t)(s.GetRun(ctx(t), sc, r.ID))
		check("run input", gr.Input)
		if gr.Error == nil {
			t.Fatalf("%s: the run error is lost", name)
		}
		check("run error", gr.Error.Message)

		cf := must[chat.Confirmation](t)(s.CreateConfirmation(ctx(t), chat.Confirmation{Tenant: sc.Tenant, Owner: sc.User, RunID: r.ID,
			ConversationID: c.ID, ToolCallID: "call-" + key, ToolName: "tool-" + key, Args: raw, ExpiresAt: time.Now().Add(time.Hour)}))
		must[chat.Confirmation](t)(s.DecideConfirmation(ctx(t), sc, cf.ID, chat.Decision{Status: chat.ConfirmRejected, Reason: text, Args: raw, At: time.Now()}))
		gc := must[chat.Confirmation](t)(s.GetConfirmation(ctx(t), sc, cf.ID))
		check("reason", gc.Reason)
		checkKey("confirmation tool name", strings.TrimPrefix(gc.ToolName, "tool-"))
		jsonText("args", gc.Args)
		jsonText("decided args", gc.DecidedArgs)

		ev := event.Event{Tenant: sc.Tenant, Thread: c.ID, Run: r.ID, Seq: 1, Time: time.Now(), Type: event.TextDelta,
			Payload: event.TextDeltaData{MessageID: "m", Delta: text}}
		if err := s.AppendEvents(ctx(t), []event.Event{ev}); err != nil {
			t.Fatalf("%s: append event: %v", name, err)
		}
		evs := must[[]event.Event](t)(s.ListEvents(ctx(t), sc, store.ListEventsParams{Thread: c.ID}))
		if len(evs) != 1 {
			t.Fatalf("%s: %d events", name, len(evs))
		}
		p, ok := evs[0].Payload.(event.TextDeltaData)
		if !ok {
			t.Fatalf("%s: payload %T", name, evs[0].Payload)
		}
		check("event delta", p.Delta)
	}
}

// testBadCursors: a page cursor no backend issued is ErrBadCursor on every
// backend, whatever it decodes to (NUL, invalid UTF-8, a time no database
// holds), never a driver error.
func testBadCursors(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{Title: "x"}))
	for _, cursor := range []string{
		"%%%",
		store.EncodeCursor(store.Cursor{At: time.Now(), ID: "a\x00b"}),
		store.EncodeCursor(store.Cursor{At: time.Now(), ID: "\xff\xfe"}),
		rawCursor("9223372036854775807:id"),
		rawCursor("-9223372036854775808:id"),
		rawCursor("99999999999999999999:id"),
		rawCursor("1:"),
	} {
		_, _, err := s.ListConversations(ctx(t), alice, store.ConversationFilter{}, store.Page{Limit: 10, Cursor: cursor})
		if !errors.Is(err, store.ErrBadCursor) {
			t.Errorf("conversations with cursor %q: %v, want ErrBadCursor", cursor, err)
		}
		_, _, err = s.ListMessages(ctx(t), alice, c.ID, store.MessageFilter{}, store.Page{Limit: 10, Cursor: cursor})
		if !errors.Is(err, store.ErrBadCursor) {
			t.Errorf("messages with cursor %q: %v, want ErrBadCursor", cursor, err)
		}
	}
}

// rawCursor encodes s as EncodeCursor would encode a well-formed one.
func rawCursor(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
