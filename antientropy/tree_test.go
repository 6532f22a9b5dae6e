package antientropy

import (
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// sameTree fails t unless a and b hash every node alike and hold the
// same items in every bucket.
func sameTree(t *testing.T, a, b *Tree) {
	t.Helper()
	if a.Depth() != b.Depth() || a.Len() != b.Len() {
		t.Fatalf("depth %d/%d, len %d/%d", a.Depth(), b.Depth(), a.Len(), b.Len())
	}
	for n := uint32(1); n < 2<<a.Depth(); n++ {
		ha, _ := a.Hash(n)
		hb, _ := b.Hash(n)
		if ha != hb {
			t.Fatalf("node %d differs", n)
		}
	}
	for bk := uint32(0); bk < 1<<a.Depth(); bk++ {
		if !slices.Equal(a.Items(bk), b.Items(bk)) {
			t.Fatalf("bucket %d differs", bk)
		}
	}
}

// TestTree_IncrementalEqualsRebuild is the property test of the
// incremental update: any sequence of Set and Delete leaves the tree
// equal, node for node, to one rebuilt from the resulting ledger.
func TestTree_IncrementalEqualsRebuild(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 3))
	for i := range 50 {
		depth := 1 + r.IntN(10)
		// The incremental tree stores the sums of its top levels only
		// (1 to all); the rebuilt one all of them (depth ≤ denseLevels).
		tr, err := newTree(depth, 1+r.IntN(depth))
		if err != nil {
			t.Fatal(err)
		}
		model := ledger{}
		for range r.IntN(3000) {
			id := jobID(r.IntN(800))
			switch r.IntN(4) {
			case 0:
				if got, want := tr.Delete(id), has(model, id); got != want {
					t.Fatalf("case %d: Delete(%s) = %v, want %v", i, id, got, want)
				}
				delete(model, id)
			default:
				d := digestOf(id, r.IntN(3))
				if err := tr.Set(id, d); err != nil {
					t.Fatal(err)
				}
				model[id] = d
			}
		}
		sameTree(t, tr, treeOf(t, depth, model))
	}
}

func has(l ledger, id string) bool { _, ok := l[id]; return ok }

// TestTree_RootIsOrderIndependent: the root is the sum of the item
// hashes, whatever the order of the updates; the empty tree's root is 0.
func TestTree_RootIsOrderIndependent(t *testing.T) {
	l := newLedger(500)
	ids := slices.Collect(maps.Keys(l))
	a, _ := New(6)
	b, _ := New(6)
	if a.Root() != (Hash{}) {
		t.Fatal("empty root is not zero")
	}
	var want sum
	for _, id := range ids {
		_ = a.Set(id, l[id])
		want = want.add(ItemHash(id, l[id]).sum())
	}
	slices.Reverse(ids)
	for _, id := range ids {
		_ = b.Set(id, l[id])
	}
	if a.Root() != b.Root() || a.Root() != want.hash() {
		t.Fatal("roots differ")
	}
	for _, id := range ids {
		a.Delete(id)
	}
	if a.Root() != (Hash{}) || a.Len() != 0 {
		t.Fatal("root of an emptied tree is not zero")
	}
}

func TestTree_RejectsBadInput(t *testing.T) {
	for _, d := range []int{0, MaxDepth + 1, -1} {
		if _, err := New(d); !errors.Is(err, ErrInvalidDepth) {
			t.Errorf("New(%d) = %v, want ErrInvalidDepth", d, err)
		}
	}
	tr, _ := New(4)
	for _, id := range []string{"", strings.Repeat("a", MaxIDBytes+1)} {
		if err := tr.Set(id, [32]byte{}); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Set(%d bytes) = %v, want ErrInvalidID", len(id), err)
		}
	}
	if _, err := tr.Hash(0); !errors.Is(err, ErrInvalidNode) {
		t.Errorf("Hash(0) = %v", err)
	}
	if _, err := tr.Hash(32); !errors.Is(err, ErrInvalidNode) {
		t.Errorf("Hash(32) at depth 4 = %v", err)
	}
	dup := func(yield func(string, [32]byte) bool) { _ = yield("a", [32]byte{}) && yield("a", [32]byte{1}) }
	if _, err := Rebuild(4, dup); !errors.Is(err, ErrDuplicateID) {
		t.Errorf("Rebuild with a duplicate = %v", err)
	}
}

// TestTree_CloneIsIndependent: changing a clone leaves the original.
func TestTree_CloneIsIndependent(t *testing.T) {
	a := treeOf(t, 6, newLedger(300))
	root := a.Root()
	c := a.Clone()
	sameTree(t, a, c)
	_ = c.Set(jobID(5), digestOf(jobID(5), 7))
	c.Delete(jobID(6))
	_ = c.Set("new", [32]byte{})
	if a.Root() != root || a.Len() != 300 {
		t.Fatal("original changed with its clone")
	}
}

// TestBucketOf_SpreadsIDs: ids as gates hand them out (same prefix,
// consecutive times and sequence numbers) fill the buckets evenly: at
// 16 jobs per bucket on average no bucket is empty or holds 3× that.
func TestBucketOf_SpreadsIDs(t *testing.T) {
	const depth = 12
	counts := make([]int, 1<<depth)
	for i := range 16 << depth {
		counts[BucketOf(jobID(i), depth)]++
	}
	if lo, hi := slices.Min(counts), slices.Max(counts); lo == 0 || hi > 48 {
		t.Fatalf("bucket loads %d..%d, want 1..48 around 16", lo, hi)
	}
}

// TestTree_ReadersRunConcurrently: Root, Hash, Items and Answer only
// read, so any number may run at once (run with -race).
func TestTree_ReadersRunConcurrently(t *testing.T) {
	a := newLedger(2000)
	b := a.clone()
	diverge(rand.New(rand.NewPCG(1, 2)), a, b, 30)
	ta, tb := treeOf(t, 8, a), treeOf(t, 8, b)
	want := bruteDiff(a, b)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if got, _, _ := exchange(t, ta, tb); !slices.Equal(got, want) {
				t.Errorf("concurrent comparison found %d differences, want %d", len(got), len(want))
			}
			_ = tb.Root()
			_ = tb.Items(3)
		})
	}
	wg.Wait()
}
