package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
)

// The clean-shutdown marker (Path+".state") says the bbolt file next to
// it may be served. 24 bytes, little-endian:
//
//	offset size field
//	0      8    magic "STRTBOLT"
//	8      1    version, 1
//	9      1    state: 1 clean, 2 synced
//	10     2    reserved, 0
//	12     8    txid: the file's last transaction (clean), 0 (synced)
//	20     4    CRC-32C (Castagnoli) of bytes 0..19
//
// clean: Close fsynced the file and then wrote this marker; the file's
// last transaction must be txid. synced: the store runs with
// FsyncEveryBatch, so every committed transaction is on disk whatever
// happens. A store opened without FsyncEveryBatch removes the marker
// (and fsyncs the directory) before its first write. Never change.
const (
	markerMagic   = "STRTBOLT"
	markerVersion = 1
	markerLen     = 24

	markerClean  = 1
	markerSynced = 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// marker is the decoded clean-shutdown marker.
type marker struct {
	State uint8
	TxID  uint64
}

func (m marker) appendBinary(b []byte) []byte {
	at := len(b)
	b = append(b, markerMagic...)
	b = append(b, markerVersion, m.State, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, m.TxID)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[at:], castagnoli))
}

// decodeMarker accepts exactly what appendBinary writes.
func decodeMarker(b []byte) (marker, error) {
	if len(b) != markerLen || string(b[:8]) != markerMagic {
		return marker{}, fmt.Errorf("%w: not a marker (%d bytes)", ErrCorrupt, len(b))
	}
	if got, want := binary.LittleEndian.Uint32(b[20:]), crc32.Checksum(b[:20], castagnoli); got != want {
		return marker{}, fmt.Errorf("%w: marker checksum %08x, computed %08x", ErrCorrupt, got, want)
	}
	m := marker{State: b[9], TxID: binary.LittleEndian.Uint64(b[12:])}
	switch {
	case b[8] != markerVersion:
		return marker{}, fmt.Errorf("%w: marker version %d", ErrCorrupt, b[8])
	case b[10] != 0 || b[11] != 0:
		return marker{}, fmt.Errorf("%w: marker reserved bytes", ErrCorrupt)
	case m.State != markerClean && m.State != markerSynced:
		return marker{}, fmt.Errorf("%w: marker state %d", ErrCorrupt, m.State)
	case m.State == markerSynced && m.TxID != 0:
		return marker{}, fmt.Errorf("%w: synced marker with txid %d", ErrCorrupt, m.TxID)
	}
	return m, nil
}

// readMarker returns the marker at path; found is false if there is none.
// An unreadable or damaged marker is an error (the caller treats the file
// as not clean).
func readMarker(path string) (m marker, found bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return marker{}, false, nil
	}
	if err != nil {
		return marker{}, false, err
	}
	defer f.Close()
	b := make([]byte, markerLen+1) // one more: a longer file is damaged
	n, _ := f.Read(b)
	m, err = decodeMarker(b[:n])
	return m, err == nil, err
}

// writeMarker replaces the marker atomically: temporary file, fsync,
// rename, fsync of the directory.
func writeMarker(path string, m marker) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, m.appendBinary(nil), 0o600); err != nil {
		return fmt.Errorf("boltstore: write marker %s: %w", tmp, err)
	}
	if err := fsyncFile(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("boltstore: write marker %s: %w", path, err)
	}
	return fsyncDir(filepath.Dir(path))
}

// removeMarker removes the marker durably (nothing if there is none).
func removeMarker(path string) error {
	err := os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("boltstore: remove marker %s: %w", path, err)
	}
	return fsyncDir(filepath.Dir(path))
}

func fsyncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("boltstore: fsync %s: %w", path, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("boltstore: fsync %s: %w", path, err)
	}
	return nil
}

func fsyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("boltstore: fsync directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("boltstore: fsync directory %s: %w", dir, err)
	}
	return nil
}
