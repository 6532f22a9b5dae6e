package wal

import (
	"fmt"
	"io"
	"path/filepath"
	"time"
)

// run is the writer goroutine: the only one that writes to the active
// segment. It takes batches in order, writes each with one write and one
// fdatasync, and releases its waiters. It returns when the WAL is closed and
// drained, or after the first I/O error.
func (w *WAL) run() {
	defer close(w.exited)
	for {
		b := w.take()
		if b == nil {
			return
		}
		if err := w.commit(b); err != nil {
			w.fail(b, err)
			return
		}
		w.release(b)
	}
}

// take returns the next batch to write, waiting while there is none. The
// open batch is closed and taken as soon as it holds a record: a batch
// closes when the previous fsync has returned and work is waiting. It
// returns nil once the WAL is stopping and nothing is left.
func (w *WAL) take() *batch {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		if len(w.closed) > 0 {
			b := w.closed[0]
			w.closed[0] = nil
			w.closed = w.closed[1:]
			return b
		}
		if w.cur.n > 0 {
			b := w.cur
			w.cur = w.newBatchLocked()
			return b
		}
		if w.stopErr != nil {
			return nil
		}
		w.writerIdle = true
		w.mu.Unlock()
		<-w.kick
		w.mu.Lock()
	}
}

// commit makes b durable: one write, one fdatasync, rolling to a new
// segment first if b does not fit in the active one.
func (w *WAL) commit(b *batch) error {
	a := &w.active
	if a.off+int64(len(b.buf)) > a.size {
		if err := w.roll(b.first); err != nil {
			w.m.errors.WithLabelValues(opRoll).Inc()
			return err
		}
	}
	n, err := a.f.WriteAt(b.buf, a.off)
	if err == nil && n < len(b.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.m.errors.WithLabelValues(opWrite).Inc()
		return fmt.Errorf("write %d bytes to segment %s at %d: %w", len(b.buf), a.name, a.off, err)
	}
	start := time.Now()
	if err := a.f.Sync(); err != nil {
		w.m.errors.WithLabelValues(opSync).Inc()
		return fmt.Errorf("fdatasync segment %s: %w", a.name, err)
	}
	w.m.fsyncSeconds.Observe(time.Since(start).Seconds())
	a.off += int64(len(b.buf))
	w.m.batchEntries.Observe(float64(b.n))
	w.m.batchBytes.Observe(float64(len(b.buf)))
	w.m.entries.Add(float64(b.n))
	w.m.bytes.Add(float64(len(b.buf)))
	return nil
}

// release wakes every waiter of a durable batch with one channel close and
// returns its buffer for reuse.
func (w *WAL) release(b *batch) {
	w.durable.Store(uint64(b.first) + uint64(b.n) - 1)
	buf := b.buf
	b.buf = nil
	close(b.done)
	w.mu.Lock()
	w.queuedEntries -= b.n
	w.queuedBytes -= len(buf)
	w.recycleLocked(buf)
	depth := w.queuedEntries
	w.mu.Unlock()
	w.m.queueDepth.Set(float64(depth))
}

// fail stops the log for good after an I/O error: b and every batch still
// queued fail with the error, and so does every later append. Nothing is
// retried: after a failed fsync the kernel may have dropped the dirty pages,
// so what is on disk is unknown.
func (w *WAL) fail(b *batch, cause error) {
	err := fmt.Errorf("%w: %w", ErrStopped, cause)
	w.log.Error("wal stopped", "dir", w.cfg.Dir, "err", cause)
	w.mu.Lock()
	w.stopErr = err
	failed := append([]*batch{b}, w.closed...)
	if w.cur.n > 0 {
		failed = append(failed, w.cur)
	}
	w.closed = nil
	w.cur = &batch{done: make(chan struct{})}
	w.queuedEntries, w.queuedBytes = 0, 0
	w.mu.Unlock()
	w.m.queueDepth.Set(0)
	for _, f := range failed {
		f.err = err
		f.buf = nil
		close(f.done)
	}
}

// roll seals the active segment (its last batch is already fsynced) and
// makes the segment prepared in the background, renamed to first, the
// active segment.
func (w *WAL) roll(first LSN) error {
	next := <-w.prepared
	if next.err != nil {
		return next.err
	}
	name := segmentName(first)
	if err := installSegment(w.cfg.FS, w.cfg.Dir, name); err != nil {
		next.f.Close()
		return err
	}
	w.startPreparing()
	old := w.active
	w.active = activeSegment{f: next.f, name: name, size: w.cfg.SegmentBytes}
	w.segMu.Lock()
	if last := len(w.segs) - 1; w.segs[last].first == first {
		// The old active segment held no record and was replaced.
		w.segs[last].name = name
	} else {
		w.segs = append(w.segs, segmentInfo{first: first, name: name})
	}
	w.segMu.Unlock()
	if err := old.f.Close(); err != nil {
		w.log.Warn("close sealed segment", "segment", old.name, "err", err)
	}
	return nil
}

// preparedSegment is the outcome of preparing the next segment.
type preparedSegment struct {
	f   File
	err error
}

// startPreparing preallocates the next segment in the background, so that
// a roll only renames it and fsyncs the directory.
func (w *WAL) startPreparing() {
	w.preparing.Go(func() {
		f, err := prepareSegment(w.cfg.FS, w.path(prepName), w.cfg.SegmentBytes)
		w.prepared <- preparedSegment{f: f, err: err}
	})
}

// prepareSegment creates a segment file at path, fallocated and fsynced.
// (Writing zeros over it as well, so that later fdatasyncs would find
// written extents, measured slower: the 64 MiB of zeros and their flush
// compete with the batches' fdatasyncs. See BENCHMARKS.md.)
func prepareSegment(fsys FS, path string, size int64) (File, error) {
	f, err := fsys.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create segment %s: %w", path, err)
	}
	err = f.Allocate(size)
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("preallocate segment %s: %w", path, err)
	}
	return f, nil
}

// installSegment renames the prepared segment to name and makes the rename
// durable before any record is written to it.
func installSegment(fsys FS, dir, name string) error {
	if err := fsys.Rename(filepath.Join(dir, prepName), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("install segment %s: %w", name, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("sync dir after installing segment %s: %w", name, err)
	}
	return nil
}
