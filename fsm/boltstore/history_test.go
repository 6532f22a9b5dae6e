package boltstore_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// A job's history stays in canonical order whatever order its events
// arrive in: late events land in sealed chunks (K = 2, so chunks split
// often), and every page of every size reads the right events, before
// and after a reopen.
func TestJobEvents_CanonicalOrderWithLateEventsAcrossChunks(t *testing.T) {
	for _, seed := range fsmtest.Seeds(8) {
		t.Logf("seed %d (reproduce with STRATA_FSM_SEED=%d)", seed, seed)
		rng := rand.New(rand.NewPCG(seed, 1))
		cfg := testConfig(t)
		cfg.HistoryTailEntries = 2
		st := openStore(t, cfg)
		led := ledgerOn(t, st)
		job := fsmtest.NewJob("use1-1700000000000-gate1-00001", "acme", 0, "use1")
		created := job.Created()
		var events []fsm.Event
		for range 40 {
			events = append(events, job.Ev(uint32(1+rng.IntN(3)), 1, &fsm.JobProgressReported{Region: "use1", Completed: rng.Uint64N(100)}))
		}
		want := []fsm.EventID{created.ID}
		for _, e := range events {
			want = append(want, e.ID)
		}
		rng.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
		index := uint64(1)
		if _, err := led.Apply(index, []fsm.Event{created}); err != nil {
			t.Fatal(err)
		}
		for len(events) > 0 {
			n := min(len(events), 1+rng.IntN(5))
			index++
			if _, err := led.Apply(index, slices.Clone(events[:n])); err != nil {
				t.Fatal(err)
			}
			events = events[n:]
		}
		checkHistory(t, led, job.ID, want)
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		checkHistory(t, ledgerOn(t, openStore(t, cfg)), job.ID, want)
	}
}

// checkHistory reads the job's events with pages of 1 to 4 events and
// requires want, in order.
func checkHistory(t *testing.T, led *fsm.Ledger, jobID string, want []fsm.EventID) {
	t.Helper()
	for limit := 1; limit <= 4; limit++ {
		var got []fsm.EventID
		q := fsm.EventQuery{Tenant: "acme", JobID: jobID, Limit: limit}
		for {
			page, err := led.JobEvents(q)
			if err != nil {
				t.Fatal(err)
			}
			for _, se := range page.Events {
				got = append(got, se.ID)
			}
			if page.Next == "" {
				break
			}
			q.Cursor = page.Next
		}
		if !slices.Equal(got, want) {
			t.Fatalf("pages of %d: %d events %v, want %d %v", limit, len(got), got, len(want), want)
		}
	}
}
