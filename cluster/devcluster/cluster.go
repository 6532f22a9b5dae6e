package devcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/strata-ledger/strata/cluster"
	"github.com/strata-ledger/strata/transport/api"
)

// Defaults and bounds of the launcher.
const (
	// DefaultStopTimeout is how long a node may drain after SIGTERM
	// (leadership transfer, WAL sync) before it is killed.
	DefaultStopTimeout = 20 * time.Second
	// readyPollInterval paces /readyz polls; readyRequestTimeout bounds one.
	readyPollInterval   = 100 * time.Millisecond
	readyRequestTimeout = time.Second
)

// Errors callers branch on.
var (
	// ErrUnknownNode: the id names no planned node or worker.
	ErrUnknownNode = errors.New("unknown node")
	ErrRunning     = errors.New("node is running")
	ErrNotRunning  = errors.New("node is not running")
	// ErrExited is wrapped by WaitReady and Start when a node's process
	// exits before it is ready.
	ErrExited = errors.New("node process exited")
)

// Config is what New needs.
type Config struct {
	Options Options
	// Binary is the strata executable; each node runs as
	// `Binary agent --config DATA/<node_id>/agent.yaml`, each worker as
	// `Binary worker --manager ... --id <worker_id>` (WorkerSpec.Args).
	Binary string
	// Env is added to every node's environment (the launcher's own,
	// without STRATA_ variables, which would override agent.yaml). A
	// race-enabled binary wants GORACE=atexit_sleep_ms=0, or every exit
	// takes a second longer.
	Env []string
	// StopTimeout bounds a node's drain after SIGTERM; default
	// DefaultStopTimeout.
	StopTimeout time.Duration
	// OnExit, if set, is called from a background goroutine when a node
	// or worker exits without Kill, Stop, Restart or StopAll asking it to.
	OnExit func(Exit)
}

// Exit describes a node or worker process that ended.
type Exit struct {
	NodeID  string // the node's or the worker's id
	Status  string // "exit status 1", "signal: killed", ...
	LogPath string
}

// Cluster runs the planned nodes as child processes. It is safe for
// concurrent use.
type Cluster struct {
	cfg        Config
	opts       Options // defaults applied, DataDir absolute, tokens set
	specs      []NodeSpec
	byID       map[string]NodeSpec
	workers    []WorkerSpec
	workerByID map[string]WorkerSpec
	env        []string
	tls        *api.ClusterTLS // nil: the nodes serve plain HTTP
	client     *http.Client    // polls /readyz, over TLS when the nodes serve it
	mu         sync.Mutex
	running    map[string]*process // the last process of each node and worker started
	// overrides change a node's planned config at its next start
	// (Reconfigure); guarded by mu.
	overrides map[string]func(*cluster.NodeConfig)
}

// New plans the cluster of cfg.Options in its data directory: it creates
// the directory, loads its tokens or creates them (from Options.Token and
// Options.ClusterToken where set, else random), refuses a directory holding
// another cluster shape or run with another TLS setting, checks the
// planned loopback IPs can be bound and, with TLS, makes or reuses the
// certificates and gossip key (pki.go). It starts nothing.
func New(cfg Config) (*Cluster, error) {
	if cfg.Binary == "" {
		return nil, fmt.Errorf("%w: agent binary is required", ErrBadOptions)
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	o := cfg.Options.withDefaults()
	if err := o.validate(false); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data dir %q: %w", o.DataDir, err)
	}
	o.DataDir = dir
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	if err := checkTLSMode(dir, o.TLS); err != nil {
		return nil, err
	}
	sec, err := loadSecrets(dir, secrets{Token: o.Token, ClusterToken: o.ClusterToken}, o.TLS)
	if err != nil {
		return nil, err
	}
	o.Token, o.ClusterToken, o.GossipKey = sec.Token, sec.ClusterToken, sec.GossipKey
	// The shape is checked on the plan without TLS: with it, Plan needs
	// the certificates, which are only made once the shape is right.
	bare := o
	bare.TLS, bare.GossipKey = false, ""
	specs, err := Plan(bare)
	if err != nil {
		return nil, err
	}
	if err := checkShape(dir, specs); err != nil {
		return nil, err
	}
	if err := checkIPs(specs); err != nil {
		return nil, err
	}
	var tlsFiles *api.ClusterTLS
	if o.TLS {
		if err := ensurePKI(dir, specs, time.Now()); err != nil {
			return nil, err
		}
		if specs, err = Plan(o); err != nil {
			return nil, err
		}
		tlsFiles = clusterTLS(dir)
	}
	hc, err := readyClient(tlsFiles)
	if err != nil {
		return nil, err
	}
	workers, err := PlanWorkers(o)
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		cfg:        cfg,
		opts:       o,
		specs:      specs,
		byID:       make(map[string]NodeSpec, len(specs)),
		workers:    workers,
		workerByID: make(map[string]WorkerSpec, len(workers)),
		env:        nodeEnv(os.Environ(), cfg.Env),
		tls:        tlsFiles,
		client:     hc,
		running:    make(map[string]*process, len(specs)+len(workers)),
	}
	for _, s := range specs {
		c.byID[s.ID()] = s
	}
	for _, w := range workers {
		c.workerByID[w.ID] = w
	}
	return c, nil
}

// Nodes returns the plan, gates first, region by region.
func (c *Cluster) Nodes() []NodeSpec {
	out := make([]NodeSpec, len(c.specs))
	copy(out, c.specs)
	return out
}

// Node returns one node's plan.
func (c *Cluster) Node(id string) (NodeSpec, error) {
	s, ok := c.byID[id]
	if !ok {
		return NodeSpec{}, fmt.Errorf("%w: %q", ErrUnknownNode, id)
	}
	return s, nil
}

// Workers returns the planned workers, region by region.
func (c *Cluster) Workers() []WorkerSpec {
	out := make([]WorkerSpec, len(c.workers))
	copy(out, c.workers)
	return out
}

// Worker returns one worker's plan.
func (c *Cluster) Worker(id string) (WorkerSpec, error) {
	w, ok := c.workerByID[id]
	if !ok {
		return WorkerSpec{}, fmt.Errorf("%w: worker %q", ErrUnknownNode, id)
	}
	return w, nil
}

// known checks that id names a planned node or worker.
func (c *Cluster) known(id string) error {
	if _, ok := c.workerByID[id]; ok {
		return nil
	}
	_, err := c.Node(id)
	return err
}

// Token is the API token, bound to all tenants with every scope.
func (c *Cluster) Token() string { return c.opts.Token }

// DataDir is the cluster's absolute data directory.
func (c *Cluster) DataDir() string { return c.opts.DataDir }

// ClusterFilePath is where cluster.json is written.
func (c *Cluster) ClusterFilePath() string { return filepath.Join(c.opts.DataDir, clusterFileName) }

// PID is the process id of a running node or worker, or 0.
func (c *Cluster) PID(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.running[id]; p != nil && !p.exited() {
		return p.cmd.Process.Pid
	}
	return 0
}

// Start starts every node that is not running, records cluster.json, then
// waits until every node reports ready, bounded by ctx; then it starts
// every worker that is not running (workers need their managers). If a
// node exits before it is ready, Start returns at once with ErrExited. On
// error the processes already started keep running: call StopAll.
func (c *Cluster) Start(ctx context.Context) error {
	// A port in use fails the start before any node runs.
	for _, s := range c.specs {
		if c.PID(s.ID()) == 0 {
			if err := checkPortsFree(s); err != nil {
				return err
			}
		}
	}
	for _, s := range c.specs {
		if err := c.StartNode(s.ID()); err != nil && !errors.Is(err, ErrRunning) {
			return err
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(c.specs))
	var wg sync.WaitGroup
	for i, s := range c.specs {
		wg.Go(func() {
			errs[i] = c.WaitReady(wctx, s.ID())
			if errors.Is(errs[i], ErrExited) {
				cancel() // the others may never be ready without it
			}
		})
	}
	wg.Wait()
	var exited []error
	for _, err := range errs {
		if errors.Is(err, ErrExited) {
			exited = append(exited, err)
		}
	}
	if len(exited) > 0 {
		return errors.Join(exited...)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, w := range c.workers {
		if err := c.StartNode(w.ID); err != nil && !errors.Is(err, ErrRunning) {
			return err
		}
	}
	return nil
}

// Reconfigure changes node id's config from its next start on (nil
// change: back to the plan): how a test gives one node a setting the
// others do not have. Addresses and directories must not change.
func (c *Cluster) Reconfigure(id string, change func(*cluster.NodeConfig)) error {
	if _, err := c.Node(id); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.overrides == nil {
		c.overrides = map[string]func(*cluster.NodeConfig){}
	}
	c.overrides[id] = change
	return nil
}

// StartNode starts a node or a worker by id. A node's config is written
// first; StartNode does not wait for readiness (WaitReady). It returns
// ErrRunning if the process runs.
func (c *Cluster) StartNode(id string) error {
	if w, ok := c.workerByID[id]; ok {
		return c.startWorker(w)
	}
	s, err := c.Node(id)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.running[id]; p != nil && !p.exited() {
		return fmt.Errorf("start %s: %w (pid %d)", id, ErrRunning, p.cmd.Process.Pid)
	}
	if change := c.overrides[id]; change != nil {
		change(&s.Config)
	}
	if err := prepareNodeDir(s); err != nil {
		return err
	}
	if err := checkPortsFree(s); err != nil {
		return err
	}
	p, err := startProcess(c.cfg.Binary, []string{"agent", "--config", s.ConfigPath}, c.env, "node "+id, s.Dir, s.LogPath)
	if err != nil {
		return err
	}
	c.running[id] = p
	go c.watch(id, p)
	return c.writeClusterFileLocked()
}

// startWorker starts w's process with its own token (WorkerToken) in its
// environment.
func (c *Cluster) startWorker(w WorkerSpec) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.running[w.ID]; p != nil && !p.exited() {
		return fmt.Errorf("start %s: %w (pid %d)", w.ID, ErrRunning, p.cmd.Process.Pid)
	}
	if err := os.MkdirAll(w.Dir, dirMode); err != nil {
		return fmt.Errorf("worker %s: %w", w.ID, err)
	}
	env := append(slices.Clone(c.env), workerTokenEnv+"="+WorkerToken(c.opts.Token, w.ID))
	if c.tls != nil { // its managers serve https
		env = append(env, workerCAFileEnv+"="+c.tls.CAFile)
	}
	p, err := startProcess(c.cfg.Binary, w.Args(), env, "worker "+w.ID, w.Dir, w.LogPath)
	if err != nil {
		return err
	}
	c.running[w.ID] = p
	go c.watch(w.ID, p)
	return c.writeClusterFileLocked()
}

// prepareNodeDir creates the node's directories and writes its config.
func prepareNodeDir(s NodeSpec) error {
	if err := os.MkdirAll(s.Config.DataDir, dirMode); err != nil {
		return fmt.Errorf("node %s: %w", s.ID(), err)
	}
	b, err := encodeNodeConfig(s.Config)
	if err != nil {
		return err
	}
	return writeFileAtomic(s.ConfigPath, b)
}

// watch reports p's exit through OnExit unless the launcher asked for it.
func (c *Cluster) watch(id string, p *process) {
	<-p.done
	c.mu.Lock()
	expected := p.stopping
	c.mu.Unlock()
	if !expected && c.cfg.OnExit != nil {
		c.cfg.OnExit(Exit{NodeID: id, Status: p.status(), LogPath: p.logPath})
	}
}

// WaitReady polls the node's /readyz until it answers 200. It fails with
// ErrExited if the process ends first, or with ctx's error. A worker
// serves no endpoint: it is ready while its process runs (it registers,
// and retries, on its own).
func (c *Cluster) WaitReady(ctx context.Context, id string) error {
	if err := c.known(id); err != nil {
		return err
	}
	c.mu.Lock()
	p := c.running[id]
	c.mu.Unlock()
	if p == nil {
		return fmt.Errorf("wait for %s: %w", id, ErrNotRunning)
	}
	if _, ok := c.workerByID[id]; ok {
		if p.exited() {
			return fmt.Errorf("worker %s: %w (%s); log: %s", id, ErrExited, p.status(), p.logPath)
		}
		return nil
	}
	base, _ := c.URL(id)
	url := base + "/readyz"
	tick := time.NewTicker(readyPollInterval)
	defer tick.Stop()
	var last error
	for {
		err := c.ready(ctx, url)
		if err == nil {
			return nil
		}
		// A poll cut by ctx itself says nothing new: keep the answer before.
		if last == nil || ctx.Err() == nil {
			last = err
		}
		select {
		case <-p.done:
			return fmt.Errorf("node %s: %w before it was ready (%s); log: %s", id, ErrExited, p.status(), p.logPath)
		case <-ctx.Done():
			return fmt.Errorf("node %s not ready: %w (last: %v); log: %s", id, ctx.Err(), last, p.logPath)
		case <-tick.C:
		}
	}
}

func (c *Cluster) ready(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// Kill sends SIGKILL to the node or worker and waits for it to exit. One
// that is not running is left alone.
func (c *Cluster) Kill(id string) error {
	p, err := c.markStopping(id)
	if err != nil || p == nil {
		return err
	}
	if err := p.signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %s: %w", id, err)
	}
	if !p.wait(killWaitTimeout) {
		return fmt.Errorf("kill %s: still running %v after SIGKILL", id, killWaitTimeout)
	}
	return nil
}

// Stop sends SIGTERM so the node drains (a worker deregisters), waits up
// to the stop timeout, then kills it. It reports a node that had to be
// killed or that exited with an error; either way the node is stopped
// when it returns nil or such an error. A node that is not running is
// left alone.
func (c *Cluster) Stop(id string) error {
	p, err := c.markStopping(id)
	if err != nil || p == nil {
		return err
	}
	if err := p.signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop %s: %w", id, err)
	}
	if p.wait(c.cfg.StopTimeout) {
		if !stoppedCleanly(p.state) {
			return fmt.Errorf("stop %s: %s; log: %s", id, p.status(), p.logPath)
		}
		return nil
	}
	if err := p.signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("stop %s: %w", id, err)
	}
	if !p.wait(killWaitTimeout) {
		return fmt.Errorf("stop %s: still running %v after SIGKILL", id, killWaitTimeout)
	}
	return fmt.Errorf("stop %s: no exit within %v of SIGTERM, killed; log: %s", id, c.cfg.StopTimeout, p.logPath)
}

// stoppedCleanly accepts exit status 0 and death by SIGTERM: a node
// signalled before it installed its handler dies of the signal it was sent.
func stoppedCleanly(st *os.ProcessState) bool {
	if st == nil { // Wait failed before the process was reaped
		return false
	}
	if st.Success() {
		return true
	}
	ws, ok := st.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM
}

// markStopping returns the node's running process, marked so its exit is
// not reported, or nil if the node is not running.
func (c *Cluster) markStopping(id string) (*process, error) {
	if err := c.known(id); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.running[id]
	if p == nil || p.exited() {
		return nil, nil
	}
	p.stopping = true
	return p, nil
}

// Restart stops the node (Stop) and starts it again (StartNode) without
// waiting for readiness. A Stop that had to kill is reported alongside.
func (c *Cluster) Restart(id string) error {
	stopErr := c.Stop(id)
	if c.PID(id) != 0 {
		return stopErr
	}
	return errors.Join(stopErr, c.StartNode(id))
}

// StopAll stops every running worker, then every running node, each group
// in parallel (Stop), so the whole cluster takes two stop timeouts rather
// than one per process. Workers go first: they deregister with their
// managers, which hand their leases back at once.
func (c *Cluster) StopAll() error {
	ids := make([]string, 0, len(c.workers))
	for _, w := range c.workers {
		ids = append(ids, w.ID)
	}
	errs := []error{c.stopEach(ids)}
	ids = ids[:0]
	for _, s := range c.specs {
		ids = append(ids, s.ID())
	}
	return errors.Join(append(errs, c.stopEach(ids))...)
}

// stopEach stops the ids in parallel.
func (c *Cluster) stopEach(ids []string) error {
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { errs[i] = c.Stop(id) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ClusterFile describes the cluster as cluster.json does; a node or worker
// that is not running has pid 0.
func (c *Cluster) ClusterFile() api.ClusterFile {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clusterFileLocked()
}

func (c *Cluster) clusterFileLocked() api.ClusterFile {
	pids := make(map[string]int, len(c.running))
	for id, p := range c.running {
		if !p.exited() {
			pids[id] = p.cmd.Process.Pid
		}
	}
	return clusterFileOf(c.opts.DataDir, c.opts.Token, c.TLS(), c.specs, c.workers, pids)
}

// WriteClusterFile writes ClusterFile to DATA/cluster.json (0600: it holds
// the token). Start and StartNode do so themselves.
func (c *Cluster) WriteClusterFile() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writeClusterFileLocked()
}

func (c *Cluster) writeClusterFileLocked() error {
	b, err := json.MarshalIndent(c.clusterFileLocked(), "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(c.ClusterFilePath(), append(b, '\n'))
}
