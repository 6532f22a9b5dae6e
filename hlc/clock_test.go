package hlc

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// manualClock is a physical time source the test moves by hand.
type manualClock struct{ ms atomic.Int64 }

func (m *manualClock) now() int64   { return m.ms.Load() }
func (m *manualClock) set(ms int64) { m.ms.Store(ms) }

type countingCounter struct{ n atomic.Int64 }

func (c *countingCounter) Inc() { c.n.Add(1) }

func newTestClock(t *testing.T, node uint32, pt *manualClock, p Persister) *Clock {
	t.Helper()
	c, err := New(Config{Node: node, Physical: pt.now, Persister: p})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func mustNow(t *testing.T, c *Clock) Timestamp {
	t.Helper()
	ts, err := c.Now()
	if err != nil {
		t.Fatalf("Now: %v", err)
	}
	return ts
}

func TestNow_ClassicCases(t *testing.T) {
	tests := []struct {
		name  string
		steps []int64 // physical time before each Now
		want  []Timestamp
	}{
		{
			name:  "physical advances: logical resets",
			steps: []int64{1000, 1001, 1005},
			want:  []Timestamp{{1000, 0, 7}, {1001, 0, 7}, {1005, 0, 7}},
		},
		{
			name:  "physical stands still: logical counts",
			steps: []int64{1000, 1000, 1000},
			want:  []Timestamp{{1000, 0, 7}, {1000, 1, 7}, {1000, 2, 7}},
		},
		{
			name:  "physical jumps back: wall holds, logical counts",
			steps: []int64{2000, 1500, 1999, 2001},
			want:  []Timestamp{{2000, 0, 7}, {2000, 1, 7}, {2000, 2, 7}, {2001, 0, 7}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pt := &manualClock{}
			pt.set(tt.steps[0])
			c := newTestClock(t, 7, pt, &MemoryPersister{})
			for i, s := range tt.steps {
				pt.set(s)
				if got := mustNow(t, c); got != tt.want[i] {
					t.Fatalf("step %d (physical %d): got %v, want %v", i, s, got, tt.want[i])
				}
			}
		})
	}
}

func TestUpdate_ClassicCases(t *testing.T) {
	tests := []struct {
		name     string
		physical int64
		local    Timestamp // reached by Now at this physical time first
		remote   Timestamp
		want     Timestamp
	}{
		{
			name:     "remote ahead within offset: adopt remote wall, logical+1",
			physical: 1000, local: Timestamp{1000, 0, 1},
			remote: Timestamp{1300, 4, 2},
			want:   Timestamp{1300, 5, 1},
		},
		{
			name:     "remote behind: keep local, logical+1",
			physical: 1000, local: Timestamp{1000, 0, 1},
			remote: Timestamp{900, 9, 2},
			want:   Timestamp{1000, 1, 1},
		},
		{
			name:     "same wall: max logical+1",
			physical: 1000, local: Timestamp{1000, 0, 1},
			remote: Timestamp{1000, 41, 2},
			want:   Timestamp{1000, 42, 1},
		},
		{
			name:     "remote at exactly max offset is accepted",
			physical: 1000, local: Timestamp{1000, 0, 1},
			remote: Timestamp{1500, 0, 2},
			want:   Timestamp{1500, 1, 1},
		},
		{
			name:     "remote logical beyond 16 bits carries into the next ms",
			physical: 1000, local: Timestamp{1000, 0, 1},
			remote: Timestamp{1200, 1 << 20, 2},
			want:   Timestamp{1201, 0, 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pt := &manualClock{}
			pt.set(tt.physical)
			c := newTestClock(t, 1, pt, &MemoryPersister{})
			if got := mustNow(t, c); got != tt.local {
				t.Fatalf("local: got %v, want %v", got, tt.local)
			}
			got, err := c.Update(tt.remote)
			if err != nil {
				t.Fatalf("Update: %v", err)
			}
			if got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			if !tt.remote.Less(got) {
				t.Fatalf("Update result %v is not above remote %v", got, tt.remote)
			}
		})
	}
}

func TestUpdate_RemoteTooFarAheadIsRejectedAndCounted(t *testing.T) {
	pt := &manualClock{}
	pt.set(1000)
	skew := &countingCounter{}
	c, err := New(Config{Node: 1, Physical: pt.now, Persister: &MemoryPersister{}, SkewRejections: skew})
	if err != nil {
		t.Fatal(err)
	}
	before := c.Last()
	_, err = c.Update(Timestamp{WallMs: 1501, Node: 2})
	var se *SkewError
	if !errors.Is(err, ErrClockSkew) || !errors.As(err, &se) {
		t.Fatalf("got %v, want a *SkewError", err)
	}
	if se.Remote.WallMs != 1501 || se.PhysicalMs != 1000 || se.MaxOffset != DefaultMaxOffset {
		t.Fatalf("error fields: %+v", se)
	}
	if skew.n.Load() != 1 {
		t.Fatalf("skew counter = %d, want 1", skew.n.Load())
	}
	if c.Last() != before {
		t.Fatalf("rejected update moved the clock: %v -> %v", before, c.Last())
	}
}

func TestNow_LogicalOverflowCarriesIntoWall(t *testing.T) {
	pt := &manualClock{}
	pt.set(5000)
	c := newTestClock(t, 3, pt, &MemoryPersister{})
	var prev Timestamp
	for i := 0; i <= maxLogical+1; i++ {
		ts := mustNow(t, c)
		if !prev.Less(ts) {
			t.Fatalf("step %d: %v not above %v", i, ts, prev)
		}
		prev = ts
	}
	if want := (Timestamp{5001, 0, 3}); prev != want {
		t.Fatalf("after %d ticks in one ms: got %v, want %v", maxLogical+2, prev, want)
	}
}

func TestNow_StrictlyIncreasingUnderConcurrency(t *testing.T) {
	pt := &manualClock{}
	pt.set(10_000)
	c := newTestClock(t, 9, pt, &MemoryPersister{})
	const goroutines, perG = 8, 5000
	results := make([][]Timestamp, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perG {
				if i%100 == 0 { // the physical clock moves, sometimes backwards
					pt.set(10_000 + int64(i%700) - 300)
				}
				ts, err := c.Now()
				if err != nil {
					t.Error(err)
					return
				}
				results[g] = append(results[g], ts)
			}
		}()
	}
	wg.Wait()
	seen := make(map[Timestamp]bool, goroutines*perG)
	for g, rs := range results {
		for i, ts := range rs {
			if seen[ts] {
				t.Fatalf("timestamp %v handed out twice", ts)
			}
			seen[ts] = true
			if i > 0 && !rs[i-1].Less(ts) {
				t.Fatalf("goroutine %d: %v then %v", g, rs[i-1], ts)
			}
		}
	}
}

func TestRestart_NeverGoesBackwards(t *testing.T) {
	p := &MemoryPersister{}
	pt := &manualClock{}
	pt.set(50_000)
	c1 := newTestClock(t, 1, pt, p)
	var last Timestamp
	for range 1000 {
		last = mustNow(t, c1)
	}
	// Restart with the physical clock stepped far back.
	pt.set(40_000)
	c2 := newTestClock(t, 1, pt, p)
	first := mustNow(t, c2)
	if !last.Less(first) {
		t.Fatalf("restarted clock went back: last %v, first after restart %v", last, first)
	}
	// Never hands out a wall above the persisted bound.
	bound, _ := p.Load()
	if first.WallMs > bound {
		t.Fatalf("wall %d above persisted bound %d", first.WallMs, bound)
	}
}

func TestPersist_BoundExtendedAheadOfUseAndFailureStopsAtBound(t *testing.T) {
	p := &MemoryPersister{}
	pt := &manualClock{}
	pt.set(1000)
	c := newTestClock(t, 1, pt, p)
	b0, _ := p.Load()
	if b0 < 1000+DefaultPersistStep.Milliseconds() {
		t.Fatalf("initial bound %d not a step ahead of 1000", b0)
	}
	// Within half a step of the bound: extended without failing the caller.
	pt.set(b0 - 10)
	mustNow(t, c)
	if b1, _ := p.Load(); b1 <= b0 {
		t.Fatalf("bound not extended ahead of use: %d -> %d", b0, b1)
	}
	// With the persister failing, time below the bound is still served...
	b1, _ := p.Load()
	p.FailWith(errors.New("disk gone"))
	pt.set(b1 - 1)
	mustNow(t, c)
	// ...but a wall beyond the bound is refused, and the clock does not move.
	pt.set(b1 + 1)
	before := c.Last()
	if _, err := c.Now(); !errors.Is(err, ErrPersist) {
		t.Fatalf("got %v, want ErrPersist", err)
	}
	if c.Last() != before || c.Last().WallMs > b1 {
		t.Fatalf("clock moved past the bound: %v (bound %d)", c.Last(), b1)
	}
	p.FailWith(nil)
	if ts := mustNow(t, c); ts.WallMs != b1+1 {
		t.Fatalf("after heal got %v, want wall %d", ts, b1+1)
	}
}

func TestConfig_Validate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"defaults", Config{Physical: func() int64 { return 0 }, Persister: &MemoryPersister{}}, true},
		{"no physical", Config{Persister: &MemoryPersister{}}, false},
		{"no persister", Config{Physical: func() int64 { return 0 }}, false},
		{"tiny step", Config{Physical: func() int64 { return 0 }, Persister: &MemoryPersister{}, PersistStep: time.Microsecond}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// BenchmarkClockNow and BenchmarkTimeNow run side by side: the HLC read
// should cost no more than 1.5x a bare time.Now().
func BenchmarkClockNow(b *testing.B) {
	c, err := New(Config{Node: 1, Physical: func() int64 { return time.Now().UnixMilli() }, Persister: &MemoryPersister{}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Now(); err != nil {
			b.Fatal(err)
		}
	}
}

var sinkMs int64

func BenchmarkTimeNow(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkMs = time.Now().UnixMilli()
	}
}

func BenchmarkClockNowParallel(b *testing.B) {
	c, err := New(Config{Node: 1, Physical: func() int64 { return time.Now().UnixMilli() }, Persister: &MemoryPersister{}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Now(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func TestTicks_CountEveryTimestampHandedOut(t *testing.T) {
	pt := &manualClock{}
	pt.set(1000)
	ticks := &countingCounter{}
	c, err := New(Config{Node: 1, Physical: pt.now, Persister: &MemoryPersister{}, Ticks: ticks})
	if err != nil {
		t.Fatal(err)
	}
	mustNow(t, c)
	mustNow(t, c)
	if _, err := c.Update(Timestamp{WallMs: 1200, Node: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Update(Timestamp{WallMs: 9000, Node: 2}); err == nil {
		t.Fatal("update 8 s ahead was accepted")
	}
	if got := ticks.n.Load(); got != 3 {
		t.Fatalf("ticks = %d, want 3 (two Now, one accepted Update; a rejected Update is no tick)", got)
	}
}

func TestPhysicalOffset(t *testing.T) {
	pt := &manualClock{}
	pt.set(10_000)
	c := newTestClock(t, 1, pt, &MemoryPersister{})
	tests := []struct {
		name   string
		step   func()
		wantMs int64
	}{
		{"in step with physical", func() { mustNow(t, c) }, 0},
		{"remote 300ms ahead pulls the clock ahead", func() {
			if _, err := c.Update(Timestamp{WallMs: 10_300, Node: 2}); err != nil {
				t.Fatal(err)
			}
		}, 300},
		{"physical time catches up part way", func() { pt.set(10_100) }, 200},
		{"physical time passes the clock", func() { pt.set(11_000) }, 0},
		{"idle clock behind physical is no offset", func() { pt.set(60_000) }, 0},
	}
	for _, tt := range tests {
		tt.step()
		if got := c.PhysicalOffset(); got != time.Duration(tt.wantMs)*time.Millisecond {
			t.Errorf("%s: PhysicalOffset = %s, want %dms", tt.name, got, tt.wantMs)
		}
	}
}
