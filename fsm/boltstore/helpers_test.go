package boltstore_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// batches returns n batches of size generated events (fsmtest.Gen: every
// rule, random ids, late events), the entries of a Raft log.
func batches(seed uint64, n, size int) [][]fsm.Event {
	gen := fsmtest.NewGen(seed)
	out := make([][]fsm.Event, n)
	for i := range out {
		out[i] = make([]fsm.Event, size)
		for j := range out[i] {
			out[i][j] = gen.Next()
		}
	}
	return out
}

// applyLog applies entries from..to (1-based Raft indexes) of log.
func applyLog(t testing.TB, led *fsm.Ledger, log [][]fsm.Event, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		if _, err := led.Apply(uint64(i), slices.Clone(log[i-1])); err != nil {
			t.Fatalf("apply index %d: %v", i, err)
		}
	}
}

func ledgerOn(t testing.TB, st fsm.Store) *fsm.Ledger {
	t.Helper()
	led, err := fsm.New(fsm.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return led
}

// state is what two ledgers must agree on: the record-stream snapshot
// (deterministic: equal bytes, equal state) and the applied index.
func state(t testing.TB, led *fsm.Ledger) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := led.SnapshotRecords(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func sameState(t testing.TB, got, want *fsm.Ledger) {
	t.Helper()
	if got.AppliedIndex() != want.AppliedIndex() {
		t.Fatalf("applied index %d, want %d", got.AppliedIndex(), want.AppliedIndex())
	}
	if !bytes.Equal(state(t, got), state(t, want)) {
		t.Fatal("states differ")
	}
}

func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// inNewDir returns cfg with its file in a new directory.
func inNewDir(t testing.TB, cfg boltstore.Config) boltstore.Config {
	cfg.Path = filepath.Join(t.TempDir(), "ledger.db")
	return cfg
}
