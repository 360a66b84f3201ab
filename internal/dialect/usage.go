package dialect

import "github.com/agentchat/agentchat/internal/event"

// ModelUsage is one model's token usage in a run, in the shape AG-UI 1.0
// puts on RUN_FINISHED and RUN_ERROR (a list, one entry per provider and
// model) and the other formats reuse.
type ModelUsage struct {
	Provider          string `json:"provider,omitempty"`
	Model             string `json:"model"`
	InputTokens       int    `json:"inputTokens"`
	OutputTokens      int    `json:"outputTokens"`
	TotalTokens       int    `json:"totalTokens"`
	ReasoningTokens   int    `json:"reasoningTokens,omitempty"`
	CachedInputTokens int    `json:"cachedInputTokens,omitempty"`
}

// UsageList is u per model; a usage that names no model is one entry
// under the model "unknown"; none for a run that used nothing.
func UsageList(u event.Usage) []ModelUsage {
	if u.Empty() {
		return nil
	}
	if len(u.Models) == 0 {
		return []ModelUsage{{Model: "unknown", InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens(),
			ReasoningTokens: u.ReasoningTokens, CachedInputTokens: u.CachedInputTokens}}
	}
	out := make([]ModelUsage, len(u.Models))
	for i, m := range u.Models {
		out[i] = ModelUsage{Provider: m.Provider, Model: m.Model, InputTokens: m.InputTokens, OutputTokens: m.OutputTokens,
			TotalTokens: m.InputTokens + m.OutputTokens, ReasoningTokens: m.ReasoningTokens, CachedInputTokens: m.CachedInputTokens}
	}
	return out
}

// Usage is a run's total usage in the camelCase shape of the AI SDK's
// LanguageModelUsage, with its cost (in units of Currency) and whether
// some of it is estimated; nil for a run that used nothing.
type Usage struct {
	InputTokens       int     `json:"inputTokens"`
	OutputTokens      int     `json:"outputTokens"`
	TotalTokens       int     `json:"totalTokens"`
	ReasoningTokens   int     `json:"reasoningTokens,omitempty"`
	CachedInputTokens int     `json:"cachedInputTokens,omitempty"`
	Cost              float64 `json:"cost,omitempty"`
	Currency          string  `json:"currency,omitempty"`
	Estimated         bool    `json:"estimated,omitempty"`
}

// UsageTotal is u's totals.
func UsageTotal(u event.Usage) *Usage {
	if u.Empty() {
		return nil
	}
	return &Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens(),
		ReasoningTokens: u.ReasoningTokens, CachedInputTokens: u.CachedInputTokens,
		Cost: float64(u.Cost) / 1e9, Currency: u.Currency, Estimated: u.Estimated}
}
