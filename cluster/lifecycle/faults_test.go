package lifecycle

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/wal"
)

// Reconciler and forwarder behaviour under faults: a failed proposal, a
// busy region, an unreadable store.

// chunkCommitter fails its first proposal for good (ErrInvalidBatch: the
// pipeline does not retry it) and commits the rest, counting them.
type chunkCommitter struct {
	mu    sync.Mutex
	calls int
}

func (c *chunkCommitter) Propose(context.Context, []byte) (group.Proposal, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.calls == 1 {
		return group.Proposal{}, fmt.Errorf("%w: refused by the test", group.ErrInvalidBatch)
	}
	return group.Proposal{Index: uint64(c.calls)}, nil
}

func (c *chunkCommitter) proposals() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// closedStore returns a bolt store that is already closed: every read of
// it fails, as a store read can.
func closedStore(t *testing.T) *boltstore.Store {
	t.Helper()
	st, err := boltstore.Open(boltstore.Config{Path: filepath.Join(t.TempDir(), "closed.db")})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return st
}

// pipeSubmitter submits through a commit pipeline at its tier, as the
// node's wiring does.
type pipeSubmitter struct{ p *commit.Pipeline }

func (s pipeSubmitter) Submit(ctx context.Context, events []fsm.Event) ([]fsm.Result, error) {
	res, err := s.p.Submit(ctx, events, commit.DurabilityRegional)
	return res.Results, err
}

// A later chunk (a JobAccepted, a JobCancellationAcked) must never land
// without the earlier chunks it follows from.
func TestProposeAll_StopsAtTheFirstFailedChunk(t *testing.T) {
	w, err := wal.Open(wal.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	cm := &chunkCommitter{}
	p, err := commit.NewPipeline(commit.PipelineConfig{Tier: commit.DurabilityRegional, WAL: w, Committer: cm})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	cfg := testConfig(true, "use1", closedStore(t), nil, time.Now)
	cfg.Submitter = pipeSubmitter{p}
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	events, _ := testkit.JobEvents(0, maxPlannedPerBatch+10)
	if chunks, err := chunkEvents(events); err != nil || len(chunks) != 2 {
		t.Fatalf("want the events in 2 chunks, got %d (%v)", len(chunks), err)
	}
	if err := l.proposeAll(t.Context(), events); err == nil {
		t.Fatal("proposeAll succeeded with its first chunk refused")
	}
	if got := cm.proposals(); got != 1 {
		t.Fatalf("%d chunks proposed, want 1: nothing after the chunk that failed", got)
	}
}

// A job planned while a delivery to its region runs is sent by the next
// pass that finds the region free, not after a redelivery backoff.
func TestGlobalReconciler_BusyRegionDoesNotDelayNewJobs(t *testing.T) {
	h := newIncrHarness(t)
	id := h.submit(1, time.Hour)
	g := h.g
	g.inflight["use1"] = true // a delivery to use1 is running
	if _, err := g.step(h.now.UnixMilli(), false); err != nil {
		t.Fatal(err)
	}
	h.now = h.now.Add(250 * time.Millisecond)
	w, err := g.step(h.now.UnixMilli(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.deliver) != 0 || g.visited != 0 {
		t.Fatalf("use1 still busy: the pass sends %v and visits %d jobs, want nothing", w.deliver, g.visited)
	}
	g.advance(globalResult{ended: []string{"use1"}}) // it ended
	h.now = h.now.Add(250 * time.Millisecond)        // one reconcile interval
	if w, err = g.step(h.now.UnixMilli(), false); err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, e := range w.deliver["use1"] {
		sent = append(sent, e.JobID)
	}
	if len(sent) != 1 || sent[0] != id {
		t.Fatalf("next pass sends %v to use1, want the new job %s at once", sent, id)
	}
}

// A store read failing when the reconciler is made must not leave every
// worker silent: the liveness grace comes from the first pass's read.
func TestRegionReconciler_LivenessGraceFromTheFirstPass(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	side := newIncrSide(t, false, "use1", func() time.Time { return now })
	side.index++
	if _, err := side.ledger.Apply(side.index, []fsm.Event{{ID: commit.NewEventID(), Type: fsm.TypeWorkerJoined,
		HLC: hlc.Timestamp{WallMs: now.UnixMilli(), Node: 1}, Region: "use1", Node: "n1", Body: &fsm.WorkerJoined{Worker: "w1", Capacity: 2}}}); err != nil {
		t.Fatal(err)
	}
	good := side.l.cfg.Store
	side.l.cfg.Store = closedStore(t) // unreadable while the reconciler is made
	rr := newRegionReconciler(side.l)
	side.l.cfg.Store, rr.store = good, good
	w, err := rr.step(now, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range w.propose {
		if e.Type == fsm.TypeWorkerLeft {
			t.Fatalf("the first pass expires %s, registered and inherited by the new leader", e.Body.(*fsm.WorkerLeft).Worker)
		}
	}
	if !rr.live["w1"] {
		t.Fatal("w1 not live after the first pass")
	}
}

// A forwarder that cannot read its positions keeps trying, and says so.
func TestForwarder_RetriesReadingItsPositions(t *testing.T) {
	st, err := boltstore.Open(boltstore.Config{Path: filepath.Join(t.TempDir(), "ledger.db")})
	if err != nil {
		t.Fatal(err)
	}
	led, err := fsm.New(fsm.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	st.Close() // every read of the ledger fails from now on
	cfg := testConfig(false, "use1", st, led, time.Now)
	cfg.ReconcileInterval, cfg.BreakerCooldown, cfg.Registerer = time.Millisecond, time.Second, prometheus.NewRegistry()
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := newForwarder(l)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); f.run(ctx) }()
	defer func() { cancel(); <-done }()
	testkit.WaitUntil(t, "the failed read in the forwarder's status", func() bool {
		return strings.Contains(f.Status().LastError, "read positions")
	})
	select {
	case <-done:
		t.Fatal("the forwarder gave up for the term")
	default:
	}
}
