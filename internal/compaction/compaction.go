// Package compaction compacts long conversations (seed 002 会话压缩与归档):
// the older messages are archived unchanged, the model writes a summary that
// becomes the conversation's compacted context, and later turns send the
// summary before the recent messages instead of the archived ones.
//
// The live message history is not changed: a person reading the
// conversation still sees every message they exchanged. Only the model's
// context is shortened. The archive is the audit copy of exactly what each
// summary stands for.
package compaction

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/store"
)

// Defaults of Config.
const (
	DefaultMinMessages = 20
	DefaultKeep        = 6
)

// Prompt is the system message of the summarising model call. The offline
// model recognises its first words.
const Prompt = "Summarise the conversation below for your own later use. Keep facts, decisions, names, numbers, preferences and open questions; drop pleasantries. Answer with the summary only."

// SummaryHeader starts the system message that carries the summary in later turns.
const SummaryHeader = "Summary of the earlier conversation (its messages are archived):"

// NotNeededError says why a conversation was not compacted.
type NotNeededError struct {
	Messages, Min int
	Reason        string
}

func (e *NotNeededError) Error() string { return e.Reason }

// Config configures a Compactor.
type Config struct {
	Store store.Store
	Model llm.Model
	// MinMessages is how many messages since the last compaction a
	// conversation needs before it is compacted. Default 20.
	MinMessages int
	// Keep is how many of the most recent messages stay in the context
	// verbatim (moved back to the start of their turn, so a tool call and
	// its result are never split). Default 6.
	Keep int
	// ContextTokens, when positive, turns on automatic compaction before a
	// turn whose context would exceed this many tokens (estimated at four
	// characters a token).
	ContextTokens int
	Logger        *slog.Logger
}

// Compactor compacts conversations. Safe for concurrent use.
type Compactor struct {
	cfg Config
	log *slog.Logger
}

// New returns a Compactor.
func New(cfg Config) *Compactor {
	cfg.MinMessages = cmp.Or(cfg.MinMessages, DefaultMinMessages)
	cfg.Keep = cmp.Or(cfg.Keep, DefaultKeep)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Compactor{cfg: cfg, log: log}
}

// Compact compacts the conversation. activeRunID is the run doing it (an
// automatic compaction), empty for a person's request: any active run then
// refuses it with *store.BusyError. Too few messages is *NotNeededError,
// and nothing is written.
func (c *Compactor) Compact(ctx context.Context, sc chat.Scope, conversationID, activeRunID string) (store.Compaction, error) {
	if activeRunID == "" {
		if r, err := c.cfg.Store.ActiveRun(ctx, sc, conversationID); err == nil {
			return store.Compaction{}, &store.BusyError{ActiveRunID: r.ID}
		}
	}
	all, err := c.messages(ctx, sc, conversationID)
	if err != nil {
		return store.Compaction{}, err
	}
	prev, err := c.cfg.Store.LatestCompaction(ctx, sc, conversationID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.Compaction{}, err
	}
	current := After(all, prev)
	if len(current) < c.cfg.MinMessages {
		return store.Compaction{}, &NotNeededError{Messages: len(current), Min: c.cfg.MinMessages,
			Reason: fmt.Sprintf("the conversation has %d messages since its last compaction; compaction needs at least %d", len(current), c.cfg.MinMessages)}
	}
	cut := len(current) - c.cfg.Keep
	for cut > 0 && current[cut].Role != chat.RoleUser {
		cut--
	}
	if cut <= 0 {
		return store.Compaction{}, &NotNeededError{Messages: len(current), Min: c.cfg.MinMessages,
			Reason: "the conversation's older messages are all part of its latest turn; there is nothing to compact yet"}
	}
	archived := current[:cut]
	summary, err := c.summarise(ctx, prev.Summary, archived)
	if err != nil {
		return store.Compaction{}, err
	}
	last := archived[len(archived)-1]
	return c.cfg.Store.Compact(ctx, sc, store.Compaction{ConversationID: conversationID, Summary: summary,
		ThroughID: last.ID, ThroughAt: last.CreatedAt}, archived, activeRunID)
}

// messages reads the conversation's active branch: what is compacted is
// the context its runs are given (a branch left aside keeps its messages).
func (c *Compactor) messages(ctx context.Context, sc chat.Scope, conv string) ([]chat.Message, error) {
	cv, err := c.cfg.Store.GetConversation(ctx, sc, conv)
	if err != nil {
		return nil, err
	}
	all, err := c.allMessages(ctx, sc, conv)
	if err != nil {
		return nil, err
	}
	return chat.Branch(all, cv.ActiveLeaf), nil
}

func (c *Compactor) allMessages(ctx context.Context, sc chat.Scope, conv string) ([]chat.Message, error) {
	var all []chat.Message
	cursor := ""
	for {
		page, next, err := c.cfg.Store.ListMessages(ctx, sc, conv, store.MessageFilter{}, store.Page{Limit: 500, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if next == "" {
			return all, nil
		}
		cursor = next
	}
}

// summarise asks the model for the summary of the previous summary and the archived messages.
func (c *Compactor) summarise(ctx context.Context, previous string, msgs []chat.Message) (string, error) {
	var b strings.Builder
	if previous != "" {
		fmt.Fprintf(&b, "summary: %s\n", oneLine(previous))
	}
	for _, m := range msgs {
		text := m.Content
		if m.Role == chat.RoleTool {
			text = m.ToolName + " returned " + text
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", m.Role, clip(oneLine(text), 2000))
	}
	stream, err := c.cfg.Model.Stream(ctx, llm.Request{Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: Prompt},
		{Role: llm.RoleUser, Content: b.String()},
	}})
	if err != nil {
		return "", fmt.Errorf("summarise: %w", err)
	}
	defer stream.Close()
	var out strings.Builder
	for stream.Next() {
		out.WriteString(stream.Chunk().Text)
	}
	if err := stream.Err(); err != nil {
		return "", fmt.Errorf("summarise: %w", err)
	}
	s := strings.TrimSpace(out.String())
	if s == "" {
		return "", errors.New("summarise: the model returned no summary")
	}
	return s, nil
}

// After returns the messages after the compaction's boundary (all of them
// when c is the zero Compaction).
func After(msgs []chat.Message, c store.Compaction) []chat.Message {
	if c.ThroughID == "" {
		return msgs
	}
	for i, m := range msgs {
		if m.ID == c.ThroughID {
			return msgs[i+1:]
		}
	}
	// The boundary message is gone (regenerated away): compare by position.
	var out []chat.Message
	for _, m := range msgs {
		if m.CreatedAt.After(c.ThroughAt) || (m.CreatedAt.Equal(c.ThroughAt) && m.ID > c.ThroughID) {
			out = append(out, m)
		}
	}
	return out
}

// Apply is the context a turn sends: the summary, then the messages after
// the boundary.
func Apply(history []chat.Message, c store.Compaction) []chat.Message {
	if c.ID == "" {
		return history
	}
	rest := After(history, c)
	out := make([]chat.Message, 0, len(rest)+1)
	out = append(out, chat.Message{ID: c.ID, ConversationID: c.ConversationID, Role: chat.RoleSystem,
		Content: SummaryHeader + "\n" + c.Summary, CreatedAt: c.CreatedAt})
	return append(out, rest...)
}

// Patch is the context.patch that reports a compaction (an RFC 6902 add of /compaction).
func Patch(c store.Compaction) json.RawMessage {
	b, _ := json.Marshal([]any{map[string]any{"op": "add", "path": "/compaction", "value": map[string]any{
		"id": c.ID, "summary": c.Summary, "archivedMessages": c.Archived, "throughMessageId": c.ThroughID,
		"compactedAt": c.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
	}}})
	return b
}

// Estimate is the context size in tokens, at four characters a token.
func Estimate(msgs []chat.Message) int {
	n := 0
	for _, m := range msgs {
		n += utf8.RuneCountInString(m.Content) + len(m.Metadata)
	}
	return n / 4
}

// ContextTokens is the automatic compaction limit, 0 when it is off.
func (c *Compactor) ContextTokens() int { return c.cfg.ContextTokens }

// Archive lists the messages compactions of a conversation archived, one
// page at a time.
func (c *Compactor) Archive(ctx context.Context, sc chat.Scope, conv string, p store.Page) ([]chat.Message, string, error) {
	return c.cfg.Store.ListArchive(ctx, sc, conv, p)
}

// Latest returns the conversation's compaction, the zero value when it has none.
func (c *Compactor) Latest(ctx context.Context, sc chat.Scope, conv string) (store.Compaction, error) {
	k, err := c.cfg.Store.LatestCompaction(ctx, sc, conv)
	if errors.Is(err, store.ErrNotFound) {
		return store.Compaction{}, nil
	}
	return k, err
}

// Since reports whether at is after the compaction was made.
func Since(c store.Compaction, at time.Time) bool { return at.After(c.CreatedAt) }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
