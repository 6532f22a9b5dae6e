package httpapi

import (
	"maps"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// routeMetrics are one route's children of the HTTP metrics, each looked
// up in its vector once (issue 19, the request path): WithLabelValues
// hashes the labels and takes the vector's lock on every call, twice per
// request before. A child is made at the first request that needs it, as
// before, so /metrics shows no series of a route nobody called. The
// children are never deleted from the vectors, so a cached one stays the
// vector's.
type routeMetrics struct {
	route   string
	metrics *httpMetrics
	seconds atomic.Pointer[prometheus.Observer]
	// counters by method label and status code, copied on write: a
	// request reads it without a lock. At most the methods of
	// methodLabel times the status codes net/http lets a handler write.
	counters atomic.Pointer[map[requestLabels]prometheus.Counter]
	mu       sync.Mutex // serializes writers of counters
}

// requestLabels are the labels of strata_http_requests_total but the
// route.
type requestLabels struct {
	method string
	code   int
}

// route returns the children cache of route.
func (m *httpMetrics) route(route string) *routeMetrics {
	rm := &routeMetrics{route: route, metrics: m}
	rm.counters.Store(&map[requestLabels]prometheus.Counter{})
	return rm
}

// requests is the route's strata_http_requests_total child of method (a
// methodLabel) and code.
func (rm *routeMetrics) requests(method string, code int) prometheus.Counter {
	k := requestLabels{method, code}
	if c, ok := (*rm.counters.Load())[k]; ok {
		return c
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	cur := *rm.counters.Load()
	if c, ok := cur[k]; ok {
		return c
	}
	c := rm.metrics.requests.WithLabelValues(rm.route, method, strconv.Itoa(code))
	next := maps.Clone(cur)
	next[k] = c
	rm.counters.Store(&next)
	return c
}

// latency is the route's strata_http_request_duration_seconds child. Two
// first requests may both look it up: the vector gives both the same.
func (rm *routeMetrics) latency() prometheus.Observer {
	if o := rm.seconds.Load(); o != nil {
		return *o
	}
	o := rm.metrics.seconds.WithLabelValues(rm.route)
	rm.seconds.Store(&o)
	return o
}
