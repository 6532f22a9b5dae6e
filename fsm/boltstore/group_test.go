package boltstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// groupConfig is testConfig with group commit: a long interval, so only
// the Update bound (every updates) and reads commit, deterministically.
func groupConfig(t testing.TB, updates int) boltstore.Config {
	cfg := testConfig(t)
	cfg.CommitInterval, cfg.CommitUpdates = boltstore.MaxCommitInterval, updates
	return cfg
}

// groupSuiteEnv runs the whole store suite with group commit, the model
// test's 16 long seeds included (minutes under -race).
const groupSuiteEnv = "STRATA_BOLT_GROUP_SUITE"

// The store suite (snapshots, damage, tampering, failed transactions,
// concurrent reads, tenants, and the model test on two seeds; all 16
// with STRATA_BOLT_GROUP_SUITE=1) with Updates sharing bbolt
// transactions.
func TestLedgerSuite_GroupCommit(t *testing.T) {
	newStore := func(t testing.TB) fsm.Store { return openStore(t, groupConfig(t, 5)) }
	if os.Getenv(groupSuiteEnv) != "" {
		fsmtest.RunStoreSuite(t, newStore)
		return
	}
	t.Run("LedgerAgainstModel", func(t *testing.T) {
		for _, seed := range []uint64{1, 2} {
			led, _ := fsmtest.NewLedger(t, newStore)
			m := fsmtest.NewModel()
			fsmtest.Drive(t, seed, led, m, 2000, 25)
			fsmtest.CompareWithModel(t, led, m)
		}
	})
	t.Run("SnapshotRestoreKeepsDigest", func(t *testing.T) { fsmtest.RunSnapshotRoundTrip(t, newStore) })
	t.Run("RestoreRejectsDamagedSnapshot", func(t *testing.T) { fsmtest.RunSnapshotDamage(t, newStore) })
	t.Run("ChainTamperingIsReported", func(t *testing.T) { fsmtest.RunChainTamper(t, newStore) })
	t.Run("FailedUpdateLeavesNoTrace", func(t *testing.T) { fsmtest.RunStoreAtomicity(t, newStore) })
	t.Run("FailedApplyLeavesNoTrace", func(t *testing.T) { fsmtest.RunApplyFailure(t, newStore) })
	t.Run("ReadsRunConcurrentlyWithApply", func(t *testing.T) { fsmtest.RunConcurrentReads(t, newStore) })
	t.Run("EventIDsAreScopedByTenant", func(t *testing.T) { fsmtest.RunEventIDsScopedByTenant(t, newStore) })
	t.Run("RejectionsDoNotRevealOtherTenants", func(t *testing.T) {
		fsmtest.RunRejectionsDoNotRevealOtherTenants(t, newStore)
	})
}

// The model test with group commit and a job cache of one entry: entries
// are read back from the open transaction's own (uncommitted) pages.
func TestLedger_GroupCommitJobsReadFromFileAgainstModel(t *testing.T) {
	const seed = 43
	cfg := groupConfig(t, 1000)
	cfg.JobCacheEntries = 1
	led := ledgerOn(t, openStore(t, cfg))
	m := fsmtest.NewModel()
	fsmtest.Drive(t, seed, led, m, 3000, 0) // no reads until the end: one transaction
	fsmtest.CompareWithModel(t, led, m)
}

// Every read sees every applied Update, although nothing committed them:
// a read commits what is pending.
func TestGroupCommit_ReadsSeeEveryUpdate(t *testing.T) {
	st := openStore(t, groupConfig(t, 1000))
	led := ledgerOn(t, st)
	log := batches(11, 30, 10)
	for i := range log {
		applyLog(t, led, log, i+1, i+1)
		var got uint64
		if err := st.View(func(tx fsm.ReadTx) error {
			var err error
			got, err = tx.AppliedIndex()
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if got != uint64(i+1) {
			t.Fatalf("after applying %d a read sees applied index %d", i+1, got)
		}
	}
	if gs := st.GroupStats(); gs.Read != uint64(len(log)) || gs.Size+gs.Interval != 0 {
		t.Fatalf("commits %+v, want %d by reads only", gs, len(log))
	}
	want := ledgerOn(t, newStore(t))
	applyLog(t, want, log, 1, len(log))
	sameState(t, led, want)
}

// Without reads, the Update bound and the interval commit.
func TestGroupCommit_CommitsBySizeAndInterval(t *testing.T) {
	st := openStore(t, groupConfig(t, 4))
	led := ledgerOn(t, st)
	applyLog(t, led, batches(12, 10, 5), 1, 10)
	if gs := st.GroupStats(); gs.Size != 2 || gs.Read != 0 {
		t.Fatalf("commits %+v after 10 updates of at most 4: want 2 by size", gs)
	}

	cfg := testConfig(t)
	cfg.CommitInterval = time.Millisecond
	st = openStore(t, cfg)
	led = ledgerOn(t, st)
	applyLog(t, led, batches(12, 1, 5), 1, 1)
	deadline := time.Now().Add(time.Minute)
	for st.GroupStats().Interval == 0 { // the timer commits with no Update or read to do it
		if time.Now().After(deadline) {
			t.Fatal("no commit a minute after an Update with a 1 ms interval")
		}
		time.Sleep(time.Millisecond) // polling a condition, not waiting for time
	}
}

// An Update that fails after others were added to the open transaction
// rolls them back too: the store then refuses every call, Close leaves
// no clean-shutdown marker, and the next Open starts empty (Raft
// restores and replays).
func TestGroupCommit_FailureLosesPendingAndStopsTheStore(t *testing.T) {
	cfg := groupConfig(t, 1000)
	st, err := boltstore.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	led := ledgerOn(t, st)
	log := batches(13, 6, 10)
	applyLog(t, led, log, 1, 3)
	if err := st.View(func(fsm.ReadTx) error { return nil }); err != nil { // commits 1..3
		t.Fatal(err)
	}
	applyLog(t, led, log, 4, 5) // pending
	boom := errors.New("boom")
	err = st.Update(func(tx fsm.Tx) error {
		if err := tx.SetAppliedIndex(6); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boltstore.ErrPendingLost) {
		t.Fatalf("failing Update after pending ones: %v, want ErrPendingLost", err)
	}
	for name, err := range map[string]error{
		"View":   st.View(func(fsm.ReadTx) error { return nil }),
		"Update": st.Update(func(fsm.Tx) error { return nil }),
	} {
		if !errors.Is(err, boltstore.ErrPendingLost) {
			t.Fatalf("%s of a failed store: %v, want ErrPendingLost", name, err)
		}
	}
	if err := st.Close(); !errors.Is(err, boltstore.ErrPendingLost) {
		t.Fatalf("Close of a failed store: %v", err)
	}
	if _, err := os.Stat(cfg.Path + ".state"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed store left a clean-shutdown marker (%v)", err)
	}
	st2 := openStore(t, cfg)
	if led2 := ledgerOn(t, st2); st2.Rebuilt() == "" || led2.AppliedIndex() != 0 {
		t.Fatalf("reopened a failed store: rebuilt %q, applied %d", st2.Rebuilt(), led2.AppliedIndex())
	}

	// A failing Update with nothing pending before it is an ordinary
	// rollback: the store goes on.
	st3 := openStore(t, groupConfig(t, 1000))
	if err := st3.Update(func(fsm.Tx) error { return boom }); !errors.Is(err, boom) || errors.Is(err, boltstore.ErrPendingLost) {
		t.Fatalf("failing first Update: %v", err)
	}
	applyLog(t, ledgerOn(t, st3), log, 1, 2)
}

// Close commits what is pending: the reopened store holds every Update.
func TestGroupCommit_CloseCommits(t *testing.T) {
	cfg := groupConfig(t, 1000)
	st, err := boltstore.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	log := batches(14, 20, 10)
	applyLog(t, ledgerOn(t, st), log, 1, len(log))
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = openStore(t, cfg)
	want := ledgerOn(t, newStore(t))
	applyLog(t, want, log, 1, len(log))
	sameState(t, ledgerOn(t, st), want)
	if st.Rebuilt() != "" {
		t.Fatalf("rebuilt: %s", st.Rebuilt())
	}
}

// The crash test of group commit: a process applying with Updates
// pending is killed (SIGKILL). Its file is discarded at the next Open as
// always; looked at anyway (a marker forged for it), it holds a whole
// prefix of the log — its applied index k, at most what was applied, and
// exactly the state of entries 1..k — because the applied index commits
// with the state it describes; replaying k+1.. (as Raft does) gives the
// state of a store that never crashed.
func TestKilledProcess_GroupCommitLeavesAWholePrefix(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	dir := t.TempDir()
	acked := runUntilKilled(t, dir, "group", 40)
	path := filepath.Join(dir, "ledger.db")
	kept := filepath.Join(dir, "kept.db")
	copyFile(t, path, kept) // before the Open below discards it
	cfg := boltstore.Config{Path: path, InitialMmapBytes: 1 << 20}
	st := openStore(t, cfg)
	if st.Rebuilt() == "" || ledgerOn(t, st).AppliedIndex() != 0 {
		t.Fatal("a grouped store left by a killed process was served")
	}
	st.Close()

	// The killed process's file, as it was.
	if err := boltstore.MarkClean(kept); err != nil {
		t.Fatal(err)
	}
	st = openStore(t, boltstore.Config{Path: kept, InitialMmapBytes: 1 << 20})
	led := ledgerOn(t, st)
	k := int(led.AppliedIndex())
	t.Logf("killed after %d applied entries; the file holds 1..%d", acked, k)
	if k > acked+1 || k == 0 { // +1: an entry applied while the kill landed
		t.Fatalf("file at applied index %d, %d applied", k, acked)
	}
	log := batches(6, k+20, 20)
	want := ledgerOn(t, newStore(t))
	applyLog(t, want, log, 1, k)
	sameState(t, led, want)
	applyLog(t, led, log, k+1, k+20)
	applyLog(t, want, log, k+1, k+20)
	sameState(t, led, want)
}

func TestConfig_GroupCommitBounds(t *testing.T) {
	for _, c := range []struct {
		cfg boltstore.Config
		ok  bool
	}{
		{boltstore.Config{Path: "x", CommitInterval: time.Millisecond}, true},
		{boltstore.Config{Path: "x", CommitInterval: -1}, false},
		{boltstore.Config{Path: "x", CommitInterval: boltstore.MaxCommitInterval + 1}, false},
		{boltstore.Config{Path: "x", CommitInterval: time.Millisecond, FsyncEveryBatch: true}, false},
		{boltstore.Config{Path: "x", CommitUpdates: -1}, false},
		{boltstore.Config{Path: "x", CommitBytes: 1 << 19}, false},
	} {
		if err := c.cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("%+v: Validate() = %v", c.cfg, err)
		}
	}
}
