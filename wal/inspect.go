package wal

import (
	"fmt"
	"path/filepath"
)

// Summary describes a WAL directory as read by Inspect.
type Summary struct {
	Segments   int
	FirstLSN   LSN // first record on disk; 0 if none
	LastLSN    LSN // last good record; 0 if none
	Records    int64
	Watermarks Watermarks
}

// Inspect reads the WAL in dir without changing it, calling fn (if not nil)
// for every good record in LSN order. It checks everything Open checks and
// more, and returns the first problem as a *CorruptError naming segment
// and offset:
//   - a checkpoint that fails its checks, or names an LSN past the log;
//   - a segment whose first LSN does not follow the previous segment;
//   - a record failing its length, CRC, LSN, state or type check, in any
//     segment (Open would truncate the last segment there);
//   - nonzero bytes after the end of any segment's records (stale bytes a
//     crash left, which Open would zero).
//
// The Payload of an Entry is valid only during the call to fn. Inspect
// takes no lock: run it on the directory of a stopped node.
func Inspect(dir string, fn func(Entry) error) (Summary, error) {
	return inspect(OSFS{}, dir, fn)
}

// Verify checks every record and file of the WAL in dir, as Inspect does.
func Verify(dir string) (Summary, error) { return inspect(OSFS{}, dir, nil) }

// ReadWatermarks returns the watermarks stored in dir's checkpoint.
func ReadWatermarks(dir string) (Watermarks, error) { return readCheckpoint(OSFS{}, dir) }

func inspect(fsys FS, dir string, fn func(Entry) error) (Summary, error) {
	var sum Summary
	marks, err := readCheckpoint(fsys, dir)
	if err != nil {
		return sum, err
	}
	sum.Watermarks = marks
	segs, err := listSegments(fsys, dir)
	if err != nil {
		return sum, err
	}
	sum.Segments = len(segs)
	if len(segs) > 0 {
		sum.FirstLSN, sum.LastLSN = segs[0].first, segs[0].first-1
	}
	for _, seg := range segs {
		if seg.first != sum.LastLSN+1 {
			return sum, &CorruptError{Segment: seg.name, Offset: 0, Reason: fmt.Sprintf("first LSN %d does not follow LSN %d", seg.first, sum.LastLSN)}
		}
		s, err := inspectSegment(fsys, dir, seg, fn)
		sum.LastLSN, sum.Records = s.last, sum.Records+s.records
		if err != nil {
			return sum, err
		}
	}
	if sum.Records == 0 {
		sum.FirstLSN = 0
	}
	if h := marks.highest(); h > sum.LastLSN && len(segs) > 0 {
		return sum, &CorruptError{Segment: checkpointName, Offset: 0, Reason: fmt.Sprintf("watermark %d beyond the last record %d", h, sum.LastLSN)}
	}
	return sum, nil
}

// inspectSegment scans one segment and checks that only zeros follow its
// last record.
func inspectSegment(fsys FS, dir string, seg segmentInfo, fn func(Entry) error) (segmentScan, error) {
	f, err := fsys.OpenRO(filepath.Join(dir, seg.name))
	if err != nil {
		return segmentScan{last: seg.first - 1}, fmt.Errorf("open segment %s: %w", seg.name, err)
	}
	defer f.Close()
	s, err := scanSegment(f, seg, fn)
	if err != nil {
		return s, err
	}
	if s.problem != nil {
		return s, s.problem
	}
	size, err := f.Size()
	if err != nil {
		return s, fmt.Errorf("stat segment %s: %w", seg.name, err)
	}
	dirty, err := lastNonZero(f, s.end, size)
	if err != nil {
		return s, fmt.Errorf("scan tail of segment %s: %w", seg.name, err)
	}
	if dirty > s.end {
		return s, &CorruptError{Segment: seg.name, Offset: s.end, Reason: fmt.Sprintf("nonzero bytes up to offset %d after the last record (LSN %d)", dirty, s.last)}
	}
	return s, nil
}
