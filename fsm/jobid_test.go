package fsm_test

import (
	"errors"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

func TestParseJobID(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want fsm.JobID
		ok   bool
	}{
		{"design example", "use1-1704931200000-gate42-00001", fsm.JobID{Region: "use1", UnixMs: 1704931200000, Gate: "gate42", Seq: 1}, true},
		{"largest seq", "apse1-1-g-99999", fsm.JobID{Region: "apse1", UnixMs: 1, Gate: "g", Seq: 99999}, true},
		{"zero time", "use1-0-g-00000", fsm.JobID{Region: "use1", Gate: "g"}, true},
		{"four-digit seq", "use1-1704931200000-gate42-0001", fsm.JobID{}, false},
		{"six-digit seq", "use1-1704931200000-gate42-000001", fsm.JobID{}, false},
		{"leading zero in time", "use1-01704931200000-gate42-00001", fsm.JobID{}, false},
		{"time beyond int64", "use1-9999999999999999999-gate42-00001", fsm.JobID{}, false},
		{"upper-case region", "USE1-1704931200000-gate42-00001", fsm.JobID{}, false},
		{"region starting with a digit", "1use-1704931200000-gate42-00001", fsm.JobID{}, false},
		{"hyphen in gate", "use1-1704931200000-gate-42-00001", fsm.JobID{}, false},
		{"missing part", "use1-1704931200000-00001", fsm.JobID{}, false},
		{"empty", "", fsm.JobID{}, false},
		{"sign in seq", "use1-1-g-+0001", fsm.JobID{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fsm.ParseJobID(tc.in)
			if !tc.ok {
				if !errors.Is(err, fsm.ErrInvalidJobID) {
					t.Fatalf("ParseJobID(%q) = %+v, %v; want ErrInvalidJobID", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseJobID(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if got.String() != tc.in {
				t.Fatalf("String() = %q, want %q", got.String(), tc.in)
			}
		})
	}
}

// stepClock returns a clock func replaying the given wall times (one per
// call, the last repeated) with a logical counter, like an HLC would not:
// it lets a test make the clock step back.
func stepClock(walls ...int64) func() (hlc.Timestamp, error) {
	i := 0
	return func() (hlc.Timestamp, error) {
		w := walls[min(i, len(walls)-1)]
		i++
		return hlc.Timestamp{WallMs: w, Logical: uint32(i), Node: 1}, nil
	}
}

func newGen(t *testing.T, clock func() (hlc.Timestamp, error)) *fsm.JobIDGenerator {
	t.Helper()
	g, err := fsm.NewJobIDGenerator(fsm.JobIDConfig{Region: "use1", Gate: "gate42", Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// requireIncreasing asserts every id parses and orders after the previous.
func requireIncreasing(t *testing.T, ids []string) {
	t.Helper()
	for i, id := range ids {
		p, err := fsm.ParseJobID(id)
		if err != nil {
			t.Fatalf("id %d %q: %v", i, id, err)
		}
		if i > 0 {
			prev, _ := fsm.ParseJobID(ids[i-1])
			if p.Compare(prev) <= 0 {
				t.Fatalf("id %d %q does not order after %q", i, id, ids[i-1])
			}
		}
	}
}

func TestJobIDGenerator_SameMillisecondTakesNextSeq(t *testing.T) {
	g := newGen(t, stepClock(1000, 1000, 1000, 1001))
	var ids []string
	for range 4 {
		id, _, err := g.Next()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	want := []string{"use1-1000-gate42-00001", "use1-1000-gate42-00002", "use1-1000-gate42-00003", "use1-1001-gate42-00001"}
	for i := range want {
		if ids[i] != want[i] {
			t.Fatalf("ids %v, want %v", ids, want)
		}
	}
}

func TestJobIDGenerator_ClockSteppingBackKeepsIDsIncreasing(t *testing.T) {
	g := newGen(t, stepClock(5000, 4000, 3000, 5000, 6000))
	var ids []string
	for range 5 {
		id, _, err := g.Next()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	requireIncreasing(t, ids)
	if ids[1] != "use1-5000-gate42-00002" {
		t.Fatalf("after a step back got %s, want the last millisecond's next seq", ids[1])
	}
}

// TestJobIDGenerator_SeqOverflowBorrowsTheClocksNextMillisecond drives a
// real hlc.Clock whose physical time is frozen: 100,000 ids in one
// millisecond use up the sequence numbers, and the generator moves to the
// next millisecond the HLC hands out.
func TestJobIDGenerator_SeqOverflowBorrowsTheClocksNextMillisecond(t *testing.T) {
	clock, err := hlc.New(hlc.Config{Node: 1, Physical: func() int64 { return 1_704_931_200_000 }, Persister: &hlc.MemoryPersister{}})
	if err != nil {
		t.Fatal(err)
	}
	g := newGen(t, clock.Now)
	first, _, _ := g.Next()
	start, _ := fsm.ParseJobID(first)
	prev := start
	for i := 1; i <= fsm.MaxJobSeq+5; i++ {
		id, ts, err := g.Next()
		if err != nil {
			t.Fatal(err)
		}
		p, _ := fsm.ParseJobID(id)
		if p.Compare(prev) <= 0 {
			t.Fatalf("id %s after %s", id, prev)
		}
		if p.UnixMs != ts.WallMs {
			t.Fatalf("id %s carries ms %d, its HLC %s", id, p.UnixMs, ts)
		}
		prev = p
	}
	if prev.UnixMs <= start.UnixMs {
		t.Fatalf("still at %d ms after %d ids", prev.UnixMs, fsm.MaxJobSeq+5)
	}
}

// TestJobIDGenerator_RestartedGateIssuesLaterIDs: a gate restarted with
// the same HLC persister (wall clock now behind) issues ids after the ones
// it issued before.
func TestJobIDGenerator_RestartedGateIssuesLaterIDs(t *testing.T) {
	persister := &hlc.MemoryPersister{}
	physical := int64(1_704_931_200_000)
	clock, _ := hlc.New(hlc.Config{Node: 1, Physical: func() int64 { return physical }, Persister: persister})
	g := newGen(t, clock.Now)
	var ids []string
	for range 50 {
		id, _, _ := g.Next()
		ids = append(ids, id)
	}
	physical -= 60_000 // the wall clock steps back a minute across the restart
	clock2, err := hlc.New(hlc.Config{Node: 1, Physical: func() int64 { return physical }, Persister: persister})
	if err != nil {
		t.Fatal(err)
	}
	g2 := newGen(t, clock2.Now)
	for range 50 {
		id, _, _ := g2.Next()
		ids = append(ids, id)
	}
	requireIncreasing(t, ids)
}

func TestJobIDGenerator_StalledClockFails(t *testing.T) {
	g, err := fsm.NewJobIDGenerator(fsm.JobIDConfig{Region: "use1", Gate: "g", Clock: stepClock(7), MaxClockReads: 10})
	if err != nil {
		t.Fatal(err)
	}
	for range fsm.MaxJobSeq {
		if _, _, err := g.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := g.Next(); !errors.Is(err, fsm.ErrClockStalled) {
		t.Fatalf("got %v, want ErrClockStalled", err)
	}
}

func TestJobIDConfig_Validate(t *testing.T) {
	clock := stepClock(1)
	for _, tc := range []struct {
		name string
		cfg  fsm.JobIDConfig
	}{
		{"bad region", fsm.JobIDConfig{Region: "US", Gate: "g", Clock: clock}},
		{"hyphen in gate", fsm.JobIDConfig{Region: "use1", Gate: "g-1", Clock: clock}},
		{"no clock", fsm.JobIDConfig{Region: "use1", Gate: "g"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := fsm.NewJobIDGenerator(tc.cfg); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
