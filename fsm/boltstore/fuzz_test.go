package boltstore

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// checkAllocBound fails if decoding n bytes allocated more than a fixed
// multiple of n: the decoders check lengths before using them.
func checkAllocBound(t *testing.T, n int, fn func()) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(16*n+16<<10); got > limit {
		t.Fatalf("decoding %d bytes allocated %d bytes (limit %d)", n, got, limit)
	}
}

// sampleEntries returns n entries of one job, in order.
func sampleEntries(n int) []byte {
	var b []byte
	for i := range n {
		var k [sortLen]byte
		fsm.EventKey{HLC: fsmtest.TS(int64(1000+i), uint32(i), 1), ID: fsmtest.ID(uint64(i + 1))}.AppendSortable(k[:0])
		b = appendEntry(b, k[:], appendChainKey(nil, "acme", uint64(i+1)))
	}
	return b
}

func FuzzDecodeJobValue(f *testing.F) {
	state, _ := fsm.AppendJobState(nil, &fsm.JobState{JobID: fsmtest.SampleJobID, Tenant: "acme", Status: fsm.JobStatusPending})
	f.Add(appendJobValue(nil, &jobValue{state: state, count: 2, tail: sampleEntries(2)}))
	f.Add(appendJobValue(nil, &jobValue{sealed: true, sealedMax: [32]byte{1}, count: 1, tail: sampleEntries(1)}))
	f.Add(appendJobValue(nil, &jobValue{}))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v jobValue
		var err error
		checkAllocBound(t, len(data), func() { v, err = decodeJobValue(data) })
		if err != nil {
			return
		}
		again := appendJobValue(nil, &v)
		if !bytes.Equal(again, data) {
			t.Fatalf("encode(decode(b)) != b\n%x\n%x", again, data)
		}
		if w, err := decodeJobValue(again); err != nil || w.count != v.count || w.sealed != v.sealed {
			t.Fatalf("decode(encode(x)) != x: %v", err)
		}
	})
}

func FuzzDecodeChunk(f *testing.F) {
	f.Add(appendChunk(nil, 3, sampleEntries(3)))
	f.Add(appendChunk(nil, 1, sampleEntries(1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		var n int
		var entries []byte
		var err error
		checkAllocBound(t, len(data), func() { n, entries, err = decodeChunk(data) })
		if err != nil {
			return
		}
		if again := appendChunk(nil, n, entries); !bytes.Equal(again, data) {
			t.Fatalf("encode(decode(b)) != b\n%x\n%x", again, data)
		}
		for rest := entries; len(rest) > 0; { // the checked entries split cleanly
			_, ck, r := nextEntry(rest)
			if _, _, err := parseChainKey(ck); err != nil {
				t.Fatal(err)
			}
			rest = r
		}
	})
}

func FuzzDecodeBlock(f *testing.F) {
	rec, _ := fsm.AppendStoredEvent(nil, &fsm.StoredEvent{Event: fsmtest.SampleEvents()[2], Seq: 1})
	f.Add(appendBlock(nil, 2, appendBlockRecord(appendBlockRecord(nil, rec), rec)))
	f.Add(appendBlock(nil, 1, appendBlockRecord(nil, []byte{1})))
	f.Fuzz(func(t *testing.T, data []byte) {
		var n int
		var recs []byte
		var err error
		checkAllocBound(t, len(data), func() { n, recs, err = decodeBlock(data) })
		if err != nil {
			return
		}
		var body []byte
		for range n {
			r, rest, err := nextRecord(recs)
			if err != nil {
				t.Fatal(err)
			}
			body, recs = appendBlockRecord(body, r), rest
		}
		if again := appendBlock(nil, n, body); !bytes.Equal(again, data) {
			t.Fatalf("encode(decode(b)) != b\n%x\n%x", again, data)
		}
	})
}

func FuzzDecodeMarker(f *testing.F) {
	f.Add(marker{State: markerClean, TxID: 77}.appendBinary(nil))
	f.Add(marker{State: markerSynced}.appendBinary(nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeMarker(data)
		if err != nil {
			return
		}
		if again := m.appendBinary(nil); !bytes.Equal(again, data) {
			t.Fatalf("encode(decode(b)) != b\n%x\n%x", again, data)
		}
	})
}

func FuzzParseKeys(f *testing.F) {
	f.Add(appendChainKey(nil, "acme", 9))
	f.Add(appendChainKey(nil, "", 1))
	f.Add(appendHeadKey(nil, "globex"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if tenant, seq, err := parseChainKey(data); err == nil {
			if again := appendChainKey(nil, tenant, seq); !bytes.Equal(again, data) {
				t.Fatalf("chain key: encode(decode(b)) != b: %x %x", again, data)
			}
		}
		if tenant, err := parseHeadKey(data); err == nil {
			if again := appendHeadKey(nil, tenant); !bytes.Equal(again, data) {
				t.Fatalf("head key: encode(decode(b)) != b: %x %x", again, data)
			}
		}
	})
}

// FuzzEventKey: the events bucket's key tenant ‖ 0 ‖ id is one key per
// (tenant, id) — two tenants' events with one id never share a key, and
// no tenant (none contains a 0 byte) reaches another's event — and it
// ends with the id.
func FuzzEventKey(f *testing.F) {
	f.Add("acme", "globex", []byte("0123456789abcdef"), []byte("0123456789abcdef"))
	f.Add("", "a", []byte("0123456789abcdef"), []byte("\x00123456789abcdef"))
	f.Add("ab", "a", []byte("\x00123456789abcdef"), []byte("b\x00123456789abcde"))
	f.Fuzz(func(t *testing.T, ta, tb string, a, b []byte) {
		if strings.IndexByte(ta, 0) >= 0 || strings.IndexByte(tb, 0) >= 0 {
			return
		}
		var ia, ib fsm.EventID
		copy(ia[:], a)
		copy(ib[:], b)
		ka, kb := appendEventKey(nil, ta, ia), appendEventKey(nil, tb, ib)
		if bytes.Equal(ka, kb) != (ta == tb && ia == ib) {
			t.Fatalf("(%q, %x) and (%q, %x) give keys %x and %x", ta, ia, tb, ib, ka, kb)
		}
		if len(ka) != len(ta)+1+eventIDLen || !bytes.HasSuffix(ka, ia[:]) || ka[len(ta)] != 0 {
			t.Fatalf("key of (%q, %x): %x", ta, ia, ka)
		}
	})
}
