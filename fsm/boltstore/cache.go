package boltstore

import (
	"container/list"

	"github.com/strata-ledger/strata/fsm"
)

// lru keeps up to max values by key, dropping the least recently used.
// Update's caches are lrus: they hold only states as committed (or, under
// group commit, as applied to the open transaction, and all dropped if
// it is lost): Update installs what a transaction wrote after it, and
// forgets it after a rollback. Only Update uses them (Views read the
// file), under Store.writeMu.
type lru[V any] struct {
	max int
	ll  *list.List // of *lruItem[V], most recent first
	m   map[string]*list.Element
}

type lruItem[V any] struct {
	key string
	v   V
}

func newLRU[V any](max int) *lru[V] {
	return &lru[V]{max: max, ll: list.New(), m: make(map[string]*list.Element)}
}

func (c *lru[V]) get(key string) (V, bool) {
	if el := c.m[key]; el != nil {
		c.ll.MoveToFront(el)
		return el.Value.(*lruItem[V]).v, true
	}
	var zero V
	return zero, false
}

func (c *lru[V]) put(key string, v V) {
	if c.max == 0 {
		return
	}
	if el := c.m[key]; el != nil {
		el.Value.(*lruItem[V]).v = v
		c.ll.MoveToFront(el)
		return
	}
	if c.ll.Len() >= c.max { // full: the least recent element takes the new value
		last := c.ll.Back()
		it := last.Value.(*lruItem[V])
		delete(c.m, it.key)
		it.key, it.v = key, v
		c.ll.MoveToFront(last)
		c.m[key] = last
		return
	}
	c.m[key] = c.ll.PushFront(&lruItem[V]{key: key, v: v})
}

func (c *lru[V]) forget(key string) {
	if el := c.m[key]; el != nil {
		c.ll.Remove(el)
		delete(c.m, key)
	}
}

func (c *lru[V]) clear() {
	c.ll.Init()
	clear(c.m)
}

// jobCache keeps the entries of recently written jobs between Updates, so
// a job touched by every batch is neither read nor decoded every time.
// Entries are changed in place by the transaction that loads them, so a
// rollback forgets every entry it touched.
type jobCache = lru[*jobEntry]

// workflowCache keeps the decoded records of recently written LEASED
// workflows (issue 19, "hot state in memory"): the progress reports and
// the end of a workflow read it without a B-tree search and a decode. A record is the value
// the Ledger put (the store owns it; reads share it read-only, as
// memstore's do); a transaction's puts are installed after it and
// forgotten after a rollback.
type workflowCache = lru[*fsm.WorkflowState]
