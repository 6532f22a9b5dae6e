package regionsync

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/antientropy"
	"github.com/strata-ledger/strata/antientropy/ledgertree"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

// BenchmarkRound_OneDivergentJob measures a regional ↔ global round over
// real HTTP on loopback between two ledgers of `jobs` jobs that differ in
// one job's report: compare, send the report again (applied to the global
// ledger directly, standing in for the Raft commit), compare again. It
// reports the bytes and the round's time (issue 13: one divergent job
// among 1M repaired within 1 s of the round starting).
func BenchmarkRound_OneDivergentJob(b *testing.B) {
	for _, jobs := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("jobs=%d", jobs), func(b *testing.B) { benchRound(b, jobs) })
	}
}

func benchRound(b *testing.B, jobs int) {
	p := newPair(b, jobs, "bench-token-0123456789", nil)
	s, rled := p.syncer, p.rled
	if _, err := s.Round(context.Background()); err != nil { // builds the gate's view
		b.Fatal(err)
	}
	index := p.index
	var took time.Duration
	var bytes int
	n := 0
	for b.Loop() {
		b.StopTimer()
		n++
		j := fsmtest.NewJob(fmt.Sprintf("use1-1700000000000-g%d-%05d", n%jobs/fsm.MaxJobSeq, n%jobs%fsm.MaxJobSeq+1), "acme", uint64(jobs+n)*10, "use1")
		index++
		if _, err := rled.Apply(index, []fsm.Event{j.Ev(2, 1, &fsm.JobProgressReported{Region: "use1", Completed: uint64(n)})}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		st, err := s.Round(context.Background())
		took += time.Since(start)
		if err != nil || st.Differences != 1 || st.Repaired != 1 || !st.RootsEqual {
			b.Fatalf("round: %+v %v", st, err)
		}
		bytes += st.Bytes
	}
	b.ReportMetric(float64(bytes)/float64(n), "bytes/round")
	b.ReportMetric(float64(took.Milliseconds())/float64(n), "ms/round")
}

// pair is a region's ledger and the global ledger, each with its tree,
// jobs JobCreated on both, and a Syncer of the region against an
// Answerer of the global ledger over loopback HTTP (delivery applies to
// the global ledger directly).
type pair struct {
	rled, gled *fsm.Ledger
	index      uint64 // the last index applied to rled
	syncer     *Syncer
}

// newPair builds a pair; regionOnly, when set, gives events for the
// region's ledger alone after each batch of 1,000 jobs from first.
func newPair(tb testing.TB, jobs int, token string, regionOnly func(first, n int) []fsm.Event) *pair {
	tb.Helper()
	view, err := ledgertree.NewRegionView(antientropy.DefaultDepth, "use1")
	if err != nil {
		tb.Fatal(err)
	}
	rled, err := fsm.New(fsm.Config{Store: memstore.New(), Observer: view})
	if err != nil {
		tb.Fatal(err)
	}
	regions := ledgertree.NewRegions(antientropy.DefaultDepth, nil)
	gled, err := fsm.New(fsm.Config{Store: memstore.New(), Observer: regions})
	if err != nil {
		tb.Fatal(err)
	}
	regions.SetView(gled.View)
	var index uint64
	const batch = 1_000
	for first := 0; first < jobs; first += batch {
		evs := fsmtest.JobsCreated(first, batch, "acme", "use1")
		index++
		for _, led := range []*fsm.Ledger{rled, gled} {
			if _, err := led.Apply(index, append([]fsm.Event(nil), evs...)); err != nil {
				tb.Fatal(err)
			}
		}
		if regionOnly != nil {
			index++
			if _, err := rled.Apply(index, regionOnly(first, batch)); err != nil {
				tb.Fatal(err)
			}
		}
	}
	a := &Answerer{Regions: regions, View: gled.View, ClusterToken: token}
	srv := httptest.NewServer(http.HandlerFunc(a.Handler))
	tb.Cleanup(srv.Close)
	gIndex := index
	s, err := New(Config{Region: "use1", View: view, Ledger: rled.View, IsLeader: func() bool { return true },
		Gate: func() string { return strings.TrimPrefix(srv.URL, "http://") },
		Deliver: func(_ context.Context, enc []byte) error {
			gIndex++
			_, err := gled.ApplyEncoded(gIndex, enc)
			return err
		},
		Client: srv.Client(), ClusterToken: a.ClusterToken})
	if err != nil {
		tb.Fatal(err)
	}
	return &pair{rled: rled, gled: gled, index: index, syncer: s}
}
