package wal

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
)

// Open opens the WAL in cfg.Dir, creating it if needed, and recovers it:
// every segment is read and checked; a torn or corrupt record in the last
// segment truncates the log there and the stale bytes after it are zeroed
// and fsynced before any append; a bad record in an earlier segment stops
// Open with a *CorruptError naming the segment and offset.
func Open(cfg Config) (*WAL, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	fsys, dir := cfg.FS, cfg.Dir
	if err := fsys.MkdirAll(dir); err != nil {
		return nil, fmt.Errorf("wal: create %s: %w", dir, err)
	}
	lock, err := fsys.Lock(filepath.Join(dir, lockName))
	if err != nil {
		return nil, fmt.Errorf("wal: lock %s: %w", dir, err)
	}
	w := &WAL{
		cfg:        cfg,
		maxPayload: cfg.maxPayload(),
		log:        cfg.Logger,
		m:          m,
		lock:       lock,
		kick:       make(chan struct{}, 1),
		exited:     make(chan struct{}),
		prepared:   make(chan preparedSegment, 1),
	}
	if err := w.recover(); err != nil {
		lock.Close()
		return nil, fmt.Errorf("wal: open %s: %w", dir, err)
	}
	if err := w.registerUsage(cfg.Registerer); err != nil {
		w.active.f.Close()
		lock.Close()
		return nil, err
	}
	w.cur = &batch{done: make(chan struct{})}
	w.startPreparing()
	go w.run()
	return w, nil
}

// recover reads the checkpoint and the segments and leaves w ready to
// append: active segment open at the end of the last good record, nextLSN
// and the durable LSN set.
func (w *WAL) recover() error {
	fsys, dir := w.cfg.FS, w.cfg.Dir
	if err := removeTemps(fsys, dir); err != nil {
		return err
	}
	marks, err := readCheckpoint(fsys, dir)
	if err != nil {
		return err
	}
	w.marks = marks
	segs, err := listSegments(fsys, dir)
	if err != nil {
		return err
	}
	if len(segs) == 0 {
		return w.startEmpty(max(1, marks.highest()+1))
	}
	last, err := checkSealed(fsys, dir, segs)
	if err != nil {
		return err
	}
	tail := segs[len(segs)-1]
	if tail.first != last+1 {
		return &CorruptError{Segment: tail.name, Offset: 0, Reason: fmt.Sprintf("first LSN %d does not follow LSN %d", tail.first, last)}
	}
	a, last, err := recoverTail(fsys, dir, tail, w.log)
	if err != nil {
		return err
	}
	if h := marks.highest(); h > last {
		a.f.Close()
		return &CorruptError{Segment: checkpointName, Offset: 0, Reason: fmt.Sprintf("watermark %d beyond the last record %d", h, last)}
	}
	w.active, w.segs, w.nextLSN = a, segs, last+1
	w.durable.Store(uint64(last))
	return nil
}

// startEmpty creates the first segment of an empty log.
func (w *WAL) startEmpty(first LSN) error {
	f, err := prepareSegment(w.cfg.FS, w.path(prepName), w.cfg.SegmentBytes)
	if err != nil {
		return err
	}
	name := segmentName(first)
	if err := installSegment(w.cfg.FS, w.cfg.Dir, name); err != nil {
		f.Close()
		return err
	}
	w.active = activeSegment{f: f, name: name, size: w.cfg.SegmentBytes}
	w.segs = []segmentInfo{{first: first, name: name}}
	w.nextLSN = first
	w.durable.Store(uint64(first - 1))
	return nil
}

// checkSealed reads every segment but the last, which must each end cleanly
// and continue the LSN sequence. It returns the LSN of the last record
// before the last segment.
func checkSealed(fsys FS, dir string, segs []segmentInfo) (LSN, error) {
	last := segs[0].first - 1
	for i, seg := range segs[:len(segs)-1] {
		if seg.first != last+1 {
			return 0, &CorruptError{Segment: seg.name, Offset: 0, Reason: fmt.Sprintf("first LSN %d does not follow LSN %d", seg.first, last)}
		}
		s, err := scanFile(fsys, dir, seg, nil)
		if err != nil {
			return 0, err
		}
		if s.problem != nil {
			return 0, s.problem
		}
		if next := segs[i+1].first; s.last+1 != next {
			return 0, &CorruptError{Segment: seg.name, Offset: s.end, Reason: fmt.Sprintf("ends at LSN %d but the next segment starts at %d", s.last, next)}
		}
		last = s.last
	}
	return last, nil
}

// scanFile opens seg read-only and scans it.
func scanFile(fsys FS, dir string, seg segmentInfo, fn func(Entry) error) (segmentScan, error) {
	f, err := fsys.OpenRO(filepath.Join(dir, seg.name))
	if err != nil {
		return segmentScan{}, fmt.Errorf("open segment %s: %w", seg.name, err)
	}
	defer f.Close()
	return scanSegment(f, seg, fn)
}

// recoverTail opens the last segment for writing, truncates the log at its
// first bad record and zeroes every nonzero byte after the end, so that
// stale bytes can never be read as records, then fsyncs.
func recoverTail(fsys FS, dir string, seg segmentInfo, log *slog.Logger) (activeSegment, LSN, error) {
	f, err := fsys.OpenRW(filepath.Join(dir, seg.name))
	if err != nil {
		return activeSegment{}, 0, fmt.Errorf("open segment %s: %w", seg.name, err)
	}
	a, last, err := truncateTail(f, seg, log)
	if err != nil {
		f.Close()
		return activeSegment{}, 0, err
	}
	return a, last, nil
}

func truncateTail(f File, seg segmentInfo, log *slog.Logger) (activeSegment, LSN, error) {
	s, err := scanSegment(f, seg, nil)
	if err != nil {
		return activeSegment{}, 0, err
	}
	size, err := f.Size()
	if err != nil {
		return activeSegment{}, 0, fmt.Errorf("stat segment %s: %w", seg.name, err)
	}
	if s.problem != nil {
		log.Warn("wal: truncating the log at a torn or corrupt record",
			"segment", seg.name, "offset", s.end, "reason", s.problem.Reason, "last_lsn", s.last)
	}
	dirty, err := lastNonZero(f, s.end, size)
	if err != nil {
		return activeSegment{}, 0, fmt.Errorf("scan tail of segment %s: %w", seg.name, err)
	}
	if dirty > s.end {
		log.Info("wal: zeroing stale bytes after the end of the log",
			"segment", seg.name, "from", s.end, "to", dirty)
		if err := writeZeros(f, s.end, dirty); err != nil {
			return activeSegment{}, 0, fmt.Errorf("zero tail of segment %s: %w", seg.name, err)
		}
		if err := f.Sync(); err != nil {
			return activeSegment{}, 0, fmt.Errorf("fdatasync segment %s after zeroing: %w", seg.name, err)
		}
	}
	return activeSegment{f: f, name: seg.name, off: s.end, size: size}, s.last, nil
}

// removeTemps deletes files left by an interrupted segment preparation or
// checkpoint write; they were never part of the log.
func removeTemps(fsys FS, dir string) error {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	for _, n := range names {
		if strings.HasSuffix(n, tmpSuffix) {
			if err := fsys.Remove(filepath.Join(dir, n)); err != nil {
				return fmt.Errorf("remove %s: %w", n, err)
			}
		}
	}
	return nil
}
