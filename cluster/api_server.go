package cluster

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
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
	writeError(w, &APIError{Status: http.StatusMethodNotAllowed, Code: CodeBadRequest,
		Message: fmt.Sprintf("method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(allowed, ", "))})
}

func (n *Node) routes() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern string, rt route) { mux.Handle(pattern, n.instrument(pattern, rt)) }
	handle("/livez", route{"GET": n.handleLivez})
	handle("/readyz", route{"GET": n.handleReadyz})
	mux.Handle("/metrics", promhttp.HandlerFor(n.reg, promhttp.HandlerOpts{Registry: n.reg}))

	handle("/v1/jobs", route{"POST": n.handleSubmitJob, "GET": n.handleListJobs})
	handle("/v1/jobs/{id}", route{"GET": n.handleGetJob})
	handle("/v1/jobs/{id}/cancel", route{"POST": n.handleCancelJob})
	handle("/v1/jobs/{id}/events", route{"GET": n.handleJobEvents})
	handle("/v1/jobs/{id}/watch", route{"GET": n.handleWatchJob})
	handle("/v1/events:batch", route{"POST": n.handleEventsBatch})
	handle("/v1/jobs/{id}/workflows", route{"GET": n.handleJobWorkflows})
	handle("/v1/chain/verify", route{"GET": n.handleVerifyChain})

	handle("/v1/workers", route{"POST": n.handleRegisterWorker})
	handle("/v1/workers/{id}", route{"DELETE": n.handleDeregisterWorker})
	handle("/v1/workers/{id}/heartbeat", route{"POST": n.handleHeartbeat})
	handle("/v1/workers/{id}/leases", route{"GET": n.handleLeases})
	handle("/v1/workers/{id}/progress", route{"POST": n.handleProgress})
	handle("/v1/workers/{id}/complete", route{"POST": n.handleCompleteWorkflow})
	handle("/v1/workers/{id}/fail", route{"POST": n.handleFailWorkflow})

	handle("/v1/cluster/members", route{"GET": n.handleMembers})
	handle("/v1/cluster/raft", route{"GET": n.handleRaft})
	handle("/v1/cluster/raft/join", route{"POST": n.operator(n.handleJoin)})
	handle("/v1/cluster/raft/peers/{id}", route{"DELETE": n.operator(n.handleRemovePeer)})
	handle("/v1/cluster/raft/transfer-leadership", route{"POST": n.operator(n.handleTransfer)})
	if n.cfg.EnableFaultInjection {
		faults := faultnet.Handler(n.faults)
		handle("/v1/debug/faults", route{
			"GET": n.operator(faults.ServeHTTP),
			"PUT": n.operator(faults.ServeHTTP),
		})
	}
	for path, h := range n.peers.Routes() {
		handle(path, route{"POST": h})
	}
	// pprof, operator only (DESIGN §12: profiles on the admin listener).
	mux.Handle("/debug/pprof/", n.operator(pprof.Index))
	mux.Handle("/debug/pprof/profile", n.operator(pprof.Profile))
	mux.Handle("/debug/pprof/trace", n.operator(pprof.Trace))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &APIError{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no such endpoint: " + r.URL.Path})
	})
	return mux
}

// listenHTTP listens on http_addr, through the fault layer, so a
// partition cuts node-to-node calls in both directions (clients on other
// addresses are not affected).
func (n *Node) listenHTTP() error {
	ln, err := net.Listen("tcp", n.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("http listen: %w", err)
	}
	n.ln = n.faults.WrapListener(ln)
	return nil
}

// serveHTTP serves the API on the listener in the background.
func (n *Node) serveHTTP() {
	n.httpMetrics = newHTTPMetrics(n.reg)
	n.srv = &http.Server{Handler: n.routes(), ReadHeaderTimeout: httpReadHeaderTimeout}
	go func() {
		if err := n.srv.Serve(n.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("http server stopped", "err", err)
		}
	}()
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

func (n *Node) instrument(routeName string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				n.log.Error("http handler panic", "route", routeName, "panic", v)
				if sw.status == 0 {
					writeError(sw, &APIError{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error"})
				}
			}
			n.httpMetrics.requests.WithLabelValues(routeName, r.Method, strconv.Itoa(sw.status)).Inc()
			n.httpMetrics.seconds.WithLabelValues(routeName).Observe(time.Since(start).Seconds())
		}()
		h.ServeHTTP(sw, r)
	})
}

// stampOwn fills in what this node sets on an event it originates: a
// fresh id, its name, an HLC reading, and its region unless e has one.
func (n *Node) stampOwn(e *fsm.Event) error {
	ts, err := n.clock.Now()
	if err != nil {
		return err
	}
	e.ID, e.Node, e.HLC = randomEventID(), n.cfg.NodeID, ts
	if e.Region == "" {
		e.Region = n.cfg.Region
	}
	return nil
}

// submitOwn submits one event this node originates (e carries its type,
// body and job fields): it stamps it (stampOwn), validates it and submits
// it at level. On failure it writes the error and returns false.
func (n *Node) submitOwn(w http.ResponseWriter, r *http.Request, level commit.Durability, e fsm.Event) (commit.SubmitResult, hlc.Timestamp, bool) {
	if err := n.stampOwn(&e); err != nil {
		writeError(w, err)
		return commit.SubmitResult{}, e.HLC, false
	}
	if err := e.Validate(); err != nil {
		writeError(w, eventError(err))
		return commit.SubmitResult{}, e.HLC, false
	}
	res, err := n.pipe.Submit(r.Context(), []fsm.Event{e}, level)
	if err != nil {
		writeError(w, submitError(err, res))
		return res, e.HLC, false
	}
	return res, e.HLC, true
}

// principal authenticates r; on failure it writes the 401 and returns false.
func (n *Node) principal(w http.ResponseWriter, r *http.Request) (auth.Principal, bool) {
	p, err := n.auth.Authenticate(r)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="strata"`)
		writeError(w, &APIError{Status: http.StatusUnauthorized, Code: CodeUnauthenticated, Message: err.Error()})
		return auth.Principal{}, false
	}
	return p, true
}

// forbidden is the 403 of a token lacking scope on tenant.
func forbidden(p auth.Principal, scope auth.Scope, tenant string) *APIError {
	msg := fmt.Sprintf("token %s lacks scope %s", p.Name, scope)
	if tenant != "" && !p.SeesTenant(tenant) {
		msg = fmt.Sprintf("token %s is bound to tenant %q, not %q", p.Name, p.Tenant, tenant)
	}
	return &APIError{Status: http.StatusForbidden, Code: CodeForbidden, Message: msg}
}

// operator wraps an operator-only handler.
func (n *Node) operator(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, ok := n.principal(w, r)
		if !ok {
			return
		}
		if !p.Allows(auth.ScopeOperator, auth.AllTenants) {
			writeError(w, forbidden(p, auth.ScopeOperator, ""))
			return
		}
		h(w, r)
	}
}

// setReadHeaders adds Strata-Index, Strata-Last-Contact and Strata-Leader.
func (n *Node) setReadHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set(api.HeaderIndex, strconv.FormatUint(n.ledger.AppliedIndex(), 10))
	h.Set(api.HeaderLastContact, strconv.FormatInt(n.lastContact().Milliseconds(), 10))
	h.Set(api.HeaderLeader, n.raft.Leader().ID)
}

// lastContact is how long ago this node heard from its leader (group.Never
// when it never did).
func (n *Node) lastContact() time.Duration { return n.raft.LastContact() }
