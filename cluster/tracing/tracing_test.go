package tracing

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

const (
	sampledParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	parentTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	parentSpanID  = "00f067aa0ba902b7"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		bad  string // substring of the error; "" for none
	}{
		{"off", Config{}, ""},
		{"endpoint", Config{OTLPEndpoint: "http://127.0.0.1:4318/v1/traces"}, ""},
		{"https and ratio", Config{OTLPEndpoint: "https://collector:4318/v1/traces", SampleRatio: 0.25}, ""},
		{"ratio over 1", Config{OTLPEndpoint: "http://c:4318", SampleRatio: 1.5}, "tracing.sample_ratio"},
		{"negative ratio", Config{OTLPEndpoint: "http://c:4318", SampleRatio: -0.1}, "tracing.sample_ratio"},
		{"NaN ratio", Config{OTLPEndpoint: "http://c:4318", SampleRatio: math.NaN()}, "tracing.sample_ratio"},
		{"ratio without endpoint", Config{SampleRatio: 0.5}, "without tracing.otlp_endpoint"},
		{"not a URL", Config{OTLPEndpoint: "collector:4318"}, "tracing.otlp_endpoint"},
		{"other scheme", Config{OTLPEndpoint: "grpc://collector:4317"}, "tracing.otlp_endpoint"},
		{"no host", Config{OTLPEndpoint: "http:///v1/traces"}, "tracing.otlp_endpoint"},
		{"too long", Config{OTLPEndpoint: "http://c/" + strings.Repeat("a", maxEndpointBytes)}, "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.bad == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
				t.Fatalf("Validate = %v, want an error naming %q", err, tc.bad)
			}
			if _, err := New(tc.cfg, "strata-gate", "g1"); (err != nil) != (tc.bad != "") {
				t.Fatalf("New: %v", err)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		tp string
		ok bool
	}{
		{sampledParent, true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true}, // not sampled, still valid
		{"", false},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false}, // zero trace id
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false}, // zero span id
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false}, // forbidden version
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", false},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false}, // upper case
		{"00-" + strings.Repeat("a", MaxTraceparentBytes) + "-00f067aa0ba902b7-01", false},
		{"garbage", false},
	} {
		sc, ok := Parse(tc.tp)
		if ok != tc.ok {
			t.Errorf("Parse(%q) ok = %v, want %v", tc.tp, ok, tc.ok)
		}
		if ok && tc.tp == sampledParent && (sc.TraceID().String() != parentTraceID || sc.SpanID().String() != parentSpanID || !sc.IsSampled()) {
			t.Errorf("Parse(%q) = %v", tc.tp, sc)
		}
	}
}

// FuzzParse: any header value is either refused or read into a context
// that writes back as a well-formed traceparent of the same ids.
func FuzzParse(f *testing.F) {
	f.Add(sampledParent)
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
	f.Add("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra")
	f.Add("")
	f.Fuzz(func(t *testing.T, tp string) {
		sc, ok := Parse(tp)
		if !ok {
			return
		}
		if len(tp) > MaxTraceparentBytes {
			t.Fatalf("accepted %d bytes", len(tp))
		}
		out := Traceparent(trace.ContextWithSpanContext(context.Background(), sc))
		back, ok := Parse(out)
		if !ok || back.TraceID() != sc.TraceID() || back.SpanID() != sc.SpanID() || back.TraceFlags() != sc.TraceFlags() {
			t.Fatalf("Parse(%q) = %v; written back as %q = %v", tp, sc, out, back)
		}
	})
}

func TestServerSpanContinuesTheCallersTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := WithExporter(exp, "strata-gate", "g1")
	defer tr.Close()

	// The server span is the caller's child; an outbound call made with
	// the request's context carries the server span on.
	var sent string
	next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent = r.Header.Get(Header)
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
	})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, span := tr.StartServer(r, "/v1/jobs")
		out, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, "http://127.0.0.1:1/v1/jobs", http.NoBody)
		if _, err := (Transport{Next: next}).RoundTrip(out); err != nil {
			t.Error(err)
		}
		EndServer(span, http.StatusServiceUnavailable)
	})
	req := httptest.NewRequest(http.MethodPost, "/v1/jobs", http.NoBody)
	req.Header.Set(Header, sampledParent)
	h.ServeHTTP(httptest.NewRecorder(), req)

	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if s.Name != "POST /v1/jobs" || s.SpanKind != trace.SpanKindServer {
		t.Errorf("span %q kind %v", s.Name, s.SpanKind)
	}
	if s.SpanContext.TraceID().String() != parentTraceID || s.Parent.SpanID().String() != parentSpanID || !s.Parent.IsRemote() {
		t.Errorf("span %v has parent %v, want the caller's", s.SpanContext, s.Parent)
	}
	if s.Status.Code != codes.Error {
		t.Errorf("a 503 left status %v", s.Status)
	}
	want := "00-" + parentTraceID + "-" + s.SpanContext.SpanID().String() + "-01"
	if sent != want {
		t.Errorf("outbound traceparent %q, want %q", sent, want)
	}
}

func TestOffPassesTheCallersContextOn(t *testing.T) {
	for _, tr := range []*Tracer{nil, Off()} {
		req := httptest.NewRequest(http.MethodGet, "/v1/jobs/x", http.NoBody)
		req.Header.Set(Header, sampledParent)
		r, span := tr.StartServer(req, "/v1/jobs/{id}")
		EndServer(span, http.StatusOK)
		if got := Traceparent(r.Context()); got != sampledParent {
			t.Errorf("off tracer: outbound traceparent %q, want the caller's %q", got, sampledParent)
		}
		plain, span := tr.StartServer(httptest.NewRequest(http.MethodGet, "/livez", http.NoBody), "/livez")
		EndServer(span, http.StatusOK)
		if got := Traceparent(plain.Context()); got != "" {
			t.Errorf("off tracer without a caller's context made one: %q", got)
		}
	}
}

// With tracing off, a request without a caller's context costs nothing:
// the same request back, a no-op span, no allocation (issue 19).
func TestOffCostsNothingWithoutACallersContext(t *testing.T) {
	for _, tr := range []*Tracer{nil, Off()} {
		req := httptest.NewRequest(http.MethodPost, "/v1/jobs", http.NoBody)
		allocs := testing.AllocsPerRun(100, func() {
			r, span := tr.StartServer(req, "/v1/jobs")
			EndServer(span, http.StatusCreated)
			if r != req || span.IsRecording() {
				t.Fatal("off tracer made a new request or a recording span")
			}
		})
		if allocs != 0 {
			t.Errorf("off tracer: %v allocations per request, want 0", allocs)
		}
	}
}

func TestStartRemote(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := WithExporter(exp, "strata-manager", "m1")
	_, span := tr.StartRemote(context.Background(), sampledParent, "workflow.dispatch")
	span.End()
	_, orphan := tr.StartRemote(context.Background(), "not-a-traceparent", "workflow.dispatch")
	orphan.End()
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	if spans[0].SpanContext.TraceID().String() != parentTraceID || spans[0].Parent.SpanID().String() != parentSpanID {
		t.Errorf("child of the recorded context: %v parent %v", spans[0].SpanContext, spans[0].Parent)
	}
	if spans[1].Parent.IsValid() || spans[1].SpanContext.TraceID().String() == parentTraceID {
		t.Errorf("a malformed recorded context must start a trace of its own: %v", spans[1])
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
