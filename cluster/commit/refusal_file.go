package commit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/strata-ledger/strata/wal"
)

// The refusal file keeps a node's refusals across restarts, apart from
// the NodeWAL: compaction deletes NodeWAL segments below the watermarks,
// and a refused record is below them by design, so a refusal must not
// live there. The file is the registry's log, appended and fsynced once
// per refusal (refusals are rare: each is a bug or a version skew):
//
//	entry: payload length (4) | CRC-32C of the payload (4) | payload
//
// little-endian; the payload is a refusal (appendRefusal) or an eviction
// mark (appendEvicted), at most maxRefusalBytes. Replaying the file
// through the registry rebuilds it exactly, evictions included. When the
// file holds more than twice the registry's bounds, it is rewritten with
// only what the registry keeps, led by an eviction mark: write a
// temporary file, fsync it, rename it over the file, fsync the directory.
//
// Recovery: an entry cut short by a crash (its length runs past the end,
// or it is the last one and its CRC fails) is truncated away; a bad entry
// followed by others is corruption, and the node does not start.

const refusalHeaderBytes = 8

var refusalCRC = crc32.MakeTable(crc32.Castagnoli)

// refusalLog is the registry behind its file. Safe for concurrent use.
type refusalLog struct {
	mu     sync.Mutex
	path   string   // "": kept in memory only
	f      *os.File // open for appending; nil in memory
	reg    *refusalRegistry
	size   int64 // bytes in the file
	frames int   // entries in the file
	err    error // sticky: after a failed write or fsync nothing is recorded again
}

// openRefusalLog opens (or creates) the refusal file at path and replays
// it; path "" keeps refusals in memory only (lost at restart: tests).
func openRefusalLog(path string, maxCount, maxBytes int) (*refusalLog, error) {
	l := &refusalLog{path: path, reg: newRefusalRegistry(maxCount, maxBytes)}
	if path == "" {
		return l, nil
	}
	_ = os.Remove(path + ".tmp") // a rewrite cut short; the file is whole
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("cluster: refusals: %w", err)
	}
	good, frames, err := replayRefusals(b, l.reg)
	if err != nil {
		return nil, fmt.Errorf("cluster: refusals: %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cluster: refusals: %w", err)
	}
	if int64(good) != int64(len(b)) {
		// A torn last entry: cut it off before anything is appended.
		if err := errors.Join(f.Truncate(int64(good)), f.Sync()); err != nil {
			f.Close()
			return nil, fmt.Errorf("cluster: refusals: truncate %s at %d: %w", path, good, err)
		}
	}
	if _, err := f.Seek(int64(good), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("cluster: refusals: %w", err)
	}
	if len(b) == 0 {
		if err := syncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, fmt.Errorf("cluster: refusals: %w", err)
		}
	}
	l.f, l.size, l.frames = f, int64(good), frames
	return l, nil
}

// replayRefusals adds every entry of a refusal file to reg and returns
// the length of its good prefix and its entry count. A torn last entry
// ends the prefix; any other bad entry is an error.
func replayRefusals(b []byte, reg *refusalRegistry) (good, frames int, err error) {
	for off := 0; off < len(b); {
		rest := len(b) - off
		if rest < refusalHeaderBytes || allZero(b[off:]) {
			return off, frames, nil // torn header, or a tail the file system zero-filled
		}
		n := int(binary.LittleEndian.Uint32(b[off:]))
		if n > maxRefusalBytes {
			return off, frames, fmt.Errorf("%w: entry at offset %d: length %d, limit %d", errRefusalCodec, off, n, maxRefusalBytes)
		}
		if n > rest-refusalHeaderBytes {
			return off, frames, nil // torn payload
		}
		payload := b[off+refusalHeaderBytes : off+refusalHeaderBytes+n]
		end := off + refusalHeaderBytes + n
		if crc32.Checksum(payload, refusalCRC) != binary.LittleEndian.Uint32(b[off+4:]) {
			if end == len(b) {
				return off, frames, nil // the last entry, written in part
			}
			return off, frames, fmt.Errorf("%w: entry at offset %d: checksum mismatch", errRefusalCodec, off)
		}
		if err := replayEntry(payload, reg); err != nil {
			return off, frames, fmt.Errorf("entry at offset %d: %w", off, err)
		}
		off, frames = end, frames+1
	}
	return len(b), frames, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func replayEntry(payload []byte, reg *refusalRegistry) error {
	if len(payload) > 0 && payload[0] == refusalKindEvicted {
		through, count, err := decodeEvicted(payload)
		if err != nil {
			return err
		}
		reg.markEvicted(through, count)
		return nil
	}
	r, err := decodeRefusal(payload)
	if err != nil {
		return err
	}
	reg.add(r, bytes.Clone(payload)) // not the whole file's buffer
	return nil
}

// appendFrame appends payload as one file entry.
func appendFrame(b, payload []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(payload, refusalCRC))
	return append(b, payload...)
}

// record durably keeps r and returns how many old refusals it evicted.
// After an I/O error it records nothing again (an fsync is never
// retried): the error is returned every time.
func (l *refusalLog) record(r Refusal) (int, error) {
	encoded := appendRefusal(nil, &r)
	if len(encoded) > maxRefusalBytes {
		return 0, fmt.Errorf("cluster: refusals: LSN %d encodes to %d bytes, limit %d", r.LSN, len(encoded), maxRefusalBytes)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return 0, l.err
	}
	if l.f != nil {
		frame := appendFrame(nil, encoded)
		if _, err := l.f.Write(frame); err != nil {
			return 0, l.fail(fmt.Errorf("write %s: %w", l.path, err))
		}
		if err := l.f.Sync(); err != nil {
			return 0, l.fail(fmt.Errorf("fsync %s: %w", l.path, err))
		}
		l.size += int64(len(frame))
		l.frames++
	}
	evicted := l.reg.add(r, encoded)
	if l.f != nil && (l.frames > 2*l.reg.maxCount || l.size > 2*int64(l.reg.maxBytes)) {
		if err := l.rewrite(); err != nil {
			return evicted, l.fail(err)
		}
	}
	return evicted, nil
}

func (l *refusalLog) fail(err error) error {
	l.err = fmt.Errorf("cluster: refusals: %w", err)
	return l.err
}

// rewrite replaces the file with what the registry keeps.
func (l *refusalLog) rewrite() error {
	var b []byte
	b = appendFrame(b, appendEvicted(nil, l.reg.evictedThrough, l.reg.evicted))
	l.reg.each(func(encoded []byte) { b = appendFrame(b, encoded) })
	tmp := l.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	if err := errors.Join(werr, f.Sync()); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, l.path); err != nil {
		f.Close()
		return err
	}
	if err := syncDir(filepath.Dir(l.path)); err != nil {
		f.Close()
		return err
	}
	old := l.f
	l.f, l.size, l.frames = f, int64(len(b)), l.reg.len()+1
	return old.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}

// get returns the refusal of lsn, and whether one may have been evicted.
func (l *refusalLog) get(lsn wal.LSN) (r Refusal, ok, lost bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok = l.reg.get(lsn)
	return r, ok, !ok && l.reg.lost(lsn)
}

// close closes the file.
func (l *refusalLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if l.err == nil {
		l.err = errors.New("cluster: refusals: closed")
	}
	return err
}
