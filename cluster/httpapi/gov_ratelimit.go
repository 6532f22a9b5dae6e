package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/ratelimit"
)

// RateLimit is the per-token API rate limit of one node (issue 18 §1): a
// token bucket per token, refilled at PerSecond with Burst tokens.
// PerSecond 0 turns it off. Calls another node of the cluster forwards
// are counted where the client sent them, not again.
type RateLimit struct {
	PerSecond float64
	Burst     float64
}

// rateLimiter is the node's per-token limiter and its metric.
type rateLimiter struct {
	cfg     RateLimit
	buckets *ratelimit.Limiter
	now     func() time.Time
	// throttled counts refusals: reason "rate_limit" (a token over its
	// API rate) and the quota refusals of submits ("max_active",
	// "max_per_hour"), and "queued" for submits held over quota.
	throttled *prometheus.CounterVec
}

func newRateLimiter(cfg RateLimit, reg prometheus.Registerer) *rateLimiter {
	rl := &rateLimiter{cfg: cfg, buckets: ratelimit.NewLimiter(0), now: time.Now,
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_http_throttled_requests_total",
			Help: "Requests refused or held by a limit: rate_limit (a token's API rate), max_active, max_per_hour (quotas), queued (held over quota)."},
			[]string{"reason"})}
	if reg != nil {
		reg.MustRegister(rl.throttled)
	}
	return rl
}

// allow takes a token of p's bucket; false with the 429 written when the
// token is over its rate. Forwarded hops and worker tokens (whose calls
// are paced by their own protocol) pass.
func (sv *Server) allow(w http.ResponseWriter, r *http.Request, p auth.Principal) bool {
	rl := sv.rate
	if rl == nil || rl.cfg.PerSecond <= 0 || len(sv.hops(r)) > 0 || p.Worker != "" {
		return true
	}
	ok, wait := rl.buckets.Take(p.Name, rl.cfg.PerSecond, max(rl.cfg.Burst, 1), rl.now())
	if ok {
		return true
	}
	rl.throttled.WithLabelValues("rate_limit").Inc()
	secs := max(int64((wait+time.Second-1)/time.Second), 1)
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	httpx.WriteError(w, &httpx.APIError{Status: http.StatusTooManyRequests, Code: httpx.CodeTooMany,
		Message: "token " + p.Name + " is over this node's API rate limit",
		Details: map[string]any{"limit": "api_rate", "per_second": rl.cfg.PerSecond, "burst": rl.cfg.Burst, "retry_after_seconds": secs}})
	return false
}

// countThrottled counts a submit's quota outcome.
func (sv *Server) countThrottled(reason string) {
	if sv.rate != nil {
		sv.rate.throttled.WithLabelValues(reason).Inc()
	}
}
