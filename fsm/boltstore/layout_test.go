package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

func layoutConfig(t *testing.T) Config {
	return Config{Path: filepath.Join(t.TempDir(), "ledger.db"), InitialMmapBytes: 1 << 20, HistoryTailEntries: 3}
}

func mustOpen(t *testing.T, cfg Config) (*Store, *fsm.Ledger) {
	t.Helper()
	st, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	led, err := fsm.New(fsm.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return st, led
}

// layout1File writes a closed store of layout 1 at cfg.Path (a store of
// this version with its marks bucket removed and layout byte 1, as the
// previous version wrote it, and a clean-shutdown marker) and returns its
// ledger digest and applied index.
func layout1File(t *testing.T, cfg Config) (fsm.Hash, uint64) {
	t.Helper()
	st, led := mustOpen(t, cfg)
	j := fsmtest.NewJob("use1-1700000000000-gate1-00001", "acme", 100, "use1")
	for i, e := range []fsm.Event{j.Created(), j.Ev(2, 1, &fsm.JobAccepted{Region: "use1", WorkerCount: 2})} {
		if _, err := led.Apply(uint64(i+1), []fsm.Event{e}); err != nil {
			t.Fatal(err)
		}
	}
	digest, index, err := led.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	setLayout(t, cfg.Path, layoutV1, true)
	return digest, index
}

// setLayout rewrites the layout byte (and drops the marks bucket) of a
// closed store, keeping its clean-shutdown marker valid.
func setLayout(t *testing.T, path string, version byte, dropMarks bool) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(btx *bolt.Tx) error {
		if dropMarks {
			if err := btx.DeleteBucket(bucketMarks); err != nil {
				return err
			}
		}
		return btx.Bucket(bucketMeta).Put(metaLayout, []byte{version})
	})
	if err != nil {
		t.Fatal(err)
	}
	txid := lastTxID(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := writeMarker(path+".state", marker{State: markerClean, TxID: txid}); err != nil {
		t.Fatal(err)
	}
}

// layoutOf reads the layout byte and whether the marks bucket exists.
func layoutOf(t *testing.T, st *Store) (byte, bool) {
	t.Helper()
	var v byte
	var marks bool
	st.mu.RLock()
	defer st.mu.RUnlock()
	err := st.db.View(func(btx *bolt.Tx) error {
		v = btx.Bucket(bucketMeta).Get(metaLayout)[0]
		marks = btx.Bucket(bucketMarks) != nil
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return v, marks
}

// applyMark applies a ForwardMark at the next index and checks the marks.
func applyMark(t *testing.T, led *fsm.Ledger, want map[string]uint64) {
	t.Helper()
	e := fsmtest.NewEvent(fsmtest.ID(1<<40), "", "", "use1", "mgr1", fsmtest.TS(1_800_000_000_000, 0, 1), 0,
		&fsm.ForwardMark{Marks: []fsm.ForwardPosition{{Tenant: "acme", Seq: 2}}})
	if r, err := led.Apply(led.AppliedIndex()+1, []fsm.Event{e}); err != nil || r[0].Outcome != fsm.OutcomeApplied {
		t.Fatalf("forward mark: %+v %v", r, err)
	}
	if got, err := led.ForwardMarks(); err != nil || !maps.Equal(got, want) {
		t.Fatalf("marks %v (%v), want %v", got, err, want)
	}
}

// Open upgrades a layout-1 file in place: layout 2, an empty marks
// bucket, the rest untouched; marks then apply and survive a reopen.
func TestOpen_UpgradesALayout1File(t *testing.T) {
	cfg := layoutConfig(t)
	digest, index := layout1File(t, cfg)
	st, led := mustOpen(t, cfg)
	if st.Rebuilt() != "" {
		t.Fatalf("the layout-1 file was discarded: %s", st.Rebuilt())
	}
	if v, marks := layoutOf(t, st); v != layoutVersion || !marks {
		t.Fatalf("layout %d, marks bucket %v after the upgrade", v, marks)
	}
	if d, i, err := led.Digest(); err != nil || d != digest || i != index {
		t.Fatalf("digest %s at %d (%v), want %s at %d", d, i, err, digest, index)
	}
	if got, err := led.ForwardMarks(); err != nil || len(got) != 0 {
		t.Fatalf("marks of an upgraded file %v %v", got, err)
	}
	applyMark(t, led, map[string]uint64{"acme": 2})
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	_, led = mustOpen(t, cfg)
	if got, _ := led.ForwardMark("acme"); got != 2 {
		t.Fatalf("mark after reopening %d, want 2", got)
	}
}

func TestOpen_RefusesAnUnknownLayout(t *testing.T) {
	cfg := layoutConfig(t)
	layout1File(t, cfg)
	setLayout(t, cfg.Path, layoutVersion+1, false)
	if st, err := Open(cfg); !errors.Is(err, ErrCorrupt) {
		if err == nil {
			st.Close()
		}
		t.Fatalf("open of layout %d: %v, want ErrCorrupt", layoutVersion+1, err)
	}
}

// frameImage wraps a bbolt file in the image framing of FORMAT.md.
func frameImage(t *testing.T, file []byte, index uint64, digest fsm.Hash) []byte {
	t.Helper()
	b, _ := fsm.SnapshotHeader{Kind: fsm.SnapshotKindStoreImage, AppliedIndex: index}.AppendBinary(nil)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(file)))
	b = append(b, file...)
	b = append(b, digest[:]...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// An image of a layout-1 store (a replica not yet upgraded) restores and
// is upgraded as it is swapped in; an image of an unknown layout is
// refused.
func TestRestoreImage_UpgradesALayout1Image(t *testing.T) {
	src := layoutConfig(t)
	digest, index := layout1File(t, src)
	file, err := os.ReadFile(src.Path)
	if err != nil {
		t.Fatal(err)
	}
	st, led := mustOpen(t, layoutConfig(t))
	if err := led.Restore(bytes.NewReader(frameImage(t, file, index, digest))); err != nil {
		t.Fatal(err)
	}
	if v, marks := layoutOf(t, st); v != layoutVersion || !marks {
		t.Fatalf("layout %d, marks bucket %v after restoring a layout-1 image", v, marks)
	}
	if d, i, err := led.Digest(); err != nil || d != digest || i != index {
		t.Fatalf("digest %s at %d (%v), want %s at %d", d, i, err, digest, index)
	}
	applyMark(t, led, map[string]uint64{"acme": 2})

	setLayout(t, src.Path, layoutVersion+1, false)
	if file, err = os.ReadFile(src.Path); err != nil {
		t.Fatal(err)
	}
	if err := led.Restore(bytes.NewReader(frameImage(t, file, index, digest))); !errors.Is(err, fsm.ErrSnapshot) {
		t.Fatalf("image of layout %d: %v, want ErrSnapshot", layoutVersion+1, err)
	}
	if got, _ := led.ForwardMark("acme"); got != 2 {
		t.Fatal("a refused image changed the store")
	}
}
