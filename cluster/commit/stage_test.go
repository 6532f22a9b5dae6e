package commit

import (
	"bytes"
	"testing"

	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/wal"
)

// A staged record holds the tier watermark until it is released, is
// never proposed, and comes back through OnStaged after a restart only
// if it was not released.
func TestPipeline_StagedRecordsHoldTheWatermarkUntilReleased(t *testing.T) {
	dir := t.TempDir()
	w, err := wal.Open(wal.Config{Dir: dir, SegmentBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	gc := newGatedCommitter(true)
	p, err := NewPipeline(PipelineConfig{Tier: DurabilityRegional, WAL: w, Committer: gc})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Ctx(t)
	ts := hlc.Timestamp{WallMs: 1}
	s1, err := p.Stage(ctx, []byte("first"), ts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Submit(ctx, []fsm.Event{testkit.JobEvent(0)}, DurabilityRegional) // carries s1's content
	if err != nil {
		t.Fatal(err)
	}
	s2, err := p.Stage(ctx, []byte("second"), ts)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Watermark(); got != s1-1 {
		t.Fatalf("watermark %d with staged LSN %d unreleased, want %d", got, s1, s1-1)
	}
	p.Release([]wal.LSN{s1})
	testkit.WaitUntil(t, "the watermark past the released record and the batch", func() bool { return p.Watermark() == res.LSN })
	testkit.WaitUntil(t, "the checkpoint to follow", func() bool { return w.Watermarks().Regional == res.LSN })
	if gc.attempts(testkit.JobID(0)) != 1 {
		t.Fatalf("the batch was proposed %d times", gc.attempts(testkit.JobID(0)))
	}
	if _, err := p.Stage(ctx, nil, ts); err == nil {
		t.Fatal("an empty staged record was written")
	}
	p.Close() // s2 is never released: the node "crashes"
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	w = openTestWAL(t, dir)
	var got []wal.LSN
	var payloads [][]byte
	p2, err := NewPipeline(PipelineConfig{Tier: DurabilityRegional, WAL: w, Committer: newGatedCommitter(true),
		OnStaged: func(lsn wal.LSN, payload []byte) { got, payloads = append(got, lsn), append(payloads, payload) }})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if n, err := p2.Recover(ctx); err != nil || n != 0 {
		t.Fatalf("Recover = %d, %v: want no ledger record re-proposed", n, err)
	}
	if len(got) != 1 || got[0] != s2 || !bytes.Equal(payloads[0], []byte("second")) {
		t.Fatalf("OnStaged got %v %q, want only the unreleased LSN %d", got, payloads, s2)
	}
	if p2.Watermark() != s2-1 {
		t.Fatalf("watermark %d passed the recovered staged record %d", p2.Watermark(), s2)
	}
	p2.Release(got)
	testkit.WaitUntil(t, "the watermark past the recovered record", func() bool { return p2.Watermark() == s2 })
}
