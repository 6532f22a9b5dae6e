package wal

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// faultFS is the real file system with faults injected into segment and
// checkpoint files: a chosen write can be torn, short, bit-flipped or lose a
// page; a chosen fdatasync can fail; syncs can be held back.
type faultFS struct {
	OSFS
	mu   sync.Mutex
	plan faultPlan

	writes, syncs, cpSyncs int
	hit                    faultHit
	syncsAfterFailure      int
	hold                   chan struct{}
	held                   chan struct{} // signalled when a sync waits on hold
}

// faultPlan says which operation to fault (1-based counts of segment
// writes and syncs; 0 means none).
type faultPlan struct {
	write int
	// mangle returns what lands on disk for the faulted write and what
	// WriteAt reports.
	mangle         func(p []byte) (disk []byte, n int, err error)
	sync           int
	checkpointSync bool
	renameSegment  bool // installing a prepared segment fails
}

// faultHit records what the write fault hit.
type faultHit struct {
	firstLSN, lastLSN LSN
	failedSync        bool
}

var errInjected = syscall.EIO

func isSegmentFile(p string) bool {
	name := filepath.Base(p)
	return strings.HasSuffix(name, segmentSuffix) || name == prepName
}

func (f *faultFS) wrap(file File, err error, p string) (File, error) {
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, segment: isSegmentFile(p), prepared: filepath.Base(p) == prepName,
		checkpoint: filepath.Base(p) == checkpointTmpName}, nil
}

func (f *faultFS) Create(p string) (File, error) {
	file, err := f.OSFS.Create(p)
	return f.wrap(file, err, p)
}

func (f *faultFS) Rename(oldPath, newPath string) error {
	f.mu.Lock()
	fail := f.plan.renameSegment && filepath.Base(oldPath) == prepName
	f.mu.Unlock()
	if fail {
		return errInjected
	}
	return f.OSFS.Rename(oldPath, newPath)
}

func (f *faultFS) OpenRW(p string) (File, error) {
	file, err := f.OSFS.OpenRW(p)
	return f.wrap(file, err, p)
}

// holdSyncs makes every segment sync wait until the returned func is called.
func (f *faultFS) holdSyncs() (release func()) {
	ch := make(chan struct{})
	f.mu.Lock()
	f.hold, f.held = ch, make(chan struct{}, 1)
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		f.hold = nil
		f.mu.Unlock()
		close(ch)
	}
}

type faultFile struct {
	File
	fs                  *faultFS
	segment, checkpoint bool
	// prepared marks a segment being preallocated: its writes (zeros) and
	// first sync are the preallocation's and are not counted.
	prepared bool
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	if !f.segment || f.prepared {
		f.fs.mu.Unlock()
		return f.File.WriteAt(p, off)
	}
	f.fs.writes++
	faulted := f.fs.writes == f.fs.plan.write
	if faulted {
		f.fs.hit.firstLSN, f.fs.hit.lastLSN = batchLSNs(p)
	}
	f.fs.mu.Unlock()
	if !faulted {
		return f.File.WriteAt(p, off)
	}
	disk, n, err := f.fs.plan.mangle(bytes.Clone(p))
	if _, werr := f.File.WriteAt(disk, off); werr != nil {
		return 0, werr
	}
	return n, err
}

func (f *faultFile) Sync() error {
	f.fs.mu.Lock()
	hold, held := f.fs.hold, f.fs.held
	fail := false
	switch {
	case f.prepared:
		f.prepared = false
	case f.segment:
		if f.fs.hit.failedSync {
			f.fs.syncsAfterFailure++
		}
		f.fs.syncs++
		fail = f.fs.syncs == f.fs.plan.sync
		f.fs.hit.failedSync = f.fs.hit.failedSync || fail
	case f.checkpoint:
		f.fs.cpSyncs++
		fail = f.fs.plan.checkpointSync
	}
	f.fs.mu.Unlock()
	if hold != nil && f.segment {
		select {
		case held <- struct{}{}:
		default:
		}
		<-hold
	}
	if fail {
		return errInjected
	}
	return f.File.Sync()
}

// batchLSNs returns the first and last LSN of the records in a batch.
func batchLSNs(p []byte) (first, last LSN) {
	for off := 0; off+HeaderBytes <= len(p); {
		lsn := LSN(binary.LittleEndian.Uint64(p[off+offLSN:]))
		if first == 0 {
			first = lsn
		}
		last = lsn
		off += HeaderBytes + int(binary.LittleEndian.Uint32(p[off+offLength:]))
	}
	return first, last
}

// Write manglers.
func torn(p []byte) ([]byte, int, error)  { return p[:len(p)/2], len(p) / 2, errInjected }
func short(p []byte) ([]byte, int, error) { return p[:len(p)/2], len(p) / 2, nil }
func flipBit(p []byte) ([]byte, int, error) {
	p[HeaderBytes+2] ^= 0x10 // in the first record's payload
	return p, len(p), nil
}

// lostPage models a crash after which a middle page of the batch never
// reached the disk while later pages did.
func lostPage(p []byte) ([]byte, int, error) {
	lo := len(p) / 3
	clear(p[lo : lo+min(4096, len(p)/3)])
	return p, len(p), errInjected
}

// runWithFault appends through a faultFS in batches it controls: 20
// records one at a time (writes and syncs 1-20 carry LSNs 1-20), then 200
// pipelined (write 21 carries LSN 21 alone, write 22 LSNs 22-220). It
// returns the LSNs acknowledged and the error of the first failed append.
func runWithFault(t *testing.T, cfg Config, ffs *faultFS) (acked []LSN, firstErr error) {
	t.Helper()
	cfg.FS = ffs
	cfg.MaxBatchDelay = time.Hour // batch by the test's hand only
	w, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 20 {
		lsn, err := w.Append(context.Background(), testRecord(i))
		if err != nil {
			return acked, err
		}
		acked = append(acked, lsn)
	}
	var futures []*Future
	release := ffs.holdSyncs()
	for i := 20; i < 220; i++ {
		f, err := w.AppendAsync(testRecord(i))
		if err != nil {
			firstErr = err
			break
		}
		futures = append(futures, f)
		if i == 20 {
			<-ffs.held // the writer is syncing LSN 21; the rest queue as one batch
		}
	}
	release()
	for _, f := range futures {
		lsn, err := f.Wait(context.Background())
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		acked = append(acked, lsn)
	}
	return acked, firstErr
}

// recoverAndCheck reopens dir on the real file system and checks that the
// log is a gap-free prefix holding every record in mustHave intact. It
// returns the last LSN recovered.
func recoverAndCheck(t *testing.T, cfg Config, mustHave []LSN) LSN {
	t.Helper()
	cfg.FS = nil
	w := mustOpen(t, cfg)
	got := readAll(t, w, 0)
	checkEntries(t, got, 1, 0)
	last := w.LastLSN()
	for _, lsn := range mustHave {
		if lsn > last {
			t.Fatalf("acknowledged LSN %d lost: recovered up to %d", lsn, last)
		}
	}
	// The log takes appends after recovery and keeps them.
	appendN(t, w, int(last), 5)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w = mustOpen(t, cfg)
	checkEntries(t, readAll(t, w, 0), 1, 0)
	if w.LastLSN() != last+5 {
		t.Fatalf("after recovery and 5 appends LastLSN = %d, want %d", w.LastLSN(), last+5)
	}
	w.Close()
	if _, err := Verify(cfg.Dir); err != nil {
		t.Fatalf("Verify after recovery: %v", err)
	}
	return last
}

func TestFault_Table(t *testing.T) {
	tests := []struct {
		name string
		plan faultPlan
		// wantStopped: the first failed append fails with ErrStopped.
		wantStopped bool
		// wantLast is the LSN recovery must end at; 0 means at least
		// every acknowledged LSN and less than the faulted batch's last.
		wantLast LSN
	}{
		{name: "torn write of a one-record batch", plan: faultPlan{write: 10, mangle: torn}, wantStopped: true, wantLast: 9},
		{name: "torn write of a 199-record batch", plan: faultPlan{write: 22, mangle: torn}, wantStopped: true},
		{name: "short write without error", plan: faultPlan{write: 22, mangle: short}, wantStopped: true},
		{name: "lost middle page of a batch", plan: faultPlan{write: 22, mangle: lostPage}, wantStopped: true},
		{name: "fdatasync fails", plan: faultPlan{sync: 15}, wantStopped: true},
		{name: "fdatasync of a 199-record batch fails", plan: faultPlan{sync: 22}, wantStopped: true},
		// A bit flipped silently on the way to disk: write and fsync
		// succeed, so the record is acknowledged; recovery finds the bad
		// CRC in the last segment and truncates there.
		{name: "bit flip in an acknowledged record", plan: faultPlan{write: 12, mangle: flipBit}, wantLast: 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			ffs := &faultFS{plan: tt.plan}
			acked, err := runWithFault(t, cfg, ffs)
			t.Logf("acked %d, fault hit %+v, first error %v", len(acked), ffs.hit, err)
			if got := errors.Is(err, ErrStopped); got != tt.wantStopped {
				t.Fatalf("first append error = %v, want ErrStopped %v", err, tt.wantStopped)
			}
			if tt.wantStopped && !errors.Is(err, errInjected) && !errors.Is(err, io.ErrShortWrite) {
				t.Fatalf("error %v does not carry the injected cause", err)
			}
			if ffs.syncsAfterFailure != 0 {
				t.Fatalf("%d fsyncs after a failed fsync: it was retried", ffs.syncsAfterFailure)
			}
			if tt.wantLast != 0 {
				acked = acked[:0]
				for lsn := LSN(1); lsn <= tt.wantLast; lsn++ {
					acked = append(acked, lsn)
				}
			}
			last := recoverAndCheck(t, cfg, acked)
			switch {
			case tt.wantLast != 0 && last != tt.wantLast:
				t.Fatalf("recovered up to %d, want %d", last, tt.wantLast)
			case tt.wantLast == 0 && ffs.hit.lastLSN != 0 && last >= ffs.hit.lastLSN:
				t.Fatalf("recovered up to %d, but the faulted batch ending at %d was not whole", last, ffs.hit.lastLSN)
			}
		})
	}
}

func TestFault_AppendsAfterFsyncFailureFailForGood(t *testing.T) {
	ffs := &faultFS{plan: faultPlan{sync: 3}}
	cfg := testConfig(t)
	cfg.FS = ffs
	w := mustOpen(t, cfg)
	appendN(t, w, 0, 2)
	if _, err := w.Append(context.Background(), testRecord(2)); !errors.Is(err, ErrStopped) {
		t.Fatalf("append on failed fsync err = %v", err)
	}
	for i := range 3 {
		if _, err := w.Append(context.Background(), testRecord(3+i)); !errors.Is(err, ErrStopped) {
			t.Fatalf("later append err = %v, want ErrStopped", err)
		}
	}
	if err := w.SetWatermark(Applied, 1); !errors.Is(err, ErrStopped) {
		t.Fatalf("SetWatermark after failure err = %v", err)
	}
	if err := w.Close(); !errors.Is(err, ErrStopped) {
		t.Fatalf("Close err = %v, want the stopping error", err)
	}
	if ffs.syncsAfterFailure != 0 {
		t.Fatalf("fsync retried %d times", ffs.syncsAfterFailure)
	}
}

func TestFault_CheckpointFsyncFailureStopsTheLog(t *testing.T) {
	ffs := &faultFS{plan: faultPlan{checkpointSync: true}}
	cfg := testConfig(t)
	cfg.FS = ffs
	w := mustOpen(t, cfg)
	appendN(t, w, 0, 3)
	if err := w.SetWatermark(Regional, 2); !errors.Is(err, ErrStopped) {
		t.Fatalf("SetWatermark err = %v, want ErrStopped", err)
	}
	if _, err := w.Append(context.Background(), testRecord(3)); !errors.Is(err, ErrStopped) {
		t.Fatalf("append after a failed checkpoint err = %v", err)
	}
	if got := w.Watermarks().Regional; got != 0 {
		t.Fatalf("watermark moved to %d despite the failure", got)
	}
}

func TestFault_SegmentRollFailureStopsTheLog(t *testing.T) {
	ffs := &faultFS{}
	cfg := testConfig(t)
	cfg.FS = ffs
	w := mustOpen(t, cfg)
	ffs.mu.Lock()
	ffs.plan.renameSegment = true // Open has installed the first segment
	ffs.mu.Unlock()
	var acked []LSN
	var err error
	for i := 0; err == nil; i++ {
		if i > 100 {
			t.Fatal("no roll after 100 records of 4 KiB")
		}
		r := testRecord(i)
		r.Payload = append(r.Payload, make([]byte, 4096)...)
		var lsn LSN
		if lsn, err = w.Append(context.Background(), r); err == nil {
			acked = append(acked, lsn)
		}
	}
	if !errors.Is(err, ErrStopped) || !errors.Is(err, errInjected) {
		t.Fatalf("append at roll err = %v, want ErrStopped wrapping the injected error", err)
	}
	w.Close()
	cfg.FS = nil
	w = mustOpen(t, cfg)
	if w.LastLSN() != acked[len(acked)-1] {
		t.Fatalf("recovered up to %d, want %d", w.LastLSN(), acked[len(acked)-1])
	}
}
