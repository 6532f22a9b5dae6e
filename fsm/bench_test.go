package fsm_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/hlc"
)

// benchStreamEvents is the length of the benchmark's event stream; the
// store is reset (timer stopped) each time the stream is used up, so the
// measured work is always "apply a 200,000-event history from empty".
const benchStreamEvents = 200_000

// benchStream returns a realistic mix over ~500 active jobs of 8 tenants:
// 88% progress reports, 5% acceptances, 3% creations, 2% completions, 2%
// cancellations; bodies of about 200 bytes; HLCs in order (the common,
// incremental path). Bodies are shared between events (they are
// read-only). It also returns the mean encoded body size.
func benchStream(n int) ([]fsm.Event, int) {
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
		spec := fsmtest.Spec(tenants[i], regions...)
		spec.IdempotencyKey = fmt.Sprintf("idem-%016x", rng.Uint64())
		spec.Workflows = append(spec.Workflows, fsm.WorkflowSpec{Name: "browse-catalog", Count: 8, Duration: 60e9, Rate: 50})
		creates[i] = &fsm.JobCreated{Spec: spec, AssignedRegions: regions}
	}
	accepts := []fsm.Body{accept("use1"), accept("euw1")}
	type job struct{ id, tenant string }
	var active []job
	events := make([]fsm.Event, 0, n)
	ts := hlc.Timestamp{WallMs: 1_700_000_000_000, Node: 1}
	var seq uint64
	bodyBytes := 0
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
			events = append(events, fsmtest.NewEvent(fsmtest.ID(seq), j.id, j.tenant, "use1", "gate1", ts, 1, creates[t]))
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
			body, fence = complete(), 2
		default:
			body, fence = cancel(), 2
		}
		if r >= 96 { // the job is done: it gets no more events
			active[k] = active[len(active)-1]
			active = active[:len(active)-1]
		}
		events = append(events, fsmtest.NewEvent(fsmtest.ID(seq), j.id, j.tenant, "use1", "mgr1", ts, fence, body))
	}
	for i := range events {
		b, _ := fsm.AppendBody(nil, events[i].Body)
		bodyBytes += len(b)
	}
	return events, bodyBytes / len(events)
}

// BenchmarkLedgerApply measures Ledger.Apply with the in-memory store: the
// rules' own per-event cost plus the cheapest possible store.
func BenchmarkLedgerApply(b *testing.B) {
	stream, meanBody := benchStream(benchStreamEvents)
	b.Logf("stream of %d events, mean body %d bytes", len(stream), meanBody)
	for _, size := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size * meanBody))
			led := newLedger(b)
			var index uint64
			pos, batches := 0, 0
			for b.Loop() {
				if pos+size > len(stream) {
					b.StopTimer()
					led, index, pos = newLedger(b), 0, 0
					b.StartTimer()
				}
				index++
				if _, err := led.Apply(index, stream[pos:pos+size]); err != nil {
					b.Fatal(err)
				}
				pos += size
				batches++
			}
			b.ReportMetric(float64(batches*size)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkLedgerApplyEncoded adds batch decoding (what the Raft FSM
// wrapper calls) to BenchmarkLedgerApply.
func BenchmarkLedgerApplyEncoded(b *testing.B) {
	stream, meanBody := benchStream(benchStreamEvents)
	const size = 1000
	var encoded [][]byte
	for pos := 0; pos+size <= len(stream); pos += size {
		enc, err := fsm.EncodeBatch(stream[pos : pos+size])
		if err != nil {
			b.Fatal(err)
		}
		encoded = append(encoded, enc)
	}
	b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(size * meanBody))
		led := newLedger(b)
		var index uint64
		batches := 0
		for b.Loop() {
			if int(index) == len(encoded) {
				b.StopTimer()
				led, index = newLedger(b), 0
				b.StartTimer()
			}
			index++
			if _, err := led.ApplyEncoded(index, encoded[index-1]); err != nil {
				b.Fatal(err)
			}
			batches++
		}
		b.ReportMetric(float64(batches*size)/b.Elapsed().Seconds(), "events/s")
	})
}
