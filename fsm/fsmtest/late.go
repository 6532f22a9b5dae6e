package fsmtest

import (
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// LateJob builds one job with a long history and then events that arrive
// late (ordering before the job's latest event) or in order, for the
// tests and benchmarks of issue 17 finding 3 (a late event must not
// re-fold the history).
type LateJob struct {
	j       *Job
	created hlc.Timestamp
	last    int64 // wall ms of the newest event so far
	late    uint64
}

// LateJobID is the id of LateJob's job (tenant "acme", regions use1 and
// euw1).
const LateJobID = "use1-1700000000000-gate1-00001"

// NewLateJob returns the builder and the job's history of n events (n >=
// 2): its JobCreated, an acceptance by use1, then progress reports of
// both regions, one millisecond apart, in canonical order.
func NewLateJob(n int) (*LateJob, []fsm.Event) {
	j := NewJob(LateJobID, "acme", 1<<32, "use1", "euw1")
	created := j.Created()
	history := []fsm.Event{created, j.Ev(1, 1, &fsm.JobAccepted{Region: "use1", WorkerCount: 3})}
	regions := []string{"use1", "euw1"}
	for i := 2; i < n; i++ {
		history = append(history, j.Ev(2, 1, &fsm.JobProgressReported{Region: regions[i%2], Completed: uint64(i),
			Stats: fsm.Stats{{Name: "requests", Value: uint64(10 * i)}}}))
	}
	return &LateJob{j: j, created: created.HLC, last: j.Wall}, history
}

// Late returns a new progress report whose HLC orders strictly between
// the JobCreated and the newest event so far (the logical counter keeps
// successive ones distinct).
func (l *LateJob) Late() fsm.Event {
	l.late++
	span := uint64(l.last - l.created.WallMs - 1)
	ts := hlc.Timestamp{WallMs: l.created.WallMs + 1 + int64(l.late%span), Logical: uint32(1 + l.late/span), Node: 3}
	return l.j.At(ts, 1, &fsm.JobProgressReported{Region: "euw1", Completed: l.late, Failed: l.late % 7})
}

// InOrder returns a new progress report ordering after every event so
// far.
func (l *LateJob) InOrder() fsm.Event {
	l.late++
	e := l.j.Ev(2, 1, &fsm.JobProgressReported{Region: "use1", Completed: l.late, Failed: l.late % 7})
	l.last = l.j.Wall
	return e
}

// LateHistory is the length of the history BenchLateEvents builds (the
// 5,000 events of issue 17 finding 3).
const LateHistory = 5000

// BenchLateEvents builds a LateHistory-event job on led, then measures
// applying one event per batch (one Raft entry each): late events
// (ordering before the newest) if late, else events in order.
func BenchLateEvents(b *testing.B, led *fsm.Ledger, late bool) {
	lj, history := NewLateJob(LateHistory)
	var index uint64
	for len(history) > 0 {
		n := min(len(history), 1000)
		index++
		if _, err := led.Apply(index, history[:n]); err != nil {
			b.Fatal(err)
		}
		history = history[n:]
	}
	next := lj.InOrder
	if late {
		next = lj.Late
	}
	b.ReportAllocs()
	events := 0
	for b.Loop() {
		index++
		r, err := led.Apply(index, []fsm.Event{next()})
		if err != nil {
			b.Fatal(err)
		}
		if !r[0].Outcome.Stored() {
			b.Fatalf("event not stored: %v", r[0].Err)
		}
		events++
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
