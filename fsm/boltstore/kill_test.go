package boltstore_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// helperEnv makes the test binary a process that applies batches to a
// store until it is killed: "<dir>,<mode>".
const helperEnv = "STRATA_BOLT_KILL_HELPER"

// TestHelperProcess_ApplyUntilKilled is not a test: run by
// TestKilledProcess_*, it opens the store named by helperEnv, applies
// batches and prints "applied <index>" after each until it is killed; it
// never closes the store. <mode> is "true" (FsyncEveryBatch), "false" or
// "group" (group commit).
func TestHelperProcess_ApplyUntilKilled(t *testing.T) {
	arg := os.Getenv(helperEnv)
	if arg == "" {
		t.Skip("helper process only")
	}
	dir, mode, _ := strings.Cut(arg, ",")
	cfg := boltstore.Config{Path: filepath.Join(dir, "ledger.db"), FsyncEveryBatch: mode == "true",
		InitialMmapBytes: 1 << 20}
	if mode == "group" { // group commit: by interval and every 7 entries
		cfg.CommitInterval, cfg.CommitUpdates = 20*time.Millisecond, 7
	}
	st, err := boltstore.Open(cfg)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	led := ledgerOn(t, st)
	gen := fsmtest.NewGen(6) // the stream of batches(6, n, 20), without end
	for i := uint64(1); ; i++ {
		batch := make([]fsm.Event, 20)
		for j := range batch {
			batch[j] = gen.Next()
		}
		if _, err := led.Apply(i, batch); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Printf("applied %d\n", i)
	}
}

// A process killed while applying (SIGKILL: no Close) leaves a file the
// next Open discards without FsyncEveryBatch, and serves with it (holding
// at least every batch that was acknowledged).
func TestKilledProcess_StoreIsRebuiltUnlessFsynced(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	for _, fsync := range []bool{false, true} {
		t.Run(fmt.Sprintf("fsync=%v", fsync), func(t *testing.T) {
			dir := t.TempDir()
			acked := runUntilKilled(t, dir, fmt.Sprint(fsync), 10)
			st := openStore(t, boltstore.Config{Path: filepath.Join(dir, "ledger.db"), FsyncEveryBatch: fsync, InitialMmapBytes: 1 << 20})
			led := ledgerOn(t, st)
			t.Logf("killed after %d acknowledged batches; reopened at %d, rebuilt: %q", acked, led.AppliedIndex(), st.Rebuilt())
			if !fsync {
				if st.Rebuilt() == "" || led.AppliedIndex() != 0 {
					t.Fatalf("a store left by a killed process was served (applied index %d)", led.AppliedIndex())
				}
				return
			}
			if st.Rebuilt() != "" || led.AppliedIndex() < uint64(acked) {
				t.Fatalf("fsynced store: rebuilt %q, applied index %d < %d acknowledged", st.Rebuilt(), led.AppliedIndex(), acked)
			}
			want := ledgerOn(t, newStore(t))
			applyLog(t, want, batches(6, int(led.AppliedIndex()), 20), 1, int(led.AppliedIndex()))
			sameState(t, led, want)
		})
	}
}

// runUntilKilled starts the helper process on dir, waits until it has
// acknowledged at least n batches, kills it (SIGKILL) and returns the
// last batch it acknowledged.
func runUntilKilled(t *testing.T, dir, mode string, n int) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess_ApplyUntilKilled$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%s", helperEnv, dir, mode))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := make(chan int)
	go func() {
		defer close(acked)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "applied "); ok {
				i, _ := strconv.Atoi(v)
				acked <- i
			}
		}
	}()
	last := 0
	deadline := time.After(2 * time.Minute)
	for last < n {
		select {
		case i, ok := <-acked:
			if !ok {
				t.Fatalf("helper process ended after %d batches", last)
			}
			last = i
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("helper process acknowledged %d batches in 2 minutes", last)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for i := range acked { // batches acknowledged before the kill landed
		last = i
	}
	cmd.Wait()
	return last
}
