package llm

import (
	"context"
	"math"
)

// Price is what a model's tokens cost, per million tokens, in Currency
// (an ISO 4217 code such as USD). A zero CachedInput is the Input price.
type Price struct {
	Input       float64 `json:"input"`
	CachedInput float64 `json:"cachedInput,omitempty"`
	Output      float64 `json:"output"`
	Currency    string  `json:"currency,omitempty"`
}

// DefaultCurrency is the currency of a price that names none.
const DefaultCurrency = "USD"

// NanosPerUnit: costs are whole nano-units of their currency (1e-9 USD),
// so that sums of costs are exact.
const NanosPerUnit = 1_000_000_000

// Cost is what u costs at p, in nano-units of p's currency. Cached input
// tokens are charged at the cached price, the other input tokens at the
// input price; output tokens (reasoning ones among them) at the output price.
func (p Price) Cost(u Usage) int64 {
	cachedPrice := p.CachedInput
	if cachedPrice == 0 {
		cachedPrice = p.Input
	}
	cached := min(max(u.CachedInputTokens, 0), max(u.InputTokens, 0))
	perToken := func(tokens int, perMillion float64) int64 {
		// price per million tokens × 1e9 nanos ÷ 1e6 tokens
		return int64(math.Round(float64(tokens) * perMillion * (NanosPerUnit / 1e6)))
	}
	return perToken(max(u.InputTokens, 0)-cached, p.Input) + perToken(cached, cachedPrice) + perToken(max(u.OutputTokens, 0), p.Output)
}

// Metered wraps m so that every completion that ends cleanly ends with a
// usage chunk naming the provider and model and carrying the call's cost
// at price (nil: no cost). When the provider reported no usage (a gateway
// that strips it), the chunk is estimated from the request's and the
// answer's length and marked Estimated.
func Metered(m Model, provider, model string, price *Price) Model {
	return &metered{Model: m, provider: provider, model: model, price: price}
}

type metered struct {
	Model
	provider, model string
	price           *Price
}

func (m *metered) Stream(ctx context.Context, req Request) (Stream, error) {
	s, err := m.Model.Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	return &meteredStream{Stream: s, m: m, req: req}, nil
}

type meteredStream struct {
	Stream
	m       *metered
	req     Request
	cur     Chunk
	out     int // bytes of the answer so far
	seen    bool
	flushed bool
}

func (s *meteredStream) Next() bool {
	if s.flushed {
		return false
	}
	if s.Stream.Next() {
		s.cur = s.Stream.Chunk()
		s.out += len(s.cur.Text) + len(s.cur.Reasoning)
		if d := s.cur.ToolCall; d != nil {
			s.out += len(d.Name) + len(d.ArgsDelta)
		}
		if s.cur.Usage != nil {
			s.stampUsage()
		}
		return true
	}
	s.flushed = true
	if s.seen || s.Stream.Err() != nil {
		return false
	}
	s.estimate()
	return true
}

// stampUsage and estimate are Next's rare paths, in frames of their own:
// Next is on the run goroutine's stack below every wait for a token.
//
//go:noinline
func (s *meteredStream) stampUsage() {
	u := s.m.stamp(*s.cur.Usage)
	s.cur.Usage, s.seen = &u, true
}

//go:noinline
func (s *meteredStream) estimate() {
	u := s.m.stamp(Usage{InputTokens: EstimateTokens(requestBytes(s.req)), OutputTokens: EstimateTokens(s.out), Estimated: true})
	s.cur = Chunk{Usage: &u}
}

func (s *meteredStream) Chunk() Chunk { return s.cur }

// stamp names the call's provider and model on u and prices it.
func (m *metered) stamp(u Usage) Usage {
	u.Provider, u.Model = m.provider, m.model
	if m.price != nil {
		u.Cost = m.price.Cost(u)
		u.Currency = m.price.Currency
		if u.Currency == "" {
			u.Currency = DefaultCurrency
		}
	}
	return u
}

// EstimateTokens approximates the tokens of n bytes of text without a
// tokenizer: about four bytes a token, as for English with the common
// tokenizers (compaction estimates the same way).
func EstimateTokens(n int) int {
	return (n + 3) / 4
}

func requestBytes(req Request) int {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content) + len(m.Role)
		for _, p := range m.Parts {
			n += len(p.Text)
		}
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return n
}
