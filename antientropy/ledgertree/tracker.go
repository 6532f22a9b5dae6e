// Package ledgertree keeps an antientropy.Tree current with a ledger: it
// is the fsm.Observer of one group's Ledger. Each applied batch marks the
// records it changed dirty; at a checkpoint mark (a Raft entry the group's
// leader proposes now and then, fsm.Ledger.Mark) the dirty records are
// digested and the tree's root is recorded with the mark's index. Every
// replica of a group meets the mark at the same index with the same
// state, so equal roots there mean equal states, and a replica whose
// root differs at a shared index has diverged (DESIGN §11).
//
// Digesting only at marks, not after every batch, is what keeps the
// cost of the tree off the apply path: a job changed by many batches
// between two marks is digested once. Between marks the tree lags the
// ledger by the dirty records; Sync brings it up to date on demand.
//
// Concurrency: Applied, Reset and Rebuild are the ledger's apply side and
// never overlap (the Ledger serializes them); Sync may run concurrently
// with them; Checkpoints, Root and Read may be called from any goroutine.
package ledgertree

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/strata-ledger/strata/antientropy"
	"github.com/strata-ledger/strata/fsm"
)

// MaxCheckpoints is how many recent checkpoints a Tracker keeps: enough
// for a peer that lags a few windows behind to find a shared index.
const MaxCheckpoints = 64

// Checkpoint is the tree's root once the batch at Index applied.
type Checkpoint struct {
	Index   uint64
	Root    antientropy.Hash
	Records int
}

// DigestFunc is what a tree holds of record k: its tree id and digest,
// false if the record does not belong in it.
type DigestFunc func(tx fsm.ReadTx, k fsm.StateKey) (id string, digest fsm.Hash, ok bool, err error)

// Tracker is one ledger's tree and checkpoints.
type Tracker struct {
	digest DigestFunc
	keep   func(fsm.StateKey) bool // the kinds of record the tree holds

	syncMu sync.Mutex                // serializes digesting the dirty set
	dirty  map[fsm.StateKey]struct{} // changed since their last digest; under syncMu

	mu   sync.RWMutex // guards tree, cps, err for readers
	tree *antientropy.Tree
	cps  []Checkpoint // oldest first
	err  error        // a failed read; the tree is stale until Reset
}

// New returns a tracker of the whole state (every record, by its
// fsm.StateDigest) over an empty tree of depth; Rebuild fills it.
func New(depth int) (*Tracker, error) {
	return newTracker(depth, func(fsm.StateKey) bool { return true }, wholeState)
}

func wholeState(tx fsm.ReadTx, k fsm.StateKey) (string, fsm.Hash, bool, error) {
	d, ok, err := fsm.StateDigest(tx, k)
	return k.TreeID(), d, ok, err
}

// NewRegionView returns a tracker of what region reported of each job
// assigned to it (fsm.RegionDigest), keyed by job id: the view the
// region's ledger and the global ledger compare.
func NewRegionView(depth int, region string) (*Tracker, error) {
	return newTracker(depth, func(k fsm.StateKey) bool { return k.Kind == fsm.StateJob },
		func(tx fsm.ReadTx, k fsm.StateKey) (string, fsm.Hash, bool, error) {
			s, err := tx.Job(k.ID)
			if err != nil || s == nil {
				return k.ID, fsm.Hash{}, false, err
			}
			d, ok, err := fsm.RegionDigest(s, region)
			return k.ID, d, ok, err
		})
}

func newTracker(depth int, keep func(fsm.StateKey) bool, digest DigestFunc) (*Tracker, error) {
	tree, err := antientropy.New(depth)
	if err != nil {
		return nil, err
	}
	return &Tracker{digest: digest, keep: keep, tree: tree, dirty: map[fsm.StateKey]struct{}{}}, nil
}

// Applied implements fsm.Observer: it marks the keys dirty. A key's id is
// copied: the ledger's decoded strings share one allocation per batch,
// and a kept substring would keep the whole batch alive until the next
// mark (at 1M events loaded, 437 MB of a gate's heap).
func (t *Tracker) Applied(_ uint64, keys []fsm.StateKey, _ func(func(fsm.ReadTx) error) error) {
	t.syncMu.Lock()
	defer t.syncMu.Unlock()
	for _, k := range keys {
		if _, seen := t.dirty[k]; !seen && t.keep(k) {
			k.ID = strings.Clone(k.ID)
			t.dirty[k] = struct{}{}
		}
	}
}

// Mark implements fsm.Observer: it digests what changed and records the
// root at index.
func (t *Tracker) Mark(index uint64, rd func(func(fsm.ReadTx) error) error) {
	t.syncMu.Lock()
	defer t.syncMu.Unlock()
	if err := t.syncLocked(rd); err != nil {
		t.fail(err)
		return
	}
	t.mu.Lock()
	t.cps = append(t.cps, Checkpoint{Index: index, Root: t.tree.Root(), Records: t.tree.Len()})
	if len(t.cps) > MaxCheckpoints {
		t.cps = append(t.cps[:0], t.cps[len(t.cps)-MaxCheckpoints:]...)
	}
	t.mu.Unlock()
}

// Reset implements fsm.Observer: the state was replaced by a snapshot's.
func (t *Tracker) Reset(index uint64, rd func(func(fsm.ReadTx) error) error) {
	if err := t.Rebuild(index, rd); err != nil {
		t.fail(err)
	}
}

// Rebuild builds the tree from every record rd reads, the state applied
// up to index (at start, or after a restore), and forgets checkpoints.
func (t *Tracker) Rebuild(index uint64, rd func(func(fsm.ReadTx) error) error) error {
	t.syncMu.Lock()
	defer t.syncMu.Unlock()
	if err := t.rebuildLocked(rd); err != nil {
		return fmt.Errorf("ledgertree: rebuild at %d: %w", index, err)
	}
	return nil
}

// rebuildLocked is Rebuild with syncMu held.
func (t *Tracker) rebuildLocked(rd func(func(fsm.ReadTx) error) error) error {
	var ids []string
	var digests []antientropy.Hash
	err := rd(func(tx fsm.ReadTx) error {
		return fsm.AllStateKeys(tx, func(k fsm.StateKey) error {
			if !t.keep(k) {
				return nil
			}
			id, d, ok, err := t.digest(tx, k)
			if err != nil || !ok {
				return err
			}
			ids, digests = append(ids, id), append(digests, antientropy.Hash(d))
			return nil
		})
	})
	if err != nil {
		return err
	}
	tree, err := antientropy.Rebuild(t.tree.Depth(), func(yield func(string, [32]byte) bool) {
		for i, id := range ids {
			if !yield(id, digests[i]) {
				return
			}
		}
	})
	if err != nil {
		return err
	}
	clear(t.dirty)
	t.mu.Lock()
	t.tree, t.cps, t.err = tree, nil, nil
	t.mu.Unlock()
	return nil
}

// Sync digests what changed since the last checkpoint, so the tree is as
// current as the state rd reads. A batch applied while it runs is
// digested again at its own turn.
func (t *Tracker) Sync(rd func(func(fsm.ReadTx) error) error) error {
	t.syncMu.Lock()
	defer t.syncMu.Unlock()
	return t.syncLocked(rd)
}

// syncLocked digests the dirty records and applies them to the tree.
func (t *Tracker) syncLocked(rd func(func(fsm.ReadTx) error) error) error {
	if len(t.dirty) == 0 {
		return nil
	}
	type change struct {
		id     string
		digest antientropy.Hash
		gone   bool
	}
	changes := make([]change, 0, len(t.dirty))
	err := rd(func(tx fsm.ReadTx) error {
		for k := range t.dirty {
			id, d, ok, err := t.digest(tx, k)
			if err != nil {
				return err
			}
			changes = append(changes, change{id: id, digest: antientropy.Hash(d), gone: !ok})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ledgertree: digest %d changed records: %w", len(t.dirty), err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range changes {
		if c.gone {
			t.tree.Delete(c.id)
		} else if err := t.tree.Set(c.id, c.digest); err != nil {
			return err
		}
	}
	clear(t.dirty)
	return nil
}

// fail records the first failure: the tree no longer follows the ledger,
// and readers learn it (Err) until a Rebuild.
func (t *Tracker) fail(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil {
		t.err = err
	}
}

// ErrStale says the tree stopped following its ledger (a failed read).
var ErrStale = errors.New("ledgertree: the tree no longer follows the ledger")

// Err is nil while the tree follows the ledger.
func (t *Tracker) Err() error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.err != nil {
		return fmt.Errorf("%w: %w", ErrStale, t.err)
	}
	return nil
}

// Checkpoints returns the recorded checkpoints, oldest first.
func (t *Tracker) Checkpoints() []Checkpoint {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return append([]Checkpoint(nil), t.cps...)
}

// Read calls fn with the tree under a read lock: fn may answer a peer
// (antientropy.Answer) but must not keep the tree.
func (t *Tracker) Read(fn func(*antientropy.Tree) error) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.err != nil {
		return fmt.Errorf("%w: %w", ErrStale, t.err)
	}
	return fn(t.tree)
}
