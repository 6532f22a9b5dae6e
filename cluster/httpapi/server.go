// Package httpapi is the HTTP API v1 of a gate or manager (DESIGN §9,
// docs/API.md): routes and handlers. A handler decodes the request, calls
// what the node gave it through the interfaces below, and encodes the
// answer; the role decides, once per route, whether a call is served here
// or forwarded (a manager forwards job calls to a gate of its region, a
// gate forwards workflow and worker calls to a manager).
//
// What it owns: the routes, the HTTP metrics (strata_http_*), the
// idempotency claims of submits in flight on this gate, and the count of
// watch streams. It stores nothing else: the ledger, the pipeline, the Raft
// group and the lifecycle are the node's.
//
// Invariants: every request body and header is bounded before it is
// decoded; a bad request changes nothing; an answer never names another
// tenant's data; internal calls (/internal/v1/*) are the peers' own and
// authenticate with the cluster token.
//
// The request path (issue 19): the two hot writes, a one-event batch and a
// submit, answer without encoding/json (answer.go) and a submit's usual
// body is read by fsm's one-pass reader (jobs_decode.go), both checked to
// give encoding/json's bytes and decodes; metric children are cached per
// route (route_metrics.go) and a query is parsed only when it must be
// (query.go). BenchmarkRequestPath measures it.
//
// Concurrency: the Server serves requests concurrently once Serve runs;
// Close ends watch streams and the server.
//
// What it does not do: it never imports the consensus or gossip libraries
// (the Raft group answers through Consensus, gossip through Members), it
// never retries a write (the pipeline does), and it does not decide a job's
// lifecycle (the lifecycle reconcilers do).
package httpapi

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/decisive"
	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/lifecycle"
	"github.com/strata-ledger/strata/cluster/members"
	"github.com/strata-ledger/strata/cluster/tracing"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/faultnet"
	"github.com/strata-ledger/strata/transport/gossip"
	"github.com/strata-ledger/strata/wal"
)

// Server limits (DESIGN §13): a slow or idle client holds a socket and a
// goroutine only so long, and never more than MaxConnections at once.
const (
	// readHeaderTimeout bounds a client's request headers.
	readHeaderTimeout = 10 * time.Second
	// idleTimeout closes a keep-alive connection with no request.
	idleTimeout = 2 * time.Minute
	// MaxHeaderBytes bounds a request's line and headers (431 beyond).
	MaxHeaderBytes = 64 << 10
	// MaxConnections bounds the connections one listener serves at once;
	// a connection beyond waits in the kernel's backlog until one closes.
	MaxConnections = 4096
	// bodyReadTimeout bounds reading a request's body, from the end of its
	// headers (deadline.go): a body of httpx.MaxRequestBytes (1 MiB) at
	// 35 KiB/s, far below any real client's rate, so only a client that
	// trickles its body on purpose is cut off (408, the connection closed).
	bodyReadTimeout = 30 * time.Second
	// writeTimeout bounds an ordinary request from the end of its headers
	// to the end of its answer, so a client that stops reading frees its
	// connection. The slowest ordinary call is one forwarded to another
	// node (peer.CallTimeout, 15 s, which there may wait out a membership
	// change or a session read); a minute leaves room for that. Watch
	// streams, lease long-polls and pprof profiles extend it for
	// themselves (deadline.go).
	writeTimeout = time.Minute
)

// Writer submits events at a durability level (the commit pipeline).
type Writer interface {
	Submit(ctx context.Context, events []fsm.Event, level commit.Durability) (commit.SubmitResult, error)
	// QueueFill is the pipeline's fill, 0..1: workers' backpressure.
	QueueFill() float64
	// Watermark is the highest LSN below which every record reached its tier.
	Watermark() wal.LSN
}

// Consensus is what reads and operator calls ask of the node's Raft group.
type Consensus interface {
	IsLeader() bool
	Leader() group.Leader
	LastContact() time.Duration
	// ConfirmLeadership is a strong read's read index.
	ConfirmLeadership(ctx context.Context) error
	Status() group.Status
	Servers() ([]group.Server, error)
	HasServer(id string) (bool, error)
	AddServer(id, addr string, voter bool, timeout time.Duration) (uint64, error)
	RemoveServer(id string, timeout time.Duration) (uint64, error)
	TransferLeadership(to string) error
	RestoreSnapshot(index uint64, size int64, r io.Reader, timeout time.Duration) error
}

// Applied is the ledger's applied index with a broadcast on advance.
type Applied interface {
	Wait(ctx context.Context, index uint64) error
	Current() (uint64, <-chan struct{})
}

// Store opens one consistent read view of the ledger.
type Store interface {
	View(fn func(fsm.ReadTx) error) error
}

// Members is what the API reads of gossip: the cluster's members, to
// forward calls and to know which regions exist.
type Members interface {
	Members() []members.Member
	Lookup(nodeID string) (members.Member, bool)
}

// AntiEntropy is the cluster's anti-entropy status as a gate gathers it;
// run has every region's leader run a round first.
type AntiEntropy interface {
	Status(ctx context.Context, run bool) (api.AntiEntropyStatus, error)
}

// Peers are the node-to-node calls: their client (to forward a client's
// call) and their internal routes.
type Peers interface {
	HTTPClient() *http.Client
	Routes() map[string]http.HandlerFunc
}

// Workers is the lifecycle's state the worker API reads and renews.
type Workers interface {
	Touch(worker string)
	Forget(worker string)
	LeaseView(ctx context.Context, index uint64) *lifecycle.View
	ForwarderStatus() (api.ForwarderStatus, bool)
}

// DataPlane is the manager's progress receiver as the worker API sees it
// (cluster/wire_dataplane.go).
type DataPlane interface {
	// Access returns the data-plane access of worker's registration,
	// whose identity is its join HLC: addresses, key id and key.
	Access(worker string, joined hlc.Timestamp) api.DataPlaneAccess
	// QueueFill is the receive queue's fill, 0 to 1 (backpressure).
	QueueFill() float64
	// Status is the receiver's running totals (GET /v1/cluster/raft).
	Status() api.DataPlaneStatus
}

// Live is a gate's memory of jobs' live statistics (cluster/livestats).
type Live interface {
	// Live returns job's live figures by region, nil when none is fresh.
	Live(job string) api.JobLive
}

// WALStatus is the NodeWAL's positions, for GET /v1/cluster/raft.
type WALStatus interface {
	Watermarks() wal.Watermarks
	LastLSN() wal.LSN
}

// Config is everything the API needs. Every field is required but
// Logger, JobIDs (gates only) and Closing.
type Config struct {
	NodeID string
	Role   gossip.Role
	Region string
	// Group names the node's Raft group in session tokens.
	Group string
	// Tier is the durability the node's writes reach.
	Tier commit.Durability

	MaxStaleness    time.Duration // default of bounded reads
	SessionWait     time.Duration // how long a session read waits
	WorkerAckWindow time.Duration // told to workers at registration
	// ClusterToken authenticates the hops of calls nodes forward to each
	// other (hops.go).
	ClusterToken string
	// EnableFaultInjection serves /v1/debug/faults (operator only).
	EnableFaultInjection bool

	Auth      *auth.Authenticator
	Ledger    *fsm.Ledger
	Store     Store
	Applied   Applied
	Writer    Writer
	Consensus Consensus
	Members   Members
	Peers     Peers
	Workers   Workers
	// DataPlane is the manager's progress receiver; nil when the node
	// has none (gates, a manager without data_plane_addr).
	DataPlane DataPlane
	// Live is a gate's live statistics, nil on managers: GET
	// /v1/jobs/{id} and watches add them to the job (stats at NONE).
	Live Live
	// Decisive keeps a gate leader's cancels apart from its reconciler's
	// completions of the same job (cluster/decisive); nil on managers.
	Decisive *decisive.Jobs
	WAL      WALStatus
	Stamper  *commit.Stamper
	JobIDs   *fsm.JobIDGenerator
	Faults   *faultnet.Faults
	// Registry serves /metrics and takes the HTTP metrics.
	Registry *prometheus.Registry
	Logger   *slog.Logger
	// Closing reports that the node is shutting down (/readyz).
	Closing func() bool
	// AntiEntropy gathers the cluster's anti-entropy status (gates; nil
	// on managers, which forward the calls to a gate).
	AntiEntropy AntiEntropy
	// SigningKey, if set, signs exported bundles and chain checkpoints.
	SigningKey ed25519.PrivateKey
	// LedgerCheck, if set, says why this node's ledger must not be
	// served ("" when it may): not yet checked against its group, or
	// found divergent (cluster/replica). /readyz fails and reads are
	// refused while it says so.
	LedgerCheck func() string
	// TLS, if set, is the listener's TLS config (security.go): the API
	// is served over TLS only, and internal calls must also present a
	// client certificate the config verified.
	TLS *tls.Config
	// Security reports the node's security posture (GET
	// /v1/cluster/status); nil: not served.
	Security func() api.SecurityStatus
	// Keyring runs gossip keyring operations cluster-wide (gates); nil:
	// not served.
	Keyring Keyring
	// Tracer records a server span per request (nil: off).
	Tracer *tracing.Tracer
	// RateLimit is the per-token API rate limit (issue 18); zero: off.
	RateLimit RateLimit
}

// Server serves the API.
type Server struct {
	cfg     Config
	log     *slog.Logger
	jobs    *Jobs
	watches watchSet
	// timeouts are the per-request deadlines (nil: the defaults; tests
	// lower them with SetTimeouts).
	timeouts atomic.Pointer[Timeouts]
	metrics  *httpMetrics
	rate     *rateLimiter // per-token API rate limit and throttling metrics
	bundles  *bundleMetrics
	workerM  *workerMetrics // heartbeats' lease extensions, reported failures (worker_metrics.go)
	srv      *http.Server

	ctx    context.Context // ends at Close or Shutdown: watch streams
	cancel context.CancelFunc
}

// New returns a Server; Serve serves it.
func New(cfg Config) (*Server, error) {
	if cfg.Auth == nil || cfg.Ledger == nil || cfg.Store == nil || cfg.Applied == nil || cfg.Writer == nil ||
		cfg.Consensus == nil || cfg.Members == nil || cfg.Peers == nil || cfg.Workers == nil || cfg.WAL == nil ||
		cfg.Stamper == nil || cfg.ClusterToken == "" || cfg.Faults == nil || cfg.Registry == nil {
		return nil, errors.New("cluster: httpapi: a required dependency is missing")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Closing == nil {
		cfg.Closing = func() bool { return false }
	}
	sv := &Server{cfg: cfg, log: cfg.Logger,
		metrics: newHTTPMetrics(cfg.Registry), bundles: newBundleMetrics(cfg.Registry)}
	sv.jobs = &Jobs{cfg: &sv.cfg, idem: newIdempotencyCache(idempotencyCacheEntries), gov: newGovernor()}
	sv.rate = newRateLimiter(cfg.RateLimit, cfg.Registry)
	sv.workerM = newWorkerMetrics(cfg.Registry, cfg.Role != RoleGate)
	if cfg.Role == RoleGate {
		cfg.Registry.MustRegister(newQuotaCollector(cfg.Ledger)) // quota usage per tenant (gov_metrics.go)
	}
	sv.ctx, sv.cancel = context.WithCancel(context.Background())
	// No ReadTimeout or WriteTimeout here: the deadlines of a request's
	// body and answer are set per request (deadline.go), which lets
	// streams and long-polls extend theirs.
	sv.srv = &http.Server{Handler: sv.deadlines(sv.requirePeerCert(sv.routes())), ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: idleTimeout,
		MaxHeaderBytes: MaxHeaderBytes}
	sv.srv.RegisterOnShutdown(sv.cancel)
	return sv, nil
}

// Serve serves the API on ln in the background, at most MaxConnections
// connections at once.
func (sv *Server) Serve(ln net.Listener) {
	ln = limitListener(ln, MaxConnections)
	if sv.cfg.TLS != nil {
		ln = tls.NewListener(ln, sv.cfg.TLS)
	}
	go func() {
		if err := sv.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			sv.log.Error("http server stopped", "err", err)
		}
	}()
}

// Shutdown stops taking requests, ends watch streams and waits for the
// requests in flight, until ctx ends.
func (sv *Server) Shutdown(ctx context.Context) error { return sv.srv.Shutdown(ctx) }

// Close stops the server at once.
func (sv *Server) Close() error {
	sv.cancel()
	err := sv.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
