package antientropy

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCompare_MatchesBruteForce is the model test: for random pairs of
// ledgers, the ids the protocol finds are exactly those a brute-force
// comparison of the two ledgers finds.
func TestCompare_MatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 1))
	for i := range 120 {
		depth := 1 + r.IntN(12)
		base := newLedger(r.IntN(2000))
		a, b := base.clone(), base.clone()
		diverge(r, a, b, r.IntN(50))
		want := bruteDiff(a, b)
		// Each side stores the sums of its top levels only, from 1 to all.
		da, db := 1+r.IntN(depth), 1+r.IntN(depth)
		got, _, _ := exchange(t, treeWith(t, depth, da, a), treeWith(t, depth, db, b))
		if !slices.Equal(got, want) {
			t.Fatalf("case %d (depth %d, dense %d/%d, %d/%d jobs): found %d differences %v, brute force %d %v",
				i, depth, da, db, len(a), len(b), len(got), got, len(want), want)
		}
	}
}

// merge is the test's repair rule for a job both sides hold with
// different states: both take a state derived from the two (as merging
// two event sets would).
func merge(x, y [32]byte) [32]byte {
	if string(x[:]) > string(y[:]) {
		x, y = y, x
	}
	return sha256.Sum256(append(x[:], y[:]...))
}

// TestCompare_RepairMakesSidesEqual is the property test: after each side
// repairs the differences found (copy what the other has, merge what both
// changed), both trees have the same root and the ledgers are equal.
func TestCompare_RepairMakesSidesEqual(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 2))
	for i := range 200 {
		depth := 1 + r.IntN(12)
		base := newLedger(r.IntN(1500))
		a, b := base.clone(), base.clone()
		diverge(r, a, b, 1+r.IntN(100))
		ta, tb := treeWith(t, depth, 1+r.IntN(depth), a), treeWith(t, depth, 1+r.IntN(depth), b)
		diffs, _, _ := exchange(t, ta, tb)
		for _, id := range diffs {
			da, inA := a[id]
			db, inB := b[id]
			switch {
			case inA && !inB:
				b[id] = da
			case inB && !inA:
				a[id] = db
			default:
				a[id], b[id] = merge(da, db), merge(da, db)
			}
			for _, side := range []struct {
				l  ledger
				tr *Tree
			}{{a, ta}, {b, tb}} {
				if err := side.tr.Set(id, side.l[id]); err != nil {
					t.Fatal(err)
				}
			}
		}
		if ta.Root() != tb.Root() {
			t.Fatalf("case %d: roots differ after repairing %d differences", i, len(diffs))
		}
		if d := bruteDiff(a, b); len(d) != 0 {
			t.Fatalf("case %d: ledgers still differ at %v", i, d)
		}
		if again, rounds, _ := exchange(t, ta, tb); len(again) != 0 || rounds != 1 {
			t.Fatalf("case %d: after repair %d differences in %d rounds", i, len(again), rounds)
		}
	}
}

// TestCompare_EqualTreesExchangeOnlyRoots: one round, the root asked and
// answered, nothing else.
func TestCompare_EqualTreesExchangeOnlyRoots(t *testing.T) {
	l := newLedger(3000)
	diffs, rounds, bytes := exchange(t, treeOf(t, 10, l), treeOf(t, 10, l))
	// request: 3 header + 1 count + 1 node + 1 count; page: 3 + 1 + 32 + 1.
	if len(diffs) != 0 || rounds != 1 || bytes != 6+37 {
		t.Fatalf("equal trees: %d differences, %d rounds, %d bytes; want 0, 1, 43", len(diffs), rounds, bytes)
	}
}

// TestCompare_OneDifferenceDescendsOnePath: one changed job costs one
// hash per level, depth+2 rounds.
func TestCompare_OneDifferenceDescendsOnePath(t *testing.T) {
	a := newLedger(5000)
	b := a.clone()
	id := jobID(1234)
	b[id] = digestOf(id, 9)
	const depth = 12
	diffs, rounds, _ := exchange(t, treeOf(t, depth, a), treeOf(t, depth, b))
	if !slices.Equal(diffs, []string{id}) || rounds != depth+2 {
		t.Fatalf("found %v in %d rounds, want [%s] in %d", diffs, rounds, id, depth+2)
	}
}

// TestCompare_EmptyPeerIsOneRound: a subtree the peer holds nothing under
// is not descended; here the whole tree.
func TestCompare_EmptyPeerIsOneRound(t *testing.T) {
	a := newLedger(5000)
	diffs, rounds, _ := exchange(t, treeOf(t, 12, a), treeOf(t, 12, ledger{}))
	if len(diffs) != len(a) || rounds != 1 {
		t.Fatalf("%d differences in %d rounds, want %d in 1", len(diffs), rounds, len(a))
	}
}

// TestCompare_LargeLeavesAndManyLeavesArePaged: leaves of more than
// MaxItemsPerPage items and more than MaxLeavesPerRequest differing leaves
// take several pages, and nothing is lost.
func TestCompare_LargeLeavesAndManyLeavesArePaged(t *testing.T) {
	for _, depth := range []int{1, 12} {
		t.Run(fmt.Sprintf("depth=%d", depth), func(t *testing.T) {
			b := newLedger(3 * MaxItemsPerPage)
			got, rounds, _ := exchange(t, treeOf(t, depth, ledger{}), treeOf(t, depth, b))
			if want := bruteDiff(ledger{}, b); !slices.Equal(got, want) {
				t.Fatalf("found %d differences, want %d", len(got), len(want))
			}
			t.Logf("%d rounds", rounds)
		})
	}
}

// TestCompare_RejectsPagesThatDoNotAnswer: a page of another depth, with
// a hash missing, with no leaf of those asked, or with an item outside
// its bucket or out of order ends the comparison with an error.
func TestCompare_RejectsPagesThatDoNotAnswer(t *testing.T) {
	a := newLedger(100)
	b := a.clone()
	b[jobID(7)] = digestOf(jobID(7), 1)
	b[jobID(8)] = digestOf(jobID(8), 1)
	ta, tb := treeOf(t, 4, a), treeOf(t, 4, b)
	tests := []struct {
		name   string
		leaves bool // tamper with the first page that answers leaves
		edit   func(*Page)
		want   error
	}{
		{"other depth", false, func(p *Page) { p.Depth = 5 }, ErrDepthMismatch},
		{"hash missing", false, func(p *Page) { p.Hashes = p.Hashes[:0] }, ErrBadPage},
		{"no leaf answered", true, func(p *Page) { p.Leaves = nil }, ErrBadPage},
		{"item in another bucket", true, func(p *Page) {
			for i := 0; ; i++ {
				if id := jobID(i); BucketOf(id, 4) != p.Leaves[0].Bucket {
					p.Leaves[0].Items = []Item{{ID: id}}
					return
				}
			}
		}, ErrBadPage},
		{"items out of order", true, func(p *Page) { slices.Reverse(p.Leaves[0].Items) }, ErrBadPage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCompare(ta)
			req := c.Start()
			for tt.leaves && len(req.Leaves) == 0 {
				p, err := Answer(tb, req)
				if err != nil {
					t.Fatal(err)
				}
				var done bool
				if req, done, err = c.Step(p); err != nil || done {
					t.Fatalf("Step = %v, %v before any leaf was asked", done, err)
				}
			}
			p, err := Answer(tb, req)
			if err != nil {
				t.Fatal(err)
			}
			tt.edit(&p)
			if _, done, err := c.Step(p); !errors.Is(err, tt.want) || !done {
				t.Fatalf("Step = done %v, %v; want %v", done, err, tt.want)
			}
			if _, _, err := c.Step(p); !errors.Is(err, ErrBadPage) {
				t.Fatalf("Step after the end = %v, want ErrBadPage", err)
			}
		})
	}
}

// TestAnswer_RejectsOtherDepth: trees of different shapes cannot compare.
func TestAnswer_RejectsOtherDepth(t *testing.T) {
	ta, tb := treeOf(t, 4, ledger{}), treeOf(t, 5, ledger{})
	if _, err := Answer(tb, NewCompare(ta).Start()); !errors.Is(err, ErrDepthMismatch) {
		t.Fatalf("Answer = %v, want ErrDepthMismatch", err)
	}
}

// TestCompare_BytesGrowWithDifferencesNotJobs: the same difference costs
// the same bytes in a ledger ten times larger, but for the items of the
// one differing leaf.
func TestCompare_BytesGrowWithDifferencesNotJobs(t *testing.T) {
	const depth = 12
	cost := func(jobs int) int {
		a := newLedger(jobs)
		b := a.clone()
		b[jobID(77)] = digestOf(jobID(77), 1)
		_, _, bytes := exchange(t, treeOf(t, depth, a), treeOf(t, depth, b))
		return bytes
	}
	small, large := cost(2000), cost(20000)
	t.Logf("1 difference: %d bytes among 2,000 jobs, %d among 20,000", small, large)
	// 20,000 jobs put ~4.4 more jobs in the differing leaf, ~70 bytes each.
	if large > small+20*70 {
		t.Fatalf("bytes grew from %d to %d with the ledger", small, large)
	}
}

// TestCompare_PeerCannotSendEndlessLeaf: a peer that keeps answering a
// leaf with "more" is cut off after MaxItemsPerLeaf items.
func TestCompare_PeerCannotSendEndlessLeaf(t *testing.T) {
	if testing.Short() {
		t.Skip("sends MaxItemsPerLeaf items")
	}
	local := treeOf(t, 1, ledger{})
	c := NewCompare(local)
	req := c.Start()
	// Round 1: the root differs; round 2: the left leaf differs, the right is equal.
	var root Hash
	root[0] = 1
	req, _, err := c.Step(Page{Depth: 1, Hashes: []Hash{root}})
	if err != nil {
		t.Fatal(err)
	}
	if req, _, err = c.Step(Page{Depth: 1, Hashes: []Hash{root}}); err != nil || len(req.Leaves) != 1 || req.Leaves[0].Bucket != 0 {
		t.Fatalf("Step = %+v, %v; want leaf 0 asked", req, err)
	}
	next := 0
	for sent := 0; ; sent += MaxItemsPerPage {
		items := make([]Item, 0, MaxItemsPerPage)
		for len(items) < MaxItemsPerPage {
			id := fmt.Sprintf("x%09d", next)
			next++
			if BucketOf(id, 1) == 0 {
				items = append(items, Item{ID: id})
			}
		}
		var done bool
		req, done, err = c.Step(Page{Depth: 1, Leaves: []LeafItems{{Bucket: 0, More: true, Items: items}}})
		if err != nil {
			if !errors.Is(err, ErrBadPage) || sent+len(items) <= MaxItemsPerLeaf {
				t.Fatalf("after %d items: %v", sent+len(items), err)
			}
			return
		}
		if done || sent > MaxItemsPerLeaf {
			t.Fatalf("after %d items: done %v, no error", sent+len(items), done)
		}
	}
}

// exchangeLimited is exchange with Compare.SetLimit(limit); it also
// returns Truncated.
func exchangeLimited(t testing.TB, local, peer *Tree, limit int) (diffs []string, rounds, bytes int, truncated bool) {
	t.Helper()
	c := NewCompare(local)
	c.SetLimit(limit)
	req := c.Start()
	for {
		page, err := Answer(peer, req)
		if err != nil {
			t.Fatal(err)
		}
		qb, err := req.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		pb, err := page.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		bytes += len(qb) + len(pb)
		next, done, err := c.Step(page)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			return c.Differences(), c.Rounds(), bytes, c.Truncated()
		}
		req = next
	}
}

// TestCompare_LimitBoundsRoundsAndBytes: 100,000 differing jobs at the
// default depth take 150 round trips and 22 MB without a limit (more than
// a regional round allows, so such a round never repaired anything); with
// SetLimit(1000) the comparison ends in depth+2 round trips and finds
// about 1,000 of them, every one a real difference.
func TestCompare_LimitBoundsRoundsAndBytes(t *testing.T) {
	const jobs, limit = 100_000, 1_000
	a, b := newLedger(jobs), ledger{}
	for id := range a {
		b[id] = digestOf(id, 1)
	}
	ta, tb := treeOf(t, DefaultDepth, a), treeOf(t, DefaultDepth, b)
	_, unlimited, _, cut := exchangeLimited(t, ta, tb, 0)
	if cut || unlimited <= 100 {
		t.Fatalf("without a limit: %d rounds, truncated %v; want > 100, false", unlimited, cut)
	}
	diffs, rounds, bytes, cut := exchangeLimited(t, ta, tb, limit)
	if !cut || rounds > DefaultDepth+2 || len(diffs) < limit || len(diffs) > 2*limit || bytes > 2*limit*DefaultDepth*32 {
		t.Fatalf("with limit %d: %d differences in %d rounds, %d bytes, truncated %v", limit, len(diffs), rounds, bytes, cut)
	}
	for _, id := range diffs {
		if _, ok := a[id]; !ok {
			t.Fatalf("%q reported but not a difference", id)
		}
	}
	t.Logf("unlimited: %d rounds; limit %d: %d differences, %d rounds, %d bytes", unlimited, limit, len(diffs), rounds, bytes)
}

// TestCompare_LimitedComparisonsFindEveryDifference: comparisons with a
// limit, each followed by the repair of what it found, find every
// difference brute force finds, none twice, and end with equal trees.
func TestCompare_LimitedComparisonsFindEveryDifference(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 3))
	const depth, limit = 14, 100
	base := newLedger(20_000)
	a, b := base.clone(), base.clone()
	diverge(r, a, b, 1_500)
	ta, tb := treeOf(t, depth, a), treeOf(t, depth, b)
	want := bruteDiff(a, b)
	var found []string
	for range len(want)/limit + 10 {
		diffs, _, _, cut := exchangeLimited(t, ta, tb, limit)
		if len(diffs) == 0 {
			break
		}
		if len(diffs) < min(limit, len(want)-len(found)) || !cut && len(found)+len(diffs) != len(want) {
			t.Fatalf("a comparison found %d differences (truncated %v) with %d of %d left", len(diffs), cut, len(want)-len(found), len(want))
		}
		for _, id := range diffs {
			da, inA := a[id]
			db, inB := b[id]
			switch {
			case inA && inB && da == db:
				t.Fatalf("%q reported but equal", id)
			case inA:
				b[id] = da
			default:
				a[id] = db
			}
			for _, side := range []struct {
				l  ledger
				tr *Tree
			}{{a, ta}, {b, tb}} {
				if err := side.tr.Set(id, side.l[id]); err != nil {
					t.Fatal(err)
				}
			}
			found = append(found, id)
		}
	}
	slices.Sort(found)
	if !slices.Equal(found, want) || ta.Root() != tb.Root() {
		t.Fatalf("found %d differences, want %d; roots equal %v", len(found), len(want), ta.Root() == tb.Root())
	}
}
