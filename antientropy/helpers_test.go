package antientropy

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// ledger is the model of a ledger: job id → state digest.
type ledger map[string][32]byte

// jobID renders the i-th job id of a test ledger in fsm's format
// (region-unixms-gate-seq): time-ordered, as a gate hands them out.
func jobID(i int) string {
	return fmt.Sprintf("use1-%d-gate%d-%05d", 1704931200000+int64(i/7), i%3, i%7+1)
}

// digestOf is a stand-in state digest for version v of job id.
func digestOf(id string, v int) [32]byte {
	return sha256.Sum256(fmt.Appendf(nil, "%s/%d", id, v))
}

func newLedger(n int) ledger {
	l := make(ledger, n)
	for i := range n {
		id := jobID(i)
		l[id] = digestOf(id, 0)
	}
	return l
}

func (l ledger) clone() ledger { return maps.Clone(l) }

func (l ledger) all(yield func(string, [32]byte) bool) {
	for _, id := range slices.Sorted(maps.Keys(l)) {
		if !yield(id, l[id]) {
			return
		}
	}
}

func treeOf(t testing.TB, depth int, l ledger) *Tree {
	t.Helper()
	return treeWith(t, depth, denseLevels, l)
}

// treeWith rebuilds a tree of l that stores the sums of its top dense
// levels only: every level from dense down is summed from the chunks.
func treeWith(t testing.TB, depth, dense int, l ledger) *Tree {
	t.Helper()
	tr, err := rebuild(depth, dense, l.all)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// bruteDiff is the brute-force comparison: every id on one side only or
// with different digests, sorted.
func bruteDiff(a, b ledger) []string {
	var out []string
	for id, d := range a {
		if e, ok := b[id]; !ok || e != d {
			out = append(out, id)
		}
	}
	for id := range b {
		if _, ok := a[id]; !ok {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// exchange runs a comparison of local with peer through the wire
// encoding, as two nodes would, and returns the differences, the rounds
// and the bytes sent both ways.
func exchange(t testing.TB, local, peer *Tree) (diffs []string, rounds, bytes int) {
	t.Helper()
	c := NewCompare(local)
	req := c.Start()
	for {
		qb, err := req.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var q Request
		if err := q.UnmarshalBinary(qb); err != nil {
			t.Fatal(err)
		}
		page, err := Answer(peer, q)
		if err != nil {
			t.Fatal(err)
		}
		pb, err := page.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var p Page
		if err := p.UnmarshalBinary(pb); err != nil {
			t.Fatal(err)
		}
		bytes += len(qb) + len(pb)
		next, done, err := c.Step(p)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			return c.Differences(), c.Rounds(), bytes
		}
		req = next
	}
}

// diverge changes a and b (copies of one ledger) at k random jobs: a job
// only a has, only b has, a new state on one side, or new states on both.
func diverge(r *rand.Rand, a, b ledger, k int) {
	ids := slices.Sorted(maps.Keys(a))
	for i := range k {
		switch r.IntN(5) {
		case 0: // missing on b
			if len(ids) > 0 {
				delete(b, ids[r.IntN(len(ids))])
			}
		case 1: // missing on a
			if len(ids) > 0 {
				delete(a, ids[r.IntN(len(ids))])
			}
		case 2: // extra job on a or b
			id := fmt.Sprintf("euw1-%d-gatex-%05d", 1704931200000+r.IntN(1000), i%99999+1)
			if r.IntN(2) == 0 {
				a[id] = digestOf(id, 1)
			} else {
				b[id] = digestOf(id, 1)
			}
		case 3: // different state on one side
			if len(ids) > 0 {
				id := ids[r.IntN(len(ids))]
				if _, ok := a[id]; ok {
					a[id] = digestOf(id, 1+r.IntN(1000))
				}
			}
		case 4: // both sides changed
			if len(ids) > 0 {
				id := ids[r.IntN(len(ids))]
				a[id] = digestOf(id, 1001+r.IntN(1000))
				b[id] = digestOf(id, 2001+r.IntN(1000))
			}
		}
	}
}

// seed returns a random seed and logs it, so a failure can be replayed.
func seed(t testing.TB) uint64 {
	t.Helper()
	s := rand.Uint64()
	t.Logf("seed %d", s)
	return s
}
