package wal

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestSetWatermark_Rules(t *testing.T) {
	w := mustOpen(t, testConfig(t))
	appendN(t, w, 0, 10)
	tests := []struct {
		name  string
		level Level
		lsn   LSN
		want  error // nil: accepted
	}{
		{name: "forward", level: Regional, lsn: 5},
		{name: "same value is a no-op", level: Regional, lsn: 5},
		{name: "backwards", level: Regional, lsn: 4, want: ErrWatermark},
		{name: "up to the last durable LSN", level: Global, lsn: 10},
		{name: "beyond the last durable LSN", level: Applied, lsn: 11, want: ErrWatermark},
		{name: "pending is not a watermark", level: Pending, lsn: 1, want: ErrWatermark},
		{name: "unknown level", level: 9, lsn: 1, want: ErrWatermark},
		{name: "compacted", level: Compacted, lsn: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := w.SetWatermark(tt.level, tt.lsn)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("SetWatermark(%s, %d) = %v, want %v", tt.level, tt.lsn, err, tt.want)
			}
		})
	}
	want := Watermarks{Regional: 5, Global: 10, Compacted: 3}
	if got := w.Watermarks(); got != want {
		t.Fatalf("Watermarks() = %+v, want %+v", got, want)
	}
}

func TestSetWatermark_PersistsAcrossReopen(t *testing.T) {
	cfg := testConfig(t)
	w := mustOpen(t, cfg)
	appendN(t, w, 0, 10)
	for _, m := range []struct {
		l   Level
		lsn LSN
	}{{Regional, 9}, {Global, 7}, {Applied, 6}, {Compacted, 2}} {
		if err := w.SetWatermark(m.l, m.lsn); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	w = mustOpen(t, cfg)
	want := Watermarks{Regional: 9, Global: 7, Applied: 6, Compacted: 2}
	if got := w.Watermarks(); got != want {
		t.Fatalf("after reopen %+v, want %+v", got, want)
	}
	if got, err := ReadWatermarks(cfg.Dir); err != nil || got != want {
		t.Fatalf("ReadWatermarks = %+v, %v", got, err)
	}
}

func TestOpen_CorruptCheckpointStopsOpen(t *testing.T) {
	tests := []struct {
		name  string
		bytes func(good []byte) []byte
	}{
		{name: "bit flip", bytes: func(b []byte) []byte { b[20] ^= 1; return b }},
		{name: "too short", bytes: func(b []byte) []byte { return b[:30] }},
		{name: "too long", bytes: func(b []byte) []byte { return append(b, 0) }},
		{name: "wrong magic", bytes: func(b []byte) []byte { copy(b, "XXXX"); return b }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			w := mustOpen(t, cfg)
			appendN(t, w, 0, 3)
			if err := w.SetWatermark(Global, 2); err != nil {
				t.Fatal(err)
			}
			w.Close()
			path := filepath.Join(cfg.Dir, checkpointName)
			good, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tt.bytes(good), 0o644); err != nil {
				t.Fatal(err)
			}
			var ce *CorruptError
			if _, err := Open(cfg); !errors.As(err, &ce) || ce.Segment != checkpointName {
				t.Fatalf("Open err = %v, want a corrupt checkpoint", err)
			}
		})
	}
}

func TestCompact_RemovesSegmentsWhollyBelowTheWatermark(t *testing.T) {
	cfg := testConfig(t)
	w := mustOpen(t, cfg)
	appendN(t, w, 0, 3000)
	segs := append([]segmentInfo(nil), w.segs...)
	if len(segs) < 4 {
		t.Fatalf("%d segments, want at least 4", len(segs))
	}
	// The watermark falls inside segment 2: segments 0 and 1 go.
	bound := segs[2].first + 1
	if err := w.SetWatermark(Compacted, bound); err != nil {
		t.Fatal(err)
	}
	if err := w.Compact(); err != nil {
		t.Fatal(err)
	}
	if got := segmentFiles(t, cfg.Dir); got[0] != segs[2] || len(got) != len(segs)-2 {
		t.Fatalf("segments after Compact start at %v (%d), want %v (%d)", got[0], len(got), segs[2], len(segs)-2)
	}
	if got := w.FirstLSN(); got != segs[2].first {
		t.Fatalf("FirstLSN = %d, want %d", got, segs[2].first)
	}
	if _, err := w.Iterator(segs[2].first - 1); !errors.Is(err, ErrCompacted) {
		t.Fatalf("Iterator below the first segment err = %v, want ErrCompacted", err)
	}
	got := readAll(t, w, 0)
	checkEntries(t, got, segs[2].first, int(segs[2].first)-1)
	w.Close()
	w = mustOpen(t, cfg)
	if w.FirstLSN() != segs[2].first || w.LastLSN() != 3000 {
		t.Fatalf("after reopen first %d last %d", w.FirstLSN(), w.LastLSN())
	}
}

func TestCompact_NeverRemovesTheActiveSegment(t *testing.T) {
	cfg := testConfig(t)
	w := mustOpen(t, cfg)
	appendN(t, w, 0, 2000)
	if err := w.SetWatermark(Compacted, 2000); err != nil {
		t.Fatal(err)
	}
	if err := w.Compact(); err != nil {
		t.Fatal(err)
	}
	segs := segmentFiles(t, cfg.Dir)
	if len(segs) != 1 || segs[0] != w.segs[0] || w.segs[0].name != w.active.name {
		t.Fatalf("segments left %v, want only the active one %s", segs, w.active.name)
	}
	w.Close()
	// LSNs are not reused even when nothing before the active segment is
	// left.
	w = mustOpen(t, cfg)
	appendN(t, w, 2000, 1)
	if w.LastLSN() != 2001 {
		t.Fatalf("LastLSN = %d, want 2001", w.LastLSN())
	}
}

func TestCompact_WaitsForTheLowestRetainedWatermark(t *testing.T) {
	cfg := testConfig(t)
	cfg.Retain = []Level{Regional, Applied}
	w := mustOpen(t, cfg)
	appendN(t, w, 0, 3000)
	segs := append([]segmentInfo(nil), w.segs...)
	if err := w.SetWatermark(Regional, 3000); err != nil {
		t.Fatal(err)
	}
	if err := w.SetWatermark(Compacted, 3000); err != nil {
		t.Fatal(err)
	}
	if err := w.Compact(); err != nil {
		t.Fatal(err)
	}
	if n := len(segmentFiles(t, cfg.Dir)); n != len(segs) {
		t.Fatalf("Compact removed segments while APPLIED is 0: %d left of %d", n, len(segs))
	}
	if err := w.SetWatermark(Applied, segs[1].first); err != nil {
		t.Fatal(err)
	}
	if err := w.Compact(); err != nil {
		t.Fatal(err)
	}
	if got := segmentFiles(t, cfg.Dir); got[0] != segs[1] {
		t.Fatalf("first segment %v, want %v", got[0], segs[1])
	}
}

func TestOpen_NoSegmentsStartsAboveEveryWatermark(t *testing.T) {
	cfg := testConfig(t)
	w := mustOpen(t, cfg)
	appendN(t, w, 0, 10)
	if err := w.SetWatermark(Applied, 10); err != nil {
		t.Fatal(err)
	}
	w.Close()
	for _, s := range segmentFiles(t, cfg.Dir) {
		os.Remove(filepath.Join(cfg.Dir, s.name))
	}
	w = mustOpen(t, cfg)
	lsn, err := w.Append(t.Context(), testRecord(0))
	if err != nil || lsn != 11 {
		t.Fatalf("first append after losing the segments = %d, %v; want 11", lsn, err)
	}
}
