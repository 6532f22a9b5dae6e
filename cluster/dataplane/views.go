package dataplane

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/fsm"
)

// What the progress receiver asks of the regional ledger, once per frame
// (Keys) and once per update (Leases), answered from small caches in
// front of the ledger: the receiver's fold goroutine must not wait on a
// read transaction per update. A cached answer may be dataPlaneCacheTTL
// old; that is safe because the flush checks every update against the
// ledger again before it proposes anything (httpapi.DataPlaneEvents), and
// the ledger fences what it applies. The caches only filter early and
// count forgeries.

// Data-plane cache limits.
const (
	// dataPlaneCacheTTL is how long a cached key or lease answer is used.
	dataPlaneCacheTTL = time.Second
	// dataPlaneRecheck: an answer that says no is read again after this
	// long when the frame claims something newer (another key id, a
	// higher fence), so a worker that just registered or was just leased
	// a workflow is not refused for a whole TTL, while a forger sending
	// random key ids cannot force a ledger read per frame.
	dataPlaneRecheck = 100 * time.Millisecond
	// dataPlaneCacheEntries bounds each cache; a full cache is cleared.
	dataPlaneCacheEntries = 1 << 16
)

// coarseClock is the caches' clock. They read it on the fold goroutine
// once per frame and once per update, where time.Now took 17 % of a
// manager's CPU at 2 M updates/s (the bench-progress profile), while
// their TTLs need only milliseconds: run stores the time every
// coarseTick, and now is an atomic load.
type coarseClock struct{ ns atomic.Int64 }

// coarseTick is the coarse clock's resolution.
const coarseTick = 5 * time.Millisecond

func newCoarseClock() *coarseClock {
	c := &coarseClock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

// run keeps the clock current until ctx ends.
func (c *coarseClock) run(ctx context.Context) {
	t := time.NewTicker(coarseTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			c.ns.Store(now.UnixNano())
		}
	}
}

func (c *coarseClock) now() time.Time { return time.Unix(0, c.ns.Load()) }

// Viewer reads one consistent state of the node's ledger.
type Viewer interface {
	View(fn func(fsm.ReadTx) error) error
}

// ttlCache is a bounded map of answers with their read time.
type ttlCache[V any] struct {
	mu sync.Mutex
	m  map[string]cached[V]
}

type cached[V any] struct {
	v  V
	at time.Time
}

// get returns the cached answer for k, reading it anew with read when it
// is missing, older than dataPlaneCacheTTL, or older than dataPlaneRecheck
// and stale(v) says the caller wants something newer.
func (c *ttlCache[V]) get(k string, now time.Time, stale func(V) bool, read func() (V, bool)) V {
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	age := now.Sub(e.at)
	if ok && age < dataPlaneCacheTTL && (age < dataPlaneRecheck || !stale(e.v)) {
		return e.v
	}
	v, good := read()
	if !good { // a failed read is not cached
		return v
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= dataPlaneCacheEntries {
		c.m = make(map[string]cached[V])
	}
	c.m[k] = cached[V]{v: v, at: now}
	c.mu.Unlock()
	return v
}

// regKeys is progress.Keys: the data-plane key of each active worker's
// current registration, derived from the cluster token and the worker's
// join HLC (auth.DataPlaneKey); nothing secret is stored anywhere.
type regKeys struct {
	token string
	store Viewer
	now   func() time.Time
	cache ttlCache[regKey]
}

// regKey is a worker's current registration key; ok is false for a
// worker that is not active.
type regKey struct {
	ok  bool
	id  uint32
	key []byte
}

// registrationKey derives the key of worker's registration that joined
// at the WorkerState's HLC.
func registrationKey(token string, ws *fsm.WorkerState) regKey {
	id, key := auth.DataPlaneKey(token, ws.ID, ws.HLC.AppendBinary(nil))
	return regKey{ok: true, id: id, key: key}
}

func (k *regKeys) Key(worker string, keyID uint32) ([]byte, bool) {
	rk := k.cache.get(worker, k.now(), func(rk regKey) bool { return rk.id != keyID }, func() (regKey, bool) {
		var rk regKey
		err := k.store.View(func(tx fsm.ReadTx) error {
			ws, err := tx.Worker(worker)
			if err == nil && ws != nil && ws.Active {
				rk = registrationKey(k.token, ws)
			}
			return err
		})
		return rk, err == nil
	})
	if !rk.ok || rk.id != keyID {
		return nil, false
	}
	return rk.key, true
}

// leaseTable is progress.Leases: who holds each workflow's lease, and at
// which fence, in the regional ledger.
type leaseTable struct {
	store Viewer
	now   func() time.Time
	cache ttlCache[leaseHolder]
}

// leaseHolder is a workflow's current lease; worker is empty when the
// workflow is unknown or not LEASED.
type leaseHolder struct {
	worker string
	fence  uint64
}

// holderOf is wf's lease holder (zero when wf is nil or not LEASED).
func holderOf(wf *fsm.WorkflowState) leaseHolder {
	if wf == nil || wf.Status != fsm.WorkflowStatusLeased {
		return leaseHolder{}
	}
	return leaseHolder{worker: wf.Worker, fence: wf.LeaseFence}
}

func (l *leaseTable) Holds(worker, workflow string, fence uint64) bool {
	h := l.cache.get(workflow, l.now(), func(h leaseHolder) bool { return fence > h.fence }, func() (leaseHolder, bool) {
		var h leaseHolder
		err := l.store.View(func(tx fsm.ReadTx) error {
			wf, err := tx.Workflow(workflow)
			h = holderOf(wf)
			return err
		})
		return h, err == nil
	})
	return h.worker != "" && h.worker == worker && h.fence == fence
}
