// Package tracing gives a node OpenTelemetry spans for a job's path —
// submit, admission, dispatch, lease, worker execution, completion — with
// the W3C trace context (`traceparent`) carried from the client through
// gates and managers to workers (issue 18 §4).
//
// Tracing is off by default: a Tracer built from the zero Config is
// OpenTelemetry's no-op, so every Start costs a context lookup and nothing
// is recorded or sent. With an OTLP endpoint configured, spans are batched
// and exported over OTLP/HTTP; tests hand in an exporter of their own
// (tracetest.InMemoryExporter) and get every span synchronously.
//
// A job outlives the request that created it and crosses Raft groups, so
// its trace context cannot ride on a Go context alone: the gate records the
// submit's `traceparent` with the job (fsm's spec extension), and managers
// and workers start their spans as children of that recorded context
// (Remote). The header format is the W3C one, parsed by OpenTelemetry's
// propagator; Parse bounds it before anything else reads it.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Header is the W3C trace context header.
const Header = "traceparent"

// Limits (the config is input too).
const (
	maxEndpointBytes = 2048
	// exportTimeout bounds one OTLP export; shutdownTimeout the final flush.
	exportTimeout   = 10 * time.Second
	shutdownTimeout = 5 * time.Second
	// maxQueuedSpans bounds the spans waiting for export: a collector that
	// is down costs at most this much memory, then spans are dropped.
	maxQueuedSpans = 8192
)

// Config is the node's tracing: {otlp_endpoint, sample_ratio} block.
// The zero value is off.
type Config struct {
	// OTLPEndpoint is the collector's OTLP/HTTP traces URL, e.g.
	// https://otel-collector:4318/v1/traces; empty: tracing off.
	OTLPEndpoint string `koanf:"otlp_endpoint"`
	// SampleRatio is the share of new traces recorded, in [0, 1]; a
	// request that arrives with a sampled traceparent is always recorded
	// (parent-based). 0 means 1 when an endpoint is set.
	SampleRatio float64 `koanf:"sample_ratio"`
}

// Enabled reports whether spans are exported.
func (c Config) Enabled() bool { return c.OTLPEndpoint != "" }

// Validate checks the block; the errors name the config keys.
func (c Config) Validate() error {
	var errs []error
	if !(c.SampleRatio >= 0 && c.SampleRatio <= 1) { // NaN too
		errs = append(errs, fmt.Errorf("tracing.sample_ratio: %v is not in [0, 1]", c.SampleRatio))
	}
	if c.OTLPEndpoint != "" {
		if len(c.OTLPEndpoint) > maxEndpointBytes {
			errs = append(errs, fmt.Errorf("tracing.otlp_endpoint: longer than %d bytes", maxEndpointBytes))
		} else if u, err := url.Parse(c.OTLPEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("tracing.otlp_endpoint: %q is not an http(s) URL", c.OTLPEndpoint))
		}
	} else if c.SampleRatio != 0 {
		errs = append(errs, errors.New("tracing.sample_ratio: set without tracing.otlp_endpoint"))
	}
	return errors.Join(errs...)
}

// Tracer starts a node's spans. The zero Tracer and a nil one are off.
type Tracer struct {
	tp       trace.TracerProvider
	tracer   trace.Tracer
	shutdown func(context.Context) error
}

// propagator reads and writes traceparent (and tracestate).
var propagator = propagation.TraceContext{}

// New builds the tracer of node (its service instance) from cfg: a no-op
// one when cfg is off.
func New(cfg Config, service, node string) (*Tracer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return Off(), nil
	}
	u, _ := url.Parse(cfg.OTLPEndpoint) // validated
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(u.String()), otlptracehttp.WithTimeout(exportTimeout)}
	exp, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	ratio := cfg.SampleRatio
	if ratio == 0 {
		ratio = 1
	}
	return newSDK(sdktrace.NewBatchSpanProcessor(exp, sdktrace.WithMaxQueueSize(maxQueuedSpans)), ratio, service, node), nil
}

// WithExporter builds a tracer that records every span and hands it to exp
// as it ends (tests: tracetest.NewInMemoryExporter).
func WithExporter(exp sdktrace.SpanExporter, service, node string) *Tracer {
	return newSDK(sdktrace.NewSimpleSpanProcessor(exp), 1, service, node)
}

func newSDK(sp sdktrace.SpanProcessor, ratio float64, service, node string) *Tracer {
	res := resource.NewSchemaless(attribute.String("service.name", service), attribute.String("service.instance.id", node))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(sp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
	)
	return &Tracer{tp: tp, tracer: tp.Tracer("github.com/strata-ledger/strata"), shutdown: tp.Shutdown}
}

// sdk reports whether t records spans (not the no-op tracer).
func (t *Tracer) sdk() bool {
	_, ok := t.tp.(*sdktrace.TracerProvider)
	return ok
}

// Off is the tracer that records nothing.
func Off() *Tracer {
	tp := noop.NewTracerProvider()
	return &Tracer{tp: tp, tracer: tp.Tracer("")}
}

func (t *Tracer) get() trace.Tracer {
	if t == nil || t.tracer == nil {
		return noop.NewTracerProvider().Tracer("")
	}
	return t.tracer
}

// Start starts a span named name as a child of ctx's span.
func (t *Tracer) Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return t.get().Start(ctx, name, trace.WithAttributes(attrs...))
}

// StartRemote starts a span named name whose parent is the recorded trace
// context tp (a traceparent value: the job's, or a lease's). An empty or
// malformed tp starts a new trace, linked to nothing: a bad header never
// fails the work it describes.
func (t *Tracer) StartRemote(ctx context.Context, tp, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if sc, ok := Parse(tp); ok {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return t.get().Start(ctx, name, trace.WithAttributes(attrs...))
}

// Close flushes what is queued, bounded by shutdownTimeout.
func (t *Tracer) Close() error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return t.shutdown(ctx)
}

// Fail marks span as failed with err (nil: nothing).
func Fail(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}

// Traceparent is ctx's span context as a traceparent value, "" when ctx
// carries none: what a node records with a job or sends with a lease.
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagator.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	return c[Header]
}

// MaxTraceparentBytes bounds a traceparent value: version 00 is 55 bytes;
// later versions may append fields, which the W3C spec lets a parser of 00
// ignore, so a little room is left.
const MaxTraceparentBytes = 128

// Parse reads a traceparent value. ok is false for an empty, oversized or
// malformed one, or one with an all-zero trace or span id.
func Parse(tp string) (sc trace.SpanContext, ok bool) {
	if tp == "" || len(tp) > MaxTraceparentBytes {
		return trace.SpanContext{}, false
	}
	ctx := propagator.Extract(context.Background(), propagation.MapCarrier{Header: tp})
	sc = trace.SpanContextFromContext(ctx)
	return sc, sc.IsValid()
}

// Extract returns r's context with the caller's trace context as the
// remote parent, when r carries a valid traceparent.
func Extract(r *http.Request) context.Context {
	tp := r.Header.Get(Header)
	sc, ok := Parse(tp)
	if !ok {
		return r.Context()
	}
	return trace.ContextWithRemoteSpanContext(r.Context(), sc)
}

// Transport injects the trace context of each request's context into its
// headers, so a node's outbound calls (forwarded requests, node-to-node
// calls) continue the trace of the work that made them.
type Transport struct{ Next http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (t Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if tp := Traceparent(r.Context()); tp != "" && r.Header.Get(Header) != tp {
		r = r.Clone(r.Context())
		r.Header.Set(Header, tp)
	}
	return t.Next.RoundTrip(r)
}
