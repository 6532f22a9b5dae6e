package commit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/wal"
)

// testRefusal is a refusal of LSN lsn holding events of two tenants.
func testRefusal(t testing.TB, lsn wal.LSN) Refusal {
	t.Helper()
	events, _ := testkit.JobEvents(int(lsn)*10, 3)
	events[1].Tenant = "beta"
	batch := testkit.MustBatch(t, events...)
	return newRefusal("m1", lsn, events[0].HLC, time.UnixMilli(1_700_000_000_000+int64(lsn)), batch, "cluster: invalid batch: leader m2: event 1: bad fence")
}

func TestRefusal_EncodingRoundTripsAndKeepsTenantsPerEvent(t *testing.T) {
	r := testRefusal(t, 7)
	if want := []string{"acme", "beta"}; !reflect.DeepEqual(r.Tenants, want) {
		t.Fatalf("tenants %q, want %q", r.Tenants, want)
	}
	if len(r.Events) != 3 || r.Tenants[r.Events[1].Tenant] != "beta" || r.Tenants[r.Events[0].Tenant] != "acme" {
		t.Fatalf("events %+v do not name their tenants", r.Events)
	}
	got, err := decodeRefusal(appendRefusal(nil, &r))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, r)
	}
	// A batch that does not decode is kept without events: tenants unknown.
	bad := newRefusal("m1", 8, hlc.Timestamp{WallMs: 1}, time.UnixMilli(1), []byte{0xff}, "malformed")
	if bad.Tenants != nil || bad.Events != nil {
		t.Fatalf("undecodable batch: %+v, want no tenants or events", bad)
	}
	if got, err := decodeRefusal(appendRefusal(nil, &bad)); err != nil || !reflect.DeepEqual(got, bad) {
		t.Fatalf("round trip of an undecodable batch's refusal: %+v, %v", got, err)
	}
}

func TestRefusal_ReasonIsBoundedAtARuneBoundary(t *testing.T) {
	long := strings.Repeat("é", MaxRefusalReasonBytes) // 2 bytes each
	r := newRefusal("m1", 1, hlc.Timestamp{}, time.UnixMilli(0), nil, "x"+long)
	if len(r.Reason) > MaxRefusalReasonBytes || !strings.HasPrefix(r.Reason, "xé") || !strings.HasSuffix(r.Reason, "é") {
		t.Fatalf("reason of %d bytes ends %q", len(r.Reason), r.Reason[len(r.Reason)-4:])
	}
}

func TestRefusalRegistry_EvictsOldestBeyondCountAndBytes(t *testing.T) {
	g := newRefusalRegistry(3, 1<<20)
	for lsn := wal.LSN(1); lsn <= 5; lsn++ {
		r := testRefusal(t, lsn)
		g.add(r, appendRefusal(nil, &r))
	}
	if g.len() != 3 || g.evicted != 2 || g.evictedThrough != 2 {
		t.Fatalf("kept %d, evicted %d through %d; want 3, 2 through 2", g.len(), g.evicted, g.evictedThrough)
	}
	for lsn := wal.LSN(1); lsn <= 5; lsn++ {
		_, ok := g.get(lsn)
		if ok != (lsn >= 3) || g.lost(lsn) != (lsn <= 2) {
			t.Fatalf("LSN %d: kept %v, lost %v", lsn, ok, g.lost(lsn))
		}
	}
	// The same LSN again replaces, and counts once.
	r := testRefusal(t, 4)
	r.Reason = "again"
	g.add(r, appendRefusal(nil, &r))
	if got, _ := g.get(4); got.Reason != "again" || g.len() != 3 {
		t.Fatalf("replace: %q, %d kept", got.Reason, g.len())
	}

	one := testRefusal(t, 1)
	size := len(appendRefusal(nil, &one))
	g = newRefusalRegistry(100, 2*size)
	for lsn := wal.LSN(1); lsn <= 3; lsn++ {
		r := testRefusal(t, lsn)
		g.add(r, appendRefusal(nil, &r))
	}
	if g.len() != 2 || g.evictedThrough != 1 {
		t.Fatalf("byte bound: kept %d, evicted through %d; want 2, 1", g.len(), g.evictedThrough)
	}
}

func TestRefusalLog_SurvivesReopenTornTailAndRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "refusals")
	l, err := openRefusalLog(path, 3, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var want []Refusal
	for lsn := wal.LSN(1); lsn <= 5; lsn++ {
		r := testRefusal(t, lsn)
		want = append(want, r)
		if _, err := l.record(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	check := func(l *refusalLog) {
		t.Helper()
		for _, r := range want {
			got, ok, lost := l.get(r.LSN)
			switch {
			case r.LSN <= 2 && (ok || !lost):
				t.Fatalf("LSN %d: kept %v lost %v, want evicted", r.LSN, ok, lost)
			case r.LSN > 2 && (!ok || !reflect.DeepEqual(got, r)):
				t.Fatalf("LSN %d after reopen: %+v, %v; want %+v", r.LSN, got, ok, r)
			}
		}
	}
	l, err = openRefusalLog(path, 3, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	check(l)
	l.close()

	// A torn last entry is cut away; what was whole stays.
	b, _ := os.ReadFile(path)
	extra := testRefusal(t, 6)
	torn := appendFrame(bytes.Clone(b), appendRefusal(nil, &extra))
	if err := os.WriteFile(path, torn[:len(torn)-5], 0o644); err != nil {
		t.Fatal(err)
	}
	l, err = openRefusalLog(path, 3, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	check(l)
	if _, ok, _ := l.get(6); ok {
		t.Fatal("a torn entry was read")
	}
	if fi, _ := os.Stat(path); fi.Size() != int64(len(b)) {
		t.Fatalf("file is %d bytes after the torn entry was cut, want %d", fi.Size(), len(b))
	}
	// Past twice the bound the file is rewritten, with the eviction mark.
	for lsn := wal.LSN(6); lsn <= 8; lsn++ {
		r := testRefusal(t, lsn)
		want = append(want, r)
		if _, err := l.record(r); err != nil {
			t.Fatal(err)
		}
	}
	// 7 entries at LSN 7 (> 2×3): rewritten to the mark and 3; then LSN 8.
	if l.frames != 5 {
		t.Fatalf("after a rewrite the file holds %d entries, want 5 (mark + 3, then 1)", l.frames)
	}
	l.close()
	l, err = openRefusalLog(path, 3, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	for lsn := wal.LSN(1); lsn <= 8; lsn++ {
		_, ok, lost := l.get(lsn)
		if ok != (lsn >= 6) || lost != (lsn <= 5) {
			t.Fatalf("after rewrite and reopen, LSN %d: kept %v lost %v", lsn, ok, lost)
		}
	}
}

func TestRefusalLog_CorruptEntryBeforeTheLastStopsTheNode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "refusals")
	var b []byte
	for lsn := wal.LSN(1); lsn <= 2; lsn++ {
		r := testRefusal(t, lsn)
		b = appendFrame(b, appendRefusal(nil, &r))
	}
	b[refusalHeaderBytes+3] ^= 0xff // first entry's payload
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openRefusalLog(path, 3, 1<<20); !errors.Is(err, errRefusalCodec) {
		t.Fatalf("open over a corrupt entry: %v, want errRefusalCodec", err)
	}
}

func TestRefusal_DecodeRejectsWhatItCannotTrust(t *testing.T) {
	r := testRefusal(t, 3)
	good := appendRefusal(nil, &r)
	for name, b := range map[string][]byte{
		"empty":          nil,
		"wrong kind":     append([]byte{refusalKindEvicted}, good[1:]...),
		"truncated":      good[:len(good)-1],
		"trailing":       append(bytes.Clone(good), 0),
		"huge count":     append(bytes.Clone(good[:len(good)-3*17-1]), 0xff, 0xff, 0xff, 0xff, 0x0f),
		"unsorted names": appendRefusal(nil, &Refusal{At: time.UnixMilli(0), Tenants: []string{"b", "a"}}),
		"events only":    appendRefusal(nil, &Refusal{At: time.UnixMilli(0), Events: []RefusedEvent{{}}}),
	} {
		if _, err := decodeRefusal(b); !errors.Is(err, errRefusalCodec) {
			t.Errorf("%s: %v, want errRefusalCodec", name, err)
		}
	}
}

// FuzzDecodeRefusal: any bytes decode or fail without panicking, and what
// decodes encodes back to the same bytes.
func FuzzDecodeRefusal(f *testing.F) {
	r := testRefusal(f, 3)
	f.Add(appendRefusal(nil, &r))
	f.Add(appendRefusal(nil, &Refusal{At: time.UnixMilli(5), Reason: "x"}))
	f.Add(appendEvicted(nil, 9, 2))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRefusal(b)
		if err != nil {
			return
		}
		if again := appendRefusal(nil, &r); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n%x\n%x", again, b)
		}
	})
}

// FuzzReplayRefusals: any file replays or fails without panicking, the
// good prefix is within the file, and the registry stays within bounds.
func FuzzReplayRefusals(f *testing.F) {
	var b []byte
	for lsn := wal.LSN(1); lsn <= 3; lsn++ {
		r := testRefusal(f, lsn)
		b = appendFrame(b, appendRefusal(nil, &r))
	}
	f.Add(b)
	f.Add(appendFrame(nil, appendEvicted(nil, 4, 1)))
	f.Add(b[:len(b)-2])
	f.Fuzz(func(t *testing.T, b []byte) {
		reg := newRefusalRegistry(2, 1<<16)
		good, frames, err := replayRefusals(b, reg)
		if good < 0 || good > len(b) || frames < 0 || reg.len() > 2 || reg.bytes > 1<<16 && reg.len() > 1 {
			t.Fatalf("good %d of %d, %d frames, %d kept (%d bytes), err %v", good, len(b), frames, reg.len(), reg.bytes, err)
		}
		if err == nil {
			// The good prefix replays to the same registry.
			again := newRefusalRegistry(2, 1<<16)
			if g2, f2, err := replayRefusals(b[:good], again); err != nil || g2 != good || f2 != frames {
				t.Fatalf("prefix replay: %d, %d, %v; want %d, %d", g2, f2, err, good, frames)
			}
		}
	})
}
