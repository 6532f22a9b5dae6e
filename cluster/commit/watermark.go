package commit

import (
	"sync"

	"github.com/strata-ledger/strata/wal"
)

// lsnTracker computes a NodeWAL watermark from records that finish out of
// order: the mark is the highest LSN at or below which every record has
// finished (reached the tier). It only moves over a gap-free prefix: a
// finished record above an unfinished one waits in a set until the gap
// closes. An LSN never reported (a record someone else wrote, one still
// being appended) is a gap, so the mark can never pass a record that has
// not finished.
//
// It also keeps, for the finished prefix, the Raft index each record
// needs a ledger state to reach before the record may be compacted away
// (cover.go).
//
// It is pure (no I/O) and safe for concurrent use.
type lsnTracker struct {
	mu      sync.Mutex
	mark    wal.LSN          // every LSN ≤ mark has finished
	highest wal.LSN          // highest LSN known to exist
	done    map[wal.LSN]need // finished LSNs above mark + 1, with what they need

	cover // guarded by mu
}

// newLSNTracker starts at mark (every LSN ≤ mark has finished) with LSNs up
// to highest known to exist. What records at or below mark need is not
// known: see newCover.
func newLSNTracker(mark, highest wal.LSN) *lsnTracker {
	return newLSNTrackerFrom(mark, highest, mark)
}

// newLSNTrackerFrom is newLSNTracker for a NodeWAL whose records at or
// below compacted are gone (its COMPACTED watermark): what the records in
// (compacted, mark] need is unknown until an index bounds it (cover.go).
func newLSNTrackerFrom(mark, highest, compacted wal.LSN) *lsnTracker {
	return &lsnTracker{mark: mark, highest: max(mark, highest), done: make(map[wal.LSN]need), cover: newCover(compacted, mark)}
}

// add records that lsn exists and has not finished.
func (t *lsnTracker) add(lsn wal.LSN) {
	t.mu.Lock()
	t.highest = max(t.highest, lsn)
	t.mu.Unlock()
}

// finish records that lsn has finished, needing nothing before it may be
// compacted, and returns the mark and whether it moved. Finishing an LSN
// at or below the mark, or twice, changes nothing.
func (t *lsnTracker) finish(lsn wal.LSN) (wal.LSN, bool) { return t.finishNeeding(lsn, need{}) }

// finishNeeding is finish for a record that needs n (cover.go).
func (t *lsnTracker) finishNeeding(lsn wal.LSN, n need) (wal.LSN, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.highest = max(t.highest, lsn)
	switch {
	case lsn <= t.mark:
		return t.mark, false
	case lsn > t.mark+1:
		if _, ok := t.done[lsn]; !ok {
			t.done[lsn] = n
			t.countUnknown(n, +1)
		}
		return t.mark, false
	}
	t.mark = lsn
	for {
		m, ok := t.done[t.mark+1]
		if !ok {
			break
		}
		delete(t.done, t.mark+1)
		t.countUnknown(m, -1)
		n = n.merge(m)
		t.mark++
	}
	t.push(t.mark, n)
	return t.mark, true
}

// Mark returns the watermark.
func (t *lsnTracker) Mark() wal.LSN {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mark
}

// span is how many LSNs lie above the mark: records not finished, or
// finished and waiting for a gap below them. It bounds the set.
func (t *lsnTracker) span() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return uint64(t.highest - t.mark)
}

// finished reports whether lsn has finished: at or below the mark, or
// finished above a gap.
func (t *lsnTracker) finished(lsn wal.LSN) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if lsn <= t.mark {
		return true
	}
	_, ok := t.done[lsn]
	return ok
}
