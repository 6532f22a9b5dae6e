package progress

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// testKey is the registration key of the test workers.
var testKey = []byte("0123456789abcdef")

// keyMap is a Keys of one key id (7) per worker.
type keyMap map[string][]byte

func (k keyMap) Key(worker string, keyID uint32) ([]byte, bool) {
	b, ok := k[worker]
	return b, ok && keyID == 7
}

// leaseTable is a Leases: workflow → (worker, fence). Safe for concurrent
// use; an empty table with all set holds everything.
type leaseTable struct {
	mu  sync.Mutex
	all bool
	m   map[string]lease
}

type lease struct {
	worker string
	fence  uint64
}

func holdAll() *leaseTable { return &leaseTable{all: true} }

func (l *leaseTable) grant(workflow, worker string, fence uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]lease{}
	}
	l.m[workflow] = lease{worker, fence}
}

func (l *leaseTable) Holds(worker, workflow string, fence uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.all {
		return true
	}
	g, ok := l.m[workflow]
	return ok && g.worker == worker && g.fence == fence
}

// workflowID is a realistic fsm workflow id.
func workflowID(job, instance int) string {
	return fmt.Sprintf("use1-1704931200000-gate42-%05d/use1/checkout/%d", job, instance)
}

// seeded returns a random source and logs its seed (STYLE 6).
func seeded(t testing.TB) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// randomUpdates returns n updates of distinct workflows with random
// counters and, sometimes, a trimmed histogram.
func randomUpdates(r *rand.Rand, n int) []Update {
	out := make([]Update, n)
	for i := range out {
		out[i] = Update{
			Workflow:  workflowID(r.IntN(5), i),
			Fence:     r.Uint64N(1 << 20),
			Completed: r.Uint64(),
			Failed:    r.Uint64N(1000),
		}
		if r.IntN(3) == 0 {
			h := make(Histogram, 1+r.IntN(HistogramBuckets))
			for j := range h {
				if r.IntN(2) == 0 {
					h[j] = r.Uint64N(1 << 40)
				}
			}
			h[len(h)-1] = 1 + r.Uint64N(100)
			out[i].Histogram = h
		}
	}
	return out
}
