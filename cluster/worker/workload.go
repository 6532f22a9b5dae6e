package worker

import (
	"fmt"
	"math"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/progress"
)

// The synthetic load: pure functions of a workflow's spec and the time it
// has run. No randomness, no clock: the runner passes elapsed in.

// countTolerance absorbs binary floating-point error in rate × seconds, so
// that 0.29 requests/s for 100 s counts 29 requests, not 28.999…; it is
// far below one request for any count a workflow can reach in practice.
const countTolerance = 1e-9

// Progress returns the cumulative counters of a workflow that has run its
// synthetic load for elapsed: total = floor(rate × min(elapsed, duration))
// simulated requests, failed = floor(total × failure_ratio), completed =
// total − failed. A negative elapsed, a zero rate or a zero duration give
// no requests; counts saturate at MaxUint64.
func Progress(spec fsm.WorkflowSpec, elapsed time.Duration) (completed, failed uint64) {
	total := Total(spec, elapsed)
	failed = min(floorCount(float64(total)*ratio(spec.FailureRatio)), total)
	return total - failed, failed
}

// Total is the number of simulated requests after elapsed.
func Total(spec fsm.WorkflowSpec, elapsed time.Duration) uint64 {
	d := time.Duration(spec.Duration)
	if elapsed <= 0 || d <= 0 || !(spec.Rate > 0) {
		return 0
	}
	return floorCount(spec.Rate * min(elapsed, d).Seconds())
}

// ResumeAt is how long the load had run when it had produced completed +
// failed requests: the elapsed time a workflow taken over from another
// worker starts from, so that its counters continue rather than restart
// and its final counters are those of an uninterrupted run. It is 0 for
// no requests and the whole duration when the counters already reach (or,
// from another spec, exceed) what the load can produce.
func ResumeAt(spec fsm.WorkflowSpec, completed, failed uint64) time.Duration {
	d := time.Duration(spec.Duration)
	done := completed + failed
	if done < completed { // saturate
		done = math.MaxUint64
	}
	if d <= 0 || done == 0 {
		return 0
	}
	if !(spec.Rate > 0) {
		return d
	}
	ns := float64(done) / spec.Rate * float64(time.Second)
	if !(ns < float64(d)) {
		return d
	}
	return time.Duration(ns)
}

// FailureMessage is the error a workflow ends with, "" when it completes:
// it fails only when every one of at least one simulated request failed
// (failure_ratio 1).
func FailureMessage(spec fsm.WorkflowSpec, completed, failed uint64) string {
	if spec.FailureRatio >= 1 && failed > 0 && completed == 0 {
		return fmt.Sprintf("all %d simulated requests failed", failed)
	}
	return ""
}

// ratio clamps a failure ratio into [0, 1] (NaN counts as 0).
func ratio(r float64) float64 {
	switch {
	case r >= 1:
		return 1
	case r > 0:
		return r
	}
	return 0
}

// floorCount is floor(x) as a count, within countTolerance below the next
// whole number; NaN and x ≤ 0 give 0, x ≥ 2^64 gives MaxUint64.
func floorCount(x float64) uint64 {
	if !(x > 0) {
		return 0
	}
	if x >= math.MaxUint64 { // 2^64 as a float64
		return math.MaxUint64
	}
	f := math.Floor(x)
	if x-f >= 1-countTolerance {
		f++
		if f >= math.MaxUint64 {
			return math.MaxUint64
		}
	}
	return uint64(f)
}

// syntheticLatency is the synthetic load's latency distribution: request
// i (counted from 0) takes a latency in bucket bucket of the data
// plane's log2 histogram when i mod 100 falls in [from, to). Half the
// requests take 2–4 ms, 40 % 4–8 ms, 9 % 8–16 ms and 1 % 64–128 ms, so a
// live view shows a p50 near 4 ms and a p99 near 16 ms.
var syntheticLatency = [...]struct{ bucket, from, to int }{
	{12, 0, 50}, {13, 50, 90}, {14, 90, 99}, {17, 99, 100},
}

// Latency is the cumulative latency histogram of the first total
// requests of the synthetic load: counts only grow with total, as the
// data plane's cumulative histograms must.
func Latency(total uint64) progress.Histogram {
	if total == 0 {
		return nil
	}
	h := make(progress.Histogram, syntheticLatency[len(syntheticLatency)-1].bucket+1)
	whole, rest := total/100, int(total%100)
	for _, l := range syntheticLatency {
		h[l.bucket] = whole*uint64(l.to-l.from) + uint64(min(max(rest-l.from, 0), l.to-l.from))
	}
	return h
}
