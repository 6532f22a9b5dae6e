package boltstore

import "github.com/strata-ledger/strata/fsm"

// Reads of the last commit (issue 19). Under group commit a View first
// commits what is pending, so that it sees every Update; on a region's
// leader the reconcilers and the forwarder read after most Raft entries,
// and their reads committed every 2–3 entries where the followers commit
// 13 (strata dev, 64 clients). Loops that can act on the state as of the
// last commit read it with ViewCommitted instead, and learn of commits
// through SetOnCommit rather than of applies; the file still only ever
// holds whole prefixes of the applied entries, so the view is never torn,
// only older than the applied state by at most CommitInterval.

// SetOnCommit sets fn, called after every commit of a group-commit
// transaction, with the store's write lock held: fn must be quick and
// must not call the store. Set it before the first Update; nil removes
// it.
func (s *Store) SetOnCommit(fn func()) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.onCommit = fn
}

// Pending reports whether Updates that returned wait in the open
// transaction (always false without group commit).
func (s *Store) Pending() bool { return s.group.pending.Load() }

// ViewCommitted runs fn in a read view of the last commit, without
// committing what is pending: the state of a whole prefix of the applied
// Updates. Without group commit it is View.
func (s *Store) ViewCommitted(fn func(fsm.ReadTx) error) error {
	if s.group.broken.Load() {
		return s.flushForRead() // returns the failure
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return ErrClosed
	}
	return s.view(fn)
}
