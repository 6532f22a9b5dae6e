package cluster

import (
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/strata-ledger/strata/cluster/tracing"
	"github.com/strata-ledger/strata/transport/api"
)

// clientParent is the caller's trace context in these tests.
const clientParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// startTracedCluster starts a test cluster whose nodes record their spans
// into exp, each under its own service instance (its node id).
func startTracedCluster(t *testing.T, subnet int, exp *tracetest.InMemoryExporter) *testCluster {
	return startNodesWith(t, subnet, false, func(c *testCluster) {
		c.tracer = func(id string) *tracing.Tracer {
			tr := tracing.WithExporter(exp, "strata-test", id)
			t.Cleanup(func() { _ = tr.Close() })
			return tr
		}
	})
}

// spansOf returns the spans of exp in trace id, by the node that recorded
// them.
func spansOf(exp *tracetest.InMemoryExporter, traceID string) map[string][]tracetest.SpanStub {
	out := map[string][]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID().String() != traceID {
			continue
		}
		node := ""
		for _, a := range s.Resource.Attributes() {
			if a.Key == "service.instance.id" {
				node = a.Value.AsString()
			}
		}
		out[node] = append(out[node], s)
	}
	return out
}

// A strong read sent to a follower gate is answered by the leader: the
// follower's server span is the client's child, the leader's is the
// follower's, and one trace holds both.
func TestNode_TraceFollowsARequestThroughTheNodes(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	c := startTracedCluster(t, 146, exp)
	ids := c.submitJobs(1)
	leader, follower := c.leader(RoleGate), c.followers(RoleGate)[0]

	r := c.call(follower, "GET", "/v1/jobs/"+ids[0]+"?consistency=strong", testAcmeToken, nil, api.HeaderTraceparent, clientParent)
	if r.status != http.StatusOK {
		t.Fatalf("read: %d %s", r.status, r.body)
	}
	parent, _ := tracing.Parse(clientParent)
	byNode := spansOf(exp, parent.TraceID().String())
	fs, ls := serverSpan(t, byNode[follower], "GET /v1/jobs/{id}"), serverSpan(t, byNode[leader], "GET /v1/jobs/{id}")
	if fs.Parent.SpanID() != parent.SpanID() || !fs.Parent.IsRemote() {
		t.Errorf("follower's span has parent %v, want the client's %v", fs.Parent.SpanID(), parent.SpanID())
	}
	if ls.Parent.SpanID() != fs.SpanContext.SpanID() {
		t.Errorf("leader's span has parent %v, want the follower's %v", ls.Parent.SpanID(), fs.SpanContext.SpanID())
	}

	// A malformed traceparent starts a trace of the node's own and fails
	// nothing.
	r = c.call(follower, "GET", "/v1/jobs/"+ids[0], testAcmeToken, nil, api.HeaderTraceparent, "00-zz-yy-01")
	if r.status != http.StatusOK {
		t.Fatalf("read with a malformed traceparent: %d %s", r.status, r.body)
	}
}

// serverSpan returns the one server span named name among spans.
func serverSpan(t *testing.T, spans []tracetest.SpanStub, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name && s.SpanKind == trace.SpanKindServer {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d server spans %q among %d", len(found), name, len(spans))
	}
	return found[0]
}
