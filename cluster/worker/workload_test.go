package worker

import (
	"math"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

func spec(d time.Duration, rate, ratio float64) fsm.WorkflowSpec {
	return fsm.WorkflowSpec{Name: "checkout", Count: 1, Duration: fsm.Duration(d), Rate: rate, FailureRatio: ratio}
}

func TestProgress(t *testing.T) {
	tests := []struct {
		name              string
		spec              fsm.WorkflowSpec
		elapsed           time.Duration
		completed, failed uint64
	}{
		{"not started", spec(30*time.Second, 200, 0), 0, 0, 0},
		{"negative elapsed", spec(30*time.Second, 200, 0), -time.Second, 0, 0},
		{"half way", spec(30*time.Second, 200, 0), 15 * time.Second, 3000, 0},
		{"whole run", spec(30*time.Second, 200, 0), 30 * time.Second, 6000, 0},
		{"past the duration", spec(30*time.Second, 200, 0), time.Hour, 6000, 0},
		{"floor of a fraction", spec(time.Minute, 3, 0), 1500 * time.Millisecond, 4, 0},
		{"quarter failing", spec(10*time.Second, 100, 0.25), 4 * time.Second, 300, 100},
		{"failed is floored", spec(10*time.Second, 10, 0.25), 3 * time.Second, 23, 7},
		{"all failing", spec(10*time.Second, 100, 1), 10 * time.Second, 0, 1000},
		{"ratio above one counts as one", spec(10*time.Second, 100, 1.5), 10 * time.Second, 0, 1000},
		{"negative ratio counts as zero", spec(10*time.Second, 100, -0.5), 10 * time.Second, 1000, 0},
		{"NaN ratio counts as zero", spec(10*time.Second, 100, math.NaN()), 10 * time.Second, 1000, 0},
		{"rate zero", spec(10*time.Second, 0, 0.5), time.Hour, 0, 0},
		{"NaN rate", spec(10*time.Second, math.NaN(), 0), time.Hour, 0, 0},
		{"duration zero", spec(0, 200, 0.5), time.Hour, 0, 0},
		{"binary fraction error does not lose a request", spec(100*time.Second, 0.29, 0), 100 * time.Second, 29, 0},
		{"sub-rate", spec(time.Hour, 0.5, 0), 3 * time.Second, 1, 0},
		{"saturates", spec(time.Duration(math.MaxInt64), math.MaxFloat64, 0), time.Hour, math.MaxUint64, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f := Progress(tt.spec, tt.elapsed)
			if c != tt.completed || f != tt.failed {
				t.Fatalf("Progress = (%d, %d), want (%d, %d)", c, f, tt.completed, tt.failed)
			}
		})
	}
}

func TestResumeAt(t *testing.T) {
	s := spec(10*time.Second, 100, 0.25)
	tests := []struct {
		name              string
		spec              fsm.WorkflowSpec
		completed, failed uint64
		want              time.Duration
	}{
		{"nothing done", s, 0, 0, 0},
		{"part done", s, 300, 100, 4 * time.Second},
		{"all done", s, 750, 250, 10 * time.Second},
		{"more than the spec produces", s, 5000, 0, 10 * time.Second},
		{"saturated counters", s, math.MaxUint64, math.MaxUint64, 10 * time.Second},
		{"rate zero with counters", spec(10*time.Second, 0, 0), 5, 0, 10 * time.Second},
		{"duration zero", spec(0, 100, 0), 5, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ResumeAt(tt.spec, tt.completed, tt.failed); got != tt.want {
				t.Fatalf("ResumeAt = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFailureMessage(t *testing.T) {
	tests := []struct {
		name              string
		spec              fsm.WorkflowSpec
		completed, failed uint64
		want              string
	}{
		{"some succeed", spec(time.Second, 10, 0.5), 5, 5, ""},
		{"all fail", spec(time.Second, 10, 1), 0, 10, "all 10 simulated requests failed"},
		{"all would fail but none ran", spec(time.Second, 0, 1), 0, 0, ""},
		{"no failures", spec(time.Second, 10, 0), 10, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FailureMessage(tt.spec, tt.completed, tt.failed); got != tt.want {
				t.Fatalf("FailureMessage = %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzProgress: counters add up to Total, never shrink as time passes,
// stop at the duration, and a resumed run never skips requests.
func FuzzProgress(f *testing.F) {
	f.Add(int64(30e9), 200.0, 0.25, int64(15e9), int64(1e9))
	f.Add(int64(0), 1.0, 1.0, int64(1), int64(0))
	f.Add(int64(math.MaxInt64), 1e300, 0.5, int64(math.MaxInt64), int64(-5))
	f.Add(int64(1e9), 0.29, 0.999, int64(999_999_999), int64(1))
	f.Fuzz(func(t *testing.T, d int64, rate, ratio float64, elapsed, step int64) {
		if d < 0 || math.IsNaN(rate) || math.IsInf(rate, 0) || rate < 0 || !(ratio >= 0 && ratio <= 1) {
			return // fsm refuses such specs
		}
		s := spec(time.Duration(d), rate, ratio)
		e := time.Duration(elapsed)
		c, fl := Progress(s, e)
		if c+fl != Total(s, e) || c+fl < c {
			t.Fatalf("Progress = (%d, %d), Total %d", c, fl, Total(s, e))
		}
		later := e + time.Duration(step)
		if step > 0 && later > e {
			c2, f2 := Progress(s, later)
			if c2 < c || f2 < fl {
				t.Fatalf("counters shrank from (%d, %d) to (%d, %d)", c, fl, c2, f2)
			}
		}
		fc, ff := Progress(s, time.Duration(d))
		if pc, pf := Progress(s, time.Duration(math.MaxInt64)); pc != fc || pf != ff {
			t.Fatalf("counters past the duration (%d, %d) differ from the final (%d, %d)", pc, pf, fc, ff)
		}
		off := ResumeAt(s, c, fl)
		if off < 0 || off > time.Duration(d) {
			t.Fatalf("ResumeAt = %v outside [0, %v]", off, time.Duration(d))
		}
		// Resuming never skips requests: at its offset the load has
		// produced no more than was done (one more within the tolerance).
		if done := c + fl; done < math.MaxUint64 && Total(s, off) > done+1 {
			t.Fatalf("ResumeAt(%d done) = %v, where Total is already %d", done, off, Total(s, off))
		}
	})
}

// Latency's counts add up to the requests, only grow with them (the data
// plane folds cumulative histograms by maximum), and follow the shares.
func TestLatency(t *testing.T) {
	if Latency(0) != nil {
		t.Fatal("a histogram for no requests")
	}
	var prev []uint64
	for total := uint64(1); total <= 1_000; total++ {
		h := Latency(total)
		var sum uint64
		for i, v := range h {
			sum += v
			if i < len(prev) && v < prev[i] {
				t.Fatalf("bucket %d went from %d to %d at %d requests", i, prev[i], v, total)
			}
		}
		if sum != total {
			t.Fatalf("%d requests counted as %d", total, sum)
		}
		prev = h
	}
	if h := Latency(1_000); h[12] != 500 || h[13] != 400 || h[14] != 90 || h[17] != 10 {
		t.Fatalf("shares of 1,000 requests: %v", h)
	}
}
