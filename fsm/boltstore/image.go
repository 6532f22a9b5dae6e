package boltstore

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"

	"github.com/strata-ledger/strata/fsm"
)

// Store image (FORMAT.md, "Snapshot image"), after the 32-byte snapshot
// header of fsm (kind SnapshotKindStoreImage):
//
//	offset  size field
//	32      8    image length N (little-endian)
//	40      N    the bbolt file as of one read transaction (bolt.Tx.WriteTo)
//	40+N    32   ledger digest of the image's jobs (fsm.LedgerDigest)
//	72+N    4    CRC-32C (Castagnoli, little-endian) of bytes 0..72+N-1
const (
	imageTrailerLen = 32 + 4
	// minImageBytes: two meta pages of bbolt's smallest page size.
	minImageBytes = 2 * 1024
	ioBufferBytes = 256 << 10
)

// WriteImage implements fsm.ImageStore: it streams the file as one read
// transaction sees it, while Updates go on, then the ledger digest of
// that state (a second pass over its jobs) and the checksum. Memory use
// does not depend on the store's size.
func (s *Store) WriteImage(w io.Writer) error {
	if err := s.flushForRead(); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return ErrClosed
	}
	return s.db.View(func(btx *bolt.Tx) error {
		t := &tx{}
		if err := t.bind(btx); err != nil {
			return err
		}
		index, err := t.AppliedIndex()
		if err != nil {
			return err
		}
		crc := crc32.New(castagnoli)
		bw := bufio.NewWriterSize(w, ioBufferBytes)
		out := io.MultiWriter(bw, crc)
		b, _ := fsm.SnapshotHeader{Kind: fsm.SnapshotKindStoreImage, AppliedIndex: index}.AppendBinary(nil)
		size := btx.Size()
		if _, err := out.Write(binary.LittleEndian.AppendUint64(b, uint64(size))); err != nil {
			return fmt.Errorf("boltstore: write image: %w", err)
		}
		if n, err := btx.WriteTo(out); err != nil || n != size {
			return fmt.Errorf("boltstore: write image: %d of %d bytes: %v", n, size, err)
		}
		digest, err := fsm.LedgerDigest(t)
		if err != nil {
			return fmt.Errorf("boltstore: write image: digest: %w", err)
		}
		if _, err := out.Write(digest[:]); err != nil {
			return fmt.Errorf("boltstore: write image: %w", err)
		}
		if _, err := bw.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32())); err != nil {
			return fmt.Errorf("boltstore: write image: %w", err)
		}
		return bw.Flush()
	})
}

// RestoreImage implements fsm.ImageStore: it streams the image into a new
// file next to the store (never holding it in memory), checks length,
// checksum and the end of the stream, fsyncs it, opens it and checks its
// layout, applied index and ledger digest, then swaps it in. On any
// failure the new file is removed and the store keeps its state.
func (s *Store) RestoreImage(h fsm.SnapshotHeader, r io.Reader) error {
	if h.Kind != fsm.SnapshotKindStoreImage {
		return fmt.Errorf("%w: kind %d is not a store image", fsm.ErrSnapshot, h.Kind)
	}
	path, digest, err := s.receiveImage(h, r)
	if err != nil {
		return err
	}
	if err := s.verifyImage(path, h.AppliedIndex, digest); err != nil {
		os.Remove(path)
		return err
	}
	if err := s.swap(path); err != nil {
		return err
	}
	s.log.Info("ledger store restored from an image", "path", s.cfg.Path, "applied_index", h.AppliedIndex)
	return nil
}

// receiveImage copies the image into a new, fsynced file and returns its
// path and the digest the trailer announces.
func (s *Store) receiveImage(h fsm.SnapshotHeader, r io.Reader) (path string, digest fsm.Hash, err error) {
	crc := crc32.New(castagnoli)
	hdr, _ := h.AppendBinary(nil)
	crc.Write(hdr)
	br := bufio.NewReaderSize(r, ioBufferBytes)
	var n [8]byte
	if _, err := io.ReadFull(br, n[:]); err != nil {
		return "", digest, fmt.Errorf("%w: image length: %v", fsm.ErrSnapshot, err)
	}
	crc.Write(n[:])
	size := binary.LittleEndian.Uint64(n[:])
	if size < minImageBytes || size > uint64(s.cfg.MaxImageBytes) {
		return "", digest, fmt.Errorf("%w: image of %d bytes, limit %d", fsm.ErrSnapshot, size, s.cfg.MaxImageBytes)
	}
	f, err := os.CreateTemp(filepath.Dir(s.cfg.Path), filepath.Base(s.cfg.Path)+".restore-*")
	if err != nil {
		return "", digest, fmt.Errorf("boltstore: restore image: %w", err)
	}
	name := f.Name()
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("boltstore: restore image: %w", cerr)
		}
		if err != nil {
			os.Remove(name) // not path: the error returns clear it
		}
	}()
	if _, err := io.CopyN(io.MultiWriter(f, crc), br, int64(size)); err != nil {
		if errors.Is(err, io.EOF) {
			return "", digest, fmt.Errorf("%w: image truncated", fsm.ErrSnapshot)
		}
		return "", digest, fmt.Errorf("boltstore: restore image: %w", err)
	}
	var tr [imageTrailerLen]byte
	if _, err := io.ReadFull(br, tr[:]); err != nil {
		return "", digest, fmt.Errorf("%w: image trailer: %v", fsm.ErrSnapshot, err)
	}
	crc.Write(tr[:32])
	if got, want := binary.LittleEndian.Uint32(tr[32:]), crc.Sum32(); got != want {
		return "", digest, fmt.Errorf("%w: image checksum %08x, computed %08x", fsm.ErrSnapshot, got, want)
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		return "", digest, fmt.Errorf("%w: bytes after the image trailer", fsm.ErrSnapshot)
	}
	if err := f.Sync(); err != nil {
		return "", digest, fmt.Errorf("boltstore: restore image: fsync: %w", err)
	}
	return name, fsm.Hash(tr[:32]), nil
}

// verifyImage opens a received image read-only and checks it is a store
// of this layout at the announced applied index and digest. bbolt panics
// on some malformed pages; a panic here is a refused image.
func (s *Store) verifyImage(path string, index uint64, digest fsm.Hash) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: image does not read as a store: %v", fsm.ErrSnapshot, p)
		}
	}()
	opts := s.options(true)
	opts.InitialMmapSize = 0
	db, err := bolt.Open(path, 0o600, opts)
	if err != nil {
		return fmt.Errorf("%w: image does not open: %v", fsm.ErrSnapshot, err)
	}
	defer db.Close()
	return db.View(func(btx *bolt.Tx) error {
		if err := checkLayout(btx); err != nil {
			return fmt.Errorf("%w: %w", fsm.ErrSnapshot, err)
		}
		t := &tx{}
		if err := t.bind(btx); err != nil {
			return err
		}
		got, err := t.AppliedIndex()
		if err != nil || got != index {
			return fmt.Errorf("%w: image at applied index %d (%v), header says %d", fsm.ErrSnapshot, got, err, index)
		}
		d, err := fsm.LedgerDigest(t)
		if err != nil {
			return fmt.Errorf("%w: image jobs: %w", fsm.ErrSnapshot, err)
		}
		if d != digest {
			return fmt.Errorf("%w: image ledger digest %s, trailer says %s", fsm.ErrSnapshot, d, digest)
		}
		return nil
	})
}

// swap replaces the store's file by the file at path (renamed over it)
// and reopens. If the rename fails the old file is reopened; if
// reopening fails the store is closed.
func (s *Store) swap(path string) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		os.Remove(path)
		return ErrClosed
	}
	if err := s.commitGroup(commitClose); err != nil { // the old state serves if the swap fails
		os.Remove(path)
		return err
	}
	err := s.db.Close()
	s.db = nil
	s.cache.clear()
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("boltstore: swap %s: close: %w", s.cfg.Path, err)
	}
	if err := os.Rename(path, s.cfg.Path); err != nil {
		os.Remove(path)
		if db, oerr := s.openDB(s.cfg.Path); oerr == nil {
			s.db = db
		}
		return fmt.Errorf("boltstore: swap %s: %w", s.cfg.Path, err)
	}
	if err := fsyncDir(filepath.Dir(s.cfg.Path)); err != nil {
		return err
	}
	db, err := s.openDB(s.cfg.Path)
	if err != nil {
		return err
	}
	if err := ensureLayout(db); err != nil {
		db.Close()
		return fmt.Errorf("boltstore: swap %s: %w", s.cfg.Path, err)
	}
	s.db = db
	return nil
}
