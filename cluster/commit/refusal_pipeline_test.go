package commit

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/wal"
)

// waitClimbed returns once the record at lsn has ended its climb (reached
// the tier, been refused, or failed): at once when it is not climbing.
func waitClimbed(t *testing.T, p *Pipeline, lsn wal.LSN) {
	t.Helper()
	p.writes.mu.Lock()
	o := p.writes.climbing[lsn]
	p.writes.mu.Unlock()
	if o == nil {
		return
	}
	select {
	case <-o.done:
	case <-t.Context().Done():
		t.Fatalf("LSN %d still climbing", lsn)
	}
}

// Issue 17 finding 9: a record acknowledged at LOCAL whose forward the
// leader refuses (a 400, which cluster/peer maps to ErrInvalidBatch) was
// dropped: logged and counted, and its client never learned. Now the
// refusal is kept, durably, before the watermark passes the record; the
// client reads it by the record's LSN; and it is still there after the
// node restarts from its data dir.
func TestFinding9_LocalAckedRefusalIsSurfaced(t *testing.T) {
	c := startPipeCluster(t, 3, 216, DurabilityRegional, group.ProposerConfig{})
	leader := c.leader()
	follower := c.follower(leader)
	ctx := testkit.Ctx(t)

	refused, refusedJobs := testkit.JobEvents(0, 2)
	refused[1].Tenant = "beta"
	const why = "event 1: refused by the fault injected in this test"
	c.setRefuse(func(l group.Leader, batch []byte) error {
		events, err := fsm.DecodeBatch(batch)
		if err == nil && events[0].ID == refused[0].ID {
			// What cluster/peer makes of the leader's 400.
			return fmt.Errorf("%w: leader %s: %s", group.ErrInvalidBatch, l.ID, why)
		}
		return nil
	})

	res, err := follower.pipe.Submit(ctx, refused, DurabilityLocal)
	if err != nil || res.Level != DurabilityLocal {
		t.Fatalf("LOCAL submit on the follower: %+v, %v", res, err)
	}
	waitClimbed(t, follower.pipe, res.LSN)

	wantRefused := func(p *Pipeline, when string) {
		t.Helper()
		st, err := p.WriteStatus(res.LSN)
		if err != nil {
			t.Fatalf("%s: write status: %v", when, err)
		}
		if st.State != WriteRefused || st.Refusal == nil || st.Level != DurabilityLocal {
			t.Fatalf("%s: write status %+v, want refused at LOCAL", when, st)
		}
		r := st.Refusal
		if r.Node != follower.ID || r.LSN != res.LSN || r.HLC != refused[0].HLC ||
			!strings.Contains(r.Reason, why) || !strings.Contains(r.Reason, leader.ID) {
			t.Fatalf("%s: refusal %+v does not name the record, its HLC and the leader's reason", when, r)
		}
		if !reflect.DeepEqual(st.Tenants, []string{"acme", "beta"}) ||
			!reflect.DeepEqual(st.Events, []fsm.EventID{refused[0].ID, refused[1].ID}) {
			t.Fatalf("%s: refusal holds tenants %q and events %v, want both events and their tenants", when, st.Tenants, st.Events)
		}
	}
	wantRefused(follower.pipe, "after the refusal")
	if mark := follower.pipe.Watermark(); mark < res.LSN {
		t.Fatalf("watermark %d held back by the refused LSN %d", mark, res.LSN)
	}
	if n := testkit.MetricValue(t, follower.Reg, "strata_pipeline_refused_total"); n != 1 {
		t.Fatalf("strata_pipeline_refused_total = %v, want 1", n)
	}

	// Writes after it are not held back, and read as reached.
	next, nextJobs := testkit.JobEvents(2, 1)
	ok, err := follower.pipe.Submit(ctx, next, DurabilityRegional)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := follower.pipe.WriteStatus(ok.LSN); err != nil || st.State != WriteReached || st.Level != DurabilityRegional {
		t.Fatalf("status of a write that reached the tier: %+v, %v", st, err)
	}
	c.WaitConverged(nextJobs)
	for _, id := range refusedJobs {
		if _, err := leader.Ledger.Job("acme", id); !errors.Is(err, fsm.ErrNotFound) {
			t.Fatalf("refused job %s in the ledger: %v", id, err)
		}
	}

	// From disk: the refusal is in the node's data dir, the watermark in
	// its NodeWAL checkpoint, so nothing is re-proposed.
	c.setRefuse(nil)
	c.stop(follower)
	c.start(follower)
	wantRefused(follower.pipe, "after a restart")
	if n, err := follower.pipe.Recover(ctx); err != nil || n != 0 {
		t.Fatalf("Recover after the restart = %d, %v; want nothing to re-propose", n, err)
	}
	if mark := follower.wal.Watermarks().Regional; mark < ok.LSN {
		t.Fatalf("checkpointed watermark %d, want at least %d", mark, ok.LSN)
	}
}

// WriteStatus follows a record from pending (answered from memory) to
// reached (read back from the NodeWAL), and knows no other LSN.
func TestPipeline_WriteStatusFollowsARecordToItsTier(t *testing.T) {
	w := openTestWAL(t, t.TempDir())
	gc := newGatedCommitter(false)
	p, _ := newTestPipeline(t, w, gc, 4)
	ctx := testkit.Ctx(t)

	events, jobs := testkit.JobEvents(0, 2)
	res, err := p.Submit(ctx, events, DurabilityLocal)
	if err != nil {
		t.Fatal(err)
	}
	want := WriteStatus{LSN: res.LSN, State: WritePending, Level: DurabilityLocal, HLC: events[0].HLC,
		Tenants: []string{"acme"}, Events: []fsm.EventID{events[0].ID, events[1].ID}}
	if st, err := p.WriteStatus(res.LSN); err != nil || !reflect.DeepEqual(st, want) {
		t.Fatalf("pending: %+v, %v; want %+v", st, err, want)
	}
	gc.release(jobs[0])
	waitClimbed(t, p, res.LSN)
	want.State, want.Level = WriteReached, DurabilityRegional
	if st, err := p.WriteStatus(res.LSN); err != nil || !reflect.DeepEqual(st, want) {
		t.Fatalf("reached: %+v, %v; want %+v", st, err, want)
	}
	p.Close() // every climb has ended: the index holds what it will
	if p.writes.get(res.LSN) == nil {
		t.Fatal("a record whose climb just ended is not held in memory")
	}
	p.writes.mu.Lock() // as if its climb had ended long ago: read from disk
	delete(p.writes.climbing, res.LSN)
	delete(p.writes.recent, res.LSN)
	p.writes.mu.Unlock()
	if st, err := p.WriteStatus(res.LSN); err != nil || !reflect.DeepEqual(st, want) {
		t.Fatalf("reached, read from the NodeWAL: %+v, %v; want %+v", st, err, want)
	}
	p.scan <- struct{}{} // another reader holds the NodeWAL read
	if _, err := p.WriteStatus(res.LSN); !errors.Is(err, ErrWriteStatusBusy) {
		t.Fatalf("a second NodeWAL read at once: %v, want ErrWriteStatusBusy", err)
	}
	<-p.scan
	for _, lsn := range []wal.LSN{0, res.LSN + 1} {
		if _, err := p.WriteStatus(lsn); !errors.Is(err, ErrNoSuchWrite) {
			t.Fatalf("LSN %d: %v, want ErrNoSuchWrite", lsn, err)
		}
	}
}

// A record refused just before a crash, whose watermark was not yet
// checkpointed, is not proposed again by Recover: a refusal is final (its
// client may have read it and resubmitted its events).
func TestPipeline_RecoverDoesNotReproposeARecordAlreadyRefused(t *testing.T) {
	dir := t.TempDir()
	refusals := filepath.Join(dir, "refusals")
	w := openTestWAL(t, filepath.Join(dir, "wal"))
	ctx := testkit.Ctx(t)

	// The record stays above the watermark: its proposal never returns.
	gc := newGatedCommitter(false)
	p1, err := NewPipeline(PipelineConfig{Tier: DurabilityRegional, WAL: w, Committer: gc, NodeID: "m1", RefusalFile: refusals})
	if err != nil {
		t.Fatal(err)
	}
	events, _ := testkit.JobEvents(0, 1)
	res, err := p1.Submit(ctx, events, DurabilityLocal)
	if err != nil {
		t.Fatal(err)
	}
	p1.Close()
	// As if its refusal had been written and the node had then crashed.
	log, err := openRefusalLog(refusals, MaxRefusals, MaxRefusalBytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := log.record(newRefusal("m1", res.LSN, events[0].HLC, time.UnixMilli(1), testkit.MustBatch(t, events...), "refused")); err != nil {
		t.Fatal(err)
	}
	log.close()

	again := newGatedCommitter(true)
	p2, err := NewPipeline(PipelineConfig{Tier: DurabilityRegional, WAL: w, Committer: again, NodeID: "m1", RefusalFile: refusals})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if n, err := p2.Recover(ctx); err != nil || n != 0 {
		t.Fatalf("Recover = %d, %v; want the refused record skipped", n, err)
	}
	if a := again.attempts(testkit.JobID(0)); a != 0 {
		t.Fatalf("the refused record was proposed %d times after the restart", a)
	}
	if mark := p2.Watermark(); mark != res.LSN {
		t.Fatalf("watermark %d, want past the refused LSN %d", mark, res.LSN)
	}
	if st, err := p2.WriteStatus(res.LSN); err != nil || st.State != WriteRefused {
		t.Fatalf("status after the restart: %+v, %v; want refused", st, err)
	}
}

func TestWriteIndex_KeepsTheMostRecentWithinBounds(t *testing.T) {
	x := newWriteIndex(3, 25)
	ops := make([]*op, 6)
	for i := range ops {
		ops[i] = &op{lsn: wal.LSN(i + 1), batch: make([]byte, 10)}
		x.start(ops[i])
	}
	for i, o := range ops {
		if x.get(o.lsn) != o {
			t.Fatalf("climbing LSN %d not held", o.lsn)
		}
		x.end(o)
		if i >= 2 && x.get(ops[i-2].lsn) != nil {
			t.Fatalf("after LSN %d ended, LSN %d is still held beyond 25 bytes", o.lsn, ops[i-2].lsn)
		}
	}
	if x.get(6) != ops[5] || x.get(5) != ops[4] || len(x.recent) != 2 || x.bytes != 20 {
		t.Fatalf("recent %v (%d bytes), want LSNs 5 and 6", x.order, x.bytes)
	}
	big := newWriteIndex(2, 1<<20)
	for i := range 4 {
		o := &op{lsn: wal.LSN(i + 1)}
		big.start(o)
		big.end(o)
	}
	if big.get(2) != nil || big.get(3) == nil || len(big.recent) != 2 {
		t.Fatalf("count bound: recent %v", big.order)
	}
}
