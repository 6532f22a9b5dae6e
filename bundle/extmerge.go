package bundle

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/strata-ledger/strata/hlc"
)

// External sort (FORMAT.md, "Merge" and "NDJSON"): past
// MergeConfig.RunEntries index records, Merge sorts them in runs written
// to temporary files and reads the runs back in a k-way merge. The rules
// are the in-memory path's, the same comparisons in the same order, so
// the output bytes are equal (TestMerge_ExternalEqualsInMemory).
// WriteNDJSON sorts its lines with the same runs (runSet is generic over
// the record), bounded by bytes rather than records, and with a fan-in.

const (
	// DefaultMergeRunEntries is the index records a merge sorts in
	// memory (mergeRecordBytes each, ~117 MB) before it spills sorted
	// runs to temporary files.
	DefaultMergeRunEntries = 1 << 20
	// maxMergeRuns bounds the runs of one merge (each holds an open file
	// and a read buffer while the runs are merged): about 4 billion
	// entries at the default run size.
	maxMergeRuns = 4096
	// runReadBufferBytes is the read buffer of one run during a k-way
	// merge.
	runReadBufferBytes = 64 << 10
)

// byID orders records for the duplicate rule: event id, then HLC, then
// content digest, so each id's records are together and its first is the
// one to keep.
func byID(a, b mergeRecord) int {
	if c := a.key.ID.Compare(b.key.ID); c != 0 {
		return c
	}
	if c := a.key.HLC.Compare(b.key.HLC); c != 0 {
		return c
	}
	return slices.Compare(a.content[:], b.content[:])
}

// byKey orders kept records (one per id) by HLC total order.
func byKey(a, b mergeRecord) int { return a.key.Compare(b.key) }

// dedupeStream reads records in byID order from next and calls keep with
// each id's first record; it refuses an id whose records have different
// bodies and returns how many records it dropped as duplicates.
func dedupeStream(next func() (mergeRecord, bool, error), keep func(mergeRecord) error, srcs []Source) (uint64, error) {
	var dups uint64
	cur, ok, err := next()
	for ok && err == nil {
		var r mergeRecord
		r, ok, err = next()
		switch {
		case err != nil:
		case ok && r.key.ID == cur.key.ID:
			if r.body != cur.body {
				return dups, conflict(&cur, &r, srcs)
			}
			dups++
		default:
			if err = keep(cur); err == nil {
				cur = r
			}
		}
	}
	return dups, err
}

// sliceNext iterates recs.
func sliceNext(recs []mergeRecord) func() (mergeRecord, bool, error) {
	i := 0
	return func() (mergeRecord, bool, error) {
		if i == len(recs) {
			return mergeRecord{}, false, nil
		}
		i++
		return recs[i-1], true, nil
	}
}

// RunFile is a temporary file an external sort writes one sorted run
// to and reads it back from. Close releases it for good (the file is
// removed): the sort closes every run it made, also on an error.
type RunFile interface {
	io.ReadWriteSeeker
	io.Closer
}

// runRecord is a record an external sort keeps in runs: P is *R, and
// writes or reads one record of a run file. Merge's index records
// (mergeRecord) are of a fixed size; NDJSON's lines (lineRec) are not.
type runRecord[R any] interface {
	*R
	// putRun writes the record to a run (a bufio.Writer's error is
	// sticky: the run's Flush reports it).
	putRun(w *bufio.Writer)
	// getRun reads the next record of a run into the receiver, whose
	// buffers it may reuse; io.EOF at a clean end.
	getRun(r *bufio.Reader) error
}

// runSet is a set of sorted runs of records in temporary files. With
// fanIn set it never merges more than fanIn runs at once, so what it
// holds to merge (a read buffer and a record per run) stays bounded
// whatever the number of records: as a run is added, every fanIn runs of
// one level are merged into one run of the next level (a run of level L
// holds fanIn^L spills), and before the final merge the smallest runs
// are merged until at most fanIn are left. Without fanIn (Merge) it
// merges all its runs at once, at most maxMergeRuns.
type runSet[R any, P runRecord[R]] struct {
	newFile func() (RunFile, error)
	fanIn   int
	files   []sortedRun
	// cascades counts the runs written by merging runs (not spills).
	cascades int
}

// sortedRun is one run file and its level: 0 for a spill, L+1 for fanIn
// runs of level L merged.
type sortedRun struct {
	f     RunFile
	level int
}

// runs is Merge's set of runs of index records.
type runs = runSet[mergeRecord, *mergeRecord]

// spill sorts recs with cmp and writes them as a new run.
func (rs *runSet[R, P]) spill(recs []R, cmp func(a, b R) int) error {
	slices.SortFunc(recs, cmp)
	return rs.spillSorted([][]R{recs}, cmp)
}

// spillSorted writes the records of mems, each sorted by cmp, as one new
// run in cmp order.
func (rs *runSet[R, P]) spillSorted(mems [][]R, cmp func(a, b R) int) error {
	if len(rs.files) == maxMergeRuns {
		return fmt.Errorf("%w: more than %d sorted runs in one merge", ErrLimit, maxMergeRuns)
	}
	if rs.newFile == nil {
		n := 0
		for _, m := range mems {
			n += len(m)
		}
		return fmt.Errorf("%w: more than MergeConfig.RunEntries (%d) records to sort, and no MergeConfig.NewRunFile to spill runs to", ErrLimit, n)
	}
	f, err := rs.newFile()
	if err != nil {
		return fmt.Errorf("bundle: sort: a run file: %w", err)
	}
	rs.files = append(rs.files, sortedRun{f: f})
	w := bufio.NewWriterSize(f, runReadBufferBytes)
	if len(mems) == 1 {
		for i := range mems[0] {
			P(&mems[0][i]).putRun(w)
		}
	} else if err := writeRun[R, P](w, mergeRuns[R, P](nil, mems, cmp)); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("bundle: sort: write a run: %w", err)
	}
	for n := len(rs.files); rs.fanIn > 1 && n >= rs.fanIn && rs.files[n-rs.fanIn].level == rs.files[n-1].level; n = len(rs.files) {
		if err := rs.collapse(n-rs.fanIn, cmp); err != nil {
			return err
		}
	}
	return nil
}

// writeRun writes every record next gives to w.
func writeRun[R any, P runRecord[R]](w *bufio.Writer, next func() (R, bool, error)) error {
	var r R // one for the loop: putRun's receiver escapes
	for {
		var ok bool
		var err error
		if r, ok, err = next(); err != nil || !ok {
			return err
		}
		P(&r).putRun(w)
	}
}

// collapse merges the runs from index from on into one run, which
// replaces them.
func (rs *runSet[R, P]) collapse(from int, cmp func(a, b R) int) error {
	if err := seekRuns(rs.files[from:]); err != nil {
		return err
	}
	f, err := rs.newFile()
	if err != nil {
		return fmt.Errorf("bundle: sort: a run file: %w", err)
	}
	w := bufio.NewWriterSize(f, runReadBufferBytes)
	err = writeRun[R, P](w, mergeRuns[R, P](rs.files[from:], nil, cmp))
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("bundle: sort: merge runs: %w", err)
	}
	level := rs.files[from].level + 1
	for _, s := range rs.files[from:] {
		s.f.Close()
	}
	rs.files = append(rs.files[:from], sortedRun{f: f, level: level})
	rs.cascades++
	return nil
}

// merge returns an iterator over the records of every run, and of mems
// (in-memory runs, each sorted by cmp), in cmp order (each run is sorted
// by cmp): a k-way merge holding one record and one read buffer per run,
// of at most fanIn runs in files when that is set. A record the iterator
// returns is valid until the next call (its buffers are the run's).
func (rs *runSet[R, P]) merge(cmp func(a, b R) int, mems ...[]R) (func() (R, bool, error), error) {
	for n := len(rs.files); rs.fanIn > 1 && n > rs.fanIn; n = len(rs.files) {
		if err := rs.collapse(n-min(rs.fanIn, n-rs.fanIn+1), cmp); err != nil {
			return nil, err
		}
	}
	if err := seekRuns(rs.files); err != nil {
		return nil, err
	}
	return mergeRuns[R, P](rs.files, mems, cmp), nil
}

// seekRuns rewinds runs to be read.
func seekRuns(files []sortedRun) error {
	for _, s := range files {
		if _, err := s.f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("bundle: sort: %w", err)
		}
	}
	return nil
}

// mergeRuns is the k-way merge of runs in files (rewound) and in memory.
// It advances the run of the record it returned at the next call, not
// before, so that record's buffers stay valid until then.
func mergeRuns[R any, P runRecord[R]](files []sortedRun, mems [][]R, cmp func(a, b R) int) func() (R, bool, error) {
	h := &runHeap[R, P]{cmp: cmp}
	for _, s := range files {
		h.cs = append(h.cs, &runCursor[R, P]{r: bufio.NewReaderSize(s.f, runReadBufferBytes)})
	}
	for _, m := range mems {
		h.cs = append(h.cs, &runCursor[R, P]{mem: m})
	}
	var taken *runCursor[R, P] // whose record the last call returned
	var started bool
	return func() (R, bool, error) {
		var zero R
		if !started { // read each run's first record
			started = true
			cs := h.cs
			h.cs = h.cs[:0]
			for _, c := range cs {
				ok, err := c.advance()
				if err != nil {
					return zero, false, err
				}
				if ok {
					h.cs = append(h.cs, c)
				}
			}
			heap.Init(h)
		}
		if taken != nil {
			ok, err := taken.advance()
			switch {
			case err != nil:
				return zero, false, err
			case ok:
				heap.Fix(h, 0)
			default:
				heap.Pop(h)
			}
			taken = nil
		}
		if len(h.cs) == 0 {
			return zero, false, nil
		}
		taken = h.cs[0]
		return taken.rec, true, nil
	}
}

// close closes (so removes) every run.
func (rs *runSet[R, P]) close() {
	for _, s := range rs.files {
		s.f.Close()
	}
	rs.files = nil
}

// runCursor reads a run: from a file (r), or from memory (mem).
type runCursor[R any, P runRecord[R]] struct {
	r   *bufio.Reader
	mem []R
	rec R
}

func (c *runCursor[R, P]) advance() (bool, error) {
	if c.r == nil {
		if len(c.mem) == 0 {
			return false, nil
		}
		c.rec, c.mem = c.mem[0], c.mem[1:]
		return true, nil
	}
	if err := P(&c.rec).getRun(c.r); err != nil {
		if err == io.EOF {
			return false, nil
		}
		return false, fmt.Errorf("bundle: sort: read a run: %w", err)
	}
	return true, nil
}

type runHeap[R any, P runRecord[R]] struct {
	cs  []*runCursor[R, P]
	cmp func(a, b R) int
}

func (h *runHeap[R, P]) Len() int           { return len(h.cs) }
func (h *runHeap[R, P]) Less(i, j int) bool { return h.cmp(h.cs[i].rec, h.cs[j].rec) < 0 }
func (h *runHeap[R, P]) Swap(i, j int)      { h.cs[i], h.cs[j] = h.cs[j], h.cs[i] }
func (h *runHeap[R, P]) Push(x any)         { h.cs = append(h.cs, x.(*runCursor[R, P])) }
func (h *runHeap[R, P]) Pop() any {
	c := h.cs[len(h.cs)-1]
	h.cs = h.cs[:len(h.cs)-1]
	return c
}

// peekRecord returns the next n bytes of r without taking them: io.EOF
// when r is at its end, io.ErrUnexpectedEOF when fewer than n are left.
func peekRecord(r *bufio.Reader, n int) ([]byte, error) {
	b, err := r.Peek(n)
	switch {
	case len(b) == n:
		return b, nil
	case err == io.EOF && len(b) > 0:
		return nil, io.ErrUnexpectedEOF
	}
	return nil, err
}

func (r *mergeRecord) putRun(w *bufio.Writer) {
	var b [runRecordBytes]byte
	w.Write(putRecord(b[:0], r))
}

func (r *mergeRecord) getRun(br *bufio.Reader) error {
	b, err := peekRecord(br, runRecordBytes)
	if err != nil {
		return err
	}
	*r = getRecord(b)
	_, err = br.Discard(runRecordBytes)
	return err
}

// runRecordBytes is one record in a run: HLC (wall, logical, node), event
// id, body and content digests, offset, size, input.
const runRecordBytes = 16 + 16 + 32 + 32 + 8 + 4 + 4

func putRecord(b []byte, r *mergeRecord) []byte {
	b = r.key.HLC.AppendBinary(b)
	b = append(b, r.key.ID[:]...)
	b = append(b, r.body[:]...)
	b = append(b, r.content[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.off))
	b = binary.LittleEndian.AppendUint32(b, uint32(r.size))
	return binary.LittleEndian.AppendUint32(b, uint32(r.src))
}

func getRecord(b []byte) mergeRecord {
	var r mergeRecord
	r.key.HLC = hlc.Timestamp{WallMs: int64(binary.LittleEndian.Uint64(b)), Logical: binary.LittleEndian.Uint32(b[8:]),
		Node: binary.LittleEndian.Uint32(b[12:])}
	copy(r.key.ID[:], b[16:32])
	copy(r.body[:], b[32:64])
	copy(r.content[:], b[64:96])
	r.off = int64(binary.LittleEndian.Uint64(b[96:]))
	r.size = int32(binary.LittleEndian.Uint32(b[104:]))
	r.src = int32(binary.LittleEndian.Uint32(b[108:]))
	return r
}
