package antientropy

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"testing"
)

// benchJobs yields n jobs as a store would at start: id order, version 0.
func benchJobs(n int) iter.Seq2[string, [32]byte] {
	return func(yield func(string, [32]byte) bool) {
		for i := range n {
			id := jobID(i)
			if !yield(id, digestOf(id, 0)) {
				return
			}
		}
	}
}

func benchTree(b *testing.B, n int) *Tree {
	b.Helper()
	tr, err := Rebuild(DefaultDepth, benchJobs(n))
	if err != nil {
		b.Fatal(err)
	}
	return tr
}

// BenchmarkFindDifferences compares two ledgers of 1M jobs at the default
// depth that differ on diffs jobs (a quarter each: changed on the peer,
// missing on the peer, only on the peer, changed on both), through the
// wire encoding. Metrics: bytes exchanged (both directions), rounds
// (round trips), and bytes/bound, the bytes over (diffs × depth × 32).
func BenchmarkFindDifferences(b *testing.B) {
	const jobs = 1_000_000
	base := benchTree(b, jobs)
	for _, diffs := range []int{1, 10, 1000} {
		b.Run(fmt.Sprintf("jobs=%d/diffs=%d", jobs, diffs), func(b *testing.B) {
			local, peer := base.Clone(), base.Clone()
			r := rand.New(rand.NewPCG(uint64(diffs), 7))
			for k, i := range r.Perm(jobs)[:diffs] {
				id := jobID(i)
				var err error
				switch k % 4 {
				case 0:
					err = peer.Set(id, digestOf(id, 1))
				case 1:
					peer.Delete(id)
				case 2:
					id = fmt.Sprintf("euw1-%d-gatex-%05d", 1704931200000+i, k%99999+1)
					err = peer.Set(id, digestOf(id, 1))
				case 3:
					err = local.Set(id, digestOf(id, 2))
					if err == nil {
						err = peer.Set(id, digestOf(id, 3))
					}
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			var rounds, bytes int
			for b.Loop() {
				var found []string
				found, rounds, bytes = exchange(b, local, peer)
				if len(found) != diffs {
					b.Fatalf("found %d differences, want %d", len(found), diffs)
				}
			}
			b.ReportMetric(float64(bytes), "bytes")
			b.ReportMetric(float64(rounds), "rounds")
			b.ReportMetric(float64(bytes)/float64(diffs*DefaultDepth*32), "bytes/bound")
		})
	}
}

// classicTree is the obvious alternative the sum tree is measured
// against: a leaf is SHA-256 of its bucket's (id, digest) pairs in id
// order, an inner node SHA-256 of its two children, and Set recomputes
// the leaf and its path at once.
type classicTree struct {
	depth   int
	nodes   [][32]byte // heap order, 1 ≤ n < 2^(depth+1)
	buckets [][]classicEntry
}

type classicEntry struct {
	id     string
	digest [32]byte
}

func newClassic(depth int) *classicTree {
	return &classicTree{depth: depth, nodes: make([][32]byte, 2<<depth), buckets: make([][]classicEntry, 1<<depth)}
}

func (c *classicTree) set(id string, digest [32]byte, buf []byte) []byte {
	b := BucketOf(id, c.depth)
	es := c.buckets[b]
	i, found := slices.BinarySearchFunc(es, id, func(e classicEntry, id string) int {
		switch {
		case e.id < id:
			return -1
		case e.id > id:
			return 1
		}
		return 0
	})
	if found {
		es[i].digest = digest
	} else {
		c.buckets[b] = slices.Insert(es, i, classicEntry{id, digest})
	}
	buf = buf[:0]
	for _, e := range c.buckets[b] {
		buf = binary.AppendUvarint(buf, uint64(len(e.id)))
		buf = append(buf, e.id...)
		buf = append(buf, e.digest[:]...)
	}
	n := uint32(1)<<c.depth + b
	c.nodes[n] = sha256.Sum256(buf)
	var pair [64]byte
	for n >>= 1; n > 0; n >>= 1 {
		copy(pair[:32], c.nodes[2*n][:])
		copy(pair[32:], c.nodes[2*n+1][:])
		c.nodes[n] = sha256.Sum256(pair[:])
	}
	return buf
}

// BenchmarkTreeSet is the cost of keeping the tree current: one Set of a
// changed job in a tree of 1M jobs, for the jobs a ledger changes (hot:
// 500 active jobs, as fsmtest.BenchStream; random: any of the 1M),
// against classicTree's eager path of SHA-256s.
func BenchmarkTreeSet(b *testing.B) {
	const jobs, versions = 1_000_000, 4
	ids := make([]string, jobs)
	for i := range ids {
		ids[i] = jobID(i)
	}
	sumTree := benchTree(b, jobs)
	classic := newClassic(DefaultDepth)
	var buf []byte
	for _, id := range ids {
		buf = classic.set(id, digestOf(id, 0), buf)
	}
	for _, active := range []int{500, jobs} {
		name := "hot=500"
		if active == jobs {
			name = "random"
		}
		r := rand.New(rand.NewPCG(1, 2))
		const ops = 1 << 16
		opIDs := make([]string, ops)
		opDigests := make([][32]byte, ops)
		for k := range ops {
			opIDs[k] = ids[r.IntN(active)]
			opDigests[k] = digestOf(opIDs[k], 1+r.IntN(versions))
		}
		b.Run("tree=sum/jobs=1000000/"+name, func(b *testing.B) {
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				if err := sumTree.Set(opIDs[k%ops], opDigests[k%ops]); err != nil {
					b.Fatal(err)
				}
				k++
			}
		})
		b.Run("tree=classic/jobs=1000000/"+name, func(b *testing.B) {
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				buf = classic.set(opIDs[k%ops], opDigests[k%ops], buf)
				k++
			}
		})
	}
}

// BenchmarkRebuild builds the tree of 1M jobs from a store's iteration
// (ids and digests already in memory, as a store hands them out).
func BenchmarkRebuild(b *testing.B) {
	const jobs = 1_000_000
	ids := make([]string, jobs)
	digests := make([][32]byte, jobs)
	for i := range ids {
		ids[i] = jobID(i)
		digests[i] = digestOf(ids[i], 0)
	}
	b.Run(fmt.Sprintf("jobs=%d", jobs), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tr, err := Rebuild(DefaultDepth, func(yield func(string, [32]byte) bool) {
				for i, id := range ids {
					if !yield(id, digests[i]) {
						return
					}
				}
			})
			if err != nil || tr.Len() != jobs {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTreeHash is the cost of reading one node's hash (Hash, as
// Answer and Compare do for every node they visit) in a tree of 1M jobs,
// for random nodes of a level: stored above denseLevels, summed from the
// entries below from there down to the leaves (level 21).
func BenchmarkTreeHash(b *testing.B) {
	tr := benchTree(b, 1_000_000)
	for _, lvl := range []int{10, 16, 18, DefaultDepth} {
		b.Run(fmt.Sprintf("jobs=1000000/level=%d", lvl), func(b *testing.B) {
			r := rand.New(rand.NewPCG(3, uint64(lvl)))
			const ops = 1 << 12
			nodes := make([]uint32, ops)
			for k := range nodes {
				nodes[k] = 1<<lvl + uint32(r.IntN(1<<lvl))
			}
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				if _, err := tr.Hash(nodes[k%ops]); err != nil {
					b.Fatal(err)
				}
				k++
			}
		})
	}
}
