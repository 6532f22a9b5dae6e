package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
)

// clockedForwarder is a manager's forwarder over a bolt-backed regional
// ledger on a manual clock, with a Deliverer that fails while fail says
// so and a Submitter that records the positions proposed.
type clockedForwarder struct {
	h          *incrHarness
	side       *incrSide
	f          *forwarder
	reg        *prometheus.Registry
	fail       bool
	deliveries int
	delivered  []fsm.Event
	marks      []fsm.ForwardPosition
}

func newClockedForwarder(t *testing.T) *clockedForwarder {
	c := &clockedForwarder{h: &incrHarness{t: t, now: time.UnixMilli(1_700_000_000_000)}, reg: prometheus.NewRegistry()}
	now := func() time.Time { return c.h.now }
	c.side = newIncrSide(t, false, "use1", now)
	cfg := testConfig(false, "use1", c.side.store, c.side.ledger, now)
	cfg.Registerer = c.reg
	cfg.Deliverer = fakeDeliverer{deliver: func(_ context.Context, group string, batch []byte) ([]fsm.Result, error) {
		c.deliveries++
		if group != testGlobalGroup {
			return nil, fmt.Errorf("delivered to %q", group)
		}
		if c.fail {
			return nil, errors.New("gates unreachable")
		}
		evs, err := fsm.DecodeBatch(batch)
		c.delivered = append(c.delivered, evs...)
		return make([]fsm.Result, len(evs)), err
	}}
	cfg.Submitter = fakeSubmitter{submit: func(_ context.Context, events []fsm.Event) ([]fsm.Result, error) {
		for _, e := range events {
			if m, ok := e.Body.(*fsm.ForwardMark); ok {
				c.marks = append(c.marks, m.Marks...)
			}
		}
		return make([]fsm.Result, len(events)), nil
	}}
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.f = newForwarder(l)
	if !c.f.start(t.Context()) {
		t.Fatal("forwarder did not start")
	}
	return c
}

// accept puts count jobs accepted by use1 in the regional ledger: count
// forwardable events.
func (c *clockedForwarder) accept(count int) {
	for i := range count {
		id := fmt.Sprintf("use1-%d-g1-%05d", c.h.now.UnixMilli(), i+1)
		spec := fsm.JobSpec{Tenant: "acme", Regions: []string{"use1"}, Timeout: fsm.Duration(time.Hour),
			Workflows: []fsm.WorkflowSpec{{Name: "load", Count: 1, Duration: fsm.Duration(time.Second), Rate: 10}}}
		c.h.apply(c.side, fsm.Event{ID: commit.NewEventID(), Type: fsm.TypeJobCreated, JobID: id, Tenant: "acme", Fence: 1,
			Body: &fsm.JobCreated{Spec: spec, AssignedRegions: spec.Regions}},
			fsm.Event{ID: commit.NewEventID(), Type: fsm.TypeJobAccepted, JobID: id, Tenant: "acme", Fence: 1,
				Body: &fsm.JobAccepted{Region: "use1", WorkerCount: 1}})
	}
}

func (c *clockedForwarder) metric(name string, labels ...string) float64 {
	return testkit.MetricValue(c.h.t, c.reg, "strata_forwarder_"+name, labels...)
}

// A forwarder whose deliveries fail backs off 100 ms, 200 ms, … while
// its breaker is closed; the fifth failure opens the breaker, which
// refuses to send for the cooldown, lets one probe through after it
// (a failed probe opens it again, for another cooldown), and closes on
// the probe's success, which delivers the queue and records the
// position. All on a manual clock: no step waits.
func TestForwarder_BackoffAndBreakerOnAnInjectedClock(t *testing.T) {
	c := newClockedForwarder(t)
	c.accept(3)
	ctx := t.Context()
	step := func(wantWait time.Duration, wantErr bool, wantDeliveries int) {
		t.Helper()
		wait, err := c.f.step(ctx)
		c.f.report(err)
		if wait != wantWait || (err != nil) != wantErr || c.deliveries != wantDeliveries {
			t.Fatalf("step at +%s: wait %s, err %v, %d deliveries; want wait %s, error %t, %d deliveries",
				c.h.now.Sub(time.UnixMilli(1_700_000_000_000)), wait, err, c.deliveries, wantWait, wantErr, wantDeliveries)
		}
	}
	breaker := func(want string) {
		t.Helper()
		if st := c.f.Status(); st.Breaker != want {
			t.Fatalf("breaker %s, want %s (status %+v)", st.Breaker, want, st)
		}
	}

	c.fail = true
	for i, backoff := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond} {
		step(backoff, true, i+1)
		breaker("closed")
	}
	step(1600*time.Millisecond, true, 5) // the fifth failure opens it
	breaker("open")
	opened := c.h.now
	if got, want := c.f.Status().HalfOpenAt, opened.Add(30*time.Second).UTC().Format(time.RFC3339Nano); got != want {
		t.Fatalf("half-open at %s, want %s (the injected clock's time of the failure plus the cooldown)", got, want)
	}
	if st := c.f.Status(); st.QueueDepth != 3 || st.LastError == "" {
		t.Fatalf("status while open: %+v, want 3 queued and the last error", st)
	}

	// Open: nothing goes out until the cooldown passed.
	step(30*time.Second, false, 5)
	c.h.now = opened.Add(30*time.Second - time.Millisecond)
	step(reconcileCoalesce, false, 5) // 1 ms to go: at least the coalesce pause
	// The cooldown passed: one probe, which fails and opens it again.
	c.h.now = opened.Add(30 * time.Second)
	step(3200*time.Millisecond, true, 6)
	breaker("open")
	if got := c.metric("lag_seconds"); got != 30 {
		t.Fatalf("lag %vs, want 30 (the oldest queued event is 30 s old on the injected clock)", got)
	}
	step(30*time.Second, false, 6)

	// The next probe succeeds: closed, the queue delivered, the position
	// recorded, and the backoff starts afresh.
	c.fail = false
	c.h.now = c.h.now.Add(30 * time.Second)
	step(0, false, 7)
	breaker("closed")
	if len(c.delivered) != 3 || len(c.f.queue) != 0 {
		t.Fatalf("%d events delivered, %d queued; want 3 and 0", len(c.delivered), len(c.f.queue))
	}
	if len(c.marks) != 1 || c.marks[0].Tenant != "acme" || c.marks[0].Seq != 6 {
		t.Fatalf("positions proposed %+v, want acme at 6 (its chain: 3 × JobCreated + JobAccepted)", c.marks)
	}
	if c.f.backoff != 0 {
		t.Fatalf("backoff %s after a success, want 0", c.f.backoff)
	}
	for _, m := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"breaker_transitions_total", []string{"to", "open"}, 2},
		{"breaker_transitions_total", []string{"to", "half-open"}, 2},
		{"breaker_transitions_total", []string{"to", "closed"}, 1},
		{"breaker_state", nil, 0},
		{"failures_total", nil, 6},
		{"events_total", nil, 3},
		{"queue_depth", nil, 3}, // as the last fill read it, before the delivery
	} {
		if got := c.metric(m.name, m.labels...); got != m.want {
			t.Errorf("strata_forwarder_%s%v = %v, want %v", m.name, m.labels, got, m.want)
		}
	}
}
