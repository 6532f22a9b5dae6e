package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/strata-ledger/strata/hlc"
)

func FuzzDecodeRecord(f *testing.F) {
	good, _ := EncodeRecord(7, testRecord(3))
	f.Add(good)
	f.Add(good[:HeaderBytes])
	f.Add(make([]byte, HeaderBytes))
	huge := bytes.Clone(good)
	binary.LittleEndian.PutUint32(huge[offLength:], 0xffffffff)
	f.Add(huge)
	f.Fuzz(func(t *testing.T, data []byte) {
		e, n, err := DecodeRecord(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		// Whatever decodes re-encodes to the same bytes.
		again, err := EncodeRecord(e.LSN, e.Record)
		if err != nil {
			t.Fatalf("decoded record does not encode: %v", err)
		}
		if !bytes.Equal(again, data[:n]) {
			t.Fatalf("re-encoded\n% x\nfrom\n% x", again, data[:n])
		}
	})
}

func FuzzRecordRoundTrip(f *testing.F) {
	f.Add(uint64(1), uint8(1), uint8(1), int64(1704931200000), uint32(7), uint32(42), []byte("hello"))
	f.Add(uint64(1<<63), uint8(255), uint8(5), int64(0), uint32(0), uint32(0), []byte{})
	f.Fuzz(func(t *testing.T, lsn uint64, typ, state uint8, wall int64, logical, node uint32, payload []byte) {
		r := Record{Type: typ, State: Level(state), HLC: hlc.Timestamp{WallMs: wall, Logical: logical, Node: node}, Payload: payload}
		b, err := EncodeRecord(LSN(lsn), r)
		if err != nil {
			return // an invalid record is refused, not written
		}
		e, n, err := DecodeRecord(b)
		if err != nil || n != len(b) {
			t.Fatalf("decode(encode(x)) failed: %d, %v", n, err)
		}
		if r.State == 0 {
			r.State = Pending
		}
		if e.LSN != LSN(lsn) || e.Type != r.Type || e.State != r.State || e.HLC != r.HLC || !bytes.Equal(e.Payload, r.Payload) {
			t.Fatalf("decode(encode(%+v)) = %+v", r, e)
		}
	})
}

func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add(encodeCheckpoint(Watermarks{Regional: 1, Global: 2, Applied: 3, Compacted: 4}))
	f.Add([]byte("SWCP"))
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := decodeCheckpoint(data)
		if err != nil {
			return
		}
		if !bytes.Equal(encodeCheckpoint(w), data) {
			t.Fatalf("checkpoint %x decodes to %+v, which encodes differently", data, w)
		}
	})
}

// FuzzRecover damages the last segment of a good log (cut it, overwrite
// bytes) and opens it: Open never panics, and the log it recovers is a
// prefix of the records written, which keeps taking appends.
func FuzzRecover(f *testing.F) {
	f.Add(uint8(20), uint32(500), []byte{})
	f.Add(uint8(20), uint32(0), []byte{0xff})
	f.Add(uint8(5), uint32(40), []byte("garbage"))
	f.Add(uint8(50), uint32(1<<20), []byte{})
	f.Add(uint8(30), uint32(900), bytes.Repeat([]byte{0}, 100))
	f.Fuzz(func(t *testing.T, n uint8, at uint32, junk []byte) {
		cfg := Config{Dir: t.TempDir(), SegmentBytes: MinSegmentBytes}
		w, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range int(n) {
			if _, err := w.Append(t.Context(), testRecord(i)); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		path := filepath.Join(cfg.Dir, segmentName(1))
		off := int64(at) % MinSegmentBytes
		if len(junk) == 0 {
			if err := os.Truncate(path, off); err != nil {
				t.Fatal(err)
			}
		} else {
			patch(t, path, off, junk[:min(len(junk), int(MinSegmentBytes-off))])
		}

		w, err = Open(cfg)
		if err != nil {
			t.Fatalf("Open after damaging the last segment: %v", err)
		}
		defer w.Close()
		got := readAll(t, w, 0)
		if len(got) > int(n) {
			t.Fatalf("recovered %d records of %d written", len(got), n)
		}
		checkEntries(t, got, 1, 0)
		if _, err := w.Append(t.Context(), testRecord(len(got))); err != nil {
			t.Fatalf("append after recovery: %v", err)
		}
		w.Close()
		if _, err := Verify(cfg.Dir); err != nil {
			t.Fatalf("Verify after recovery: %v", err)
		}
	})
}

// A header claiming a payload longer than the limit is rejected before the
// reader allocates a buffer for it.
func TestDecode_OversizedLengthRejectedBeforeAllocating(t *testing.T) {
	cfg := testConfig(t)
	writeLog(t, cfg, 1)
	seg := segmentFiles(t, cfg.Dir)[0]
	path := filepath.Join(cfg.Dir, seg.name)
	patch(t, path, offLength, []byte{0xff, 0xff, 0xff, 0xff})
	f, err := OSFS{}.OpenRO(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 0, readChunkBytes)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := &segmentReader{f: f, name: seg.name, size: MinSegmentBytes, want: 1, buf: buf}
	_, err = r.next()
	runtime.ReadMemStats(&after)
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("an oversized length was not reported: %v", err)
	}
	// Only the error itself is allocated: nothing sized by the claimed
	// length (4 GiB).
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
		t.Fatalf("%d bytes allocated to reject an oversized record", grew)
	}
}
