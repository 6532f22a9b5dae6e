package boltstore_test

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

// idStream returns batches of JobCreated events whose ids follow the
// patterns the event id bounds learn from (per-client counters,
// time-ordered ids) and those they must not be fooled by (random ids,
// resent events, an old id with a new body, an old id in another
// tenant): the idempotency check must give what memstore gives.
func idStream(seed uint64, n, size int) [][]fsm.Event {
	rng := rand.New(rand.NewPCG(seed, 19))
	tenants := []string{"ta", "tb", "tc"}
	var counters [8]uint64
	var sent []fsm.Event
	out := make([][]fsm.Event, n)
	for i := range out {
		for range size {
			wall := int64(1_700_000_000_000 + len(sent))
			ts := fsmtest.TS(wall, 0, 1)
			tenant := tenants[rng.IntN(len(tenants))]
			var id fsm.EventID
			switch r := rng.IntN(100); {
			case r < 15 && len(sent) > 0: // resent: a duplicate
				out[i] = append(out[i], sent[rng.IntN(len(sent))])
				continue
			case r < 25 && len(sent) > 0: // an old id, same tenant, new body: a conflict
				old := sent[rng.IntN(len(sent))]
				id, tenant = old.ID, old.Tenant
			case r < 30 && len(sent) > 0: // an old id in another tenant: a new event
				old := sent[rng.IntN(len(sent))]
				id = old.ID
			case r < 65: // a client's counter: nonce ‖ client ‖ seq
				c := rng.IntN(len(counters))
				counters[c]++
				binary.BigEndian.PutUint32(id[0:], 0xC0FFEE00)
				binary.BigEndian.PutUint32(id[4:], uint32(c))
				binary.BigEndian.PutUint64(id[8:], counters[c])
			case r < 85: // time-ordered
				var rnd [10]byte
				for j := range rnd {
					rnd[j] = byte(rng.Uint32())
				}
				id = fsm.TimeOrderedEventID(wall, rnd)
			default: // random
				for j := range id {
					id[j] = byte(rng.Uint32())
				}
			}
			job := fsm.JobID{Region: "use1", UnixMs: wall, Gate: "gate1", Seq: uint32(len(sent) + 1)}.String()
			e := fsmtest.NewEvent(id, job, tenant, "use1", "gate1", ts, 1,
				&fsm.JobCreated{Spec: fsmtest.Spec(tenant, "use1"), AssignedRegions: []string{"use1"}})
			out[i] = append(out[i], e)
			sent = append(sent, e)
		}
	}
	return out
}

// The event id bounds never answer "absent" for a stored event: every
// outcome (applied, duplicate, conflict) and the final state equal
// memstore's, one transaction per Update, with group commit, and with a
// job cache of one entry.
func TestIDBounds_IdempotencyAgainstMemstore(t *testing.T) {
	const seed = 7
	t.Logf("seed %d", seed)
	log := idStream(seed, 60, 40)
	for _, tc := range []struct {
		name string
		cfg  func(t testing.TB) boltstore.Config
	}{
		{"commit=each", testConfig},
		{"commit=group", func(t testing.TB) boltstore.Config { return groupConfig(t, 7) }},
		{"jobcache=1", func(t testing.TB) boltstore.Config {
			cfg := testConfig(t)
			cfg.JobCacheEntries = 1
			return cfg
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := ledgerOn(t, memstore.New())
			led := ledgerOn(t, openStore(t, tc.cfg(t)))
			outcomes := map[fsm.Outcome]int{}
			for i, batch := range log {
				want, err := model.Apply(uint64(i+1), batch)
				if err != nil {
					t.Fatal(err)
				}
				got, err := led.Apply(uint64(i+1), batch)
				if err != nil {
					t.Fatal(err)
				}
				for j := range want {
					outcomes[want[j].Outcome]++
					if got[j].Outcome != want[j].Outcome || got[j].Seq != want[j].Seq {
						t.Fatalf("batch %d, event %d (id %s of %q): %s seq %d (%v), memstore %s seq %d (%v)", i+1, j,
							batch[j].ID, batch[j].Tenant, got[j].Outcome, got[j].Seq, got[j].Err,
							want[j].Outcome, want[j].Seq, want[j].Err)
					}
				}
			}
			if outcomes[fsm.OutcomeDuplicate] == 0 || outcomes[fsm.OutcomeRejected] == 0 || outcomes[fsm.OutcomeApplied] == 0 {
				t.Fatalf("the stream misses a case: %v", outcomes)
			}
			sameState(t, led, model)
		})
	}
}

// An Update that fails after putting events leaves no trace in the id
// bounds' answers: the events it put are not found, and applying them
// stores them.
func TestIDBounds_FailedUpdateStoresNothing(t *testing.T) {
	st := openStore(t, testConfig(t))
	led := ledgerOn(t, st)
	log := idStream(3, 4, 50)
	applyLog(t, led, log, 1, 2)
	errInjected := errors.New("injected")
	err := st.Update(func(tx fsm.Tx) error {
		for _, e := range log[2] {
			if prev, err := tx.Event(e.Tenant, e.ID); err != nil || prev != nil {
				continue
			}
			head, _, err := tx.ChainHead(e.Tenant)
			if err != nil {
				return err
			}
			se := &fsm.StoredEvent{Event: e, Seq: head.Seq + 1}
			if err := tx.PutEvent(se); err != nil {
				return err
			}
			if err := tx.PutChainHead(e.Tenant, fsm.ChainHead{Seq: se.Seq}); err != nil {
				return err
			}
		}
		return errInjected
	})
	if !errors.Is(err, errInjected) {
		t.Fatalf("update: %v, want the injected error", err)
	}
	model := ledgerOn(t, memstore.New())
	applyLog(t, model, log, 1, 2)
	for i := 3; i <= len(log); i++ {
		want, err := model.Apply(uint64(i), log[i-1])
		if err != nil {
			t.Fatal(err)
		}
		got, err := led.Apply(uint64(i), log[i-1])
		if err != nil {
			t.Fatal(err)
		}
		for j := range want {
			if got[j].Outcome != want[j].Outcome {
				t.Fatalf("batch %d, event %d: %s (%v), memstore %s", i, j, got[j].Outcome, got[j].Err, want[j].Outcome)
			}
		}
	}
	sameState(t, led, model)
}
