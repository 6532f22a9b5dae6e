package boltstore_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
	"github.com/strata-ledger/strata/fsm/memstore"
)

func TestOpen_AfterCloseServesTheSameState(t *testing.T) {
	for _, fsync := range []bool{false, true} {
		cfg := testConfig(t)
		cfg.FsyncEveryBatch = fsync
		log := batches(1, 30, 20)
		st, err := boltstore.Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		led := ledgerOn(t, st)
		applyLog(t, led, log, 1, 20)
		want := ledgerOn(t, memstore.New())
		applyLog(t, want, log, 1, 20)
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		reopened := openStore(t, cfg)
		if why := reopened.Rebuilt(); why != "" {
			t.Fatalf("fsync %v: a cleanly closed store was rebuilt: %s", fsync, why)
		}
		led = ledgerOn(t, reopened)
		sameState(t, led, want)
		applyLog(t, led, log, 21, 30)
		applyLog(t, want, log, 21, 30)
		sameState(t, led, want)
	}
}

// A store not closed (the process or the machine died) is discarded at
// Open and starts empty, whatever its bytes; never served.
func TestOpen_WithoutCleanShutdownStartsEmpty(t *testing.T) {
	for _, tc := range []struct {
		name  string
		crash func(t *testing.T, path string) // leaves the file at path as after a crash
	}{
		{"process killed: file copied while open", func(t *testing.T, path string) {}},
		{"power loss: torn file", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			clear(b[len(b)/3 : len(b)/2]) // pages never written
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"power loss: truncated file", func(t *testing.T, path string) {
			if err := os.Truncate(path, 4096*3); err != nil {
				t.Fatal(err)
			}
		}},
		{"empty file", func(t *testing.T, path string) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			running := openStore(t, cfg)
			log := batches(2, 10, 20)
			applyLog(t, ledgerOn(t, running), log, 1, 10)
			crashed := inNewDir(t, cfg)
			copyFile(t, cfg.Path, crashed.Path) // what the disk holds: no marker
			tc.crash(t, crashed.Path)
			checkRebuilt(t, crashed, log)
		})
	}
}

func TestOpen_MarkerNotMatchingTheFileStartsEmpty(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, cfg boltstore.Config, older string)
	}{
		{"marker of a later state", func(t *testing.T, cfg boltstore.Config, older string) {
			copyFile(t, older, cfg.Path) // the file went back, the marker did not
		}},
		{"damaged marker", func(t *testing.T, cfg boltstore.Config, _ string) {
			b, err := os.ReadFile(cfg.Path + ".state")
			if err != nil {
				t.Fatal(err)
			}
			b[13] ^= 1
			if err := os.WriteFile(cfg.Path+".state", b, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			st, err := boltstore.Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			log := batches(3, 10, 20)
			led := ledgerOn(t, st)
			applyLog(t, led, log, 1, 5)
			older := cfg.Path + ".older"
			copyFile(t, cfg.Path, older)
			applyLog(t, led, log, 6, 10)
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			tc.spoil(t, cfg, older)
			checkRebuilt(t, cfg, log)
		})
	}
}

// checkRebuilt opens cfg, expects an empty, rebuilt store, and applies
// the log to it from index 1, as Raft would.
func checkRebuilt(t *testing.T, cfg boltstore.Config, log [][]fsm.Event) {
	t.Helper()
	st := openStore(t, cfg)
	if st.Rebuilt() == "" {
		t.Fatal("Open served a store that was not closed cleanly")
	}
	t.Logf("rebuilt: %s", st.Rebuilt())
	led := ledgerOn(t, st)
	if got := led.AppliedIndex(); got != 0 {
		t.Fatalf("rebuilt store at applied index %d, want 0", got)
	}
	if _, n := digestOf(t, led); n != 0 {
		t.Fatalf("rebuilt store holds %d jobs", n)
	}
	want := ledgerOn(t, memstore.New())
	applyLog(t, led, log, 1, len(log))
	applyLog(t, want, log, 1, len(log))
	sameState(t, led, want)
}

func digestOf(t testing.TB, led *fsm.Ledger) (fsm.Hash, int) {
	t.Helper()
	d, _, err := led.Digest()
	if err != nil {
		t.Fatal(err)
	}
	page, err := led.ListJobs(fsm.JobQuery{Limit: fsm.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	return d, len(page.Jobs)
}

// With FsyncEveryBatch every commit is on disk: a store not closed is
// served as it was (in either mode at the next Open).
func TestOpen_FsyncEveryBatchServesAStoreNotClosed(t *testing.T) {
	for _, reopenFsync := range []bool{true, false} {
		cfg := testConfig(t)
		cfg.FsyncEveryBatch = true
		running := openStore(t, cfg)
		log := batches(4, 10, 20)
		led := ledgerOn(t, running)
		applyLog(t, led, log, 1, 10)
		crashed := inNewDir(t, cfg)
		copyFile(t, cfg.Path, crashed.Path)
		copyFile(t, cfg.Path+".state", crashed.Path+".state")
		crashed.FsyncEveryBatch = reopenFsync
		st := openStore(t, crashed)
		if why := st.Rebuilt(); why != "" {
			t.Fatalf("reopened with fsync %v: rebuilt: %s", reopenFsync, why)
		}
		sameState(t, ledgerOn(t, st), led)
	}
}

// A store rebuilt after a crash catches up the way Raft drives it: the
// latest snapshot, then the log from index 1 (entries the snapshot holds
// are skipped: a restart never applies an entry twice).
func TestRecovery_RebuiltStoreCatchesUpFromSnapshotAndLog(t *testing.T) {
	cfg := testConfig(t)
	log := batches(5, 40, 25)
	st := openStore(t, cfg)
	led := ledgerOn(t, st)
	applyLog(t, led, log, 1, 20)
	records := state(t, led)
	var image bytes.Buffer
	if err := led.Snapshot(&image); err != nil {
		t.Fatal(err)
	}
	applyLog(t, led, log, 21, 40)
	for _, tc := range []struct {
		name string
		snap []byte
	}{{"image", image.Bytes()}, {"records", records}} {
		t.Run(tc.name, func(t *testing.T) {
			crashed := inNewDir(t, cfg)
			copyFile(t, cfg.Path, crashed.Path)
			rebuilt := openStore(t, crashed)
			if rebuilt.Rebuilt() == "" {
				t.Fatal("not rebuilt")
			}
			led2 := ledgerOn(t, rebuilt)
			if err := led2.Restore(bytes.NewReader(tc.snap)); err != nil {
				t.Fatal(err)
			}
			if led2.AppliedIndex() != 20 {
				t.Fatalf("restored at %d", led2.AppliedIndex())
			}
			for i := 1; i <= 40; i++ {
				res, err := led2.Apply(uint64(i), log[i-1])
				if err != nil {
					t.Fatal(err)
				}
				if applied := res != nil; applied != (i > 20) {
					t.Fatalf("index %d applied: %v", i, applied)
				}
			}
			sameState(t, led2, led)
		})
	}
}
