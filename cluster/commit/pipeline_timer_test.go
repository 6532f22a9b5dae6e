package commit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/wal"
)

// The pipeline's timers (the retry backoff, the watermark flush) run in a
// testing/synctest bubble: virtual time advances only when every
// goroutine of the bubble is blocked, so an attempt's time.Now() is
// exactly when its timer fired. The NodeWAL is real (a temp dir): its
// goroutines block on channels made in the bubble, and its file I/O does
// not advance the clock.

// timedCall is one attempt seen by a fake: when, and whether it succeeded.
type timedCall struct {
	at time.Time
	ok bool
}

// scriptedCommitter is a Committer (and, with its Forward method, a
// Forwarder) that fails with err while down is set and commits at index
// 9 once it is cleared. Every attempt is sent on calls (capacity enough
// for a test), so a test can wait for the next one without polling.
type scriptedCommitter struct {
	mu    sync.Mutex
	down  bool
	err   error // the failure while down
	calls chan timedCall
}

func newScriptedCommitter(err error) *scriptedCommitter {
	return &scriptedCommitter{down: true, err: err, calls: make(chan timedCall, 1024)}
}

func (c *scriptedCommitter) setDown(down bool) {
	c.mu.Lock()
	c.down = down
	c.mu.Unlock()
}

func (c *scriptedCommitter) Propose(ctx context.Context, batch []byte) (group.Proposal, error) {
	c.mu.Lock()
	down := c.down
	c.mu.Unlock()
	c.calls <- timedCall{at: time.Now(), ok: !down}
	if down {
		return group.Proposal{}, c.err
	}
	events, err := fsm.DecodeBatch(batch)
	if err != nil {
		return group.Proposal{}, errors.Join(group.ErrInvalidBatch, err)
	}
	results := make([]fsm.Result, len(events))
	for i := range results {
		results[i].Outcome = fsm.OutcomeApplied
	}
	return group.Proposal{Index: 9, Results: results}, nil
}

func (c *scriptedCommitter) Forward(ctx context.Context, _ group.Leader, batch []byte) (group.Proposal, error) {
	return c.Propose(ctx, batch)
}

// noLeader is what a proposer says during an election.
var noLeader = &group.NotLeaderError{Err: group.ErrNotLeader}

// newTimerPipeline opens a NodeWAL in a temp dir and a REGIONAL pipeline
// over it; both close (pipeline first) when the returned func is called,
// which must happen inside the bubble.
func newTimerPipeline(t *testing.T, cfg PipelineConfig) (*Pipeline, *wal.WAL, *prometheus.Registry, func()) {
	t.Helper()
	w, err := wal.Open(wal.Config{Dir: t.TempDir(), SegmentBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	cfg.Tier, cfg.WAL, cfg.Registerer = DurabilityRegional, w, reg
	if cfg.AttemptTimeout == 0 {
		cfg.AttemptTimeout = time.Hour // no attempt times out unless a test wants it
	}
	p, err := NewPipeline(cfg)
	if err != nil {
		w.Close()
		t.Fatal(err)
	}
	return p, w, reg, func() {
		p.Close()
		if err := w.Close(); err != nil {
			t.Errorf("close NodeWAL: %v", err)
		}
	}
}

// bubbleCtx bounds a wait in the bubble by virtual time: a test that
// waits for what never happens fails instead of retrying forever.
func bubbleCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	t.Cleanup(cancel)
	return ctx
}

// nextCall returns the fake's next attempt.
func nextCall(t *testing.T, calls <-chan timedCall) timedCall {
	t.Helper()
	select {
	case c := <-calls:
		return c
	case <-time.After(time.Hour): // virtual: the pipeline stopped trying
		t.Fatal("no attempt within an hour")
		return timedCall{}
	}
}

// A failing proposal is retried after RetryFirst, then twice, four times
// as long…, capped at RetryMax; each wait is jittered into its upper half
// [w/2, w]. Every failed attempt counts one retry.
func TestPipeline_RetryBackoffDoublesUpToRetryMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const first, maxWait = 10 * time.Millisecond, 80 * time.Millisecond
		c := newScriptedCommitter(noLeader)
		p, _, reg, closeAll := newTimerPipeline(t, PipelineConfig{Committer: c, RetryFirst: first, RetryMax: maxWait})
		defer closeAll()

		done := submitAsync(t, p)
		// The waits the attempts must follow: doubling, then capped.
		waits := []time.Duration{first, 2 * first, 4 * first, maxWait, maxWait, maxWait}
		prev := nextCall(t, c.calls)
		for i, w := range waits {
			if i == len(waits)-1 {
				synctest.Wait() // the last failure is waiting out its backoff
				c.setDown(false)
			}
			call := nextCall(t, c.calls)
			if gap := call.at.Sub(prev.at); gap < w/2 || gap > w {
				t.Errorf("attempt %d came %s after the one before, want within [%s, %s]", i+2, gap, w/2, w)
			}
			prev = call
		}
		if err := <-done; err != nil {
			t.Fatalf("submit: %v", err)
		}
		if !prev.ok {
			t.Fatal("the last attempt did not commit")
		}
		if n := testkit.MetricValue(t, reg, "strata_pipeline_propose_retries_total"); n != float64(len(waits)) {
			t.Errorf("retries metric %v, want %d (one per failed attempt)", n, len(waits))
		}
	})
}

// LeaderChanged ends a backoff that is being waited out: the record is
// retried at once, and its next backoff starts again from RetryFirst.
func TestPipeline_LeaderChangedCutsTheBackoffShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const first, maxWait = 10 * time.Millisecond, 10 * time.Second
		c := newScriptedCommitter(noLeader)
		p, _, reg, closeAll := newTimerPipeline(t, PipelineConfig{Committer: c, RetryFirst: first, RetryMax: maxWait})
		defer closeAll()

		done := submitAsync(t, p)
		for range 5 { // the backoff grows to 16×RetryFirst: at least 80 ms
			nextCall(t, c.calls)
		}
		synctest.Wait() // in the backoff after the fifth failure
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n := len(c.calls); n != 0 {
			t.Fatalf("%d attempts 1 ms into a backoff of at least 80 ms", n)
		}
		changed := time.Now()
		p.LeaderChanged()
		if call := nextCall(t, c.calls); !call.at.Equal(changed) {
			t.Fatalf("retry %s after LeaderChanged, want at once", call.at.Sub(changed))
		}
		// Still no leader: the backoff restarted from RetryFirst.
		synctest.Wait()
		c.setDown(false)
		call := nextCall(t, c.calls)
		if gap := call.at.Sub(changed); gap < first/2 || gap > first {
			t.Fatalf("attempt after the leader change's failed retry came %s later, want within [%s, %s]", gap, first/2, first)
		}
		if err := <-done; err != nil {
			t.Fatalf("submit: %v", err)
		}
		if n := testkit.MetricValue(t, reg, "strata_pipeline_propose_retries_total"); n != 6 {
			t.Errorf("retries metric %v, want 6 (failed attempts)", n)
		}
	})
}

// A record acknowledged at LOCAL while the tier is unreachable keeps
// being proposed, here through the Forwarder to a leader that does not
// answer, until it reaches the tier; then the watermark covers it.
func TestPipeline_LocalAckKeepsClimbingUntilTheTier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const first, maxWait, interval = 10 * time.Millisecond, 100 * time.Millisecond, 20 * time.Millisecond
		follower := &group.NotLeaderError{Leader: group.Leader{ID: "n2", Addr: "127.0.0.2:7000"}, Err: group.ErrNotLeader}
		committer := newScriptedCommitter(follower) // never up: this node follows
		leader := newScriptedCommitter(errors.New("connection refused"))
		p, w, reg, closeAll := newTimerPipeline(t, PipelineConfig{Committer: committer, Forwarder: ForwarderFunc(leader.Forward),
			RetryFirst: first, RetryMax: maxWait, WatermarkInterval: interval})
		defer closeAll()

		start := time.Now()
		res, err := p.Submit(bubbleCtx(t), []fsm.Event{testkit.JobEvent(0)}, DurabilityLocal)
		if err != nil || res.Level != DurabilityLocal {
			t.Fatalf("submit = %+v, %v; want LOCAL", res, err)
		}
		if took := time.Since(start); took != 0 {
			t.Fatalf("LOCAL ack took %s of virtual time, want none (it waits for no timer)", took)
		}

		time.Sleep(10 * time.Second) // the leader unreachable for a while
		synctest.Wait()
		if got := p.Watermark(); got != 0 {
			t.Fatalf("watermark %d before the record reached the tier", got)
		}
		failed := len(leader.calls)
		if failed < 10*int(time.Second/maxWait)-1 {
			t.Fatalf("%d forwards in 10 s with backoff at most %s", failed, maxWait)
		}
		for range failed {
			if call := <-leader.calls; call.ok {
				t.Fatal("a forward succeeded while the leader was down")
			}
		}

		leader.setDown(false)
		reached := nextCall(t, leader.calls)
		if !reached.ok {
			t.Fatal("forward failed after the leader came back")
		}
		synctest.Wait()
		if got := p.Watermark(); got != res.LSN {
			t.Fatalf("watermark %d after the record reached the tier, want %d", got, res.LSN)
		}
		time.Sleep(interval)
		synctest.Wait()
		if got := w.Watermarks().Regional; got != res.LSN {
			t.Fatalf("REGIONAL checkpoint %d, want %d", got, res.LSN)
		}
		for _, m := range []struct {
			name string
			want int
		}{
			{"strata_pipeline_propose_retries_total", failed},
			{"strata_pipeline_forwarded_total", failed + 1},
			{"strata_pipeline_in_flight", 0},
		} {
			if got := testkit.MetricValue(t, reg, m.name); got != float64(m.want) {
				t.Errorf("%s = %v, want %d", m.name, got, m.want)
			}
		}
		if n := len(committer.calls); n != failed+1 {
			t.Errorf("%d local proposals, want one per attempt (%d)", n, failed+1)
		}
	})
}

// The tier watermark reached by acknowledged records is written to the
// NodeWAL's checkpoint at once when the flusher is idle, and within
// WatermarkInterval of the previous write when it is not; never while a
// record below it has not reached the tier.
func TestPipeline_WatermarkIsCheckpointedWithinTheIntervalAndNoEarlier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = 50 * time.Millisecond
		gc := newGatedCommitter(false)
		p, w, reg, closeAll := newTimerPipeline(t, PipelineConfig{Committer: gc, WatermarkInterval: interval})
		defer closeAll()
		ctx := bubbleCtx(t)

		var lsns []wal.LSN
		for i := range 4 {
			res, err := p.Submit(ctx, []fsm.Event{testkit.JobEvent(i)}, DurabilityLocal)
			if err != nil {
				t.Fatal(err)
			}
			lsns = append(lsns, res.LSN)
		}
		checkpoint := func(step string, want wal.LSN) {
			t.Helper()
			synctest.Wait()
			if got := w.Watermarks().Regional; got != want {
				t.Fatalf("%s: REGIONAL checkpoint %d, want %d", step, got, want)
			}
		}

		// Records 2 and 3 reach the tier above record 1, which has not.
		gc.release(testkit.JobID(2))
		gc.release(testkit.JobID(1))
		checkpoint("records above a gap", 0)
		time.Sleep(10 * interval)
		checkpoint("ten intervals later, the gap still open", 0)
		if got := p.Watermark(); got != 0 {
			t.Fatalf("watermark %d with record %d not at the tier", got, lsns[0])
		}

		// Record 1 closes the gap: the idle flusher writes at once.
		gc.release(testkit.JobID(0))
		checkpoint("the gap closed", lsns[2])
		flushed := time.Now()

		// Record 4 reaches the tier just after: its write waits out the
		// interval since the last one, and comes when it ends.
		time.Sleep(time.Millisecond)
		gc.release(testkit.JobID(3))
		synctest.Wait()
		if got := p.Watermark(); got != lsns[3] {
			t.Fatalf("watermark %d, want %d", got, lsns[3])
		}
		time.Sleep(time.Until(flushed.Add(interval)) - time.Nanosecond)
		checkpoint("a nanosecond before the interval ends", lsns[2])
		time.Sleep(time.Nanosecond)
		checkpoint("when the interval ends", lsns[3])
		if got := testkit.MetricValue(t, reg, "strata_pipeline_watermark_lsn"); got != float64(lsns[3]) {
			t.Errorf("watermark metric %v, want %d", got, lsns[3])
		}
	})
}

// submitAsync submits job 0 at REGIONAL in the background; the channel
// gets Submit's error.
func submitAsync(t *testing.T, p *Pipeline) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := p.Submit(bubbleCtx(t), []fsm.Event{testkit.JobEvent(0)}, DurabilityRegional)
		done <- err
	}()
	return done
}
