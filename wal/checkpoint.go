package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
)

// Checkpoint file layout (wal/FORMAT.md). Never change: it is on disk.
const (
	checkpointName    = "checkpoint"
	checkpointTmpName = checkpointName + tmpSuffix
	// CheckpointBytes is the exact length of the checkpoint file.
	CheckpointBytes  = 44
	checkpointMagic  = "SWCP"
	checkpointFormat = 1
)

// Sentinel errors of watermarks.
var (
	// ErrWatermark is returned for a watermark that would move backwards,
	// name an LSN not yet durable, or name a level that is not a watermark.
	ErrWatermark = errors.New("wal: bad watermark")
)

// Watermarks are the highest LSNs known to have reached each level. They
// only move forward.
type Watermarks struct {
	Regional  LSN
	Global    LSN
	Applied   LSN
	Compacted LSN
}

// Get returns the watermark of l (0 for a level that has none).
func (w Watermarks) Get(l Level) LSN {
	switch l {
	case Regional:
		return w.Regional
	case Global:
		return w.Global
	case Applied:
		return w.Applied
	case Compacted:
		return w.Compacted
	}
	return 0
}

// with returns w with level l set to lsn.
func (w Watermarks) with(l Level, lsn LSN) Watermarks {
	switch l {
	case Regional:
		w.Regional = lsn
	case Global:
		w.Global = lsn
	case Applied:
		w.Applied = lsn
	case Compacted:
		w.Compacted = lsn
	}
	return w
}

// highest returns the largest of the watermarks.
func (w Watermarks) highest() LSN { return max(w.Regional, w.Global, w.Applied, w.Compacted) }

// lowest returns the smallest watermark among levels.
func (w Watermarks) lowest(levels []Level) LSN {
	low := ^LSN(0)
	for _, l := range levels {
		low = min(low, w.Get(l))
	}
	return low
}

// encodeCheckpoint returns the checkpoint file's bytes for w.
func encodeCheckpoint(w Watermarks) []byte {
	b := make([]byte, 0, CheckpointBytes)
	b = append(b, checkpointMagic...)
	b = binary.LittleEndian.AppendUint32(b, checkpointFormat)
	for _, v := range []LSN{w.Regional, w.Global, w.Applied, w.Compacted} {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return binary.LittleEndian.AppendUint32(b, crc32c(b))
}

// decodeCheckpoint checks and decodes a checkpoint file's bytes.
func decodeCheckpoint(b []byte) (Watermarks, error) {
	if len(b) != CheckpointBytes {
		return Watermarks{}, fmt.Errorf("%d bytes, want %d", len(b), CheckpointBytes)
	}
	if string(b[:4]) != checkpointMagic {
		return Watermarks{}, fmt.Errorf("magic %q, want %q", b[:4], checkpointMagic)
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != checkpointFormat {
		return Watermarks{}, fmt.Errorf("format %d, want %d", v, checkpointFormat)
	}
	if got, want := crc32c(b[:40]), binary.LittleEndian.Uint32(b[40:]); got != want {
		return Watermarks{}, fmt.Errorf("crc %08x, want %08x", got, want)
	}
	lsn := func(off int) LSN { return LSN(binary.LittleEndian.Uint64(b[off:])) }
	return Watermarks{Regional: lsn(8), Global: lsn(16), Applied: lsn(24), Compacted: lsn(32)}, nil
}

// readCheckpoint reads the checkpoint in dir; a missing file means no
// watermarks yet.
func readCheckpoint(fsys FS, dir string) (Watermarks, error) {
	f, err := fsys.OpenRO(filepath.Join(dir, checkpointName))
	if errors.Is(err, fs.ErrNotExist) {
		return Watermarks{}, nil
	}
	if err != nil {
		return Watermarks{}, fmt.Errorf("open checkpoint: %w", err)
	}
	defer f.Close()
	// Read one byte more than the format's length to detect a longer file
	// without trusting its size.
	var buf [CheckpointBytes + 1]byte
	n, err := f.ReadAt(buf[:], 0)
	if err != nil && err != io.EOF {
		return Watermarks{}, fmt.Errorf("read checkpoint: %w", err)
	}
	w, err := decodeCheckpoint(buf[:n])
	if err != nil {
		return Watermarks{}, &CorruptError{Segment: checkpointName, Offset: 0, Reason: err.Error()}
	}
	return w, nil
}

// writeCheckpoint replaces the checkpoint in dir atomically: write a
// temporary file, fsync it, rename it over the checkpoint, fsync the
// directory. A crash at any point leaves the old or the new checkpoint.
func writeCheckpoint(fsys FS, dir string, w Watermarks) error {
	tmp := filepath.Join(dir, checkpointTmpName)
	f, err := fsys.Create(tmp)
	if err != nil {
		return fmt.Errorf("create %s: %w", checkpointTmpName, err)
	}
	b := encodeCheckpoint(w)
	n, err := f.WriteAt(b, 0)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", checkpointTmpName, err)
	}
	if err := fsys.Rename(tmp, filepath.Join(dir, checkpointName)); err != nil {
		return fmt.Errorf("rename %s: %w", checkpointTmpName, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("sync dir after checkpoint: %w", err)
	}
	return nil
}
