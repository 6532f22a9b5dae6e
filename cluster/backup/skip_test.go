package backup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

func newLedger(t *testing.T) *fsm.Ledger {
	t.Helper()
	led, err := fsm.New(fsm.Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	return led
}

func snapFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.snap"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A checkpoint mark advances the applied index and changes nothing else
// (the replica checker proposes one every round): the backup after it is
// skipped. A real event is a new backup. (Before the content test, the
// index test wrote and proved a backup after every mark.)
func TestOnce_AMarkAloneIsSkippedARealEventIsNot(t *testing.T) {
	led := newLedger(t)
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	b, err := New(Config{Dir: dir, Group: "global", Ledger: led, IsLeader: func() bool { return true },
		Term: func() uint64 { return 7 }, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := led.Apply(1, fsmtest.JobsCreated(0, 5, "acme", "use1")); err != nil {
		t.Fatal(err)
	}
	first, err := b.Once()
	if err != nil || first.Skipped {
		t.Fatalf("first backup: %+v %v", first, err)
	}
	for i := uint64(2); i <= 4; i++ {
		if err := led.Mark(i); err != nil {
			t.Fatal(err)
		}
		res, err := b.Once()
		if err != nil || !res.Skipped || res.Index != i {
			t.Fatalf("a backup after mark %d alone: %+v %v", i, res, err)
		}
	}
	if got := snapFiles(t, dir); len(got) != 1 {
		t.Fatalf("marks alone left %d backups: %v", len(got), got)
	}
	if _, err := led.Apply(5, fsmtest.JobsCreated(5, 1, "acme", "use1")); err != nil {
		t.Fatal(err)
	}
	res, err := b.Once()
	if err != nil || res.Skipped || res.Index != 5 {
		t.Fatalf("a backup after a real event: %+v %v", res, err)
	}
	info, err := Inspect(res.Path)
	if err != nil || info.Group != "global" || info.Term != 7 || info.Index != 5 || info.Jobs != 6 {
		t.Fatalf("the new backup: %+v %v", info, err)
	}
	if got := snapFiles(t, dir); len(got) != 2 {
		t.Fatalf("%d backups, want 2: %v", len(got), got)
	}
	if v := testkit.MetricValue(t, reg, "strata_backup_skipped_total"); v != 3 {
		t.Fatalf("skipped %v, want 3", v)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("a skipped backup left a file behind: %v", entries)
	}
}

// The content hash is the record stream without its header and CRC,
// however the stream is cut into writes.
func TestContentHash_IgnoresHeaderAndCRCWhateverTheWrites(t *testing.T) {
	led := newLedger(t)
	if _, err := led.Apply(1, fsmtest.JobsCreated(0, 3, "acme", "use1")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := led.SnapshotRecords(&buf); err != nil {
		t.Fatal(err)
	}
	stream := buf.Bytes()
	want := fsm.Hash(sha256.Sum256(stream[fsm.SnapshotHeaderLen : len(stream)-4]))
	for _, chunk := range []int{1, 2, 3, 5, 31, 33, 4096} {
		c := newContentHash()
		for p := stream; len(p) > 0; {
			n := min(chunk, len(p))
			if k, err := c.Write(p[:n]); k != n || err != nil {
				t.Fatal(k, err)
			}
			p = p[n:]
		}
		if c.sum() != want {
			t.Fatalf("writes of %d bytes: another hash", chunk)
		}
	}
}

// Run backs up at every tick while this node leads, and only then; a
// tick with nothing new (a mark alone) writes nothing. The clock is
// synctest's: no real waiting.
func TestRun_BacksUpEveryIntervalWhileLeading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		led := newLedger(t)
		dir := t.TempDir()
		reg := prometheus.NewRegistry()
		var leading atomic.Bool
		leading.Store(true)
		b, err := New(Config{Dir: dir, Interval: time.Minute, Group: "use1", Ledger: led,
			IsLeader: leading.Load, Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { b.Run(ctx); close(done) }()
		tick := func() { time.Sleep(time.Minute); synctest.Wait() } // fake time: one interval

		if _, err := led.Apply(1, fsmtest.JobsCreated(0, 2, "acme", "use1")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := len(snapFiles(t, dir)); n != 0 {
			t.Fatalf("%d backups before the first tick", n)
		}
		tick()
		if n := len(snapFiles(t, dir)); n != 1 {
			t.Fatalf("%d backups after the first tick, want 1", n)
		}
		if err := led.Mark(2); err != nil {
			t.Fatal(err)
		}
		tick()
		if n, v := len(snapFiles(t, dir)), testkit.MetricValue(t, reg, "strata_backup_skipped_total"); n != 1 || v != 1 {
			t.Fatalf("after a mark alone: %d backups, %v skipped", n, v)
		}
		leading.Store(false)
		if _, err := led.Apply(3, fsmtest.JobsCreated(2, 1, "acme", "use1")); err != nil {
			t.Fatal(err)
		}
		tick()
		if n := len(snapFiles(t, dir)); n != 1 {
			t.Fatalf("a follower wrote a backup: %d", n)
		}
		leading.Store(true)
		tick()
		if n := len(snapFiles(t, dir)); n != 2 {
			t.Fatalf("%d backups after the new event's tick, want 2", n)
		}
		cancel()
		<-done
	})
}
