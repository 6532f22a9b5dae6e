package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"
)

// pollBound bounds every wait of these tests for a condition.
const pollBound = 20 * time.Second

// waitFor polls cond until it holds, failing the test after pollBound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(pollBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after %v for %s", pollBound, what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRun_OpenLoopSendsExactlyTheRequestCount(t *testing.T) {
	f := newFakeStrata(t)
	addr := loopbackServer(t, f)
	res, err := Run(context.Background(), Config{Addrs: []string{addr}, Token: f.token, Tier: TierRegional,
		Clients: 4, Rate: 100_000, Requests: 40, Duration: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 40 || res.Failed != 0 || f.requests.Load() != 40 {
		t.Fatalf("ok %d failed %d served %d, want 40 0 40; errors %v", res.Requests, res.Failed, f.requests.Load(), res.Errors)
	}
	r := res.Rate
	if r == nil || r.TargetPerSec != 100_000 || r.Sent != 40 || r.Unsent != 0 || r.AchievedPerSec <= 0 || r.Late > 40 {
		t.Fatalf("rate %+v, want target 100000, 40 sent, none unsent", r)
	}
	var out bytes.Buffer
	if err := res.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"target_per_s": 100000`) || !strings.Contains(out.String(), `"achieved_per_s"`) {
		t.Fatalf("JSON lacks the rate:\n%s", out.String())
	}

	// A closed loop reports no rate.
	res, err = Run(context.Background(), Config{Addrs: []string{addr}, Token: f.token, Requests: 3})
	if err != nil || res.Rate != nil {
		t.Fatalf("closed loop: rate %+v, %v", res.Rate, err)
	}
}

// heldServer answers like fakeStrata, but only once the test releases
// each request; arrived receives one value per request it holds.
func heldServer(t *testing.T) (addr, token string, arrived <-chan struct{}, release chan<- struct{}) {
	f := newFakeStrata(t)
	in, out := make(chan struct{}, 16), make(chan struct{})
	addr = loopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the body first: only then does the server watch the
		// connection and cancel r's context when the client hangs up.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		in <- struct{}{}
		select {
		case <-out:
			f.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	}))
	return addr, f.token, in, out
}

func receive(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(pollBound):
		t.Fatalf("no %s after %v", what, pollBound)
	}
}

func send(t *testing.T, c chan<- struct{}, what string) {
	t.Helper()
	select {
	case c <- struct{}{}:
	case <-time.After(pollBound):
		t.Fatalf("could not %s after %v", what, pollBound)
	}
}

// One worker, a slot a second on a manual clock: the first request is held
// while the clock moves 10 s, so the next two find the worker busy. Their
// latencies count from their slots (9 s and 8 s), not from when the worker
// got to them (a few microseconds of real time later).
func TestRun_OpenLoopLatencyCountsFromTheSlot(t *testing.T) {
	addr, token, arrived, release := heldServer(t)
	clk := newManualClock(time.Now())
	var progress Progress
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := run(context.Background(), Config{Addrs: []string{addr}, Token: token, Tier: TierRegional,
			Clients: 1, Rate: 1, Requests: 3, Duration: time.Minute}, clk, &progress)
		done <- outcome{res, err}
	}()

	receive(t, arrived, "first request")
	clk.Advance(10 * time.Second) // slots 1 (at 1 s) and 2 (at 2 s) are due
	waitFor(t, "slot 1 to find the worker busy", func() bool { return progress.Late.Load() == 1 })
	send(t, release, "release request 0")
	receive(t, arrived, "second request")
	waitFor(t, "slot 2 to find the worker busy", func() bool { return progress.Late.Load() == 2 })
	send(t, release, "release request 1")
	receive(t, arrived, "third request")
	send(t, release, "release request 2")

	var o outcome
	select {
	case o = <-done:
	case <-time.After(pollBound):
		t.Fatalf("run did not end after %v", pollBound)
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	res := o.res
	if res.Requests != 3 || res.Failed != 0 {
		t.Fatalf("ok %d failed %d, want 3 and 0; errors %v", res.Requests, res.Failed, res.Errors)
	}
	if res.Latency.Max != 10_000 {
		t.Errorf("max latency %v ms, want 10000 (slot 0 held for the 10 s the clock moved)", res.Latency.Max)
	}
	if res.Latency.P50 < 9_000 || res.Latency.P50 > 9_000*(1+1.0/histSubBuckets) {
		t.Errorf("p50 %v ms, want 9000 within a bucket (slot 1, due at 1 s, answered at 10 s)", res.Latency.P50)
	}
	if res.Latency.Mean != 9_000 {
		t.Errorf("mean %v ms, want 9000 (10 s, 9 s and 8 s)", res.Latency.Mean)
	}
	want := Rate{TargetPerSec: 1, Sent: 3, Late: 2, Unsent: 0, MaxLagMs: 9_000, AchievedPerSec: 0.3}
	if res.Rate == nil || *res.Rate != want {
		t.Fatalf("rate %+v, want %+v", res.Rate, want)
	}
}

// A server that never answers: the one worker holds slot 0 until the end,
// and every slot due after it is counted unsent.
func TestRun_OpenLoopCountsUnsentSlots(t *testing.T) {
	addr, token, _, _ := heldServer(t)
	res, err := Run(context.Background(), Config{Addrs: []string{addr}, Token: token,
		Clients: 1, Rate: 1000, Duration: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 0 || res.Failed != 0 {
		t.Fatalf("ok %d failed %d, want none: the request in flight at the end is not counted", res.Requests, res.Failed)
	}
	// The run lasted at least 100 ms: slots 0..100 were due, one was sent.
	if r := res.Rate; r == nil || r.Sent != 1 || r.Unsent < 100 {
		t.Fatalf("rate %+v, want 1 sent and at least 100 unsent", r)
	}
}

// dueBy agrees with due: it counts the slots i with due(i) <= t.
func TestPacer_DueByCountsTheDueSlots(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	start := time.Unix(1_800_000_000, 0)
	for range 500 {
		p := &pacer{start: start, rate: math.Exp(rng.Float64()*20 - 5)} // ~0.007 .. 3e6 per second
		if rng.IntN(4) == 0 {
			p.limit = rng.Int64N(50) + 1
		}
		i := rng.Int64N(1000)
		at := p.due(i)
		for _, tt := range []time.Time{at.Add(-1), at, at.Add(1)} {
			var want int64
			for want < 2000 && !p.due(want).After(tt) {
				want++
			}
			if p.limit > 0 {
				want = min(want, p.limit)
			}
			if got := p.dueBy(tt); got != want {
				t.Fatalf("rate %v limit %d: dueBy(slot %d %+v) = %d, want %d", p.rate, p.limit, i, tt.Sub(at), got, want)
			}
		}
	}
	if n := (&pacer{start: start, rate: 10}).dueBy(start.Add(-time.Second)); n != 0 {
		t.Fatalf("dueBy before the start = %d, want 0", n)
	}
}

func TestConfig_RateBounds(t *testing.T) {
	for _, rate := range []float64{-1, math.NaN(), math.Inf(1), MaxRate + 1} {
		err := Config{Addrs: []string{"127.0.0.1:1"}, Rate: rate}.Validate()
		if err == nil || !strings.Contains(err.Error(), "rate") {
			t.Errorf("rate %v: error %v, want one naming the rate", rate, err)
		}
	}
	for _, rate := range []float64{0, 0.5, MaxRate} {
		if err := (Config{Addrs: []string{"127.0.0.1:1"}, Rate: rate}).Validate(); err != nil {
			t.Errorf("rate %v: %v", rate, err)
		}
	}
}

func TestResult_OpenLoopTableAndJSON(t *testing.T) {
	r := sampleResult()
	r.Rate = &Rate{TargetPerSec: 1000, AchievedPerSec: 998.4, Sent: 9984, Late: 12, Unsent: 3, MaxLagMs: 4.5}
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"64 workers", "target 1,000 req/s, sent 998 req/s", "latency counts from each request's due time",
		"12 late (due while all 64 workers were busy", "3 unsent at the end", "max lag from due to sent 4.50 ms",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var got Result
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Rate == nil || *got.Rate != *r.Rate {
		t.Fatalf("rate round trip: %+v, want %+v", got.Rate, r.Rate)
	}
}

var (
	_ clock = (*manualClock)(nil)
	_ clock = systemClock{}
)
