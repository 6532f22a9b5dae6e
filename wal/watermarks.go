package wal

import (
	"errors"
	"fmt"
	"io/fs"
)

// SetWatermark records that every record up to lsn has reached level l. It
// writes the checkpoint file atomically before returning, which costs two
// fsyncs: call it per batch of progress, not per record. Watermarks only
// move forward: a lower lsn is an error, the same one a no-op. lsn may not
// be beyond LastLSN. A failed checkpoint write stops the log like a failed
// fsync of a segment.
func (w *WAL) SetWatermark(l Level, lsn LSN) error {
	if l < Regional || l > Compacted {
		return fmt.Errorf("%w: level %s is not a watermark", ErrWatermark, l)
	}
	w.markMu.Lock()
	defer w.markMu.Unlock()
	if err := w.stopped(); err != nil {
		return err
	}
	cur := w.marks.Get(l)
	switch {
	case lsn < cur:
		return fmt.Errorf("%w: %s watermark %d would move back to %d", ErrWatermark, l, cur, lsn)
	case lsn == cur:
		return nil
	case lsn > w.LastLSN():
		return fmt.Errorf("%w: %s watermark %d is beyond the last durable LSN %d", ErrWatermark, l, lsn, w.LastLSN())
	}
	next := w.marks.with(l, lsn)
	if err := writeCheckpoint(w.cfg.FS, w.cfg.Dir, next); err != nil {
		w.m.errors.WithLabelValues(opCheckpoint).Inc()
		return w.stopWith(err)
	}
	w.marks = next
	return nil
}

// Watermarks returns the current watermarks.
func (w *WAL) Watermarks() Watermarks {
	w.markMu.Lock()
	defer w.markMu.Unlock()
	return w.marks
}

// stopped returns the error that stopped the log, or nil. Close does not
// count: watermarks of a closed log are still readable but not settable.
func (w *WAL) stopped() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopErr
}

// stopWith stops the log for good after an I/O error outside the writer and
// returns the error appends will now fail with.
func (w *WAL) stopWith(cause error) error {
	err := fmt.Errorf("%w: %w", ErrStopped, cause)
	w.mu.Lock()
	if w.stopErr == nil || w.stopErr == ErrClosed {
		w.stopErr = err
	} else {
		err = w.stopErr
	}
	w.mu.Unlock()
	w.log.Error("wal stopped", "dir", w.cfg.Dir, "err", cause)
	w.wakeWriter()
	return err
}

// Compact removes the segments whose records are all at or below the lowest
// watermark of Config.Retain, oldest first, so that what is left on disk is
// always a contiguous run of segments. The active segment is never removed.
func (w *WAL) Compact() error {
	w.compactMu.Lock()
	defer w.compactMu.Unlock()
	if err := w.stopped(); err != nil {
		return err
	}
	bound := w.Watermarks().lowest(w.cfg.Retain)
	w.segMu.Lock()
	k := 0
	for k < len(w.segs)-1 && w.segs[k+1].first-1 <= bound {
		k++
	}
	victims := append([]segmentInfo(nil), w.segs[:k]...)
	w.segs = w.segs[k:]
	w.segMu.Unlock()
	if len(victims) == 0 {
		return nil
	}
	for i, seg := range victims {
		if err := w.cfg.FS.Remove(w.path(seg.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			w.m.errors.WithLabelValues(opCompact).Inc()
			w.segMu.Lock()
			w.segs = append(victims[i:], w.segs...)
			w.segMu.Unlock()
			return fmt.Errorf("wal: compact: remove segment %s: %w", seg.name, err)
		}
	}
	if err := w.cfg.FS.SyncDir(w.cfg.Dir); err != nil {
		w.m.errors.WithLabelValues(opCompact).Inc()
		return w.stopWith(fmt.Errorf("compact: sync dir: %w", err))
	}
	return nil
}
