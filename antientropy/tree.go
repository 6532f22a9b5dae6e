package antientropy

import (
	"cmp"
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

// denseLevels is how many levels, from the root down, keep their sums in
// memory: a tree of depth D stores the 2^min(D, denseLevels) − 1 nodes of
// levels 0..min(D, denseLevels)−1 (2 MiB at DefaultDepth) and one chunk
// of entries per node of level min(D, denseLevels) (2^16 chunk headers,
// 1.5 MiB). A node further down (at DefaultDepth, levels 16..21, 32
// buckets or fewer) is summed from its chunk when asked. It is not part
// of the wire contract: both sides may choose differently.
const denseLevels = 16

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
// and 2n+1) at level L < min(depth, denseLevels) stores the sum of the
// item hashes below it; a node further down is summed from the entries
// of its chunk when asked.
//
// A Tree is not safe for concurrent mutation: Set, Delete need exclusive
// access; Root, Hash, Items, Len and Answer only read and may run
// concurrently with each other.
type Tree struct {
	depth int
	top   int // min(depth, denseLevels): the level of the chunk nodes
	// inner[n] for 1 ≤ n < 2^top is the sum of node n; inner[0] unused.
	inner []sum
	// chunks[k] holds the entries of the buckets below node 2^top + k,
	// sorted by (bucket, id): those of buckets k<<(depth−top) up to
	// (k+1)<<(depth−top).
	chunks [][]entry
	n      int // jobs
}

// entry is one job: 56 bytes, plus its id's bytes.
type entry struct {
	id string
	h  sum
	b  uint32 // bucket
}

// New returns an empty tree of the given depth (DefaultDepth in
// production; tests use small ones).
func New(depth int) (*Tree, error) { return newTree(depth, denseLevels) }

// newTree returns an empty tree that stores the sums of its top dense
// levels (tests use fewer than denseLevels to exercise the chunks at
// small depths).
func newTree(depth, dense int) (*Tree, error) {
	if depth < MinDepth || depth > MaxDepth {
		return nil, fmt.Errorf("%w: %d, want %d..%d", ErrInvalidDepth, depth, MinDepth, MaxDepth)
	}
	top := max(1, min(depth, dense))
	return &Tree{depth: depth, top: top, inner: make([]sum, 1<<top), chunks: make([][]entry, 1<<top)}, nil
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

// chunkOf returns the chunk of bucket b.
func (t *Tree) chunkOf(b uint32) uint32 { return b >> (t.depth - t.top) }

// search finds the entry (b, id) in es, sorted by (bucket, id).
func search(es []entry, b uint32, id string) (int, bool) {
	i, j := 0, len(es)
	for i < j {
		h := int(uint(i+j) >> 1)
		if e := &es[h]; e.b < b || (e.b == b && e.id < id) {
			i = h + 1
		} else {
			j = h
		}
	}
	return i, i < len(es) && es[i].b == b && es[i].id == id
}

// firstOf returns the index of the first entry of es in bucket b or after.
func firstOf(es []entry, b uint32) int {
	i, j := 0, len(es)
	for i < j {
		h := int(uint(i+j) >> 1)
		if es[h].b < b {
			i = h + 1
		} else {
			j = h
		}
	}
	return i
}

// insert inserts e at es[i]. A full chunk grows by a quarter (to its
// allocation's size class), not double: chunks are many and small, so
// the slack is what a job costs beyond its entry.
func insert(es []entry, i int, e entry) []entry {
	if len(es) < cap(es) {
		es = es[:len(es)+1]
		copy(es[i+1:], es[i:])
		es[i] = e
		return es
	}
	grown := slices.Grow([]entry(nil), len(es)+len(es)/4+1)
	grown = append(grown, es[:i]...)
	grown = append(grown, e)
	return append(grown, es[i:]...)
}

// remove deletes es[i]; a chunk left at a quarter of its capacity is
// copied into a smaller one, an empty one released.
func remove(es []entry, i int) []entry {
	es = slices.Delete(es, i, i+1) // clears the vacated entry
	switch {
	case len(es) == 0:
		return nil
	case cap(es) >= 16 && len(es) <= cap(es)/4:
		return append(slices.Grow([]entry(nil), len(es)+len(es)/4+1), es...)
	}
	return es
}

// Set records the state digest of a job (fsm's JobState.Digest), adding
// the job or replacing its previous digest. It costs one SHA-256, a
// binary search of the job's chunk and min(depth, denseLevels) 256-bit
// additions.
func (t *Tree) Set(id string, digest [32]byte) error {
	if err := checkID(id); err != nil {
		return err
	}
	h := ItemHash(id, digest).sum()
	b := BucketOf(id, t.depth)
	k := t.chunkOf(b)
	es := t.chunks[k]
	i, found := search(es, b, id)
	var delta sum
	if found {
		if es[i].h == h {
			return nil
		}
		delta = h.sub(es[i].h)
		es[i].h = h
	} else {
		// The tree keeps its own copy of the id: a caller's string may
		// share its memory with much more (a decoded batch).
		t.chunks[k] = insert(es, i, entry{id: strings.Clone(id), h: h, b: b})
		t.n++
		delta = h
	}
	t.addPath(k, delta)
	return nil
}

// Delete removes a job and reports whether it was there.
func (t *Tree) Delete(id string) bool {
	if checkID(id) != nil {
		return false
	}
	b := BucketOf(id, t.depth)
	k := t.chunkOf(b)
	es := t.chunks[k]
	i, found := search(es, b, id)
	if !found {
		return false
	}
	var zero sum
	delta := zero.sub(es[i].h)
	t.chunks[k] = remove(es, i)
	t.n--
	t.addPath(k, delta)
	return true
}

// addPath adds delta to every stored node above chunk k.
func (t *Tree) addPath(k uint32, delta sum) {
	for n := (uint32(1)<<t.top + k) >> 1; n > 0; n >>= 1 {
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

// node returns the sum of node n: stored above the chunk level, summed
// from the entries below it (at most one chunk's) from there down.
func (t *Tree) node(n uint32) sum {
	if n < 1<<t.top {
		return t.inner[n]
	}
	return leafSum(t.entries(n))
}

// entries returns the entries below node n, which must be at the chunk
// level or below: a subslice of its chunk.
func (t *Tree) entries(n uint32) []entry {
	lo, hi := t.bucketRange(n)
	es := t.chunks[t.chunkOf(lo)]
	if level(n) == t.top {
		return es
	}
	i := firstOf(es, lo)
	j := i // a few entries: scan the ones about to be read anyway
	for j < len(es) && es[j].b < hi {
		j++
	}
	return es[i:j]
}

func leafSum(es []entry) (s sum) {
	for i := range es {
		s = s.add(es[i].h)
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
	return appendItems(nil, t.entries(1<<t.depth+b))
}

func appendItems(dst []Item, es []entry) []Item {
	for _, e := range es {
		dst = append(dst, Item{ID: e.id, Hash: e.h.hash()})
	}
	return dst
}

// Clone returns a deep copy of t.
func (t *Tree) Clone() *Tree {
	c := &Tree{depth: t.depth, top: t.top, inner: slices.Clone(t.inner), chunks: make([][]entry, len(t.chunks)), n: t.n}
	for k, es := range t.chunks {
		if len(es) > 0 {
			c.chunks[k] = slices.Clone(es)
		}
	}
	return c
}

// Rebuild builds a tree from every job of a ledger (id and state digest),
// as at start from the store. It is faster than Set per job: entries are
// counted per chunk, each chunk allocated once at its size and sorted,
// and each stored node summed once.
func Rebuild(depth int, jobs iter.Seq2[string, [32]byte]) (*Tree, error) {
	return rebuild(depth, denseLevels, jobs)
}

func rebuild(depth, dense int, jobs iter.Seq2[string, [32]byte]) (*Tree, error) {
	t, err := newTree(depth, dense)
	if err != nil {
		return nil, err
	}
	var all []entry
	for id, digest := range jobs {
		if err := checkID(id); err != nil {
			return nil, err
		}
		all = append(all, entry{id: strings.Clone(id), h: ItemHash(id, digest).sum(), b: BucketOf(id, depth)})
	}
	count := make([]int32, len(t.chunks))
	for i := range all {
		count[t.chunkOf(all[i].b)]++
	}
	for k, c := range count {
		if c > 0 {
			t.chunks[k] = slices.Grow([]entry(nil), int(c))
		}
	}
	for i := range all {
		k := t.chunkOf(all[i].b)
		t.chunks[k] = append(t.chunks[k], all[i])
	}
	for _, es := range t.chunks {
		slices.SortFunc(es, func(x, y entry) int {
			if c := cmp.Compare(x.b, y.b); c != 0 {
				return c
			}
			return strings.Compare(x.id, y.id)
		})
		for i := 1; i < len(es); i++ {
			if es[i].id == es[i-1].id {
				return nil, fmt.Errorf("%w: %q", ErrDuplicateID, es[i].id)
			}
		}
	}
	t.n = len(all)
	t.sumAll()
	return t, nil
}

// sumAll computes every stored node from the chunks, bottom up.
func (t *Tree) sumAll() {
	first := uint32(1) << (t.top - 1) // first node of the level above the chunks
	for n := first; n < 1<<t.top; n++ {
		t.inner[n] = leafSum(t.chunks[2*n-1<<t.top]).add(leafSum(t.chunks[2*n+1-1<<t.top]))
	}
	for n := first - 1; n > 0; n-- {
		t.inner[n] = t.inner[2*n].add(t.inner[2*n+1])
	}
}
