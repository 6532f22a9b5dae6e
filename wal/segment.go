package wal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

const (
	// segmentSuffix ends every segment file name: %016x.wal, the hex of
	// the segment's first LSN.
	segmentSuffix = ".wal"
	// tmpSuffix ends files that are not yet part of the log (a segment
	// being prepared, a checkpoint being written); Open removes them.
	tmpSuffix = ".tmp"
	// prepName is the file a new segment is preallocated under before it
	// is renamed to its first LSN.
	prepName = "next.wal" + tmpSuffix
	// readChunkBytes is how much a segment reader reads at a time.
	readChunkBytes = 256 << 10
)

// segmentName is the file name of the segment whose first record is first.
func segmentName(first LSN) string { return fmt.Sprintf("%016x%s", uint64(first), segmentSuffix) }

// parseSegmentName returns the first LSN named by a segment file name.
func parseSegmentName(name string) (LSN, bool) {
	hex, ok := strings.CutSuffix(name, segmentSuffix)
	if !ok || len(hex) != 16 {
		return 0, false
	}
	v, err := strconv.ParseUint(hex, 16, 64)
	if err != nil || v == 0 {
		return 0, false
	}
	return LSN(v), true
}

// segmentInfo is a segment of the log on disk.
type segmentInfo struct {
	first LSN
	name  string
}

// listSegments returns the segments in dir ordered by first LSN.
func listSegments(fs FS, dir string) ([]segmentInfo, error) {
	names, err := fs.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list segments in %s: %w", dir, err)
	}
	var segs []segmentInfo
	for _, n := range names {
		if first, ok := parseSegmentName(n); ok {
			segs = append(segs, segmentInfo{first: first, name: n})
		}
	}
	slices.SortFunc(segs, func(a, b segmentInfo) int { return cmpLSN(a.first, b.first) })
	return segs, nil
}

func cmpLSN(a, b LSN) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// errEnd is returned by segmentReader.next at the clean end of a segment:
// end of file, or an all-zero header (the preallocated, unwritten part).
var errEnd = errors.New("end of segment")

// segmentReader reads the records of one segment in order, checking each:
// header, length limit, CRC, LSN sequence, state and type.
type segmentReader struct {
	f    File
	name string
	size int64 // file length
	off  int64 // offset of the next record
	want LSN   // LSN the next record must carry

	buf    []byte // buffered bytes of the file starting at bufOff
	bufOff int64
}

func newSegmentReader(f File, seg segmentInfo) (*segmentReader, error) {
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("stat segment %s: %w", seg.name, err)
	}
	return &segmentReader{f: f, name: seg.name, size: size, want: seg.first}, nil
}

// window returns the n bytes of the file at r.off, reading if they are not
// buffered. n is at most MaxRecordBytes and r.off+n at most r.size.
func (r *segmentReader) window(n int) ([]byte, error) {
	lo := r.off - r.bufOff
	if r.buf != nil && lo >= 0 && lo+int64(n) <= int64(len(r.buf)) {
		return r.buf[lo : lo+int64(n)], nil
	}
	want := int(min(int64(max(n, readChunkBytes)), r.size-r.off))
	if cap(r.buf) < want {
		r.buf = make([]byte, want)
	}
	r.buf = r.buf[:want]
	got, err := r.f.ReadAt(r.buf, r.off)
	if got < n {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		r.buf = nil
		return nil, fmt.Errorf("read segment %s at %d: %w", r.name, r.off, err)
	}
	r.buf, r.bufOff = r.buf[:got], r.off
	return r.buf[:n], nil
}

// next returns the record at r.off and advances past it. It returns errEnd
// at the clean end, a *CorruptError for a record that fails a check
// (r.off stays at that record), or an I/O error. The payload aliases the
// reader's buffer and is valid until the next call.
func (r *segmentReader) next() (Entry, error) {
	if r.size-r.off < HeaderBytes {
		return Entry{}, errEnd
	}
	hb, err := r.window(HeaderBytes)
	if err != nil {
		return Entry{}, err
	}
	if isZero(hb) {
		return Entry{}, errEnd
	}
	h, err := parseHeader(hb)
	if err != nil {
		return Entry{}, r.corrupt(err.Error())
	}
	n := HeaderBytes + int(h.length)
	if int64(n) > r.size-r.off {
		return Entry{}, r.corrupt(fmt.Sprintf("record of %d bytes runs past the segment end %d", n, r.size))
	}
	b, err := r.window(n)
	if err != nil {
		return Entry{}, err
	}
	e, err := decodeRecord(h, b)
	if err != nil {
		return Entry{}, r.corrupt(err.Error())
	}
	if e.LSN != r.want {
		return Entry{}, r.corrupt(fmt.Sprintf("LSN %d, want %d", e.LSN, r.want))
	}
	r.off += int64(n)
	r.want++
	return e, nil
}

func (r *segmentReader) corrupt(reason string) *CorruptError {
	return &CorruptError{Segment: r.name, Offset: r.off, Reason: reason}
}

// segmentScan is what reading a segment to its end found.
type segmentScan struct {
	end     int64         // offset just past the last good record
	last    LSN           // LSN of the last good record; first-1 if none
	records int64         // good records
	problem *CorruptError // the first bad record, nil if it ended cleanly
}

// scanSegment reads every record of seg, calling fn (if not nil) for each
// good one. A bad record ends the scan and is reported in problem; only I/O
// errors and errors from fn are returned as errors.
func scanSegment(f File, seg segmentInfo, fn func(Entry) error) (segmentScan, error) {
	r, err := newSegmentReader(f, seg)
	if err != nil {
		return segmentScan{}, err
	}
	s := segmentScan{last: seg.first - 1}
	for {
		e, err := r.next()
		var ce *CorruptError
		switch {
		case err == errEnd:
			s.end = r.off
			return s, nil
		case errors.As(err, &ce):
			s.end, s.problem = r.off, ce
			return s, nil
		case err != nil:
			return s, err
		}
		s.last, s.records = e.LSN, s.records+1
		if fn != nil {
			if err := fn(e); err != nil {
				return s, err
			}
		}
	}
}

// lastNonZero returns the offset just past the last nonzero byte of f in
// [from, size), or from if there is none: how far stale bytes beyond the
// end of the log reach.
func lastNonZero(f File, from, size int64) (int64, error) {
	n := min(zeroChunkBytes, max(size-from, 0))
	buf, zeros := make([]byte, n), make([]byte, n)
	end := from
	for off := from; off < size; {
		n := min(int64(len(buf)), size-off)
		got, err := f.ReadAt(buf[:n], off)
		if int64(got) < n {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, fmt.Errorf("read at %d: %w", off, err)
		}
		if !bytes.Equal(buf[:n], zeros[:n]) {
			i := n - 1
			for buf[i] == 0 {
				i--
			}
			end = off + i + 1
		}
		off += n
	}
	return end, nil
}
