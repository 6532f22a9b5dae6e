// Package testkit holds the small helpers the node's package tests share:
// numbered job events, polling with a deadline, reading a metric. It
// imports no package of the node, so any package's internal tests may use
// it.
package testkit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// Wait bounds every WaitUntil.
const Wait = 20 * time.Second

// WaitUntil polls cond every 5 ms until it holds or Wait passes.
func WaitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Wait)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", Wait, what)
		}
		<-tick.C
	}
}

// JobEvent returns the JobCreated of job number i of tenant acme: unique
// job id and event id.
func JobEvent(i int) fsm.Event {
	j := fsmtest.NewJob(JobID(i), "acme", uint64(i)*4, "use1")
	return j.Created()
}

// JobID is the id of job number i.
func JobID(i int) string {
	return fmt.Sprintf("use1-%d-gate1-%05d", 1704931200000+int64(i/99_999), i%99_999+1)
}

// JobEvents returns the JobCreated events of jobs from..from+n-1 and
// their ids.
func JobEvents(from, n int) ([]fsm.Event, []string) {
	evs := make([]fsm.Event, n)
	ids := make([]string, n)
	for k := range n {
		evs[k], ids[k] = JobEvent(from+k), JobID(from+k)
	}
	return evs, ids
}

// MustBatch encodes events as one fsm batch.
func MustBatch(t testing.TB, events ...fsm.Event) []byte {
	t.Helper()
	b, err := fsm.EncodeBatch(events)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// MetricValue returns the value of a counter or gauge (or the sample count
// of a histogram) named name whose labels include the given pairs.
func MetricValue(t testing.TB, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, labels) {
				switch {
				case m.Counter != nil:
					return m.Counter.GetValue()
				case m.Gauge != nil:
					return m.Gauge.GetValue()
				case m.Histogram != nil:
					return float64(m.Histogram.GetSampleCount())
				}
			}
		}
	}
	t.Fatalf("metric %s%v not found", name, labels)
	return 0
}

func hasLabels(m *dto.Metric, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == pairs[i] && l.GetValue() == pairs[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Ctx is a context that ends after Wait or with the test.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	t.Cleanup(cancel)
	return ctx
}

// WantOutcomes fails unless results has one result per outcome, in order.
func WantOutcomes(t testing.TB, results []fsm.Result, want ...fsm.Outcome) {
	t.Helper()
	if len(results) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(results), len(want), results)
	}
	for i, r := range results {
		if r.Outcome != want[i] {
			t.Fatalf("result %d: %s (%v), want %s", i, r.Outcome, r.Err, want[i])
		}
	}
}
