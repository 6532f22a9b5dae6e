package wal

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// Sentinel errors of Iterator.
var (
	// ErrCompacted is returned for an LSN whose segment has been removed.
	ErrCompacted = errors.New("wal: LSN compacted")
	// ErrBeyondEnd is returned for an LSN past the last durable record + 1.
	ErrBeyondEnd = errors.New("wal: LSN beyond the end of the log")
)

// Iterator replays durable records in LSN order. It reads the segment files
// through its own handles and never blocks appends. It is not safe for
// concurrent use.
//
//	it, err := w.Iterator(from)
//	...
//	defer it.Close()
//	for it.Next() {
//		e := it.Entry()
//	}
//	if err := it.Err(); err != nil { ... }
type Iterator struct {
	fs    FS
	dir   string
	segs  []segmentInfo
	idx   int // segment being read
	from  LSN
	limit LSN // last durable LSN when the iterator was made

	f     File
	r     *segmentReader
	entry Entry
	err   error
}

// Iterator returns an iterator over the records from LSN from (0: the first
// on disk) to the last record durable now. from may be one past the last
// LSN (nothing to replay); below the first LSN on disk it is ErrCompacted.
func (w *WAL) Iterator(from LSN) (*Iterator, error) {
	limit := w.LastLSN()
	w.segMu.Lock()
	segs := append([]segmentInfo(nil), w.segs...)
	w.segMu.Unlock()
	if from == 0 {
		from = segs[0].first
	}
	switch {
	case from < segs[0].first:
		return nil, fmt.Errorf("%w: LSN %d is below the first on disk, %d", ErrCompacted, from, segs[0].first)
	case from > limit+1:
		return nil, fmt.Errorf("%w: LSN %d, last durable is %d", ErrBeyondEnd, from, limit)
	}
	idx := 0
	for idx+1 < len(segs) && segs[idx+1].first <= from {
		idx++
	}
	return &Iterator{fs: w.cfg.FS, dir: w.cfg.Dir, segs: segs, idx: idx, from: from, limit: limit}, nil
}

// Next advances to the next record and reports whether there is one.
func (it *Iterator) Next() bool {
	for it.err == nil {
		if it.r == nil {
			if it.idx >= len(it.segs) || it.segs[it.idx].first > it.limit {
				return false
			}
			if it.err = it.open(it.segs[it.idx]); it.err != nil {
				return false
			}
		}
		if it.r.want > it.limit {
			// Stop before the first record not yet durable: the writer
			// may be writing it now.
			return false
		}
		e, err := it.r.next()
		switch {
		case err == errEnd:
			if it.err = it.endOfSegment(); it.err != nil {
				return false
			}
			continue
		case err != nil:
			it.err = err
			return false
		case e.LSN < it.from:
			continue
		}
		it.entry = e
		return true
	}
	return false
}

// endOfSegment moves to the next segment, checking that it continues the
// LSN sequence and that no durable record is missing.
func (it *Iterator) endOfSegment() error {
	want, name := it.r.want, it.segs[it.idx].name
	it.closeFile()
	it.idx++
	if it.idx < len(it.segs) && it.segs[it.idx].first == want {
		return nil
	}
	if it.idx >= len(it.segs) && want > it.limit {
		return nil
	}
	return fmt.Errorf("%w: segment %s ends before LSN %d", ErrCorrupt, name, want)
}

func (it *Iterator) open(seg segmentInfo) error {
	f, err := it.fs.OpenRO(filepath.Join(it.dir, seg.name))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: segment %s was removed", ErrCompacted, seg.name)
	}
	if err != nil {
		return fmt.Errorf("wal: open segment %s: %w", seg.name, err)
	}
	r, err := newSegmentReader(f, seg)
	if err != nil {
		f.Close()
		return err
	}
	it.f, it.r = f, r
	return nil
}

func (it *Iterator) closeFile() {
	if it.f != nil {
		it.f.Close()
	}
	it.f, it.r = nil, nil
}

// Entry returns the current record. Its payload is valid until the next
// call to Next; copy it to keep it.
func (it *Iterator) Entry() Entry { return it.entry }

// Err returns the error that ended the iteration, nil at the clean end.
func (it *Iterator) Err() error { return it.err }

// Close releases the iterator's file.
func (it *Iterator) Close() error {
	it.closeFile()
	return nil
}
