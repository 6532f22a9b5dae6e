package boltstore

import (
	"fmt"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"

	"github.com/strata-ledger/strata/fsm"
)

// Replace implements fsm.Store: fn fills a new file next to the store
// (committed every ReplaceCommitBytes, so memory stays bounded however
// large the state), which is fsynced and swapped in only if fn succeeds.
// Reads inside fn see fn's writes; the old state serves Views meanwhile.
func (s *Store) Replace(fn func(fsm.Tx) error) error {
	f, err := os.CreateTemp(filepath.Dir(s.cfg.Path), filepath.Base(s.cfg.Path)+".restore-*")
	if err != nil {
		return fmt.Errorf("boltstore: replace: %w", err)
	}
	path := f.Name()
	f.Close()
	opts := s.options(false)
	opts.NoSync, opts.NoGrowSync = true, true // one fsync at the end
	db, err := bolt.Open(path, 0o600, opts)
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("boltstore: replace: %w", err)
	}
	err = ensureLayout(db)
	if err == nil {
		err = s.fill(db, fn)
	}
	if cerr := db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("boltstore: replace: %w", cerr)
	}
	if err != nil {
		os.Remove(path)
		return err
	}
	return s.swap(path)
}

// fill runs fn over db in write transactions, committing every
// ReplaceCommitBytes, and fsyncs db.
func (s *Store) fill(db *bolt.DB, fn func(fsm.Tx) error) error {
	t := &tx{write: true, ar: &arena{}, tailK: s.cfg.HistoryTailEntries, commitBytes: s.cfg.ReplaceCommitBytes,
		entries: make(map[string]*jobEntry), lastSeq: make(map[string]uint64), blocks: make(map[string]*openBlock)}
	begin := func() error {
		btx, err := db.Begin(true)
		if err != nil {
			return fmt.Errorf("boltstore: replace: %w", err)
		}
		return t.bind(btx)
	}
	t.commit = func() error {
		if err := t.flush(); err != nil {
			return err
		}
		if err := t.btx.Commit(); err != nil {
			return fmt.Errorf("boltstore: replace: commit: %w", err)
		}
		t.ar.reset()
		clear(t.entries)
		t.missed = false
		return begin()
	}
	if err := begin(); err != nil {
		return err
	}
	err := fn(t)
	if err == nil {
		err = t.flush()
	}
	if err != nil {
		t.btx.Rollback()
		return err
	}
	if err := t.btx.Commit(); err != nil {
		return fmt.Errorf("boltstore: replace: commit: %w", err)
	}
	if err := db.Sync(); err != nil {
		return fmt.Errorf("boltstore: replace: fsync: %w", err)
	}
	return nil
}
