package commit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/wal"
)

// A follower's large LOCAL backlog (issue 16 §2): `make wal-bound` never
// finished because forwarded batches waited in the leader's queue past
// AttemptTimeout, were retried at the back of the queue, and the leader
// spent its time committing the abandoned attempts as duplicates while the
// tier watermark stayed behind the first record that kept losing. These
// tests reproduce it at small scale in a synctest bubble (virtual time):
// a leader that commits one batch per serviceTime, in arrival order, and
// commits what it was sent even when the sender has given up.

// slowLeader is a Committer that is never leader (every attempt goes to
// the Forwarder) and a Forwarder to a leader that serves a FIFO queue,
// one batch per serviceTime.
type slowLeader struct {
	serviceTime time.Duration
	// loseFirstAnswer: the first commit of each batch is answered with an
	// error (a timeout, a cut connection), though it was committed.
	loseFirstAnswer bool

	queue chan *leaderItem

	mu      sync.Mutex
	commits map[string]int // by batch: times committed
	index   uint64         // Raft index of the last commit
}

type leaderItem struct {
	batch []byte
	done  chan group.Proposal
}

func newSlowLeader(serviceTime time.Duration, queue int) *slowLeader {
	return &slowLeader{serviceTime: serviceTime, queue: make(chan *leaderItem, queue), commits: map[string]int{}}
}

// start serves until the returned func is called, which waits for it.
func (l *slowLeader) start() func() {
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		l.serve(ctx)
	}()
	return func() { cancel(); <-served }
}

// serve commits the queued batches until ctx ends.
func (l *slowLeader) serve(ctx context.Context) {
	for {
		select {
		case it := <-l.queue:
			select {
			case <-time.After(l.serviceTime):
			case <-ctx.Done():
				return
			}
			l.mu.Lock()
			l.commits[string(it.batch)]++
			l.index++
			out := group.Proposal{Index: l.index, Results: []fsm.Result{{Outcome: fsm.OutcomeApplied}}}
			if l.commits[string(it.batch)] == 1 && l.loseFirstAnswer {
				out.Index = 0 // lost: see Forward
			}
			l.mu.Unlock()
			it.done <- out
		case <-ctx.Done():
			return
		}
	}
}

func (l *slowLeader) Propose(context.Context, []byte) (group.Proposal, error) {
	return group.Proposal{}, &group.NotLeaderError{Leader: group.Leader{ID: "lead"}, Err: group.ErrNotLeader}
}

// Forward queues batch; the leader commits it whether or not ctx has
// ended by then (the batch was sent).
func (l *slowLeader) Forward(ctx context.Context, _ group.Leader, batch []byte) (group.Proposal, error) {
	it := &leaderItem{batch: batch, done: make(chan group.Proposal, 1)}
	select {
	case l.queue <- it:
	case <-ctx.Done():
		return group.Proposal{}, ctx.Err()
	}
	select {
	case out := <-it.done:
		if out.Index == 0 {
			return group.Proposal{}, errors.New("forward: connection reset")
		}
		return out, nil
	case <-ctx.Done():
		return group.Proposal{}, fmt.Errorf("forward: %w", ctx.Err())
	}
}

// applied is PipelineConfig.Applied of a follower that has applied what
// the leader committed (replication is not what these tests are about).
func (l *slowLeader) applied(batch []byte) (group.Proposal, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.commits[string(batch)] == 0 {
		return group.Proposal{}, false
	}
	return group.Proposal{Index: l.index, Results: []fsm.Result{{Outcome: fsm.OutcomeDuplicate}}}, true
}

// duplicates returns the commits beyond the first of each batch, and the
// batches committed.
func (l *slowLeader) duplicates() (dups, batches int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.commits {
		dups += n - 1
	}
	return dups, len(l.commits)
}

// backlogRecords, each one batch, are appended at once at LOCAL; the leader
// serves one per backlogService, so the last waits 4 s for its commit if
// all are in its queue: four times backlogAttemptTimeout.
const (
	backlogRecords        = 40
	backlogService        = 100 * time.Millisecond
	backlogAttemptTimeout = time.Second
)

// pushBacklog submits backlogRecords batches at LOCAL and returns the
// last LSN.
func pushBacklog(t *testing.T, p *Pipeline) (wal.LSN, int) {
	t.Helper()
	var last wal.LSN
	size := 0
	for k := range backlogRecords {
		res, err := p.Submit(bubbleCtx(t), []fsm.Event{testkit.JobEvent(k)}, DurabilityLocal)
		if err != nil {
			t.Fatalf("submit %d: %v", k, err)
		}
		last = res.LSN
		size = len(testkit.MustBatch(t, testkit.JobEvent(k)))
	}
	return last, size
}

// waitWatermark waits (virtual time) up to d for the tier watermark to
// reach lsn, and reports whether it did.
func waitWatermark(p *Pipeline, lsn wal.LSN, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for p.Watermark() < lsn {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// With every record's attempt in flight at once (no admission bound, as
// before), attempts time out in the leader's queue, are retried behind the
// abandoned ones, and the watermark never reaches the backlog's end; the
// leader's work goes into duplicates. Admitted a few at a time
// (MaxAttemptBytes), each attempt waits for less than its timeout: the
// watermark reaches the end, with no batch committed twice.
func TestPipeline_LargeBacklogDrainsWithoutTimeoutsOrDuplicates(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxBatches int // attempts admitted at once, in batches of the test's size
		wantDrain  bool
	}{
		{name: "unbounded/stuck", maxBatches: 1 << 20, wantDrain: false},
		{name: "bounded/drains", maxBatches: 4, wantDrain: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				batchBytes := len(testkit.MustBatch(t, testkit.JobEvent(0)))
				l := newSlowLeader(backlogService, 4*backlogRecords)
				stop := l.start()
				p, _, _, closeAll := newTimerPipeline(t, PipelineConfig{Committer: l, Forwarder: l,
					AttemptTimeout: backlogAttemptTimeout, MaxAttemptBytes: tc.maxBatches * (batchBytes + 16),
					RetryFirst: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond})
				defer func() { closeAll(); stop() }()

				last, _ := pushBacklog(t, p)
				drained := waitWatermark(p, last, time.Minute)
				dups, batches := l.duplicates()
				t.Logf("watermark %d of %d after %s (virtual); %d batches committed, %d duplicate commits", p.Watermark(), last, time.Minute, batches, dups)
				if drained != tc.wantDrain {
					t.Fatalf("the watermark reached the backlog's end: %v, want %v (watermark %d of %d)", drained, tc.wantDrain, p.Watermark(), last)
				}
				if tc.wantDrain && dups != 0 {
					t.Fatalf("%d duplicate commits of %d batches: attempts timed out in the leader's queue", dups, batches)
				}
				if !tc.wantDrain && dups == 0 {
					t.Fatal("stuck without a duplicate commit: not the failure this test reproduces")
				}
			})
		})
	}
}

// A leader whose answer to each batch's first commit is lost: the record's
// retry finds its events applied in this node's ledger (Applied) and
// reaches the tier without a second commit; the need it records is the
// applied index Applied answered, so Covered follows it.
func TestPipeline_RetryFindsTheBatchAppliedAndCommitsNoDuplicate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		applied  bool // PipelineConfig.Applied set
		wantDups int
	}{
		{name: "without Applied: duplicates", applied: false, wantDups: backlogRecords},
		{name: "with Applied: none", applied: true, wantDups: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newSlowLeader(time.Millisecond, 4*backlogRecords)
				l.loseFirstAnswer = true
				stop := l.start()
				cfg := PipelineConfig{Committer: l, Forwarder: l, AttemptTimeout: backlogAttemptTimeout,
					RetryFirst: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond}
				if tc.applied {
					cfg.Applied = l.applied
				}
				p, w, reg, closeAll := newTimerPipeline(t, cfg)
				defer func() { closeAll(); stop() }()

				last, _ := pushBacklog(t, p)
				if !waitWatermark(p, last, time.Minute) {
					t.Fatalf("watermark %d of %d after a minute", p.Watermark(), last)
				}
				for w.Watermarks().Regional < last { // Covered is bounded by the checkpoint
					time.Sleep(DefaultWatermarkInterval)
				}
				dups, batches := l.duplicates()
				if batches != backlogRecords || dups != tc.wantDups {
					t.Fatalf("%d batches committed, %d duplicate commits; want %d and %d", batches, dups, backlogRecords, tc.wantDups)
				}
				found := testkit.MetricValue(t, reg, "strata_pipeline_found_applied_total")
				if want := float64(backlogRecords - tc.wantDups); found != want {
					t.Errorf("found-applied metric %v, want %v", found, want)
				}
				l.mu.Lock()
				index := l.index
				l.mu.Unlock()
				if got := p.Covered(index); got != last {
					t.Errorf("Covered(%d) = %d, want %d (every record's need is at most the last index)", index, got, last)
				}
				if got := p.Covered(0); got != 0 {
					t.Errorf("Covered(0) = %d: a record was covered by no ledger state", got)
				}
			})
		})
	}
}

// While the group has no leader, attempts fail at once with a
// NotLeaderError: nothing was proposed, so the retries do not ask Applied
// (a ledger read per retry of every pending record, for nothing).
func TestPipeline_NoLeaderRetriesDoNotAskApplied(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newScriptedCommitter(noLeader)
		var asked atomic.Int64
		p, _, _, closeAll := newTimerPipeline(t, PipelineConfig{Committer: c, RetryFirst: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond,
			Applied: func([]byte) (group.Proposal, bool) { asked.Add(1); return group.Proposal{}, false }})
		defer closeAll()
		done := submitAsync(t, p)
		for range 10 {
			nextCall(t, c.calls)
		}
		synctest.Wait()
		c.setDown(false)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n := asked.Load(); n != 0 {
			t.Fatalf("Applied asked %d times after attempts refused for want of a leader", n)
		}
	})
}
