package telemetry

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentchat/agentchat/internal/llm"
)

// Model wraps m so that each call is a chat span (a child of the run's span)
// and its tokens are counted by model. provider is the GenAI provider name
// (openai, anthropic, scripted…), model the configured model name.
func (t *Telemetry) Model(m llm.Model, provider, model string) llm.Model {
	if t == nil {
		return m
	}
	return &observedModel{Model: m, t: t, provider: provider, model: model}
}

type observedModel struct {
	llm.Model
	t               *Telemetry
	provider, model string
}

func (m *observedModel) Stream(ctx context.Context, req llm.Request) (llm.Stream, error) {
	model := req.Model
	if model == "" {
		model = m.model
	}
	ctx, span := m.t.tracer.Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			semconv.GenAIOperationNameChat,
			semconv.GenAIProviderNameKey.String(m.provider),
			semconv.GenAIRequestModel(model),
			attribute.Int("agentchat.llm.tools", len(req.Tools)),
		))
	s, err := m.Model.Stream(ctx, req)
	if err != nil {
		m.fail(span, model, err)
		return nil, err
	}
	return &observedStream{Stream: s, m: m, span: span, model: model, run: fromContext(ctx)}, nil
}

func (m *observedModel) fail(span trace.Span, model string, err error) {
	m.t.m.modelCalls.WithLabelValues(model, "error").Inc()
	code := llm.CodeUnknown
	var le *llm.Error
	if errors.As(err, &le) {
		code = le.Code
	}
	span.SetAttributes(semconv.ErrorTypeKey.String(code))
	span.SetStatus(codes.Error, code)
	span.End()
}

// observedStream ends the call's span when the stream ends or is closed,
// whichever comes first.
type observedStream struct {
	llm.Stream
	m     *observedModel
	span  trace.Span
	model string
	run   *Run
	usage llm.Usage
	seen  bool // usage reported
	done  bool
	fin   string
}

func (s *observedStream) Next() bool {
	if s.Stream.Next() {
		c := s.Stream.Chunk()
		if c.Usage != nil {
			s.usage, s.seen = *c.Usage, true
		}
		if c.FinishReason != "" {
			s.fin = c.FinishReason
		}
		return true
	}
	s.end(s.Stream.Err())
	return false
}

func (s *observedStream) Close() error {
	err := s.Stream.Close()
	s.end(nil)
	return err
}

func (s *observedStream) end(err error) {
	if s.done {
		return
	}
	s.done = true
	m := s.m
	if s.seen {
		tenant := ""
		if s.run != nil {
			tenant = s.run.run.Tenant
		}
		m.t.m.tokens.WithLabelValues(m.t.tenant(tenant, s.model, "input")...).Add(float64(s.usage.InputTokens))
		m.t.m.tokens.WithLabelValues(m.t.tenant(tenant, s.model, "output")...).Add(float64(s.usage.OutputTokens))
		s.span.SetAttributes(semconv.GenAIUsageInputTokens(s.usage.InputTokens), semconv.GenAIUsageOutputTokens(s.usage.OutputTokens))
	}
	if s.fin != "" {
		s.span.SetAttributes(semconv.GenAIResponseFinishReasons(s.fin))
	}
	if s.run != nil {
		s.run.sawModel(m.provider, s.model, s.fin)
	}
	if err != nil {
		m.fail(s.span, s.model, err)
		return
	}
	m.t.m.modelCalls.WithLabelValues(s.model, "ok").Inc()
	s.span.End()
}
