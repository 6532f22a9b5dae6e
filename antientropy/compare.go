package antientropy

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MaxItemsPerLeaf bounds the items a comparison accepts from the peer for
// one leaf, over all its pages, and so the memory and rounds a peer can
// make it spend. At DefaultDepth a leaf holds a handful of jobs; a tree
// whose leaves hold more than this is too shallow for its ledger.
const MaxItemsPerLeaf = 1 << 20

// Errors of a comparison.
var (
	ErrDepthMismatch = errors.New("antientropy: trees of different depths")
	ErrBadPage       = errors.New("antientropy: page does not answer the request")
)

// Answer computes the Page that answers r from t: the hash of every node
// asked, and the items of the leaves asked, in order, until
// MaxItemsPerPage items are in the page (the last leaf may be cut, with
// More set; leaves after it are not answered). It only reads t.
func Answer(t *Tree, r Request) (Page, error) {
	if r.Depth != t.depth {
		return Page{}, fmt.Errorf("%w: asked %d, have %d", ErrDepthMismatch, r.Depth, t.depth)
	}
	if len(r.Nodes) > MaxNodesPerPage || len(r.Leaves) > MaxLeavesPerRequest {
		return Page{}, fmt.Errorf("%w: %d nodes, %d leaves", ErrMalformed, len(r.Nodes), len(r.Leaves))
	}
	p := Page{Depth: t.depth, Hashes: make([]Hash, len(r.Nodes))}
	for i, n := range r.Nodes {
		h, err := t.Hash(n)
		if err != nil {
			return Page{}, err
		}
		p.Hashes[i] = h
	}
	budget := MaxItemsPerPage
	for _, l := range r.Leaves {
		if l.Bucket>>t.depth != 0 {
			return Page{}, fmt.Errorf("%w: bucket %d", ErrInvalidNode, l.Bucket)
		}
		es := t.entries(1<<t.depth + l.Bucket)
		if l.After != "" {
			i, found := search(es, l.Bucket, l.After)
			if found {
				i++
			}
			es = es[i:]
		}
		if len(es) > 0 && budget == 0 {
			break
		}
		li := LeafItems{Bucket: l.Bucket}
		if len(es) > budget {
			es, li.More = es[:budget], true
		}
		budget -= len(es)
		li.Items = appendItems(make([]Item, 0, len(es)), es)
		p.Leaves = append(p.Leaves, li)
	}
	return p, nil
}

// Compare is one comparison of the local tree with a peer's, as a state
// machine that does no I/O: Start returns the first Request; the caller
// sends it, has the peer Answer it, and passes the Page to Step, which
// returns the next Request until done. Differences then lists the job ids
// whose items differ (present on one side only, or with different
// digests).
//
// Descent: the first Request asks for the root. For a node whose hashes
// differ, the next Request asks only for the peer's left child; the right
// child's peer hash is the parent's minus the left's (hashes are sums).
// A differing node the peer holds nothing under (hash zero) is not
// descended: every local job under it differs. A differing leaf's peer
// items are asked for and compared with the local ones by id.
//
// One Compare is used by one goroutine. Its local tree is read by Step;
// the caller must not change it during a Step. If either tree changes
// between Steps, the result is approximate (a change may be missed or a
// job reported that no longer differs); the next comparison settles it.
type Compare struct {
	local    *Tree
	peer     map[uint32]pair // hashes of differing inner nodes whose left child was asked
	nodes    []uint32        // nodes to ask
	leaves   []LeafCursor    // leaves to ask
	partial  map[uint32][]Item
	inflight Request
	diffs    map[string]struct{}
	rounds   int
	started  bool
	done     bool
	limit    int  // 0: none (SetLimit)
	cut      bool // a differing node was left undescended (Truncated)
}

// NewCompare starts a comparison of local with a peer's tree.
func NewCompare(local *Tree) *Compare {
	return &Compare{local: local, peer: map[uint32]pair{}, partial: map[uint32][]Item{}, diffs: map[string]struct{}{}}
}

// SetLimit bounds the differing subtrees the comparison descends into,
// for a caller that acts on at most about n differences at a time: once n
// nodes and leaves wait to be asked or differences are found, a further
// differing node is left undescended and Truncated reports true. Each
// level then asks for at most about n nodes, so a comparison ends in
// about the tree's depth of rounds, with bytes that grow with n, however
// many jobs differ. Differences then lists at least min(n, all) of them
// (every subtree descended holds one) and never one that does not differ,
// the trees staying put; more differences than that take several
// comparisons, each finding others once the previous ones are repaired.
// n <= 0: no limit. Call it before Start.
func (c *Compare) SetLimit(n int) { c.limit = n }

// Truncated reports whether the limit left differing nodes undescended:
// Differences is then a part of what differs.
func (c *Compare) Truncated() bool { return c.cut }

// full reports whether the limit forbids descending into one more node.
func (c *Compare) full() bool {
	if c.limit > 0 && len(c.nodes)+len(c.leaves)+len(c.diffs) >= c.limit {
		c.cut = true
		return true
	}
	return false
}

// Start returns the first Request: the root's hash.
func (c *Compare) Start() Request {
	if !c.started {
		c.started = true
		c.inflight = Request{Depth: c.local.depth, Nodes: []uint32{1}}
	}
	return c.inflight
}

// Step takes the peer's Page answering the last Request and returns the
// next Request, or done when the comparison is over. A Page that does not
// answer the Request is an error (ErrBadPage, ErrDepthMismatch); the
// comparison cannot go on after it.
func (c *Compare) Step(p Page) (next Request, done bool, err error) {
	if !c.started || c.done {
		return Request{}, c.done, fmt.Errorf("%w: no request in flight", ErrBadPage)
	}
	if err := c.check(p); err != nil {
		c.done = true
		return Request{}, true, err
	}
	c.rounds++
	for i, n := range c.inflight.Nodes {
		h := p.Hashes[i].sum()
		if n == 1 {
			c.visit(1, h, c.local.node(1))
			continue
		}
		parent := c.peer[n/2]
		delete(c.peer, n/2)
		// The local right child is derived like the peer's: below the
		// dense levels a node's sum costs a scan of its chunk.
		left := c.local.node(n)
		c.visit(n, h, left)
		c.visit(n+1, parent.peer.sub(h), parent.local.sub(left))
	}
	for _, l := range p.Leaves {
		if len(c.partial[l.Bucket])+len(l.Items) > MaxItemsPerLeaf {
			c.done = true
			return Request{}, true, fmt.Errorf("%w: more than %d items in leaf %d", ErrBadPage, MaxItemsPerLeaf, l.Bucket)
		}
		c.partial[l.Bucket] = append(c.partial[l.Bucket], l.Items...)
		if l.More {
			c.leaves = append(c.leaves, LeafCursor{Bucket: l.Bucket, After: l.Items[len(l.Items)-1].ID})
			continue
		}
		c.compareLeaf(l.Bucket, c.partial[l.Bucket])
		delete(c.partial, l.Bucket)
	}
	c.leaves = append(c.leaves, c.inflight.Leaves[len(p.Leaves):]...)
	return c.nextRequest()
}

// check verifies that p answers the request in flight.
func (c *Compare) check(p Page) error {
	q := &c.inflight
	switch {
	case p.Depth != q.Depth:
		return fmt.Errorf("%w: page of depth %d, want %d", ErrDepthMismatch, p.Depth, q.Depth)
	case len(p.Hashes) != len(q.Nodes):
		return fmt.Errorf("%w: %d hashes for %d nodes", ErrBadPage, len(p.Hashes), len(q.Nodes))
	case len(p.Leaves) > len(q.Leaves), len(q.Leaves) > 0 && len(p.Leaves) == 0:
		return fmt.Errorf("%w: %d leaves for %d asked", ErrBadPage, len(p.Leaves), len(q.Leaves))
	}
	for i, l := range p.Leaves {
		cur := q.Leaves[i]
		if l.Bucket != cur.Bucket || (l.More && len(l.Items) == 0) {
			return fmt.Errorf("%w: leaf %d answers bucket %d", ErrBadPage, l.Bucket, cur.Bucket)
		}
		prev := cur.After
		for _, it := range l.Items {
			if it.ID <= prev || checkID(it.ID) != nil || BucketOf(it.ID, q.Depth) != l.Bucket {
				return fmt.Errorf("%w: item %q in bucket %d after %q", ErrBadPage, it.ID, l.Bucket, prev)
			}
			prev = it.ID
		}
	}
	return nil
}

// pair is a node's hash on both sides.
type pair struct{ peer, local sum }

// visit compares node n, whose local sum is local, with the peer's hash h
// and schedules its descent.
func (c *Compare) visit(n uint32, h, local sum) {
	if local == h || c.full() {
		return
	}
	switch {
	case level(n) == c.local.depth:
		c.leaves = append(c.leaves, LeafCursor{Bucket: n - 1<<c.local.depth})
	case h.isZero():
		t := c.local
		lo, hi := t.bucketRange(n)
		for _, es := range t.chunks[t.chunkOf(lo) : t.chunkOf(hi-1)+1] {
			for _, e := range es {
				if lo <= e.b && e.b < hi {
					c.diffs[e.id] = struct{}{}
				}
			}
		}
	default:
		c.peer[n] = pair{peer: h, local: local}
		c.nodes = append(c.nodes, 2*n)
	}
}

// compareLeaf records the ids on which the peer's items of bucket b and
// the local ones differ (both lists in id order).
func (c *Compare) compareLeaf(b uint32, peer []Item) {
	local := c.local.entries(1<<c.local.depth + b)
	i, j := 0, 0
	for i < len(local) || j < len(peer) {
		switch {
		case j == len(peer) || (i < len(local) && local[i].id < peer[j].ID):
			c.diffs[local[i].id] = struct{}{}
			i++
		case i == len(local) || peer[j].ID < local[i].id:
			c.diffs[peer[j].ID] = struct{}{}
			j++
		default:
			if local[i].h != peer[j].Hash.sum() {
				c.diffs[local[i].id] = struct{}{}
			}
			i++
			j++
		}
	}
}

// nextRequest takes the next batch of nodes and leaves to ask.
func (c *Compare) nextRequest() (Request, bool, error) {
	if len(c.nodes) == 0 && len(c.leaves) == 0 {
		c.done = true
		c.inflight = Request{}
		return Request{}, true, nil
	}
	q := Request{Depth: c.local.depth}
	k := min(len(c.nodes), MaxNodesPerPage)
	q.Nodes = slices.Clone(c.nodes[:k])
	c.nodes = c.nodes[k:]
	slices.Sort(q.Nodes)
	k = min(len(c.leaves), MaxLeavesPerRequest)
	q.Leaves = slices.Clone(c.leaves[:k])
	c.leaves = c.leaves[k:]
	slices.SortFunc(q.Leaves, func(x, y LeafCursor) int { return cmp.Compare(x.Bucket, y.Bucket) })
	c.inflight = q
	return q, false, nil
}

// Rounds returns the number of Pages stepped through so far.
func (c *Compare) Rounds() int { return c.rounds }

// Differences returns the ids found to differ so far, sorted; complete
// once Step has returned done without an error.
func (c *Compare) Differences() []string {
	out := make([]string, 0, len(c.diffs))
	for id := range c.diffs {
		out = append(out, id)
	}
	slices.SortFunc(out, strings.Compare)
	return out
}
