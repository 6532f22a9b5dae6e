package httpapi

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
)

// What the request path (issue 19) reads and computes in place of the
// general forms is what those forms give.

func FuzzQueryValueMatchesURLValues(f *testing.F) {
	for _, q := range []string{"", "durability=regional", "durability", "durability=", "durability=a=b", "x=1",
		"durability=local&durability=global", "d%75rability=local", "durability=a+b", "durability=a;b", "node=m2",
		"n%6Fde=m2", "node", "consistency=strong&node=g1", "durability=%zz"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u := &url.URL{RawQuery: raw}
		for _, key := range []string{"durability", ParamNode} {
			if got, want := queryValue(u, key), u.Query().Get(key); got != want {
				t.Fatalf("query %q key %q: %q, want %q", raw, key, got, want)
			}
		}
		if u.Query().Get(ParamNode) != "" && !mayName(raw, ParamNode) {
			t.Fatalf("query %q names a node, mayName says it cannot", raw)
		}
	})
}

// The event id of an idempotency key is the one every gate made before
// (it is in ledgers): a fmt.Fprintf into the hash.
func TestIdempotentEventID_IsTheLedgersID(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return string(b)
	}
	for i := range 500 {
		tenant, key := word(rng.IntN(70)), word(rng.IntN(600)) // beyond the stack buffer too
		if i == 0 {
			tenant, key = "acme", "k1"
		}
		h := sha256.New()
		fmt.Fprintf(h, "strata idempotency v1\x00%s\x00%s", tenant, key)
		var want fsm.EventID
		copy(want[:], h.Sum(nil))
		if got := idempotentEventID(tenant, key); got != want {
			t.Fatalf("tenant %q key %q: %s, want %s", tenant, key, got, want)
		}
	}
}

// A body of a known length is read whole, and one cut short fails as
// io.ReadAll's did: 408 past its deadline, 400 otherwise.
func TestReadBody_KnownLength(t *testing.T) {
	body := strings.Repeat("x", 1000)
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	if b, err := readBody(r); err != nil || string(b) != body {
		t.Fatalf("read %d bytes, %v", len(b), err)
	}
	for _, tt := range []struct {
		cut    error
		status int
	}{{os.ErrDeadlineExceeded, http.StatusRequestTimeout}, {io.ErrUnexpectedEOF, http.StatusBadRequest}} {
		r := httptest.NewRequest(http.MethodPost, "/", io.MultiReader(strings.NewReader(body[:10]), errReader{tt.cut}))
		r.ContentLength = int64(len(body))
		_, err := readBody(r)
		var ae *httpx.APIError
		want := bodyReadError(tt.cut)
		if !errors.As(err, &ae) || ae.Status != tt.status || ae.Message != want.Message {
			t.Fatalf("cut by %v: %v, want %v", tt.cut, err, want)
		}
	}
}

// The cached children count what WithLabelValues would, from many
// goroutines, and a route nobody called has no series.
func TestRouteMetrics_CountAsTheVectors(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newHTTPMetrics(reg)
	jobs := m.route("/v1/jobs")
	_ = m.route("/livez") // never called: no series
	codes := []int{http.StatusCreated, http.StatusOK, http.StatusTooManyRequests}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				jobs.requests(http.MethodPost, codes[(g+i)%3]).Inc()
				jobs.latency().Observe(time.Millisecond.Seconds())
			}
		})
	}
	wg.Wait()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			labels := ""
			for _, l := range mt.GetLabel() {
				labels += l.GetName() + "=" + l.GetValue() + ","
			}
			if mt.GetCounter() != nil {
				counts[mf.GetName()+"{"+labels+"}"] = mt.GetCounter().GetValue()
			} else {
				counts[mf.GetName()+"{"+labels+"}"] = float64(mt.GetHistogram().GetSampleCount())
			}
		}
	}
	want := map[string]float64{"strata_http_request_duration_seconds{route=/v1/jobs,}": 800}
	for g := range 8 {
		for i := range 100 {
			want[fmt.Sprintf("strata_http_requests_total{code=%d,method=POST,route=/v1/jobs,}", codes[(g+i)%3])]++
		}
	}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("series %v,\nwant %v", counts, want)
	}
}
