package antientropy

import (
	"errors"
	"fmt"
	"iter"
	"math/bits"
	"slices"
	"strings"
)

// Shape and limits. The depth is agreed by both sides of a comparison
// (every Request and Page carries it); DefaultDepth never changes without
// a new wire version.
const (
	// DefaultDepth: 2^21 = 2,097,152 leaf buckets, 4.8 jobs per leaf at
	// 10M jobs (DESIGN §11: "a handful").
	DefaultDepth = 21
	// MinDepth and MaxDepth bound a tree's depth; node numbers (heap
	// order, root 1) then fit a uint32.
	MinDepth = 1
	MaxDepth = 24
	// MaxIDBytes bounds a job id (fsm's MaxJobIDBytes is 96).
	MaxIDBytes = 255
)

// Errors callers branch on.
var (
	ErrInvalidID    = errors.New("antientropy: invalid job id")
	ErrInvalidDepth = errors.New("antientropy: invalid depth")
	ErrDuplicateID  = errors.New("antientropy: duplicate job id")
	ErrInvalidNode  = errors.New("antientropy: node outside the tree")
)

// Tree is the Merkle tree of one ledger (see the package doc): a
// complete binary tree of the given depth whose leaves are buckets of
// (job id, item hash) entries. Node n (heap order: root 1, children 2n
// and 2n+1) at level L < depth stores the sum of the item hashes below
// it; a leaf's hash is computed from its bucket when asked.
//
// A Tree is not safe for concurrent mutation: Set, Delete need exclusive
// access; Root, Hash, Items, Len and Answer only read and may run
// concurrently with each other.
type Tree struct {
	depth   int
	inner   []sum     // inner[n] for 1 ≤ n < 2^depth; inner[0] unused
	buckets [][]entry // buckets[b], sorted by id
	n       int       // jobs
}

type entry struct {
	id string
	h  sum
}

// New returns an empty tree of the given depth (DefaultDepth in
// production; tests use small ones).
func New(depth int) (*Tree, error) {
	if depth < MinDepth || depth > MaxDepth {
		return nil, fmt.Errorf("%w: %d, want %d..%d", ErrInvalidDepth, depth, MinDepth, MaxDepth)
	}
	return &Tree{depth: depth, inner: make([]sum, 1<<depth), buckets: make([][]entry, 1<<depth)}, nil
}

// Depth returns the number of levels below the root.
func (t *Tree) Depth() int { return t.depth }

// Len returns the number of jobs in the tree.
func (t *Tree) Len() int { return t.n }

func checkID(id string) error {
	if len(id) == 0 || len(id) > MaxIDBytes {
		return fmt.Errorf("%w: %d bytes, want 1..%d", ErrInvalidID, len(id), MaxIDBytes)
	}
	return nil
}

func search(es []entry, id string) (int, bool) {
	return slices.BinarySearchFunc(es, id, func(e entry, id string) int { return strings.Compare(e.id, id) })
}

// Set records the state digest of a job (fsm's JobState.Digest), adding
// the job or replacing its previous digest. It costs one SHA-256 and
// depth 256-bit additions.
func (t *Tree) Set(id string, digest [32]byte) error {
	if err := checkID(id); err != nil {
		return err
	}
	h := ItemHash(id, digest).sum()
	b := BucketOf(id, t.depth)
	es := t.buckets[b]
	i, found := search(es, id)
	var delta sum
	if found {
		if es[i].h == h {
			return nil
		}
		delta = h.sub(es[i].h)
		es[i].h = h
	} else {
		t.buckets[b] = slices.Insert(es, i, entry{id: id, h: h})
		t.n++
		delta = h
	}
	t.addPath(b, delta)
	return nil
}

// Delete removes a job and reports whether it was there.
func (t *Tree) Delete(id string) bool {
	if checkID(id) != nil {
		return false
	}
	b := BucketOf(id, t.depth)
	es := t.buckets[b]
	i, found := search(es, id)
	if !found {
		return false
	}
	var zero sum
	delta := zero.sub(es[i].h)
	t.buckets[b] = slices.Delete(es, i, i+1)
	t.n--
	t.addPath(b, delta)
	return true
}

// addPath adds delta to every inner node above bucket b.
func (t *Tree) addPath(b uint32, delta sum) {
	for n := (uint32(1)<<t.depth + b) >> 1; n > 0; n >>= 1 {
		t.inner[n] = t.inner[n].add(delta)
	}
}

// Root returns the root hash: the sum of every job's item hash.
func (t *Tree) Root() Hash { return t.inner[1].hash() }

// Hash returns the hash of node n (heap order, 1 ≤ n < 2^(depth+1)).
func (t *Tree) Hash(n uint32) (Hash, error) {
	if n == 0 || n>>(t.depth+1) != 0 {
		return Hash{}, fmt.Errorf("%w: node %d, depth %d", ErrInvalidNode, n, t.depth)
	}
	return t.node(n).hash(), nil
}

func (t *Tree) node(n uint32) sum {
	if n < 1<<t.depth {
		return t.inner[n]
	}
	return leafSum(t.buckets[n-1<<t.depth])
}

func leafSum(es []entry) (s sum) {
	for _, e := range es {
		s = s.add(e.h)
	}
	return s
}

// level returns the level of node n (root 0).
func level(n uint32) int { return bits.Len32(n) - 1 }

// bucketRange returns the buckets [lo, hi) below node n.
func (t *Tree) bucketRange(n uint32) (lo, hi uint32) {
	shift := t.depth - level(n)
	return n<<shift - 1<<t.depth, (n+1)<<shift - 1<<t.depth
}

// Item is one job of a leaf: its id and item hash.
type Item struct {
	ID   string
	Hash Hash
}

// Items returns the jobs of bucket b (b < 2^depth) in id order.
func (t *Tree) Items(b uint32) []Item {
	if b>>t.depth != 0 {
		return nil
	}
	return appendItems(nil, t.buckets[b])
}

func appendItems(dst []Item, es []entry) []Item {
	for _, e := range es {
		dst = append(dst, Item{ID: e.id, Hash: e.h.hash()})
	}
	return dst
}

// Clone returns a deep copy of t.
func (t *Tree) Clone() *Tree {
	c := &Tree{depth: t.depth, inner: slices.Clone(t.inner), buckets: make([][]entry, len(t.buckets)), n: t.n}
	for b, es := range t.buckets {
		if len(es) > 0 {
			c.buckets[b] = slices.Clone(es)
		}
	}
	return c
}

// Rebuild builds a tree from every job of a ledger (id and state digest),
// as at start from the store. It is faster than Set per job: entries are
// placed by a counting sort and each inner node is summed once.
func Rebuild(depth int, jobs iter.Seq2[string, [32]byte]) (*Tree, error) {
	t, err := New(depth)
	if err != nil {
		return nil, err
	}
	var all []entry
	var bs []uint32
	for id, digest := range jobs {
		if err := checkID(id); err != nil {
			return nil, err
		}
		all = append(all, entry{id: id, h: ItemHash(id, digest).sum()})
		bs = append(bs, BucketOf(id, depth))
	}
	// Counting sort by bucket into one backing array; each bucket is a
	// full slice of it, so a later insert copies that bucket out.
	start := make([]int, len(t.buckets)+1)
	for _, b := range bs {
		start[b+1]++
	}
	for b := range t.buckets {
		start[b+1] += start[b]
	}
	sorted := make([]entry, len(all))
	next := slices.Clone(start[:len(t.buckets)])
	for i, b := range bs {
		sorted[next[b]] = all[i]
		next[b]++
	}
	for b := range t.buckets {
		es := sorted[start[b]:start[b+1]:start[b+1]]
		if len(es) == 0 {
			continue
		}
		slices.SortFunc(es, func(x, y entry) int { return strings.Compare(x.id, y.id) })
		for i := 1; i < len(es); i++ {
			if es[i].id == es[i-1].id {
				return nil, fmt.Errorf("%w: %q", ErrDuplicateID, es[i].id)
			}
		}
		t.buckets[b] = es
	}
	t.n = len(all)
	t.sumAll()
	return t, nil
}

// sumAll computes every inner node from the buckets, bottom up.
func (t *Tree) sumAll() {
	first := uint32(1) << (t.depth - 1) // first node of the level above the leaves
	for n := first; n < 1<<t.depth; n++ {
		t.inner[n] = leafSum(t.buckets[2*n-1<<t.depth]).add(leafSum(t.buckets[2*n+1-1<<t.depth]))
	}
	for n := first - 1; n > 0; n-- {
		t.inner[n] = t.inner[2*n].add(t.inner[2*n+1])
	}
}
