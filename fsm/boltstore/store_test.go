package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// testConfig is a store in a new temporary directory with a small memory
// map (tests open many stores) and a small history tail, so chunks are
// sealed, split and read often.
func testConfig(t testing.TB) boltstore.Config {
	return boltstore.Config{
		Path:               filepath.Join(t.TempDir(), "ledger.db"),
		InitialMmapBytes:   1 << 20,
		HistoryTailEntries: 3,
	}
}

func openStore(t testing.TB, cfg boltstore.Config) *boltstore.Store {
	t.Helper()
	st, err := boltstore.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newStore(t testing.TB) fsm.Store { return openStore(t, testConfig(t)) }

// TestLedgerSuite runs every store-independent ledger test (the model
// test over long random streams, snapshots, damage, tampering, failed
// transactions, concurrent reads) on the bbolt store.
func TestLedgerSuite(t *testing.T) { fsmtest.RunStoreSuite(t, newStore) }

// The model test again with the default history tail (chunks sealed less
// often) and an fsync per batch; one seed (the rules do not depend on it).
func TestLedger_DefaultTailAndFsyncAgainstModel(t *testing.T) {
	const seed = 31
	t.Logf("seed %d", seed)
	cfg := testConfig(t)
	cfg.HistoryTailEntries, cfg.FsyncEveryBatch = 0, true
	led := ledgerOn(t, openStore(t, cfg))
	m := fsmtest.NewModel()
	fsmtest.Drive(t, seed, led, m, 3000, 40)
	fsmtest.CompareWithModel(t, led, m)
}

// The model test with a job cache of one entry: nearly every job is read
// back from the file in each batch, so what a job value decodes to
// (its tail and where the tail ends) meets appends, late inserts and
// seals, not only what the cache kept from an earlier batch.
func TestLedger_JobsReadFromFileAgainstModel(t *testing.T) {
	const seed = 37
	t.Logf("seed %d", seed)
	cfg := testConfig(t)
	cfg.JobCacheEntries = 1
	led := ledgerOn(t, openStore(t, cfg))
	m := fsmtest.NewModel()
	fsmtest.Drive(t, seed, led, m, 3000, 40)
	fsmtest.CompareWithModel(t, led, m)
}

// Issue 17, finding 2, on the bbolt store (events keyed tenant ‖ 0 ‖ id;
// TestLedgerSuite runs them too, as fsm/memstore does on its store).
func TestFinding2_EventIDsAreScopedByTenant(t *testing.T) {
	fsmtest.RunEventIDsScopedByTenant(t, newStore)
}

func TestFinding2_RejectionsDoNotRevealOtherTenants(t *testing.T) {
	fsmtest.RunRejectionsDoNotRevealOtherTenants(t, newStore)
}
