package lifecycle

import "container/heap"

// dueSet holds at most one due time (ms) per job: a min-heap with each
// job's place in it, so a reconciler revisits a job when its deadline
// comes (a time-out, a redelivery, a progress report) instead of every
// pass, and moving or dropping a job's time costs O(log n). Pure; not
// safe for concurrent use (one reconciler owns it).
type dueSet struct {
	h dueHeap
}

type dueItem struct {
	id string
	at int64
}

// dueHeap implements heap.Interface and keeps pos, each id's index.
type dueHeap struct {
	items []dueItem
	pos   map[string]int
}

func newDueSet() *dueSet { return &dueSet{h: dueHeap{pos: map[string]int{}}} }

func (h *dueHeap) Len() int { return len(h.items) }

// Less orders by time, then id, so equal times come out in a fixed order.
func (h *dueHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	return a.at < b.at || a.at == b.at && a.id < b.id
}

func (h *dueHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.pos[h.items[i].id], h.pos[h.items[j].id] = i, j
}

func (h *dueHeap) Push(x any) {
	it := x.(dueItem)
	h.pos[it.id] = len(h.items)
	h.items = append(h.items, it)
}

func (h *dueHeap) Pop() any {
	last := len(h.items) - 1
	it := h.items[last]
	h.items[last] = dueItem{}
	h.items = h.items[:last]
	delete(h.pos, it.id)
	return it
}

// set makes at the job's due time (replacing an earlier or later one).
func (d *dueSet) set(id string, at int64) {
	if i, ok := d.h.pos[id]; ok {
		d.h.items[i].at = at
		heap.Fix(&d.h, i)
		return
	}
	heap.Push(&d.h, dueItem{id: id, at: at})
}

// remove drops the job's due time, if it has one.
func (d *dueSet) remove(id string) {
	if i, ok := d.h.pos[id]; ok {
		heap.Remove(&d.h, i)
	}
}

// get returns the job's due time.
func (d *dueSet) get(id string) (int64, bool) {
	i, ok := d.h.pos[id]
	if !ok {
		return 0, false
	}
	return d.h.items[i].at, true
}

// popDue removes and returns the jobs due at or before now, earliest
// first.
func (d *dueSet) popDue(now int64) []string {
	var out []string
	for len(d.h.items) > 0 && d.h.items[0].at <= now {
		out = append(out, heap.Pop(&d.h).(dueItem).id)
	}
	return out
}

// len is the number of jobs with a due time.
func (d *dueSet) len() int { return len(d.h.items) }

// reset drops every due time.
func (d *dueSet) reset() { d.h = dueHeap{pos: map[string]int{}} }
