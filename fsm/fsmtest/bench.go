package fsmtest

import (
	"fmt"
	"math/rand/v2"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// BenchStreamEvents is the length of the stream BenchmarkLedgerApply
// applies: each store is reset (timer stopped) when the stream is used
// up, so the measured work is always "apply a 200,000-event history from
// empty".
const BenchStreamEvents = 200_000

// BenchStream returns the realistic mix every BenchmarkLedgerApply uses
// (fsm with memstore, fsm/boltstore): n events over ~500 active jobs of 8
// tenants: 88% progress reports, 5% acceptances, 3% creations, 2%
// completions, 2% cancellations; bodies of about 200 bytes; HLCs in order
// (the common, incremental path); event ids are fsmtest.ID(seq), so they
// increase. Bodies are shared between events (they are read-only). It
// also returns the mean encoded body size.
func BenchStream(n int) ([]fsm.Event, int) {
	rng := rand.New(rand.NewPCG(1, 2))
	regions := []string{"use1", "euw1"}
	stats := func() fsm.Stats {
		names := []string{"bytes_received", "bytes_sent", "conns_opened", "errors", "latency_p50_us", "latency_p99_us",
			"latency_sum_us", "redirects", "requests", "retries", "status_2xx", "status_5xx", "timeouts"}
		s := make(fsm.Stats, len(names))
		for i, name := range names {
			s[i] = fsm.Stat{Name: name, Value: rng.Uint64N(1 << 32)}
		}
		return s
	}
	var progress [2][256]fsm.Body
	for r := range regions {
		for i := range progress[r] {
			progress[r][i] = &fsm.JobProgressReported{Region: regions[r], Completed: rng.Uint64N(1 << 20),
				Failed: rng.Uint64N(1 << 10), Stats: stats()}
		}
	}
	tenants := make([]string, 8)
	creates := make([]fsm.Body, len(tenants))
	for i := range tenants {
		tenants[i] = fmt.Sprintf("tenant%d", i)
		spec := Spec(tenants[i], regions...)
		spec.IdempotencyKey = fmt.Sprintf("idem-%016x", rng.Uint64())
		spec.Workflows = append(spec.Workflows, fsm.WorkflowSpec{Name: "browse-catalog", Count: 8, Duration: 60e9, Rate: 50})
		creates[i] = &fsm.JobCreated{Spec: spec, AssignedRegions: regions}
	}
	accepts := []fsm.Body{&fsm.JobAccepted{Region: "use1", WorkerCount: 3}, &fsm.JobAccepted{Region: "euw1", WorkerCount: 3}}
	complete := &fsm.JobCompleted{FinalStatus: "SUCCEEDED"}
	cancel := &fsm.JobCancellationRequested{Reason: "stop", Requestor: "alice"}
	type job struct{ id, tenant string }
	var active []job
	events := make([]fsm.Event, 0, n)
	ts := hlc.Timestamp{WallMs: 1_700_000_000_000, Node: 1}
	var seq uint64
	for len(events) < n {
		seq++
		ts.Logical++
		if seq%64 == 0 {
			ts.WallMs++
			ts.Logical = 0
		}
		r := rng.IntN(100)
		if r < 3 || len(active) < 64 {
			t := rng.IntN(len(tenants))
			j := job{id: fsm.JobID{Region: "use1", UnixMs: ts.WallMs, Gate: "gate1", Seq: uint32(seq % fsm.MaxJobSeq)}.String(), tenant: tenants[t]}
			if len(active) >= 512 {
				k := rng.IntN(len(active))
				active[k] = active[len(active)-1]
				active = active[:len(active)-1]
			}
			active = append(active, j)
			events = append(events, NewEvent(ID(seq), j.id, j.tenant, "use1", "gate1", ts, 1, creates[t]))
			continue
		}
		k := rng.IntN(len(active))
		j, region := active[k], rng.IntN(len(regions))
		var body fsm.Body
		fence := uint64(1)
		switch {
		case r < 8:
			body = accepts[region]
		case r < 96:
			body = progress[region][rng.IntN(256)]
		case r < 98:
			body, fence = complete, 2
		default:
			body, fence = cancel, 2
		}
		if r >= 96 { // the job is done: it gets no more events
			active[k] = active[len(active)-1]
			active = active[:len(active)-1]
		}
		events = append(events, NewEvent(ID(seq), j.id, j.tenant, "use1", "mgr1", ts, fence, body))
	}
	bodyBytes := 0
	for i := range events {
		b, _ := fsm.AppendBody(nil, events[i].Body)
		bodyBytes += len(b)
	}
	return events, bodyBytes / len(events)
}
