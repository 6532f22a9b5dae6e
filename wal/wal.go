package wal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Sentinel errors of the append path.
var (
	// ErrBackpressure is returned when the append queue is full; the
	// caller should shed or retry later. Nothing was written.
	ErrBackpressure = errors.New("wal: append queue full")
	// ErrStopped wraps the I/O error that stopped the log for good. Every
	// later append fails with it; nothing is retried.
	ErrStopped = errors.New("wal: stopped after an I/O error")
	// ErrClosed is returned by appends after Close.
	ErrClosed = errors.New("wal: closed")
	// ErrLocked is returned by Open when another WAL holds the directory.
	ErrLocked = errors.New("wal: directory in use")
)

// lockName is the file whose flock marks the directory as in use.
const lockName = "LOCK"

// WAL is a NodeWAL: an append-only, fsynced log of records in preallocated
// segment files, with group commit. All methods are safe for concurrent use.
type WAL struct {
	cfg        Config
	maxPayload int
	log        *slog.Logger
	m          *metrics
	lock       io.Closer

	// mu guards the append side: the open batch, the closed batches
	// waiting for the writer, LSN assignment, queue accounting, the
	// buffer free list and the stop state.
	mu            sync.Mutex
	cur           *batch
	closed        []*batch
	nextLSN       LSN
	queuedEntries int
	queuedBytes   int
	writerIdle    bool
	stopErr       error
	freeBufs      [][]byte

	kick   chan struct{} // wakes the idle writer; capacity 1
	exited chan struct{} // closed when the writer has returned

	durable atomic.Uint64 // LSN of the last fsynced record

	active activeSegment // owned by the writer goroutine

	// prepared delivers the next segment, preallocated in the background
	// (capacity 1; one preparation at a time).
	prepared  chan preparedSegment
	preparing sync.WaitGroup

	segMu sync.Mutex // guards segs
	segs  []segmentInfo

	markMu sync.Mutex // serializes checkpoint writes; guards marks
	marks  Watermarks

	compactMu sync.Mutex // serializes Compact

	closeOnce sync.Once
	closeErr  error
}

// activeSegment is the segment the writer appends to.
type activeSegment struct {
	f    File
	name string
	off  int64 // where the next batch goes
	size int64 // preallocated length
}

// batch is a group of records written with one write and one fdatasync.
// Appenders fill buf under WAL.mu; the writer owns it once it is taken.
// Waiters hold a pointer to the batch and wait for done; err is set before
// done is closed.
type batch struct {
	buf    []byte
	first  LSN
	n      int
	opened time.Time
	done   chan struct{}
	err    error
}

// Future is the pending result of AppendAsync.
type Future struct {
	b   *batch
	lsn LSN
}

// LSN returns the LSN the record was given. It is durable only once Wait
// has returned without error.
func (f *Future) LSN() LSN { return f.lsn }

// Done is closed when the record's batch has been fsynced or has failed.
func (f *Future) Done() <-chan struct{} { return f.b.done }

// Wait blocks until the record is fsynced and returns its LSN, or returns
// the error that stopped the log. If ctx ends first, Wait returns ctx's
// error; the record may still become durable.
func (f *Future) Wait(ctx context.Context) (LSN, error) {
	return waitBatch(ctx, f.b, f.lsn)
}

func waitBatch(ctx context.Context, b *batch, lsn LSN) (LSN, error) {
	if cancel := ctx.Done(); cancel == nil {
		<-b.done // a plain receive is cheaper than a select
	} else {
		select {
		case <-b.done:
		case <-cancel:
			select {
			case <-b.done:
			default:
				return 0, fmt.Errorf("wal: wait for LSN %d: %w", lsn, ctx.Err())
			}
		}
	}
	if b.err != nil {
		return 0, b.err
	}
	return lsn, nil
}

// Append writes r and returns its LSN once it is fsynced. If ctx ends
// first, Append returns ctx's error; the record may still become durable.
func (w *WAL) Append(ctx context.Context, r Record) (LSN, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("wal: append: %w", err)
	}
	b, lsn, err := w.enqueue(&r)
	if err != nil {
		return 0, err
	}
	return waitBatch(ctx, b, lsn)
}

// AppendAsync queues r and returns at once with a Future, so a caller can
// pipeline appends. The record is copied; r.Payload may be reused.
func (w *WAL) AppendAsync(r Record) (*Future, error) {
	b, lsn, err := w.enqueue(&r)
	if err != nil {
		return nil, err
	}
	return &Future{b: b, lsn: lsn}, nil
}

// enqueue encodes r into the open batch under a short lock, assigning its
// LSN there, and wakes the writer if it is idle.
func (w *WAL) enqueue(r *Record) (*batch, LSN, error) {
	if err := r.check(w.maxPayload); err != nil {
		return nil, 0, err
	}
	size := r.encodedLen()
	w.mu.Lock()
	if w.stopErr != nil {
		err := w.stopErr
		w.mu.Unlock()
		return nil, 0, err
	}
	if w.queuedEntries >= w.cfg.QueueEntries || w.queuedBytes+size > w.cfg.QueueBytes {
		w.mu.Unlock()
		w.m.errors.WithLabelValues(opBackpressure).Inc()
		return nil, 0, ErrBackpressure
	}
	b := w.cur
	if b.n > 0 && (len(b.buf)+size > w.cfg.MaxBatchBytes || time.Since(b.opened) >= w.cfg.MaxBatchDelay) {
		b = w.closeBatchLocked()
	}
	if b.n == 0 {
		b.first, b.opened = w.nextLSN, time.Now()
	}
	lsn := w.nextLSN
	w.nextLSN++
	b.buf = appendRecord(b.buf, lsn, r)
	b.n++
	w.queuedEntries++
	w.queuedBytes += size
	if b.n >= w.cfg.MaxBatchEntries || len(b.buf) >= w.cfg.MaxBatchBytes {
		w.closeBatchLocked()
	}
	wake := w.writerIdle
	w.writerIdle = false
	w.mu.Unlock()
	if wake {
		w.wakeWriter()
	}
	return b, lsn, nil
}

// closeBatchLocked queues the open batch for the writer and opens a new
// one, which it returns.
func (w *WAL) closeBatchLocked() *batch {
	w.closed = append(w.closed, w.cur)
	w.cur = w.newBatchLocked()
	return w.cur
}

// newBatchLocked returns an empty batch with a recycled buffer if one is
// free.
func (w *WAL) newBatchLocked() *batch {
	b := &batch{done: make(chan struct{})}
	if n := len(w.freeBufs); n > 0 {
		b.buf = w.freeBufs[n-1][:0]
		w.freeBufs[n-1] = nil
		w.freeBufs = w.freeBufs[:n-1]
	}
	return b
}

// maxFreeBufs bounds the batch buffers kept for reuse.
const maxFreeBufs = 4

func (w *WAL) recycleLocked(buf []byte) {
	if buf != nil && len(w.freeBufs) < maxFreeBufs && cap(buf) <= 2*w.cfg.MaxBatchBytes+MaxRecordBytes {
		w.freeBufs = append(w.freeBufs, buf)
	}
}

func (w *WAL) wakeWriter() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// LastLSN returns the LSN of the last durable record, 0 if there is none.
func (w *WAL) LastLSN() LSN { return LSN(w.durable.Load()) }

// FirstLSN returns the LSN of the first record still on disk (the first
// LSN of the oldest segment).
func (w *WAL) FirstLSN() LSN {
	w.segMu.Lock()
	defer w.segMu.Unlock()
	return w.segs[0].first
}

// Close writes and fsyncs everything already appended, stops the writer and
// closes the files. Appends after Close fail with ErrClosed. It returns the
// error that stopped the log, if one did.
func (w *WAL) Close() error {
	w.closeOnce.Do(func() {
		w.mu.Lock()
		if w.stopErr == nil {
			w.stopErr = ErrClosed
		}
		w.mu.Unlock()
		w.wakeWriter()
		<-w.exited
		w.discardPrepared()
		w.mu.Lock()
		if errors.Is(w.stopErr, ErrStopped) {
			w.closeErr = w.stopErr
		}
		w.mu.Unlock()
		if err := w.active.f.Close(); err != nil && w.closeErr == nil {
			w.closeErr = fmt.Errorf("wal: close segment %s: %w", w.active.name, err)
		}
		if err := w.lock.Close(); err != nil && w.closeErr == nil {
			w.closeErr = fmt.Errorf("wal: unlock %s: %w", w.cfg.Dir, err)
		}
	})
	return w.closeErr
}

// discardPrepared waits for a background preparation and deletes what it
// made: it is not part of the log.
func (w *WAL) discardPrepared() {
	w.preparing.Wait()
	select {
	case p := <-w.prepared:
		if p.err == nil {
			p.f.Close()
			if err := w.cfg.FS.Remove(w.path(prepName)); err != nil {
				w.log.Warn("remove prepared segment", "err", err)
			}
		}
	default:
	}
}

func (w *WAL) path(name string) string { return filepath.Join(w.cfg.Dir, name) }
