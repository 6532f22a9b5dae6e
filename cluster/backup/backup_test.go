package backup

import (
	"bytes"
	"io"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

// A backup is written, proved by a restore, skipped while nothing
// changes, and the oldest go beyond Retain.
func TestOnce_WritesProvesSkipsAndPrunes(t *testing.T) {
	led, err := fsm.New(fsm.Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	now := time.Unix(1_700_000_000, 0)
	b, err := New(Config{Dir: dir, Interval: time.Minute, Retain: 2, Group: "global", Ledger: led,
		IsLeader: func() bool { return true }, Now: func() time.Time { now = now.Add(time.Second); return now }, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i := range 3 {
		if _, err := led.Apply(uint64(i+1), fsmtest.JobsCreated(i*10, 10, "acme", "use1")); err != nil {
			t.Fatal(err)
		}
		res, err := b.Once()
		if err != nil || res.Skipped || res.Index != uint64(i+1) {
			t.Fatalf("backup %d: %+v %v", i, res, err)
		}
		want, _, _ := led.Digest()
		if res.Digest != want {
			t.Fatalf("backup %d: digest differs from the ledger's", i)
		}
		paths = append(paths, res.Path)
		if res, err := b.Once(); err != nil || !res.Skipped {
			t.Fatalf("a backup with nothing new: %+v %v", res, err)
		}
	}
	if _, err := os.Stat(paths[0]); !os.IsNotExist(err) {
		t.Fatalf("the oldest backup beyond retain 2 is still there: %v", err)
	}
	for _, p := range paths[1:] {
		if _, err := os.Stat(p); err != nil {
			t.Fatal(err)
		}
	}
	if v := testkit.MetricValue(t, reg, "strata_backup_written_total"); v != 3 {
		t.Fatalf("written %v", v)
	}
	if v := testkit.MetricValue(t, reg, "strata_backup_skipped_total"); v != 3 {
		t.Fatalf("skipped %v", v)
	}
}

// damaged writes its ledger's snapshot with one byte flipped.
type damaged struct{ *fsm.Ledger }

func (d damaged) SnapshotRecords(w io.Writer) error {
	var buf bytes.Buffer
	if err := d.Ledger.SnapshotRecords(&buf); err != nil {
		return err
	}
	b := buf.Bytes()
	b[len(b)/2] ^= 1
	_, err := w.Write(b)
	return err
}

// A backup that does not restore is not kept, and counts as failed.
func TestOnce_UnprovableBackupIsRemoved(t *testing.T) {
	led, err := fsm.New(fsm.Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := led.Apply(1, fsmtest.JobsCreated(0, 50, "acme", "use1")); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	b, err := New(Config{Dir: dir, Group: "use1", Ledger: damaged{led}, IsLeader: func() bool { return true }, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Once(); err == nil {
		t.Fatal("a damaged backup was proved")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("the damaged backup was kept: %v", entries)
	}
	if v := testkit.MetricValue(t, reg, "strata_backup_failed_total"); v != 1 {
		t.Fatalf("failed %v", v)
	}
}
