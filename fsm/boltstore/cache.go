package boltstore

import "container/list"

// jobCache keeps the entries of recently written jobs between Updates, so
// a job touched by every batch is neither read nor decoded every time. It
// holds only states as committed: Update installs its entries after a
// commit and forgets them after a rollback (it changes them in place).
// Only Update uses it (Views read the file), under Store.writeMu.
type jobCache struct {
	max int
	ll  *list.List // of *jobEntry, most recent first
	m   map[string]*list.Element
}

func newJobCache(max int) *jobCache {
	return &jobCache{max: max, ll: list.New(), m: make(map[string]*list.Element)}
}

func (c *jobCache) get(id string) *jobEntry {
	if c == nil {
		return nil
	}
	if el := c.m[id]; el != nil {
		c.ll.MoveToFront(el)
		return el.Value.(*jobEntry)
	}
	return nil
}

func (c *jobCache) put(e *jobEntry) {
	if c.max == 0 {
		return
	}
	if el := c.m[e.id]; el != nil {
		el.Value = e
		c.ll.MoveToFront(el)
		return
	}
	c.m[e.id] = c.ll.PushFront(e)
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.m, last.Value.(*jobEntry).id)
	}
}

func (c *jobCache) forget(id string) {
	if el := c.m[id]; el != nil {
		c.ll.Remove(el)
		delete(c.m, id)
	}
}

func (c *jobCache) clear() {
	c.ll.Init()
	clear(c.m)
}
