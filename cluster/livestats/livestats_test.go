package livestats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/internal/importcheck"
	"github.com/strata-ledger/strata/transport/progress"
)

const testJob = "use1-1732500000000000000-g1-00001"

func TestImports_OnlyWhatDESIGNAllows(t *testing.T) {
	importcheck.Only(t, ".", importcheck.Std, "github.com/prometheus/client_golang/prometheus",
		importcheck.Module+"/cluster/auth", importcheck.Module+"/cluster/internal/httpx",
		importcheck.Module+"/fsm", importcheck.Module+"/transport/api", importcheck.Module+"/transport/progress")
}

func prog(wf, worker string, fence, completed, failed uint64, hist ...uint64) progress.Progress {
	return progress.Progress{Workflow: wf, Worker: worker, Fence: fence, Completed: completed, Failed: failed, Histogram: hist}
}

// A first report is a baseline; later ones add their growth; a new
// lease (fence) is a new baseline; a stale, lower report adds nothing.
func TestTracker_DeltasPerJob(t *testing.T) {
	tr := NewTracker()
	wf := testJob + "/use1/a/0"
	tr.Add(prog(wf, "w1", 1, 100, 10, 0, 5))
	if got, _ := tr.Take(time.Second); len(got) != 0 {
		t.Fatalf("a baseline gave samples: %+v", got)
	}
	tr.Add(prog(wf, "w1", 1, 150, 12, 0, 9, 4))
	tr.Add(prog(testJob+"/use1/b/0", "w2", 3, 7, 0)) // baseline of another aggregate
	tr.Add(prog(wf, "w1", 1, 140, 12, 0, 8))         // stale: nothing
	got, dropped := tr.Take(500 * time.Millisecond)
	if dropped != 0 || len(got) != 1 {
		t.Fatalf("Take = %+v, dropped %d", got, dropped)
	}
	s := got[0]
	if s.Job != testJob || s.Requests != 52 || s.Failed != 2 || s.Interval != 500*time.Millisecond || s.Hist[1] != 4 || s.Hist[2] != 4 {
		t.Fatalf("sample %+v", s)
	}
	tr.Add(prog(wf, "w1", 2, 10, 0, 0, 1)) // a new lease restarts the series
	if got, _ := tr.Take(time.Second); len(got) != 0 {
		t.Fatalf("a new lease's first report gave samples: %+v", got)
	}
	tr.Forget(wf, "w1")
	tr.Add(prog(wf, "w1", 2, 20, 0))
	if got, _ := tr.Take(time.Second); len(got) != 0 {
		t.Fatalf("a forgotten aggregate's report gave samples: %+v", got)
	}
}

func TestTracker_TakeIsBounded(t *testing.T) {
	tr := NewTracker()
	for i := range MaxSamplesPerPush + 10 {
		wf := testJob[:len(testJob)-5] + pad5(i) + "/use1/a/0"
		tr.Add(prog(wf, "w", 1, 1, 0))
		tr.Add(prog(wf, "w", 1, 2, 0))
	}
	got, dropped := tr.Take(time.Second)
	if len(got) != MaxSamplesPerPush || dropped != 10 {
		t.Fatalf("Take gave %d samples, dropped %d", len(got), dropped)
	}
	if got, _ := tr.Take(time.Second); len(got) != 0 {
		t.Fatalf("a second Take gave %d samples", len(got))
	}
}

// pad5 is i as the 5-digit sequence of a job id.
func pad5(i int) string { return fmt.Sprintf("%05d", i) }

// testClock is the Board's injected clock.
type testClock struct{ t time.Time }

func (c *testClock) now() time.Time          { return c.t }
func (c *testClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func sample(requests, failed uint64, hist map[int]uint64) Sample {
	s := Sample{Job: testJob, Requests: requests, Failed: failed, Interval: 500 * time.Millisecond}
	for i, v := range hist {
		s.Hist[i] = v
	}
	return s
}

func TestBoard_RatesAndPercentilesPerRegion(t *testing.T) {
	clk := &testClock{t: time.Unix(1_800_000_000, 0)}
	b := NewBoard(clk.now)
	// Two managers of use1 and one of euw1, four pushes each 500 ms apart.
	for range 4 {
		b.Add(&Push{Node: "m1", Region: "use1", Samples: []Sample{sample(50, 5, map[int]uint64{12: 50})}})
		b.Add(&Push{Node: "m2", Region: "use1", Samples: []Sample{sample(50, 0, map[int]uint64{13: 49, 20: 1})}})
		b.Add(&Push{Node: "m4", Region: "euw1", Samples: []Sample{sample(10, 0, nil)}})
		clk.advance(500 * time.Millisecond)
	}
	live := b.Live(testJob)
	u, e := live["use1"], live["euw1"]
	// 400 requests from 500 ms before the first push to now: 2.5 s.
	if u.RequestsPerS != 160 || u.FailedPerS != 8 || u.Managers != 2 || u.WindowMs != 2500 || u.Durable {
		t.Fatalf("use1 %+v", u)
	}
	// p50 is the top of bucket 12 (2.048–4.096 ms); p99 inside bucket 13.
	if u.P50Ms != 4.096 || u.P99Ms <= 4.096 || u.P99Ms > 8.192 {
		t.Fatalf("use1 percentiles p50 %v p99 %v", u.P50Ms, u.P99Ms)
	}
	if e.RequestsPerS != 16 || e.P50Ms != 0 || e.Managers != 1 {
		t.Fatalf("euw1 %+v", e)
	}
	// Quiet: the figures age out after Window, and the job is forgotten.
	clk.advance(Window)
	if live := b.Live(testJob); live != nil {
		t.Fatalf("live after Window: %+v", live)
	}
	if b.Jobs() != 0 {
		t.Fatalf("%d jobs tracked after expiry", b.Jobs())
	}
}

func TestBoard_BoundedJobsAndSamples(t *testing.T) {
	clk := &testClock{t: time.Unix(1_800_000_000, 0)}
	b := NewBoard(clk.now)
	push := &Push{Node: "m1", Region: "use1"}
	for i := range MaxJobs + 5 {
		s := sample(1, 0, nil)
		s.Job = testJob[:len(testJob)-5] + pad5(i)
		push.Samples = append(push.Samples, s)
	}
	if dropped := b.Add(push); dropped != 5 || b.Jobs() != MaxJobs || b.Dropped() != 5 {
		t.Fatalf("dropped %d, %d jobs", dropped, b.Jobs())
	}
	// Once the old jobs expire a new one finds room.
	clk.advance(Window + time.Millisecond)
	late := sample(1, 0, nil)
	late.Job = testJob[:len(testJob)-5] + pad5(99999)
	if dropped := b.Add(&Push{Node: "m1", Region: "use1", Samples: []Sample{late}}); dropped != 0 || b.Jobs() != 1 {
		t.Fatalf("after expiry: dropped %d, %d jobs", dropped, b.Jobs())
	}
	for range MaxSamplesPerJob * 2 {
		b.Add(&Push{Node: "m1", Region: "use1", Samples: []Sample{late}})
	}
	b.mu.Lock()
	n := len(b.jobs[late.Job])
	b.mu.Unlock()
	if n != MaxSamplesPerJob {
		t.Fatalf("%d samples kept for one job, limit %d", n, MaxSamplesPerJob)
	}
}

// Quantile against a brute force over the expanded latencies: the
// result lies in the bucket of the rank's latency.
func TestQuantile_LandsInTheRankBucket(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		var h Histogram
		var all []int // bucket of every request
		for range 1 + r.IntN(5) {
			i, n := r.IntN(Buckets), uint64(1+r.IntN(50))
			h[i] += n
			for range n {
				all = append(all, i)
			}
		}
		slices.Sort(all)
		for _, q := range []float64{0.5, 0.9, 0.99, 1} {
			got := Quantile(&h, q) * 1000 // µs
			want := all[max(int(math.Ceil(q*float64(len(all))))-1, 0)]
			lo, hi := bucketBounds(want)
			if got < lo || got > hi {
				t.Fatalf("q %v of %v = %v µs, want within bucket %d [%v, %v]", q, h, got, want, lo, hi)
			}
		}
	}
	var empty Histogram
	if Quantile(&empty, 0.5) != 0 {
		t.Fatal("quantile of an empty histogram")
	}
}

func TestDecode_RefusesBadPushes(t *testing.T) {
	good := `{"node":"m1","region":"use1","samples":[{"job":"` + testJob + `","requests":3,"failed":1,"hist":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,3],"interval_ns":500000000}]}`
	p, err := Decode([]byte(good))
	if err != nil || len(p.Samples) != 1 || p.Samples[0].Hist[31] != 3 {
		t.Fatalf("good push: %+v, %v", p, err)
	}
	for name, body := range map[string]string{
		"unknown field": `{"node":"m1","region":"use1","samples":[],"x":1}`,
		"bad node":      `{"node":"m 1","region":"use1","samples":[]}`,
		"bad region":    `{"node":"m1","region":"USE1","samples":[]}`,
		"bad job":       strings.Replace(good, testJob, "../../etc", 1),
		"zero interval": strings.Replace(good, `"interval_ns":500000000`, `"interval_ns":0`, 1),
		"long interval": strings.Replace(good, `"interval_ns":500000000`, `"interval_ns":60000000000`, 1),
		"failed > reqs": strings.Replace(good, `"failed":1`, `"failed":4`, 1),
		"33 buckets":    strings.Replace(good, `[0,`, `[0,0,`, 1),
		"trailing":      good + `{}`,
		"not json":      `{`,
	} {
		if _, err := Decode([]byte(body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"node":"m1","region":"use1","samples":[{"job":"` + testJob + `","requests":3,"failed":1,"interval_ns":500000000}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := Decode(body)
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("Decode accepted what Validate refuses: %v", err)
		}
		clk := &testClock{t: time.Unix(1_800_000_000, 0)}
		b := NewBoard(clk.now)
		b.Add(p)
		for _, s := range p.Samples {
			for _, l := range b.Live(s.Job) {
				if l.RequestsPerS < 0 || math.IsNaN(l.P99Ms) || l.P50Ms > l.P99Ms {
					t.Fatalf("live %+v from %+v", l, s)
				}
			}
		}
	})
}

// A push needs the cluster token and a valid body; only then does it
// reach the board.
func TestHandler_AuthenticatesAndValidates(t *testing.T) {
	clk := &testClock{t: time.Unix(1_800_000_000, 0)}
	b := NewBoard(clk.now)
	h := Handler(b, "cluster-secret")
	good := `{"node":"m1","region":"use1","samples":[{"job":"` + testJob + `","requests":3,"failed":0,"interval_ns":500000000}]}`
	for _, tc := range []struct {
		name, token, body string
		want              int
	}{
		{"no token", "", good, http.StatusUnauthorized},
		{"a tenant's token", "acme-token", good, http.StatusUnauthorized},
		{"bad body", "cluster-secret", `{"node":"m1"}`, http.StatusBadRequest},
		{"too large", "cluster-secret", strings.Repeat(" ", MaxPushBytes+1), http.StatusRequestEntityTooLarge},
	} {
		r := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(tc.body))
		if tc.token != "" {
			r.Header.Set("Authorization", "Bearer "+tc.token)
		}
		w := httptest.NewRecorder()
		h(w, r)
		if w.Code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, w.Code, tc.want)
		}
	}
	if b.Jobs() != 0 {
		t.Fatal("a refused push reached the board")
	}
	r := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(good))
	r.Header.Set("Authorization", "Bearer cluster-secret")
	w := httptest.NewRecorder()
	h(w, r)
	if w.Code != http.StatusNoContent || b.Jobs() != 1 {
		t.Fatalf("good push: %d, %d jobs", w.Code, b.Jobs())
	}
}
