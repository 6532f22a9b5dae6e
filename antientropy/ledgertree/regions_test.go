package ledgertree

import (
	"fmt"
	"testing"

	"github.com/strata-ledger/strata/antientropy"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

// A region's ledger and the global ledger hold the same view of the
// region's reports once the global ledger has every event the region
// forwarded, in whatever order it got them and whatever the other regions
// reported; a report the global ledger lacks makes exactly that job
// differ, and sending it again makes the views equal.
func TestRegionView_RegionalEqualsGlobalUntilAnEventIsLost(t *testing.T) {
	regional, err := NewRegionView(10, "use1")
	if err != nil {
		t.Fatal(err)
	}
	rled, err := fsm.New(fsm.Config{Store: memstore.New(), Observer: regional})
	if err != nil {
		t.Fatal(err)
	}
	regions := NewRegions(10, nil)
	gled, err := fsm.New(fsm.Config{Store: memstore.New(), Observer: regions})
	if err != nil {
		t.Fatal(err)
	}
	regions.SetView(gled.View)
	var rIndex, gIndex uint64
	apply := func(led *fsm.Ledger, index *uint64, evs ...fsm.Event) {
		t.Helper()
		*index++
		if _, err := led.Apply(*index, evs); err != nil {
			t.Fatal(err)
		}
	}
	var forwarded []fsm.Event
	var lost fsm.Event
	for i := range 20 {
		j := fsmtest.NewJob(fmt.Sprintf("use1-1700000000000-gate1-%05d", i+1), "acme", uint64(i)*100, "use1", "euw1")
		created := j.Created()
		apply(gled, &gIndex, created)
		apply(rled, &rIndex, created) // delivered to the region
		use1 := []fsm.Event{
			j.Ev(2, 1, &fsm.JobAccepted{Region: "use1", WorkerCount: 2}),
			j.Ev(2, 1, &fsm.JobProgressReported{Region: "use1", Completed: uint64(10 * i), Failed: 1}),
			j.Ev(2, 1, &fsm.JobProgressReported{Region: "use1", Completed: uint64(20 * i), Failed: 2, Done: true}),
		}
		apply(rled, &rIndex, use1...)
		forwarded = append(forwarded, use1...)
		// euw1's reports reach the global ledger only.
		apply(gled, &gIndex, j.Ev(3, 1, &fsm.JobAccepted{Region: "euw1", WorkerCount: 1}))
		if i == 7 {
			lost = use1[2]
		}
	}
	// The global ledger gets the forwarded events in reverse order, but
	// one.
	for i := len(forwarded) - 1; i >= 0; i-- {
		if forwarded[i].ID != lost.ID {
			apply(gled, &gIndex, forwarded[i])
		}
	}
	global, err := regions.Region("use1")
	if err != nil {
		t.Fatal(err)
	}
	diffs := diff(t, regional, rled, global, gled)
	if len(diffs) != 1 || diffs[0] != lost.JobID {
		t.Fatalf("differences %v, want [%s]", diffs, lost.JobID)
	}
	apply(gled, &gIndex, lost) // sent again
	if diffs := diff(t, regional, rled, global, gled); len(diffs) != 0 {
		t.Fatalf("differences after the repair: %v", diffs)
	}
}

// diff syncs both trackers and compares their trees.
func diff(t *testing.T, a *Tracker, aled *fsm.Ledger, b *Tracker, bled *fsm.Ledger) []string {
	t.Helper()
	if err := a.Sync(aled.View); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(bled.View); err != nil {
		t.Fatal(err)
	}
	var out []string
	_ = a.Read(func(ta *antientropy.Tree) error {
		return b.Read(func(tb *antientropy.Tree) error {
			out = compare(t, ta, tb)
			return nil
		})
	})
	return out
}

// Two equal ledgers of 100,000 jobs compare in one round trip: the roots
// alone (issue 13: bytes grow with the differences, not the ledger).
func TestRegionView_EqualLedgersOf100kJobsExchangeOnlyTheRoots(t *testing.T) {
	if testing.Short() {
		t.Skip("100k jobs")
	}
	const jobs = 100_000
	var leds [2]*fsm.Ledger
	var views [2]*Tracker
	for i := range leds {
		var err error
		if views[i], err = NewRegionView(antientropy.DefaultDepth, "use1"); err != nil {
			t.Fatal(err)
		}
		if leds[i], err = fsm.New(fsm.Config{Store: memstore.New(), Observer: views[i]}); err != nil {
			t.Fatal(err)
		}
	}
	createJobs(t, jobs, leds[:]...)
	for i := range views {
		if err := views[i].Sync(leds[i].View); err != nil {
			t.Fatal(err)
		}
	}
	_ = views[0].Read(func(a *antientropy.Tree) error {
		return views[1].Read(func(b *antientropy.Tree) error {
			if a.Len() != jobs {
				t.Fatalf("%d jobs in the view", a.Len())
			}
			c := antientropy.NewCompare(a)
			req := c.Start()
			page, err := antientropy.Answer(b, req)
			if err != nil {
				t.Fatal(err)
			}
			qb, _ := req.MarshalBinary()
			pb, _ := page.MarshalBinary()
			if _, done, err := c.Step(page); err != nil || !done || len(c.Differences()) != 0 {
				t.Fatalf("equal ledgers: done %v, differences %v, %v", done, c.Differences(), err)
			}
			t.Logf("100,000 equal jobs: 1 round trip, %d bytes", len(qb)+len(pb))
			if len(qb)+len(pb) > 128 {
				t.Fatalf("%d bytes for the roots", len(qb)+len(pb))
			}
			return nil
		})
	})
}

// createJobs applies n JobCreated events (jobs assigned to use1) to every
// ledger, 1,000 an entry.
func createJobs(t testing.TB, n int, leds ...*fsm.Ledger) {
	t.Helper()
	const batch = 1_000
	for first := 0; first < n; first += batch {
		evs := fsmtest.JobsCreated(first, min(batch, n-first), "acme", "use1")
		for _, led := range leds {
			if _, err := led.Apply(uint64(first/batch+1), append([]fsm.Event(nil), evs...)); err != nil {
				t.Fatal(err)
			}
		}
	}
}
