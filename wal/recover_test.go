package wal

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeLog writes records 0..n-1 to a fresh log in cfg.Dir and closes it.
func writeLog(t *testing.T, cfg Config, n int) {
	t.Helper()
	w := mustOpen(t, cfg)
	appendN(t, w, 0, n)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// segmentFiles returns the segments of dir in order.
func segmentFiles(t *testing.T, dir string) []segmentInfo {
	t.Helper()
	segs, err := listSegments(OSFS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	return segs
}

// recordOffsets returns the offset of every record of a segment.
func recordOffsets(t *testing.T, dir string, seg segmentInfo) []int64 {
	t.Helper()
	f, err := OSFS{}.OpenRO(filepath.Join(dir, seg.name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := newSegmentReader(f, seg)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for {
		off := r.off
		if _, err := r.next(); err != nil {
			return offs
		}
		offs = append(offs, off)
	}
}

// patch overwrites bytes of a file at off.
func patch(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func readAt(t *testing.T, path string, off int64, n int) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRecover_TornTailIsTruncated(t *testing.T) {
	const n = 40
	tests := []struct {
		name string
		// damage corrupts the last segment, given its record offsets
		// and its path, and returns the LSN recovery must end at.
		damage func(t *testing.T, path string, offs []int64) LSN
	}{
		{name: "last record's payload half written", damage: func(t *testing.T, path string, offs []int64) LSN {
			end := offs[n-1] + int64(testRecord(n-1).encodedLen())
			patch(t, path, end-5, make([]byte, 5))
			return n - 1
		}},
		{name: "last record's header half written", damage: func(t *testing.T, path string, offs []int64) LSN {
			patch(t, path, offs[n-1]+17, make([]byte, int(HeaderBytes-17+len(testRecord(n-1).Payload))))
			return n - 1
		}},
		{name: "bit flip in a middle record", damage: func(t *testing.T, path string, offs []int64) LSN {
			b := readAt(t, path, offs[20]+HeaderBytes, 1)
			patch(t, path, offs[20]+HeaderBytes, []byte{b[0] ^ 0x01})
			return 20
		}},
		{name: "length beyond the limit", damage: func(t *testing.T, path string, offs []int64) LSN {
			patch(t, path, offs[30]+offLength, []byte{0xff, 0xff, 0xff, 0x7f})
			return 30
		}},
		{name: "garbage after the last record", damage: func(t *testing.T, path string, offs []int64) LSN {
			end := offs[n-1] + int64(testRecord(n-1).encodedLen())
			patch(t, path, end+1000, []byte("stale bytes from a torn write"))
			return n
		}},
		{name: "a valid record with the wrong LSN after the end", damage: func(t *testing.T, path string, offs []int64) LSN {
			end := offs[n-1] + int64(testRecord(n-1).encodedLen())
			b, _ := EncodeRecord(n+7, testRecord(3))
			patch(t, path, end, b)
			return n
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			writeLog(t, cfg, n)
			seg := segmentFiles(t, cfg.Dir)[0]
			path := filepath.Join(cfg.Dir, seg.name)
			want := tt.damage(t, path, recordOffsets(t, cfg.Dir, seg))
			if _, err := Verify(cfg.Dir); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Verify before recovery = %v, want a problem", err)
			}
			if got := recoverAndCheck(t, cfg, nil); got != want {
				t.Fatalf("recovered up to LSN %d, want %d", got, want)
			}
		})
	}
}

// Without zeroing, a record appended after recovery that ends exactly where
// a stale record began would make that stale record (with the next LSN and
// a good CRC) look like part of the log.
func TestRecover_StaleRecordsAfterTruncationNeverReappear(t *testing.T) {
	cfg := testConfig(t)
	writeLog(t, cfg, 10)
	seg := segmentFiles(t, cfg.Dir)[0]
	path := filepath.Join(cfg.Dir, seg.name)
	offs := recordOffsets(t, cfg.Dir, seg)
	b := readAt(t, path, offs[5]+HeaderBytes, 1)
	patch(t, path, offs[5]+HeaderBytes, []byte{b[0] ^ 0x80}) // LSN 6 bad

	w := mustOpen(t, cfg)
	if w.LastLSN() != 5 {
		t.Fatalf("LastLSN = %d, want 5", w.LastLSN())
	}
	// The new LSN 6 has the same length as the old one, so the stale
	// LSN 7 would start right after it.
	if _, err := w.Append(context.Background(), testRecord(5)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	w = mustOpen(t, cfg)
	if got := w.LastLSN(); got != 6 {
		t.Fatalf("after reopen LastLSN = %d, want 6: stale records reappeared", got)
	}
}

func TestRecover_CorruptEarlierSegmentStopsOpen(t *testing.T) {
	cfg := testConfig(t)
	writeLog(t, cfg, 2000)
	segs := segmentFiles(t, cfg.Dir)
	if len(segs) < 2 {
		t.Fatalf("%d segments, need 2", len(segs))
	}
	offs := recordOffsets(t, cfg.Dir, segs[0])
	path := filepath.Join(cfg.Dir, segs[0].name)
	patch(t, path, offs[100]+HeaderBytes+1, []byte{'#'})

	_, err := Open(cfg)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Segment != segs[0].name || ce.Offset != offs[100] {
		t.Fatalf("Open err = %v, want corruption in %s at %d", err, segs[0].name, offs[100])
	}
	if !strings.Contains(err.Error(), segs[0].name) {
		t.Fatalf("error %q does not name the segment", err)
	}
	_, err = Verify(cfg.Dir)
	if !errors.As(err, &ce) || ce.Segment != segs[0].name || ce.Offset != offs[100] {
		t.Fatalf("Verify err = %v, want the same place", err)
	}
}

func TestRecover_MissingMiddleSegmentStopsOpen(t *testing.T) {
	cfg := testConfig(t)
	writeLog(t, cfg, 3000)
	segs := segmentFiles(t, cfg.Dir)
	if len(segs) < 3 {
		t.Fatalf("%d segments, need 3", len(segs))
	}
	if err := os.Remove(filepath.Join(cfg.Dir, segs[1].name)); err != nil {
		t.Fatal(err)
	}
	_, err := Open(cfg)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Segment != segs[0].name {
		t.Fatalf("Open err = %v, want a gap reported after %s", err, segs[0].name)
	}
}

func TestRecover_EmptySegmentAfterRollTakesAppends(t *testing.T) {
	cfg := testConfig(t)
	writeLog(t, cfg, 10)
	// A crash right after a roll: the new segment exists, preallocated,
	// with no record in it yet.
	f, err := prepareSegment(OSFS{}, filepath.Join(cfg.Dir, segmentName(11)), cfg.SegmentBytes)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	w := mustOpen(t, cfg)
	if w.LastLSN() != 10 {
		t.Fatalf("LastLSN = %d, want 10", w.LastLSN())
	}
	appendN(t, w, 10, 3)
	checkEntries(t, readAll(t, w, 0), 1, 0)
	if n := len(segmentFiles(t, cfg.Dir)); n != 2 {
		t.Fatalf("%d segments, want 2", n)
	}
}

func TestRecover_LeftoverTempFilesAreRemoved(t *testing.T) {
	cfg := testConfig(t)
	writeLog(t, cfg, 3)
	leftover := []byte("half-written")
	for _, name := range []string{prepName, checkpointTmpName} {
		if err := os.WriteFile(filepath.Join(cfg.Dir, name), leftover, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w := mustOpen(t, cfg)
	if _, err := os.Stat(filepath.Join(cfg.Dir, checkpointTmpName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s still there: %v", checkpointTmpName, err)
	}
	// The WAL prepares its next segment under the same name at once, so
	// that file may exist again, but not with the leftover's bytes.
	if b, err := os.ReadFile(filepath.Join(cfg.Dir, prepName)); err == nil && bytes.HasPrefix(b, leftover) {
		t.Fatalf("%s still holds the leftover bytes", prepName)
	}
	checkEntries(t, readAll(t, w, 0), 1, 0)
}

func TestRecover_ShortSegmentFileIsReadToItsEnd(t *testing.T) {
	cfg := testConfig(t)
	writeLog(t, cfg, 10)
	seg := segmentFiles(t, cfg.Dir)[0]
	offs := recordOffsets(t, cfg.Dir, seg)
	// The file was cut in the middle of record 8 (no preallocation).
	if err := os.Truncate(filepath.Join(cfg.Dir, seg.name), offs[7]+10); err != nil {
		t.Fatal(err)
	}
	if got := recoverAndCheck(t, cfg, nil); got != 7 {
		t.Fatalf("recovered up to %d, want 7", got)
	}
}
