package lifecycle

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// Shorter names for the shared test helpers.
var (
	waitUntil = testkit.WaitUntil
	jobEvent  = testkit.JobEvent
	jobID     = testkit.JobID
	jobEvents = testkit.JobEvents
	mustBatch = testkit.MustBatch
)

// Fakes of the interfaces a Lifecycle consumes, for tests that drive its
// steps directly: nothing is proposed or delivered unless a test says so.
type (
	fakeSubmitter struct {
		submit func(ctx context.Context, events []fsm.Event) ([]fsm.Result, error)
	}
	fakeDeliverer struct {
		deliver func(ctx context.Context, group string, batch []byte) ([]fsm.Result, error)
	}
	fakeLeadership struct{ leader bool }
	fakeApplied    struct{}
)

func (f fakeSubmitter) Submit(ctx context.Context, events []fsm.Event) ([]fsm.Result, error) {
	if f.submit == nil {
		return make([]fsm.Result, len(events)), nil
	}
	return f.submit(ctx, events)
}

func (f fakeDeliverer) Deliver(ctx context.Context, group string, batch []byte) ([]fsm.Result, error) {
	if f.deliver == nil {
		return nil, nil
	}
	return f.deliver(ctx, group, batch)
}

func (f fakeLeadership) IsLeader() bool            { return f.leader }
func (fakeLeadership) Barrier(time.Duration) error { return nil }
func (fakeApplied) Changed() <-chan struct{}       { return make(chan struct{}) }

// testStamper stamps as node n1 of region with an HLC on now.
func testStamper(now func() time.Time, region string) *commit.Stamper {
	c, err := hlc.New(hlc.Config{Node: 1, Physical: func() int64 { return now().UnixMilli() }, Persister: &hlc.MemoryPersister{}})
	if err != nil {
		panic(err)
	}
	s, err := commit.NewStamper(c, "n1", region)
	if err != nil {
		panic(err)
	}
	return s
}

// testConfig is a Config with fakes for every dependency but store,
// positions and the wall clock now.
func testConfig(global bool, region string, store Store, positions Positions, now func() time.Time) Config {
	return Config{NodeID: "n1", Region: region, Global: global, Group: region, Store: store, Positions: positions,
		Submitter: fakeSubmitter{}, Deliverer: fakeDeliverer{}, Leadership: fakeLeadership{}, Applied: fakeApplied{},
		Stamper: testStamper(now, region), Now: now, ReconcileInterval: 250 * time.Millisecond,
		WorkerAckWindow: 5 * time.Second, BreakerCooldown: 30 * time.Second}
}

// allEnded reports every delivery of w as ended, as a driver would once
// they all returned.
func allEnded(w globalWork) globalResult {
	return globalResult{ended: slices.Sorted(maps.Keys(w.deliver))}
}
