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

// External merge (FORMAT.md, "Merge"): past MergeConfig.RunEntries index
// records, Merge sorts them in runs written to temporary files and reads
// the runs back in a k-way merge. The rules are the in-memory path's,
// the same comparisons in the same order, so the output bytes are equal
// (TestMerge_ExternalEqualsInMemory).

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

// RunFile is a temporary file an external merge writes one sorted run
// to and reads it back from. Close releases it for good (the file is
// removed): the merge closes every run it made, also on an error.
type RunFile interface {
	io.ReadWriteSeeker
	io.Closer
}

// runs is a set of sorted runs of records in temporary files.
type runs struct {
	newFile func() (RunFile, error)
	files   []RunFile
	buf     []byte
}

// spill sorts recs with cmp and writes them as a new run.
func (rs *runs) spill(recs []mergeRecord, cmp func(a, b mergeRecord) int) error {
	if len(rs.files) == maxMergeRuns {
		return fmt.Errorf("%w: more than %d sorted runs in one merge", ErrLimit, maxMergeRuns)
	}
	if rs.newFile == nil {
		return fmt.Errorf("%w: more than MergeConfig.RunEntries (%d) records to sort, and no MergeConfig.NewRunFile to spill runs to", ErrLimit, len(recs))
	}
	slices.SortFunc(recs, cmp)
	f, err := rs.newFile()
	if err != nil {
		return fmt.Errorf("bundle: merge: a run file: %w", err)
	}
	rs.files = append(rs.files, f)
	w := bufio.NewWriterSize(f, runReadBufferBytes)
	for i := range recs {
		rs.buf = putRecord(rs.buf[:0], &recs[i])
		w.Write(rs.buf)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("bundle: merge: write a run: %w", err)
	}
	return nil
}

// merge returns an iterator over the records of every run in cmp order
// (each run is sorted by cmp): a k-way merge holding one record and one
// read buffer per run.
func (rs *runs) merge(cmp func(a, b mergeRecord) int) (func() (mergeRecord, bool, error), error) {
	h := &runHeap{cmp: cmp}
	for _, f := range rs.files {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("bundle: merge: %w", err)
		}
		c := &runCursor{r: bufio.NewReaderSize(f, runReadBufferBytes)}
		ok, err := c.advance()
		if err != nil {
			return nil, err
		}
		if ok {
			h.cs = append(h.cs, c)
		}
	}
	heap.Init(h)
	return func() (mergeRecord, bool, error) {
		if len(h.cs) == 0 {
			return mergeRecord{}, false, nil
		}
		c := h.cs[0]
		r := c.rec
		ok, err := c.advance()
		switch {
		case err != nil:
			return r, false, err
		case ok:
			heap.Fix(h, 0)
		default:
			heap.Pop(h)
		}
		return r, true, nil
	}, nil
}

// close closes (so removes) every run.
func (rs *runs) close() {
	for _, f := range rs.files {
		f.Close()
	}
	rs.files = nil
}

type runCursor struct {
	r   *bufio.Reader
	rec mergeRecord
	buf [runRecordBytes]byte
}

func (c *runCursor) advance() (bool, error) {
	if _, err := io.ReadFull(c.r, c.buf[:]); err != nil {
		if err == io.EOF {
			return false, nil
		}
		return false, fmt.Errorf("bundle: merge: read a run: %w", err)
	}
	c.rec = getRecord(c.buf[:])
	return true, nil
}

type runHeap struct {
	cs  []*runCursor
	cmp func(a, b mergeRecord) int
}

func (h *runHeap) Len() int           { return len(h.cs) }
func (h *runHeap) Less(i, j int) bool { return h.cmp(h.cs[i].rec, h.cs[j].rec) < 0 }
func (h *runHeap) Swap(i, j int)      { h.cs[i], h.cs[j] = h.cs[j], h.cs[i] }
func (h *runHeap) Push(x any)         { h.cs = append(h.cs, x.(*runCursor)) }
func (h *runHeap) Pop() any {
	c := h.cs[len(h.cs)-1]
	h.cs = h.cs[:len(h.cs)-1]
	return c
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
