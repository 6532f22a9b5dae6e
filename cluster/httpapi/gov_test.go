package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/quota"
	"github.com/strata-ledger/strata/transport/api"
)

// The per-token API rate limit: a token's burst passes, the next call is
// 429 with Retry-After and the limit in details, tokens do not share a
// bucket, worker tokens are not counted, and time refills the bucket.
func TestAllow_PerTokenRateLimit(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	reg := prometheus.NewRegistry()
	sv := &Server{rate: newRateLimiter(RateLimit{PerSecond: 1, Burst: 2}, reg)}
	sv.rate.now = func() time.Time { return now }
	alice := auth.Principal{Name: "aaaa", Tenant: "acme"}
	bob := auth.Principal{Name: "bbbb", Tenant: "acme"}
	wk := auth.Principal{Name: "wwww", Tenant: auth.AllTenants, Worker: "w1"}
	call := func(p auth.Principal) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		if sv.allow(w, httptest.NewRequest("GET", "/v1/jobs", nil), p) {
			w.Code = http.StatusOK
		}
		return w
	}
	for i := range 2 {
		if w := call(alice); w.Code != http.StatusOK {
			t.Fatalf("call %d within the burst: %d", i, w.Code)
		}
	}
	w := call(alice)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("over the burst: %d Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
	var env api.ErrorEnvelope
	if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil || env.Error.Code != api.CodeTooMany || env.Error.Details["limit"] != "api_rate" {
		t.Fatalf("envelope %s (%v)", w.Body.Bytes(), err)
	}
	if w := call(bob); w.Code != http.StatusOK {
		t.Fatalf("another token was limited: %d", w.Code)
	}
	for range 5 {
		if w := call(wk); w.Code != http.StatusOK {
			t.Fatalf("a worker token was limited: %d", w.Code)
		}
	}
	now = now.Add(time.Second)
	if w := call(alice); w.Code != http.StatusOK {
		t.Fatalf("after a second: %d", w.Code)
	}
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || mfs[0].GetName() != "strata_http_throttled_requests_total" ||
		mfs[0].GetMetric()[0].GetCounter().GetValue() != 1 || mfs[0].GetMetric()[0].GetLabel()[0].GetValue() != "rate_limit" {
		t.Fatalf("metrics %v (%v), want strata_http_throttled_requests_total{reason=rate_limit} 1", mfs, err)
	}
	off := &Server{rate: newRateLimiter(RateLimit{}, prometheus.NewRegistry())}
	for range 100 {
		if !off.allow(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil), alice) {
			t.Fatal("a disabled limit refused a call")
		}
	}
}

// A quota refusal is 429 with whole seconds of Retry-After (at least 1)
// and the limit in details.
func TestOverQuota_RetryAfterAndDetails(t *testing.T) {
	for _, tt := range []struct {
		wait time.Duration
		want string
	}{{0, "1"}, {300 * time.Millisecond, "1"}, {time.Second, "1"}, {1500 * time.Millisecond, "2"}, {time.Hour, "3600"}} {
		err := overQuota(&quota.Limit{Tenant: "acme", Name: "max_per_hour", Allowed: 10}, tt.wait)
		w := httptest.NewRecorder()
		writeError(w, err)
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != tt.want {
			t.Fatalf("wait %v: %d Retry-After %q, want %s", tt.wait, w.Code, w.Header().Get("Retry-After"), tt.want)
		}
		if err.Details["limit"] != "max_per_hour" || err.Details["tenant"] != "acme" {
			t.Fatalf("details %+v", err.Details)
		}
	}
}
