package tracing

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// canonicalHeader is Header as net/http keys it in a request's headers.
const canonicalHeader = "Traceparent"

// StartServer starts the server span of r, named "{method} {route}" (the
// route pattern, never the raw path: ids would make every name unique),
// as a child of the caller's traceparent when r carries one. It returns r
// with the span in its context, so what the handler calls — a forward to
// the leader, a proposal — continues the trace; with tracing off, the
// caller's context still passes through (a node that does not record
// never cuts a trace in two).
func (t *Tracer) StartServer(r *http.Request, route string) (*http.Request, trace.Span) {
	if (t == nil || !t.sdk()) && len(r.Header[canonicalHeader]) == 0 {
		// Off, and no caller's context: the no-op tracer would return r
		// and a no-op span; say so without building the span's name and
		// options on every request (issue 19, the request path).
		return r, trace.SpanFromContext(r.Context())
	}
	ctx, span := t.get().Start(Extract(r), r.Method+" "+route,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", route)))
	if !span.SpanContext().IsValid() { // off, and no caller's context to pass on
		return r, span
	}
	return r.WithContext(ctx), span
}

// EndServer ends a server span with the answer's status: 5xx marks it
// failed (OpenTelemetry's HTTP conventions leave 4xx to the client).
func EndServer(span trace.Span, status int) {
	if !span.IsRecording() {
		span.End()
		return
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	span.End()
}
