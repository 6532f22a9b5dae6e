package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"strings"
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

// oldLayoutFile writes a closed store of an old layout (1 or 2) at
// cfg.Path, as the previous releases wrote it: a store of this version
// whose events bucket is re-keyed by event id alone, with layout byte
// version (and, for layout 1, no marks bucket), and a clean-shutdown
// marker. It returns the ledger digest and applied index.
func oldLayoutFile(t *testing.T, cfg Config, version byte) (fsm.Hash, uint64) {
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
	rewrite(t, cfg.Path, func(btx *bolt.Tx) error {
		events := btx.Bucket(bucketEvents)
		type kv struct{ k, v []byte }
		var old []kv
		if err := events.ForEach(func(k, v []byte) error {
			old = append(old, kv{bytes.Clone(k), bytes.Clone(v)})
			return nil
		}); err != nil {
			return err
		}
		for _, e := range old {
			if err := events.Delete(e.k); err != nil {
				return err
			}
			if err := events.Put(e.k[len(e.k)-eventIDLen:], e.v); err != nil { // the id alone
				return err
			}
		}
		if version == layoutV1 {
			if err := btx.DeleteBucket(bucketMarks); err != nil {
				return err
			}
		}
		return btx.Bucket(bucketMeta).Put(metaLayout, []byte{version})
	})
	return digest, index
}

// setLayout rewrites the layout byte of a closed store.
func setLayout(t *testing.T, path string, version byte) {
	t.Helper()
	rewrite(t, path, func(btx *bolt.Tx) error { return btx.Bucket(bucketMeta).Put(metaLayout, []byte{version}) })
}

// rewrite runs fn on a closed store, keeping its clean-shutdown marker
// valid.
func rewrite(t *testing.T, path string, fn func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
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

// A store of layout 1 or 2 (events keyed by id alone) is refused at
// every Open with ErrOldLayout, saying what to do; the file and its
// clean-shutdown marker stay as they were (no migration, no silent
// discard at the next Open).
func TestOpen_RefusesAnOldLayout(t *testing.T) {
	for _, version := range []byte{layoutV1, layoutV2} {
		t.Run(fmt.Sprintf("layout %d", version), func(t *testing.T) {
			cfg := layoutConfig(t)
			oldLayoutFile(t, cfg, version)
			before, err := os.ReadFile(cfg.Path)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				st, err := Open(cfg)
				if err == nil {
					st.Close()
					t.Fatalf("layout %d opened", version)
				}
				if !errors.Is(err, ErrOldLayout) || errors.Is(err, ErrCorrupt) ||
					!strings.Contains(err.Error(), fmt.Sprintf("layout %d, this release reads layout %d", version, layoutVersion)) {
					t.Fatalf("open of layout %d: %v, want ErrOldLayout", version, err)
				}
				if after, err := os.ReadFile(cfg.Path); err != nil || !bytes.Equal(after, before) {
					t.Fatalf("a refused open changed the file (%v)", err)
				}
				if _, found, err := readMarker(cfg.Path + ".state"); !found || err != nil {
					t.Fatalf("a refused open removed the clean-shutdown marker (%v)", err)
				}
			}
		})
	}
}

func TestOpen_RefusesAnUnknownLayout(t *testing.T) {
	cfg := layoutConfig(t)
	st, _ := mustOpen(t, cfg)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	setLayout(t, cfg.Path, layoutVersion+1)
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

// An image of a layout-1 or layout-2 store (a replica of an older
// release) is refused (fsm.ErrSnapshot and ErrOldLayout) and the store
// keeps its state; so is an image of an unknown layout.
func TestRestoreImage_RefusesAnOldLayout(t *testing.T) {
	st, led := mustOpen(t, layoutConfig(t))
	applyMark(t, led, map[string]uint64{"acme": 2})
	for _, version := range []byte{layoutV1, layoutV2, layoutVersion + 1} {
		src := layoutConfig(t)
		digest, index := oldLayoutFile(t, src, version)
		file, err := os.ReadFile(src.Path)
		if err != nil {
			t.Fatal(err)
		}
		err = led.Restore(bytes.NewReader(frameImage(t, file, index, digest)))
		if !errors.Is(err, fsm.ErrSnapshot) || errors.Is(err, ErrOldLayout) != (version != layoutVersion+1) {
			t.Fatalf("image of layout %d: %v, want ErrSnapshot (and ErrOldLayout for 1 and 2)", version, err)
		}
	}
	if got, _ := led.ForwardMark("acme"); got != 2 {
		t.Fatal("a refused image changed the store")
	}
	if v, marks := layoutOf(t, st); v != layoutVersion || !marks {
		t.Fatalf("layout %d, marks bucket %v after refused images", v, marks)
	}
}

// The events bucket holds one key per applied event, tenant ‖ 0 ‖ id
// (FORMAT.md), pointing at the event's chain key: two tenants' events
// with one id are two keys.
func TestEvents_KeyedByTenantAndID(t *testing.T) {
	st, led := mustOpen(t, layoutConfig(t))
	a := fsmtest.NewJob("use1-1700000000000-gate1-00001", "acme", 100, "use1")
	b := fsmtest.NewJob("use1-1700000000000-gate1-00002", "globex", 100, "use1")
	events := []fsm.Event{a.Created(), b.Created()}
	if r, err := led.Apply(1, events); err != nil || r[0].Outcome != fsm.OutcomeApplied || r[1].Outcome != fsm.OutcomeApplied {
		t.Fatalf("%+v %v", r, err)
	}
	want := map[string]string{}
	for _, e := range events {
		want[string(appendEventKey(nil, e.Tenant, e.ID))] = string(appendChainKey(nil, e.Tenant, 1))
	}
	got := map[string]string{}
	st.mu.RLock()
	defer st.mu.RUnlock()
	err := st.db.View(func(btx *bolt.Tx) error {
		return btx.Bucket(bucketEvents).ForEach(func(k, v []byte) error {
			got[string(k)] = string(v)
			return nil
		})
	})
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("events bucket %q (%v), want %q", got, err, want)
	}
}
