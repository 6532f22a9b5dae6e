package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// FS is the file system the WAL does all of its file I/O through. The real
// one (OSFS) wraps os and golang.org/x/sys/unix; tests wrap it to inject torn
// writes, short writes, bit flips and fsync failures.
//
// Paths are full paths (the WAL joins Config.Dir and a file name).
type FS interface {
	// MkdirAll creates dir and its parents if they do not exist.
	MkdirAll(dir string) error
	// Create creates or truncates the file for reading and writing.
	Create(path string) (File, error)
	// OpenRW opens an existing file for reading and writing.
	OpenRW(path string) (File, error)
	// OpenRO opens an existing file for reading.
	OpenRO(path string) (File, error)
	// ReadDir lists the names of the files in dir, in any order.
	ReadDir(dir string) ([]string, error)
	// Rename atomically replaces newPath with oldPath.
	Rename(oldPath, newPath string) error
	// Remove deletes a file.
	Remove(path string) error
	// SyncDir makes the directory's entries (creates, renames, removes)
	// durable.
	SyncDir(dir string) error
	// Lock takes an exclusive lock on path (creating it), held until the
	// returned Closer is closed or the process exits. It fails at once
	// with an error wrapping ErrLocked if another holder has it.
	Lock(path string) (io.Closer, error)
}

// File is an open file. The WAL never uses the file position: every read and
// write names its offset.
type File interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	// Sync makes the file's data, and the metadata needed to read it back
	// (its size), durable: fdatasync(2).
	Sync() error
	// Allocate reserves size bytes of disk for the file and extends it to
	// at least size bytes; the new bytes read as zeros: fallocate(2).
	Allocate(size int64) error
	// Size returns the file's length in bytes.
	Size() (int64, error)
	Close() error
}

// OSFS is the real file system.
type OSFS struct{}

var _ FS = OSFS{}

// MkdirAll implements FS.
func (OSFS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }

// Create implements FS.
func (OSFS) Create(path string) (File, error) {
	return openOS(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC)
}

// OpenRW implements FS.
func (OSFS) OpenRW(path string) (File, error) { return openOS(path, os.O_RDWR) }

// OpenRO implements FS.
func (OSFS) OpenRO(path string) (File, error) { return openOS(path, os.O_RDONLY) }

func openOS(path string, flag int) (File, error) {
	f, err := os.OpenFile(path, flag|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// ReadDir implements FS.
func (OSFS) ReadDir(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// Rename implements FS.
func (OSFS) Rename(oldPath, newPath string) error { return os.Rename(oldPath, newPath) }

// Remove implements FS.
func (OSFS) Remove(path string) error { return os.Remove(path) }

// SyncDir implements FS.
func (OSFS) SyncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Lock implements FS with flock(2).
func (OSFS) Lock(path string) (io.Closer, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		if err == unix.EWOULDBLOCK {
			return nil, fmt.Errorf("%w: %s", ErrLocked, path)
		}
		return nil, fmt.Errorf("flock %s: %w", path, err)
	}
	return f, nil
}

type osFile struct{ f *os.File }

func (o osFile) ReadAt(p []byte, off int64) (int, error)  { return o.f.ReadAt(p, off) }
func (o osFile) WriteAt(p []byte, off int64) (int, error) { return o.f.WriteAt(p, off) }
func (o osFile) Close() error                             { return o.f.Close() }

func (o osFile) Sync() error {
	for {
		err := unix.Fdatasync(int(o.f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

func (o osFile) Size() (int64, error) {
	st, err := o.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Allocate uses fallocate(2); on a file system without it, it writes zeros.
func (o osFile) Allocate(size int64) error {
	for {
		err := unix.Fallocate(int(o.f.Fd()), 0, 0, size)
		switch {
		case err == nil:
			return nil
		case err == unix.EINTR:
			continue
		case errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS):
			return o.zeroFill(size)
		default:
			return fmt.Errorf("fallocate %d bytes: %w", size, err)
		}
	}
}

func (o osFile) zeroFill(size int64) error {
	have, err := o.Size()
	if err != nil {
		return err
	}
	return writeZeros(o, have, size)
}

// zeroChunkBytes is the size of the buffer zeros are written from.
const zeroChunkBytes = 1 << 20

// writeZeros overwrites [from, to) of f with zeros.
func writeZeros(f interface {
	WriteAt([]byte, int64) (int, error)
}, from, to int64) error {
	if from >= to {
		return nil
	}
	zeros := make([]byte, min(zeroChunkBytes, to-from))
	for off := from; off < to; {
		n := min(int64(len(zeros)), to-off)
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			return fmt.Errorf("write zeros at %d: %w", off, err)
		}
		off += n
	}
	return nil
}
