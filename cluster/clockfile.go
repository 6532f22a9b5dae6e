package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

// clockFileLen is the size of the HLC bound file: wall ms (8) + CRC-32C (4),
// little-endian.
const clockFileLen = 12

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ClockFile persists the HLC upper bound (hlc.Persister) in one small file,
// replaced atomically: write a temporary file, fsync it, rename it over the
// old one, fsync the directory. A torn or corrupt file is an error, never a
// silent zero, because a zero bound would let the clock go backwards.
type ClockFile struct {
	path string
}

// NewClockFile keeps the bound at dir/hlc.bound.
func NewClockFile(dir string) *ClockFile {
	return &ClockFile{path: filepath.Join(dir, "hlc.bound")}
}

// Load returns the stored bound, 0 if the file does not exist.
func (c *ClockFile) Load() (int64, error) {
	b, err := os.ReadFile(c.path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", c.path, err)
	}
	if len(b) != clockFileLen {
		return 0, fmt.Errorf("read %s: %d bytes, want %d", c.path, len(b), clockFileLen)
	}
	if crc32.Checksum(b[:8], castagnoli) != binary.LittleEndian.Uint32(b[8:]) {
		return 0, fmt.Errorf("read %s: checksum mismatch", c.path)
	}
	return int64(binary.LittleEndian.Uint64(b[:8])), nil
}

// Store durably records wallMs as the bound.
func (c *ClockFile) Store(wallMs int64) error {
	var b [clockFileLen]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(wallMs))
	binary.LittleEndian.PutUint32(b[8:], crc32.Checksum(b[:8], castagnoli))
	return writeFileAtomic(c.path, b[:])
}

// writeFileAtomic replaces path with data so that a crash leaves either the
// old or the new content.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("open dir of %s: %w", path, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir of %s: %w", path, err)
	}
	return nil
}
