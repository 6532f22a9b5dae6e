package httpapi

import (
	"fmt"
	"net/http"
	"net/http/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/console"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/tracing"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/faultnet"
)

// The HTTP API v1 (DESIGN §9). Every route checks its method itself so that
// a wrong method gets the JSON envelope and an Allow header, and the
// catch-all answers unknown paths with the envelope too.

// route is one path's handlers by method.
type route map[string]http.HandlerFunc

func (rt route) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h, ok := rt[r.Method]; ok {
		h(w, r)
		return
	}
	allowed := make([]string, 0, len(rt))
	for m := range rt {
		allowed = append(allowed, m)
	}
	sort.Strings(allowed)
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	httpx.WriteError(w, &httpx.APIError{Status: http.StatusMethodNotAllowed, Code: httpx.CodeBadRequest,
		Message: fmt.Sprintf("method %s not allowed on %s (allowed: %s)", methodLabel(r.Method), r.URL.Path, strings.Join(allowed, ", "))})
}

// Route is one registered pattern and the methods it serves: what the
// OpenAPI document must describe (its test enumerates them).
type Route struct {
	Pattern string
	Methods []string
}

func (sv *Server) routes() http.Handler {
	mux, _ := sv.routeTable()
	return sv.relay(mux)
}

// routeTable builds the mux and lists every pattern it registers, but
// the catch-all.
func (sv *Server) routeTable() (*http.ServeMux, []Route) {
	mux := http.NewServeMux()
	var table []Route
	handle := func(pattern string, rt route) {
		mux.Handle(pattern, sv.instrument(pattern, rt))
		table = append(table, Route{Pattern: pattern, Methods: rt.methods()})
	}
	handleAny := func(pattern string, h http.Handler) { // serves every method
		mux.Handle(pattern, h)
		table = append(table, Route{Pattern: pattern, Methods: []string{http.MethodGet}})
	}
	var (
		open     = rule{access: public}
		token    = rule{access: anyToken}
		operator = rule{access: operatorOnly}
		jobWrite = rule{access: anyToken, home: gates}
		jobRead  = rule{access: anyToken, home: gates, read: true}
		regional = rule{access: anyToken, home: managers, read: true}
		worker   = rule{access: workerToken, home: regionLeader, body: true}
		leases   = rule{access: workerToken, home: regionLeader, beforeForward: capLeaseWait}
	)
	g := sv.guard
	handle("/livez", route{"GET": g(open, sv.handleLivez)})
	handle("/readyz", route{"GET": g(open, sv.handleReadyz)})
	handleAny("/metrics", promhttp.HandlerFor(sv.cfg.Registry, promhttp.HandlerOpts{Registry: sv.cfg.Registry}))
	// The OpenAPI document, public like /livez.
	handle(api.OpenAPIPath, route{"GET": g(open, sv.handleOpenAPI)})
	handle(api.WellKnownOpenAPIPath, route{"GET": g(open, sv.handleOpenAPI)})

	handle("/v1/jobs", route{"POST": g(jobWrite, sv.handleSubmitJob), "GET": g(jobRead, sv.handleListJobs)})
	handle("/v1/jobs/{id}", route{"GET": g(jobRead, sv.handleGetJob)})
	handle("/v1/jobs/{id}/cancel", route{"POST": g(rule{access: anyToken, home: gates, body: true}, sv.handleCancelJob)})
	handle("/v1/jobs/{id}/events", route{"GET": g(jobRead, sv.handleJobEvents)})
	// A watch routes itself: a manager relays the stream from a gate.
	handle("/v1/jobs/{id}/watch", route{"GET": g(token, sv.handleWatchJob)})
	// A batch routes itself by the tier of the events it holds.
	handle("/v1/events:batch", route{"POST": g(rule{access: anyToken, body: true}, sv.handleEventsBatch)})
	handle("/v1/jobs/{id}/workflows", route{"GET": g(regional, sv.handleJobWorkflows)})
	handle("/v1/chain/verify", route{"GET": g(jobRead, sv.handleVerifyChain)})
	handle("/v1/chain/checkpoints", route{"GET": g(jobRead, sv.handleCheckpoints)})
	handle("/v1/chain/proof", route{"GET": g(jobRead, sv.handleProof)})
	handle("/v1/export", route{"GET": g(jobRead, sv.handleExport)})
	handle("/v1/import", route{"POST": g(rule{access: operatorOnly, home: gates}, sv.handleImport)})
	handle("/v1/snapshot", route{"GET": g(operator, sv.handleSnapshot), "POST": g(operator, sv.handleRestoreSnapshot)})
	handle("/v1/writes/{node}/{lsn}", route{"GET": g(token, sv.handleWriteStatus)})

	handle("/v1/auth/whoami", route{"GET": g(token, sv.handleWhoami)})
	// Governance of the global ledger (issue 18): quotas, throttles,
	// replay. The handlers check the finer operator scopes.
	gov := rule{access: anyToken, home: gates, body: true}
	handle("/v1/quotas", route{"GET": g(jobRead, sv.handleListQuotas)})
	handle("/v1/quotas/status", route{"GET": g(jobRead, sv.handleQuotaStatus)})
	handle("/v1/quotas/policies/{id}", route{"PUT": g(gov, sv.handlePutQuota), "DELETE": g(gov, sv.handleDeleteQuota)})
	handle("/v1/quotas/fleet", route{"PUT": g(gov, sv.handlePutFleetQuota)})
	handle("/v1/throttles", route{"GET": g(jobRead, sv.handleListThrottles), "POST": g(gov, sv.handleThrottle)})
	handle("/v1/jobs/{id}/replay", route{"POST": g(gov, sv.handleReplayJob)})
	// The console's one call per region for its workers (operators).
	handle("/v1/workers", route{"POST": g(worker, sv.handleRegisterWorker),
		"GET": g(rule{access: operatorOnly, home: regionLeader}, sv.handleListWorkers)})
	handle("/v1/workers/{id}", route{"DELETE": g(worker, sv.handleDeregisterWorker)})
	handle("/v1/workers/{id}/heartbeat", route{"POST": g(worker, sv.handleHeartbeat)})
	handle("/v1/workers/{id}/leases", route{"GET": g(leases, sv.handleLeases)})
	handle("/v1/workers/{id}/progress", route{"POST": g(worker, sv.handleProgress)})
	handle("/v1/workers/{id}/complete", route{"POST": g(worker, sv.handleCompleteWorkflow)})
	handle("/v1/workers/{id}/fail", route{"POST": g(worker, sv.handleFailWorkflow)})

	// Cluster internals (addresses, configuration) are the operators'.
	handle("/v1/cluster/members", route{"GET": g(operator, sv.handleMembers)})
	handle("/v1/cluster/raft", route{"GET": g(operator, sv.handleRaft)})
	// Membership changes are validated here and forwarded to the leader.
	handle("/v1/cluster/raft/join", route{"POST": g(operator, sv.handleJoin)})
	handle("/v1/cluster/raft/peers/{id}", route{"DELETE": g(operator, sv.handleRemovePeer)})
	handle("/v1/cluster/raft/transfer-leadership", route{"POST": g(operator, sv.handleTransfer)})
	handle("/v1/cluster/antientropy", route{"GET": g(rule{access: operatorOnly, home: gates}, sv.handleAntiEntropy)})
	handle("/v1/cluster/antientropy/run", route{"POST": g(rule{access: operatorOnly, home: gates}, sv.handleAntiEntropy)})
	if sv.cfg.EnableFaultInjection {
		faults := plain(faultnet.Handler(sv.cfg.Faults).ServeHTTP)
		handle("/v1/debug/faults", route{"GET": g(operator, faults), "PUT": g(operator, faults)})
	}
	for path, h := range sv.cfg.Peers.Routes() {
		handle(path, route{"POST": h})
	}
	if sv.cfg.Security != nil {
		handle(api.PathClusterStatus, route{"GET": g(operator, sv.handleClusterStatus)})
	}
	// Region governance (issue 18 §2, govern.go): breakers and
	// maintenance mode, served by the managers of the region.
	governed := rule{access: anyToken, home: managers, read: true}
	governs := rule{access: anyToken, home: managers, body: true}
	handle(api.PathBreakers, route{"GET": g(governed, sv.handleListBreakers)})
	handle(api.PathBreakers+"/{tenant}/{job_type}/{action}", route{"POST": g(governs, sv.handleForceBreaker)})
	handle(api.PathMaintenance, route{"GET": g(governed, sv.handleGetMaintenance), "POST": g(governs, sv.handleSetMaintenance)})
	// The cluster-wide mode lives in the global ledger (maintenance_cluster.go).
	handle(api.PathClusterMaintenance, route{"GET": g(rule{access: anyToken, home: gates, read: true}, sv.handleGetClusterMaintenance),
		"POST": g(gov, sv.handleSetClusterMaintenance)})
	keyring := rule{access: operatorOnly, home: gates}
	handle(api.PathKeyring, route{"GET": g(keyring, sv.handleKeyring), "POST": g(rule{access: operatorOnly, home: gates, body: true}, sv.handleKeyring)})
	// pprof is not here: it is served on the admin listener (AdminHandler).
	// The web console (issue 20): static files, no token (the API calls
	// they make carry it). The files are compiled in, and the console's
	// tests load them: failing here is a build that never passed them.
	ui, err := console.NewHandler()
	if err != nil {
		panic(err)
	}
	files := plain(ui.ServeHTTP)
	handle(console.Prefix, route{"GET": g(open, files), "HEAD": g(open, files)})
	handle(console.Prefix+"/", route{"GET": g(open, files), "HEAD": g(open, files)})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusNotFound, Code: httpx.CodeNotFound, Message: "no such endpoint: " + r.URL.Path})
	})
	return mux, table
}

// AdminHandler serves pprof, operator only, for the admin listener
// (DESIGN §12: profiles never on the public API), with the API's
// per-request deadlines.
func (sv *Server) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	operator := rule{access: operatorOnly}
	mux.Handle("/debug/pprof/", sv.guard(operator, plain(pprof.Index)))
	mux.Handle("/debug/pprof/profile", sv.guard(operator, plain(pprof.Profile)))
	mux.Handle("/debug/pprof/trace", sv.guard(operator, plain(pprof.Trace)))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusNotFound, Code: httpx.CodeNotFound, Message: "no such endpoint: " + r.URL.Path})
	})
	return sv.deadlines(mux)
}

// methods lists the methods rt serves, sorted.
func (rt route) methods() []string {
	ms := make([]string, 0, len(rt))
	for m := range rt {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	return ms
}

// handleOpenAPI serves the OpenAPI document (transport/api/openapi.json).
func (sv *Server) handleOpenAPI(w http.ResponseWriter, _ *http.Request, _ *call) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(api.OpenAPI())
}

// httpMetrics are strata_http_*: requests by route and status class.
type httpMetrics struct {
	requests *prometheus.CounterVec
	seconds  *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_http_requests_total",
			Help: "HTTP API requests by route, method and status code."}, []string{"route", "method", "code"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "strata_http_request_duration_seconds",
			Help: "HTTP API request latency by route.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18)}, []string{"route"}),
	}
	reg.MustRegister(m.requests, m.seconds)
	return m
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (write
// deadlines of watch streams).
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush lets streaming handlers flush through the wrapper.
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// methodLabel is a request's method as a metric label: one of a fixed
// set, so no client can grow the metrics with methods of its own (a
// megabyte-long method became a label, and stayed in memory, before).
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

func (sv *Server) instrument(routeName string, h http.Handler) http.Handler {
	rm := sv.metrics.route(routeName)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		r, span := sv.cfg.Tracer.StartServer(r, routeName)
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				sv.log.Error("http handler panic", "route", routeName, "panic", v)
				if sw.status == 0 {
					httpx.WriteError(sw, &httpx.APIError{Status: http.StatusInternalServerError, Code: httpx.CodeInternal, Message: "internal error"})
				}
			}
			rm.requests(methodLabel(r.Method), sw.status).Inc()
			rm.latency().Observe(time.Since(start).Seconds())
			tracing.EndServer(span, sw.status)
		}()
		h.ServeHTTP(sw, r)
	})
}

// principal authenticates r; on failure it writes the 401 and returns false.
func (sv *Server) principal(w http.ResponseWriter, r *http.Request) (auth.Principal, bool) {
	p, err := sv.cfg.Auth.Authenticate(r)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="strata"`)
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusUnauthorized, Code: httpx.CodeUnauthenticated, Message: err.Error()})
		return auth.Principal{}, false
	}
	return p, true
}

// forbidden is the 403 of a token lacking scope on tenant.
func forbidden(p auth.Principal, scope auth.Scope, tenant string) *httpx.APIError {
	msg := fmt.Sprintf("token %s lacks scope %s", p.Name, scope)
	if tenant != "" && !p.SeesTenant(tenant) {
		msg = fmt.Sprintf("token %s is bound to tenant %q, not %q", p.Name, p.Tenant, tenant)
	}
	return &httpx.APIError{Status: http.StatusForbidden, Code: httpx.CodeForbidden, Message: msg}
}

// plain adapts an http.HandlerFunc that needs nothing of the wrapper.
func plain(h http.HandlerFunc) handler {
	return func(w http.ResponseWriter, r *http.Request, _ *call) { h(w, r) }
}

// setReadHeaders adds Strata-Index, Strata-Last-Contact and Strata-Leader.
func (sv *Server) setReadHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set(api.HeaderIndex, strconv.FormatUint(sv.cfg.Ledger.AppliedIndex(), 10))
	h.Set(api.HeaderLastContact, strconv.FormatInt(sv.lastContact().Milliseconds(), 10))
	h.Set(api.HeaderLeader, sv.cfg.Consensus.Leader().ID)
}

// lastContact is how long ago this node heard from its leader (group.Never
// when it never did).
func (sv *Server) lastContact() time.Duration { return sv.cfg.Consensus.LastContact() }
