package ledgertree

import (
	"sync"

	"github.com/strata-ledger/strata/fsm"
)

// Regions is the global ledger's side of the regional ↔ global view: one
// NewRegionView tracker per region, made the first time the region is
// asked for (regions come and go with the jobs assigned to them). It is
// the ledger's fsm.Observer and hands every call on to each tracker.
type Regions struct {
	depth int
	view  func(func(fsm.ReadTx) error) error // the ledger's View, for a new region's rebuild

	makeMu sync.Mutex // one region made at a time
	mu     sync.Mutex // guards trackers
	byName map[string]*Tracker
}

// NewRegions returns an empty set; view reads the ledger (fsm.Ledger.View).
func NewRegions(depth int, view func(func(fsm.ReadTx) error) error) *Regions {
	return &Regions{depth: depth, view: view, byName: map[string]*Tracker{}}
}

// SetView sets the ledger's View once the ledger exists (it is made with
// the set as its observer).
func (r *Regions) SetView(view func(func(fsm.ReadTx) error) error) { r.view = view }

func (r *Regions) all() []*Tracker {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Tracker, 0, len(r.byName))
	for _, t := range r.byName {
		out = append(out, t)
	}
	return out
}

// Applied implements fsm.Observer.
func (r *Regions) Applied(index uint64, keys []fsm.StateKey, rd func(func(fsm.ReadTx) error) error) {
	for _, t := range r.all() {
		t.Applied(index, keys, rd)
	}
}

// Reset implements fsm.Observer.
func (r *Regions) Reset(index uint64, rd func(func(fsm.ReadTx) error) error) {
	for _, t := range r.all() {
		t.Reset(index, rd)
	}
}

// Mark implements fsm.Observer.
func (r *Regions) Mark(index uint64, rd func(func(fsm.ReadTx) error) error) {
	for _, t := range r.all() {
		t.Mark(index, rd)
	}
}

// Region returns region's tracker, building it from the ledger the first
// time. The tracker joins the set before it reads the ledger, and its
// rebuild holds its lock, so a batch applied meanwhile is marked dirty
// after the rebuild and digested at the next Sync: nothing is missed.
func (r *Regions) Region(region string) (*Tracker, error) {
	r.mu.Lock()
	t := r.byName[region]
	r.mu.Unlock()
	if t != nil {
		return t, nil
	}
	r.makeMu.Lock()
	defer r.makeMu.Unlock()
	r.mu.Lock()
	if t = r.byName[region]; t != nil {
		r.mu.Unlock()
		return t, nil
	}
	t, err := NewRegionView(r.depth, region)
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	t.syncMu.Lock() // Applied calls wait until the rebuild is done
	r.byName[region] = t
	r.mu.Unlock()
	err = t.rebuildLocked(r.view)
	t.syncMu.Unlock()
	if err != nil {
		r.mu.Lock()
		delete(r.byName, region)
		r.mu.Unlock()
		return nil, err
	}
	return t, nil
}
