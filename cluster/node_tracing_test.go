package cluster

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/strata-ledger/strata/cluster/tracing"
	"github.com/strata-ledger/strata/cluster/worker"
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

// One job's trace, from the client to the worker: the gate's submit and
// admission, the region's dispatch and lease, the worker's execution and
// the gate's terminal decision all join the trace the client's
// traceparent names.
func TestNode_TraceOfAJobFromClientToWorker(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	c := startNodesWith(t, 146, true, func(c *testCluster) {
		c.tracer = func(id string) *tracing.Tracer {
			tr := tracing.WithExporter(exp, "strata-test", id)
			t.Cleanup(func() { _ = tr.Close() })
			return tr
		}
	})
	var addrs []string
	for _, id := range []string{"m1", "m2", "m3"} {
		addrs = append(addrs, c.cfg(id).HTTPAddr)
	}
	cl, err := api.New(api.ClientConfig{Addrs: addrs, Token: testAdminToken})
	if err != nil {
		t.Fatal(err)
	}
	wtr := tracing.WithExporter(exp, "strata-worker", "w1")
	r, err := worker.New(worker.Config{Client: cl, Region: "use1", Capacity: 2, WorkerID: "w1",
		Logger: slog.New(slog.DiscardHandler), ProgressInterval: 200 * time.Millisecond, LeaseWait: 2 * time.Second,
		Trace: tracing.WorkerTrace(wtr)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait(); _ = wtr.Close() })
	wg.Go(func() { _ = r.Run(ctx) })

	body := []byte(`{"tenant":"acme","regions":["use1"],"timeout":"5m","workflows":[{"name":"checkout","count":1,"duration":"500ms","rate":10,"failure_ratio":0}]}`)
	sub := c.call("g2", "POST", "/v1/jobs", testAcmeToken, body, api.HeaderTraceparent, clientParent)
	if sub.status != http.StatusCreated {
		t.Fatalf("submit: %d %s", sub.status, sub.body)
	}
	var created api.SubmitJobResponse
	sub.decode(t, &created)
	c.waitFor("the job COMPLETED", func() bool {
		r := c.call("g1", "GET", "/v1/jobs/"+created.JobID+"?consistency=strong", testAcmeToken, nil)
		var st struct{ Status string }
		return r.status == http.StatusOK && json.Unmarshal(r.body, &st) == nil && st.Status == "COMPLETED"
	})
	parent, _ := tracing.Parse(clientParent)
	want := []string{"POST /v1/jobs", tracing.SpanAdmission, tracing.SpanDispatch, tracing.SpanLease, tracing.SpanExecute, tracing.SpanComplete}
	c.waitFor("every step of the job in its trace", func() bool {
		names := map[string]bool{}
		for _, spans := range spansOf(exp, parent.TraceID().String()) {
			for _, s := range spans {
				names[s.Name] = true
			}
		}
		for _, n := range want {
			if !names[n] {
				return false
			}
		}
		return true
	})
	byNode := spansOf(exp, parent.TraceID().String())
	if len(byNode["w1"]) == 0 || byNode["w1"][0].Name != tracing.SpanExecute {
		t.Errorf("the worker's spans in the trace: %v", byNode["w1"])
	}
	submit := serverSpan(t, byNode["g2"], "POST /v1/jobs")
	if submit.Parent.SpanID() != parent.SpanID() {
		t.Errorf("the submit's parent is %v, want the client's %v", submit.Parent.SpanID(), parent.SpanID())
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
