package boltstore

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/strata-ledger/strata/fsm"
)

// Group commit (Config.CommitInterval > 0; issue 19): Updates add to one
// open bbolt write transaction, which commits once CommitInterval has
// passed since it began, after CommitUpdates Updates, once about
// CommitBytes were handed to bbolt, before any read (View, WriteImage)
// and at Close, Replace and RestoreImage. The pages a job, its workflows
// and its part of the event index share are then written once per commit
// instead of once per Raft entry (BENCHMARKS.md "Ledger apply").
//
// Why it keeps the promises. The store is a cache of the fsynced Raft
// log, and the applied index is written in the same transaction as the
// state it describes, so the file always holds a whole prefix of the
// applied entries: a process that dies with Updates pending loses them
// from the store only, and Raft replays them (without FsyncEveryBatch —
// the only mode group commit runs in — the next Open rebuilds anyway).
// Reads see applied state: every read transaction first commits what is
// pending. What changes is failure: an Update that fails after others
// were added to the open transaction rolls back theirs too, so the
// store then refuses every call (ErrPendingLost) until reopened; the
// Ledger's rule was already that a failed Update stops the replica,
// which restarts and replays.

// ErrPendingLost is returned, wrapped with the cause, by every call of a
// grouped store after Updates that had returned nil were rolled back (a
// later Update of the same transaction failed, or its commit did): the
// node must stop and reopen the store, and Raft replays the lost entries.
var ErrPendingLost = errors.New("boltstore: grouped updates rolled back (the store must be reopened)")

// group is the open transaction of group commit; guarded by
// Store.writeMu, except pending, which View reads without it.
type group struct {
	btx     *bolt.Tx // nil: none open
	since   time.Time
	updates int
	gen     uint64      // counts transactions, so a stale timer does nothing
	timer   *time.Timer // commits the transaction CommitInterval after it began
	pending atomic.Bool // btx != nil
	failed  error       // set once pending updates were lost
	broken  atomic.Bool // failed != nil
	commits [commitCauses]atomic.Uint64
	total   atomic.Uint64 // Updates committed
}

// Why an open transaction committed (GroupStats).
const (
	commitInterval = iota // CommitInterval passed
	commitSize            // CommitUpdates or CommitBytes reached
	commitRead            // a View or WriteImage
	commitClose           // Close, Replace, RestoreImage
	commitCauses
)

// GroupStats counts the commits of group commit by cause, and the
// Updates they carried, since Open.
type GroupStats struct {
	Interval, Size, Read, Close uint64
	Updates                     uint64
}

// GroupStats returns the commit counts by cause (all zero without group
// commit).
func (s *Store) GroupStats() GroupStats {
	c := &s.group.commits
	return GroupStats{Interval: c[commitInterval].Load(), Size: c[commitSize].Load(),
		Read: c[commitRead].Load(), Close: c[commitClose].Load(), Updates: s.group.total.Load()}
}

// grouped reports whether Updates share transactions.
func (s *Store) grouped() bool { return s.cfg.CommitInterval > 0 }

// updateGrouped is Update under group commit; s.writeMu and s.mu (read)
// are held, s.db is open and the store has not failed.
func (s *Store) updateGrouped(fn func(fsm.Tx) error) (err error) {
	g := &s.group
	if g.btx == nil {
		btx, err := s.db.Begin(true)
		if err != nil {
			return fmt.Errorf("boltstore: begin: %w", err)
		}
		g.btx, g.since, g.updates = btx, time.Now(), 0
		g.gen++
		g.pending.Store(true)
		gen := g.gen
		g.timer = time.AfterFunc(s.cfg.CommitInterval, func() { s.commitAfter(gen) })
	}
	t := s.beginUpdate()
	done := false
	defer func() { // also if fn panics
		if done {
			return
		}
		lost := g.updates
		s.rollbackGroup()
		s.endUpdate(t, false)
		if lost > 0 {
			s.fail(fmt.Errorf("%w: %d updates, then one failed: %v", ErrPendingLost, lost, err))
			if err != nil {
				err = g.failed
			}
		}
	}()
	if err = t.bind(g.btx); err != nil {
		return err
	}
	if err = fn(t); err != nil {
		return err
	}
	if err = t.flush(); err != nil {
		return err
	}
	done = true
	s.endGroupedUpdate(t)
	g.updates++
	if g.updates >= s.cfg.CommitUpdates || s.ar.used >= s.cfg.CommitBytes {
		return s.commitGroup(commitSize)
	}
	if time.Since(g.since) >= s.cfg.CommitInterval {
		return s.commitGroup(commitInterval)
	}
	return nil
}

// endGroupedUpdate ends a successful Update whose transaction stays
// open: its entries go to the job cache (the state as applied; the whole
// cache is cleared if the transaction is lost), and the arena keeps what
// bbolt still holds until the commit.
func (s *Store) endGroupedUpdate(t *tx) { s.releaseTx(t, true) }

// commitGroup commits the open transaction, if any. A failed commit loses
// the Updates it held: the store fails. s.writeMu is held.
func (s *Store) commitGroup(cause int) error {
	g := &s.group
	if g.btx == nil {
		return nil
	}
	n := g.updates
	err := g.btx.Commit()
	s.closeGroup()
	if err != nil {
		s.fail(fmt.Errorf("%w: commit of %d updates: %v", ErrPendingLost, n, err))
		return g.failed
	}
	g.commits[cause].Add(1)
	g.total.Add(uint64(n))
	if s.onCommit != nil {
		s.onCommit()
	}
	return nil
}

// fail makes every later call of the store return err (wrapping
// ErrPendingLost). s.writeMu is held.
func (s *Store) fail(err error) {
	s.group.failed = err
	s.group.broken.Store(true)
	s.cache.clear()
	s.log.Error("ledger store: applied updates lost before their commit; the node must restart", "path", s.cfg.Path, "err", err)
}

// rollbackGroup drops the open transaction.
func (s *Store) rollbackGroup() {
	if s.group.btx != nil {
		_ = s.group.btx.Rollback()
		s.closeGroup()
	}
}

func (s *Store) closeGroup() {
	g := &s.group
	g.btx, g.updates = nil, 0
	g.pending.Store(false)
	if g.timer != nil {
		g.timer.Stop()
		g.timer = nil
	}
	s.ar.reset()
}

// commitAfter is the timer of transaction gen: it commits it if it is
// still open.
func (s *Store) commitAfter(gen uint64) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil || s.group.btx == nil || s.group.gen != gen {
		return
	}
	_ = s.commitGroup(commitInterval) // a failure is kept in group.failed
}

// flushForRead commits what Updates left pending, so a read transaction
// begun after it sees every applied Update; it returns the error of a
// failed store.
func (s *Store) flushForRead() error {
	g := &s.group
	if !g.pending.Load() && !g.broken.Load() {
		return nil
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if g.failed != nil {
		return g.failed
	}
	return s.commitGroup(commitRead)
}
