package lifecycle

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
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

// testGlobalGroup is the global group's name in tests.
const testGlobalGroup = "global"

// testConfig is a Config with fakes for every dependency but store,
// positions and the wall clock now.
func testConfig(global bool, region string, store Store, positions Positions, now func() time.Time) Config {
	return Config{NodeID: "n1", Region: region, Global: global, Group: region, GlobalGroup: testGlobalGroup, Store: store, Positions: positions,
		Submitter: fakeSubmitter{}, Deliverer: fakeDeliverer{}, Leadership: fakeLeadership{}, Applied: fakeApplied{},
		Stamper: testStamper(now, region), Now: now, ReconcileInterval: 250 * time.Millisecond,
		WorkerAckWindow: 5 * time.Second, BreakerCooldown: 30 * time.Second}
}

// allEnded reports every delivery of w as ended, as a driver would once
// they all returned.
func allEnded(w globalWork) globalResult {
	return globalResult{ended: slices.Sorted(maps.Keys(w.deliver))}
}

// switchLeadership is a Leadership the test turns on and off. Its
// Barrier fails the first failBarriers times, and takes barrierTook (a
// virtual time inside a synctest bubble).
type switchLeadership struct {
	leader       atomic.Bool
	failBarriers atomic.Int32
	barrierTook  time.Duration
	barriers     atomic.Int32
}

func (f *switchLeadership) IsLeader() bool { return f.leader.Load() }

func (f *switchLeadership) Barrier(time.Duration) error {
	f.barriers.Add(1)
	time.Sleep(f.barrierTook)
	if f.failBarriers.Add(-1) >= 0 {
		return errors.New("barrier: not yet")
	}
	return nil
}

// bumpApplied is an Applied the test moves: bump is an apply.
type bumpApplied struct {
	mu sync.Mutex
	ch chan struct{}
}

func newBumpApplied() *bumpApplied { return &bumpApplied{ch: make(chan struct{})} }

func (a *bumpApplied) Changed() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ch
}

func (a *bumpApplied) bump() {
	a.mu.Lock()
	close(a.ch)
	a.ch = make(chan struct{})
	a.mu.Unlock()
}

// logRecords is a slog.Handler that keeps each record as its message
// and, when it has one, its err: "message: err".
type logRecords struct {
	mu   sync.Mutex
	recs []string
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	s := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" {
			s += ": " + a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	h.recs = append(h.recs, s)
	h.mu.Unlock()
	return nil
}

func (h *logRecords) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecords) WithGroup(string) slog.Handler      { return h }

// with returns the records whose message starts with prefix, in order.
func (h *logRecords) with(prefix string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, s := range h.recs {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}
