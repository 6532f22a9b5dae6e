package lifecycle

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/memstore"
)

// Deterministic tests of the loops — the reconcile loop and the leader
// loop (Run) — in testing/synctest bubbles: their tickers and timers run
// on the bubble's virtual clock, and synctest.Wait returns once every
// goroutine of the bubble is blocked, so a test moves time to a point and
// looks, without sleeping for real or polling.

// loopInterval is the ReconcileInterval of the loop tests (testConfig's).
const loopInterval = 250 * time.Millisecond

// newLoopLifecycle returns a manager's Lifecycle of region use1 over a
// memstore ledger, with the virtual clock of the bubble it is made in.
func newLoopLifecycle(t *testing.T, global bool, edit func(*Config)) (*Lifecycle, *fsm.Ledger) {
	t.Helper()
	st := memstore.New()
	led, err := fsm.New(fsm.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(global, "use1", st, led, time.Now)
	if edit != nil {
		edit(&cfg)
	}
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l, led
}

// sleepUntil sleeps until at has passed since start (virtual time).
func sleepUntil(start time.Time, at time.Duration) {
	time.Sleep(time.Until(start.Add(at)))
}

func TestReconcileLoop_PassesOnTicksAndCoalescedApplies(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name string
		// bumps are the times of applies; bumpDuring is the pass (1-based)
		// during which an apply lands (0: none).
		bumps      []time.Duration
		bumpDuring int
		until      time.Duration
		want       []time.Duration // when passes ran
	}{
		{name: "quiet: one pass per interval", until: 3*loopInterval + ms,
			want: []time.Duration{0, loopInterval, 2 * loopInterval, 3 * loopInterval}},
		{name: "a burst within the coalesce window: one pass", bumps: []time.Duration{50 * ms, 51 * ms, 53 * ms, 55 * ms, 59 * ms},
			until: 200 * ms, want: []time.Duration{0, 60 * ms}},
		{name: "applies further apart than the window: a pass each", bumps: []time.Duration{50 * ms, 65 * ms},
			until: 200 * ms, want: []time.Duration{0, 60 * ms, 75 * ms}},
		{name: "an apply during a pass: one more pass, a window later", bumpDuring: 1,
			until: 200 * ms, want: []time.Duration{0, reconcileCoalesce}},
		{name: "applies do not move the ticks", bumps: []time.Duration{100 * ms},
			until: loopInterval + ms, want: []time.Duration{0, 110 * ms, loopInterval}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				applied := newBumpApplied()
				l, _ := newLoopLifecycle(t, true, func(c *Config) { c.Applied = applied })
				start := time.Now()
				var passes []time.Duration
				pass := func(context.Context) error {
					passes = append(passes, time.Since(start))
					if len(passes) == tc.bumpDuring {
						applied.bump()
					}
					return nil
				}
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan struct{})
				go func() { defer close(done); l.reconcileLoop(ctx, pass) }()
				for _, at := range tc.bumps {
					sleepUntil(start, at)
					applied.bump()
				}
				sleepUntil(start, tc.until)
				synctest.Wait()
				cancel()
				<-done
				if !slices.Equal(passes, tc.want) {
					t.Fatalf("passes at %v, want %v", passes, tc.want)
				}
			})
		})
	}
}

// A pass that fails is tried again at the next tick, and its error is
// logged once until it changes or a pass succeeds; an error the end of
// the term caused is not logged.
func TestReconcileLoop_FailedPassLoggedOncePerErrorAndRetriedAtTheNextTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logRecords{}
		l, _ := newLoopLifecycle(t, true, func(c *Config) { c.Logger = slog.New(logs) })
		errA, errB := errors.New("read ledger: A"), errors.New("propose: B")
		script := []error{errA, errA, errB, errB, nil, errA}
		start := time.Now()
		var passes []time.Duration
		ctx, cancel := context.WithCancel(t.Context())
		pass := func(ctx context.Context) error {
			passes = append(passes, time.Since(start))
			if n := len(passes); n <= len(script) {
				return script[n-1]
			}
			<-ctx.Done() // the term ends during this pass
			return errors.New("propose: context canceled")
		}
		done := make(chan struct{})
		go func() { defer close(done); l.reconcileLoop(ctx, pass) }()
		sleepUntil(start, time.Duration(len(script))*loopInterval+time.Millisecond)
		synctest.Wait()
		cancel()
		<-done
		var want []time.Duration
		for i := range len(script) + 1 {
			want = append(want, time.Duration(i)*loopInterval)
		}
		if !slices.Equal(passes, want) {
			t.Errorf("passes at %v, want one per tick: %v", passes, want)
		}
		got := logs.with("reconcile pass failed")
		wantLogs := []string{"reconcile pass failed: " + errA.Error(), "reconcile pass failed: " + errB.Error(),
			"reconcile pass failed: " + errA.Error()}
		if !slices.Equal(got, wantLogs) {
			t.Errorf("logged %q, want %q", got, wantLogs)
		}
	})
}

// dispatchCounter is a Submitter that counts the proposals holding a
// WorkflowDispatched (what every regional pass proposes again while the
// fake does not apply it) and applies nothing.
type dispatchCounter struct{ n atomic.Int32 }

func (c *dispatchCounter) Submit(_ context.Context, events []fsm.Event) ([]fsm.Result, error) {
	if slices.ContainsFunc(events, func(e fsm.Event) bool { return e.Type == fsm.TypeWorkflowDispatched }) {
		c.n.Add(1)
	}
	return make([]fsm.Result, len(events)), nil
}

// A manager's term starts at the first leadership check that finds it
// leading (a barrier, then the reconciler and the forwarder) and stops at
// the first that does not: the lease view is cleared, the forwarder
// dropped, and no pass runs any more. A second term starts afresh.
func TestRun_LeadershipStartsAndStopsTheTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := time.Millisecond
		lead := &switchLeadership{barrierTook: 100 * ms} // off the ticks: no two timers fire at once
		subs := &dispatchCounter{}
		logs := &logRecords{}
		l, led := newLoopLifecycle(t, false, func(c *Config) {
			c.Leadership, c.Submitter, c.Logger = lead, subs, slog.New(logs)
		})
		s := &stepSide{t: t, ledger: led, l: l}
		s.apply(s.created(jobA, 2, 0, time.Now().UnixMilli(), "use1")) // every pass dispatches its workflows
		start := time.Now()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); l.Run(ctx) }()
		check := func(when string, leading bool, passes int32, index uint64) {
			t.Helper()
			synctest.Wait()
			if _, ok := l.ForwarderStatus(); ok != leading {
				t.Errorf("%s: forwarder running %v, want %v", when, ok, leading)
			}
			if got := subs.n.Load(); got != passes {
				t.Errorf("%s: %d passes proposed, want %d", when, got, passes)
			}
			if v := l.CurrentView(); v.Index != index {
				t.Errorf("%s: lease view at index %d, want %d", when, v.Index, index)
			}
		}

		sleepUntil(start, 2*loopInterval+10*ms)
		check("not leading", false, 0, 0)
		if n := lead.barriers.Load(); n != 0 {
			t.Errorf("%d barriers before leading, want none", n)
		}

		lead.leader.Store(true)
		// Run looks at 3 intervals; the barrier takes 100 ms; the first
		// pass follows at once, the next ones one interval apart.
		sleepUntil(start, 3*loopInterval+100*ms+10*ms)
		check("leading", true, 1, s.index)
		if got := logs.with("leading: reconcilers started"); len(got) != 1 {
			t.Errorf("start logged %d times, want once", len(got))
		}
		sleepUntil(start, 5*loopInterval+100*ms+10*ms)
		check("leading two intervals later", true, 3, s.index)

		lead.leader.Store(false) // Run looks at 6 intervals
		sleepUntil(start, 6*loopInterval+10*ms)
		check("leadership lost", false, 3, 0)
		if got := logs.with("reconcilers stopped"); len(got) != 1 {
			t.Errorf("stop logged %d times, want once", len(got))
		}
		sleepUntil(start, 10*loopInterval+10*ms)
		check("follower", false, 3, 0)

		lead.leader.Store(true) // Run looks at 11 intervals
		sleepUntil(start, 11*loopInterval+100*ms+10*ms)
		check("leading again", true, 4, s.index)
		if n := lead.barriers.Load(); n != 2 {
			t.Errorf("%d barriers, want one per term: 2", n)
		}

		cancel()
		<-done
		if _, ok := l.ForwarderStatus(); ok {
			t.Error("forwarder still published after Run returned")
		}
		if v := l.CurrentView(); v.Index != 0 {
			t.Errorf("lease view at index %d after Run returned, want cleared", v.Index)
		}
	})
}

// A new leader reads nothing until its barrier succeeds: it tries again
// every interval while the term lasts.
func TestRun_FirstPassWaitsForTheBarrier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lead := &switchLeadership{}
		lead.leader.Store(true)
		lead.failBarriers.Store(2)
		subs := &dispatchCounter{}
		l, led := newLoopLifecycle(t, false, func(c *Config) { c.Leadership, c.Submitter = lead, subs })
		s := &stepSide{t: t, ledger: led, l: l}
		s.apply(s.created(jobA, 1, 0, time.Now().UnixMilli(), "use1"))
		start := time.Now()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); l.Run(ctx) }()
		// Run leads at once; barriers at 0 and one interval fail, the one
		// at two intervals succeeds and the first pass follows.
		sleepUntil(start, 2*loopInterval-time.Millisecond)
		synctest.Wait()
		if n := subs.n.Load(); n != 0 || l.CurrentView().Index != 0 {
			t.Fatalf("%d passes before the barrier succeeded, view at %d; want none", n, l.CurrentView().Index)
		}
		sleepUntil(start, 2*loopInterval+time.Millisecond)
		synctest.Wait()
		if n, b := subs.n.Load(), lead.barriers.Load(); n != 1 || b != 3 {
			t.Fatalf("%d passes after %d barriers, want 1 after 3", n, b)
		}
		cancel()
		<-done
	})
}

// blockingDeliverer holds every delivery until its context ends, and
// lingers that long after; it counts the deliveries running.
type blockingDeliverer struct {
	lingers time.Duration
	mu      sync.Mutex
	running int
	started int
}

func (d *blockingDeliverer) Deliver(ctx context.Context, _ string, _ []byte) ([]fsm.Result, error) {
	d.mu.Lock()
	d.running++
	d.started++
	d.mu.Unlock()
	<-ctx.Done()
	time.Sleep(d.lingers)
	d.mu.Lock()
	d.running--
	d.mu.Unlock()
	return nil, ctx.Err()
}

func (d *blockingDeliverer) counts() (running, started int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.running, d.started
}

// A gate's term delivers to a region one at a time; a delivery that
// outlives deliverTimeout ends and frees the region; and when the term
// ends it stops only after its deliveries did.
func TestRun_GateTermEndsAfterItsDeliveries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lead := &switchLeadership{}
		lead.leader.Store(true)
		dl := &blockingDeliverer{lingers: 50 * time.Millisecond}
		logs := &logRecords{}
		l, led := newLoopLifecycle(t, true, func(c *Config) { c.Leadership, c.Deliverer, c.Logger = lead, dl, slog.New(logs) })
		s := &stepSide{t: t, ledger: led, l: l}
		s.apply(s.created(jobA, 1, 0, time.Now().UnixMilli(), "use1"))
		start := time.Now()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); l.Run(ctx) }()

		sleepUntil(start, 4*time.Second+time.Millisecond) // 16 passes
		synctest.Wait()
		if running, started := dl.counts(); running != 1 || started != 1 {
			t.Fatalf("%d deliveries running, %d started; want the one, held", running, started)
		}
		// The delivery times out at 5 s and returns at 5.05 s; the next pass
		// (5.25 s) finds use1 free and the redelivery due: it delivers again.
		sleepUntil(start, 5*time.Second+loopInterval+time.Millisecond)
		synctest.Wait()
		if running, started := dl.counts(); running != 1 || started != 2 {
			t.Fatalf("%d deliveries running, %d started; want the second running", running, started)
		}
		if got := logs.with("delivery to region failed"); len(got) != 1 {
			t.Errorf("the timed-out delivery logged %d times, want once: %q", len(got), got)
		}

		lead.leader.Store(false) // Run looks at 5.5 s
		sleepUntil(start, 5*time.Second+2*loopInterval+10*time.Millisecond)
		synctest.Wait()
		if running, _ := dl.counts(); running != 1 {
			t.Fatalf("%d deliveries running 10 ms after the term's end, want the one lingering", running)
		}
		if got := logs.with("reconcilers stopped"); len(got) != 0 {
			t.Fatal("the term stopped before its delivery ended")
		}
		sleepUntil(start, 5*time.Second+2*loopInterval+60*time.Millisecond)
		synctest.Wait()
		if running, _ := dl.counts(); running != 0 {
			t.Fatalf("%d deliveries still running after the term ended", running)
		}
		if got := logs.with("reconcilers stopped"); len(got) != 1 {
			t.Fatalf("term stopped %d times, want once", len(got))
		}
		if got := logs.with("delivery to region failed"); len(got) != 1 {
			t.Errorf("a delivery the term's end cancelled was logged: %q", got)
		}
		cancel()
		<-done
	})
}
