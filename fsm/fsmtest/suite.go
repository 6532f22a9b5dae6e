package fsmtest

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

// NewStore returns a fresh, empty store for one test.
type NewStore func(t testing.TB) fsm.Store

// RunStoreSuite runs every store-independent test of the ledger against
// stores made by newStore.
func RunStoreSuite(t *testing.T, newStore NewStore) {
	t.Run("LedgerAgainstModel", func(t *testing.T) { RunLedgerAgainstModel(t, newStore) })
	t.Run("SnapshotRestoreKeepsDigest", func(t *testing.T) { RunSnapshotRoundTrip(t, newStore) })
	t.Run("RestoreRejectsDamagedSnapshot", func(t *testing.T) { RunSnapshotDamage(t, newStore) })
	t.Run("ChainTamperingIsReported", func(t *testing.T) { RunChainTamper(t, newStore) })
	t.Run("FailedUpdateLeavesNoTrace", func(t *testing.T) { RunStoreAtomicity(t, newStore) })
	t.Run("FailedApplyLeavesNoTrace", func(t *testing.T) { RunApplyFailure(t, newStore) })
	t.Run("ReadsRunConcurrentlyWithApply", func(t *testing.T) { RunConcurrentReads(t, newStore) })
	t.Run("EventIDsAreScopedByTenant", func(t *testing.T) { RunEventIDsScopedByTenant(t, newStore) })
	t.Run("RejectionsDoNotRevealOtherTenants", func(t *testing.T) { RunRejectionsDoNotRevealOtherTenants(t, newStore) })
	t.Run("GovernanceAgainstModel", func(t *testing.T) { RunGovernanceAgainstModel(t, newStore) })
	t.Run("MetersKeptAndRolledBack", func(t *testing.T) { RunMeterStore(t, newStore) })
}

// EnvInt reads a positive integer knob from the environment.
func EnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// Seeds returns the seeds a randomized test runs: STRATA_FSM_SEED alone
// if set (to reproduce a failure), else 1..n where n is
// STRATA_FSM_SEEDS or def.
func Seeds(def int) []uint64 {
	if v, err := strconv.ParseUint(os.Getenv("STRATA_FSM_SEED"), 10, 64); err == nil {
		return []uint64{v}
	}
	n := EnvInt("STRATA_FSM_SEEDS", def)
	s := make([]uint64, n)
	for i := range s {
		s[i] = uint64(i + 1)
	}
	return s
}

// NewLedger opens a ledger over a fresh store.
func NewLedger(t testing.TB, newStore NewStore) (*fsm.Ledger, fsm.Store) {
	t.Helper()
	st := newStore(t)
	led, err := fsm.New(fsm.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return led, st
}

// Drive applies n generated events to the ledger and the model in random
// batches (1 to 40 events), sometimes re-applying an old index, checks
// every batch's results against the model's, and compares full states
// every checkEvery batches (0: never).
func Drive(t testing.TB, seed uint64, led *fsm.Ledger, m *Model, n, checkEvery int) {
	t.Helper()
	DriveGen(t, NewGen(seed), seed, led, m, n, checkEvery)
}

// DriveGen is Drive with the events of gen (seeded with seed).
func DriveGen(t testing.TB, gen *Gen, seed uint64, led *fsm.Ledger, m *Model, n, checkEvery int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 77))
	index := led.AppliedIndex()
	for sent, batches := 0, 0; sent < n; batches++ {
		batch := make([]fsm.Event, 1+rng.IntN(40))
		for i := range batch {
			batch[i] = gen.Next()
		}
		sent += len(batch)
		idx := index + 1
		if index > 0 && rng.IntN(20) == 0 {
			idx = 1 + rng.Uint64N(index) // a re-delivered entry: skipped by both
		}
		index = max(index, idx)
		got, err := led.Apply(idx, slices.Clone(batch))
		if err != nil {
			t.Fatalf("seed %d: apply index %d: %v", seed, idx, err)
		}
		if err := SameResults(got, m.Apply(idx, batch)); err != nil {
			t.Fatalf("seed %d: index %d: %v", seed, idx, err)
		}
		if checkEvery > 0 && batches%checkEvery == 0 {
			CompareWithModel(t, led, m)
		}
	}
}

// RunLedgerAgainstModel drives long random streams through the Ledger and
// the dumb Model and requires equal results, states, digests, histories
// and chains. Knobs: STRATA_FSM_SEEDS, STRATA_FSM_SEED,
// STRATA_FSM_MODEL_EVENTS.
func RunLedgerAgainstModel(t *testing.T, newStore NewStore) {
	events := EnvInt("STRATA_FSM_MODEL_EVENTS", 5000)
	for _, seed := range Seeds(16) {
		t.Logf("seed %d (reproduce with STRATA_FSM_SEED=%d)", seed, seed)
		led, _ := NewLedger(t, newStore)
		m := NewModel()
		Drive(t, seed, led, m, events, 25)
		CompareWithModel(t, led, m)
		if events >= 1000 && len(m.ForwardMarks()) == 0 {
			t.Fatalf("seed %d: the stream applied no forward mark", seed)
		}
	}
}

// RunSnapshotRoundTrip: snapshot, restore into a fresh store: same
// digest, applied index, chains, jobs; the restored ledger's snapshot is
// byte-identical; the restored ledger goes on applying like the model.
func RunSnapshotRoundTrip(t *testing.T, newStore NewStore) {
	const seed = 7
	t.Logf("seed %d", seed)
	led, _ := NewLedger(t, newStore)
	m := NewModel()
	Drive(t, seed, led, m, 2000, 0)
	var snap bytes.Buffer
	if err := led.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	restored, _ := NewLedger(t, newStore)
	if err := restored.Restore(bytes.NewReader(snap.Bytes())); err != nil {
		t.Fatal(err)
	}
	want, _, _ := led.Digest()
	got, _, _ := restored.Digest()
	if got != want {
		t.Fatalf("restored digest %s, want %s", got, want)
	}
	CompareWithModel(t, restored, m)
	var again bytes.Buffer
	if err := restored.Snapshot(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), snap.Bytes()) {
		t.Fatalf("snapshot of the restored ledger differs (%d bytes, original %d)", again.Len(), snap.Len())
	}
	Drive(t, seed+1000, restored, m, 500, 0)
	CompareWithModel(t, restored, m)
}

// RunSnapshotDamage: every flipped byte and every truncation of a
// snapshot is refused by Restore, and the ledger keeps its state.
func RunSnapshotDamage(t *testing.T, newStore NewStore) {
	led, _ := NewLedger(t, newStore)
	Drive(t, 11, led, NewModel(), 300, 0)
	var snap bytes.Buffer
	if err := led.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	target, _ := NewLedger(t, newStore)
	Drive(t, 12, target, NewModel(), 100, 0)
	before, index, _ := target.Digest()
	rng := rand.New(rand.NewPCG(13, 13))
	positions := []int{0, 9, 16, 28, 31, 32, snap.Len() - 41, snap.Len() - 5, snap.Len() - 1}
	for range 60 {
		positions = append(positions, rng.IntN(snap.Len()))
	}
	for _, pos := range positions {
		bad := bytes.Clone(snap.Bytes())
		bad[pos] ^= 1 << rng.IntN(8)
		if err := target.Restore(bytes.NewReader(bad)); err == nil {
			t.Fatalf("restore accepted a snapshot with byte %d of %d flipped", pos, len(bad))
		}
	}
	for _, n := range []int{0, 10, 32, snap.Len() / 2, snap.Len() - 1} {
		if err := target.Restore(bytes.NewReader(snap.Bytes()[:n])); err == nil {
			t.Fatalf("restore accepted a snapshot cut to %d of %d bytes", n, snap.Len())
		}
	}
	after, afterIndex, _ := target.Digest()
	if after != before || afterIndex != index || target.AppliedIndex() != index {
		t.Fatal("a refused restore changed the ledger")
	}
}

// RunChainTamper: changing a stored event's body (with or without its
// stored hash), link or envelope is reported by VerifyChain at that
// event's sequence number; undoing the change heals the chain.
func RunChainTamper(t *testing.T, newStore NewStore) {
	led, st := NewLedger(t, newStore)
	m := NewModel()
	Drive(t, 21, led, m, 1500, 0)
	tenant := "acme"
	head := m.ChainHead(tenant)
	if head.Seq < 30 {
		t.Fatalf("chain of %s has only %d events", tenant, head.Seq)
	}
	more := func(b fsm.Body) fsm.Body {
		c := *b.(*fsm.JobProgressReported)
		c.Completed++
		return &c
	}
	for i, tc := range []struct {
		name   string
		tamper func(se *fsm.StoredEvent)
	}{
		{"body", func(se *fsm.StoredEvent) { se.Body = more(se.Body) }},
		{"body and its hash", func(se *fsm.StoredEvent) {
			se.Body = more(se.Body)
			se.BodyHash, _ = fsm.BodyHash(se.Body)
		}},
		{"link", func(se *fsm.StoredEvent) { se.Link[0] ^= 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := progressAfter(t, st, tenant, head.Seq/4*uint64(i+1)/2)
			bad := *orig
			tc.tamper(&bad)
			putEvent(t, st, &bad)
			_, err := led.VerifyChain(tenant)
			var ce *fsm.ChainError
			if !errors.As(err, &ce) || ce.Seq != orig.Seq || ce.EventID != orig.ID || ce.JobID != orig.JobID {
				t.Fatalf("verify after tampering with seq %d (event %s): %v", orig.Seq, orig.ID, err)
			}
			putEvent(t, st, orig)
			if _, err := led.VerifyChain(tenant); err != nil {
				t.Fatalf("verify after undoing the tampering: %v", err)
			}
		})
	}
}

var errStopTest = errors.New("stop")

// progressAfter returns the first progress report of a tenant's chain
// after sequence number after.
func progressAfter(t testing.TB, st fsm.Store, tenant string, after uint64) *fsm.StoredEvent {
	t.Helper()
	var found *fsm.StoredEvent
	err := st.View(func(tx fsm.ReadTx) error {
		return tx.ChainEvents(tenant, after, func(se *fsm.StoredEvent) error {
			if se.Type == fsm.TypeJobProgressReported {
				found = se
				return errStopTest
			}
			return nil
		})
	})
	if !errors.Is(err, errStopTest) {
		t.Fatalf("no progress report after seq %d: %v", after, err)
	}
	return found
}

func putEvent(t testing.TB, st fsm.Store, se *fsm.StoredEvent) {
	t.Helper()
	if err := st.Update(func(tx fsm.Tx) error { return tx.PutEvent(se) }); err != nil {
		t.Fatal(err)
	}
}
