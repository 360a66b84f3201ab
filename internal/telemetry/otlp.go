package telemetry

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// TracerFromEnv builds an OTLP-exporting tracer provider from the standard
// OTEL_* variables, or returns nil (no tracing) when none asks for one:
// tracing is on when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, or OTEL_TRACES_EXPORTER=otlp;
// OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true turn it off. The
// protocol is OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or
// OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf by default, or grpc); the
// exporters read their endpoint, headers, timeout and TLS settings, and the
// SDK its sampler (OTEL_TRACES_SAMPLER) and batching (OTEL_BSP_*), from the
// environment themselves. OTEL_SERVICE_NAME defaults to agentchat.
func TracerFromEnv(ctx context.Context, getenv func(string) string, version string) (*sdktrace.TracerProvider, error) {
	exp := strings.ToLower(getenv("OTEL_TRACES_EXPORTER"))
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || exp == "none" {
		return nil, nil
	}
	if exp == "" && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil, nil
	}
	if exp != "" && exp != "otlp" {
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER: only otlp and none are supported, not %q", exp)
	}
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var (
		exporter sdktrace.SpanExporter
		err      error
	)
	switch proto {
	case "", "http/protobuf":
		exporter, err = otlptracehttp.New(ctx)
	case "grpc":
		exporter, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL: want http/protobuf or grpc, not %q", proto)
	}
	if err != nil {
		return nil, fmt.Errorf("otlp exporter: %w", err)
	}
	res, err := resource.Merge(
		resource.NewSchemaless(semconv.ServiceName("agentchat"), semconv.ServiceVersion(version)),
		resource.Environment(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil {
		return nil, fmt.Errorf("otel resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res)), nil
}
