package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/progress"
)

// A run of `strata bench progress`, in order:
//
//  1. Workers simulated workers register with the managers of the region
//     over HTTP exactly as the reference worker does (POST /v1/workers)
//     and heartbeat until the end; each receives its data-plane key.
//  2. A job of Workflows workflows in the region is submitted; the bench
//     waits until the region has leased them all, and drives those leased
//     to its workers (a workflow another worker took is left alone and
//     counted in workflows_elsewhere).
//  3. For Duration, each worker sends rounds: every workflow's counters go
//     up (completed by one, failed by one every eighth round) and are
//     sent, as data-plane frames through transport/progress's Encoder (UDP
//     or TCP, damaged first by the Injector if asked) or as HTTP progress
//     calls of up to 1,000 updates at durability local.
//  4. It reads the managers' metrics and the kernel's UDP counters before
//     and after, then waits (bounded) until the regional ledger holds
//     exactly the last counters of every workflow, resending them every
//     dataPlaneResendInterval as the reference worker does (lost frames
//     are repaired by the next one: the counters are cumulative).
//  5. It cancels the job and deregisters the workers.
//
// Nothing is left running: every goroutine ends before RunDataPlane
// returns.

// Timings of a data-plane run.
const (
	// dataPlaneResendInterval paces the resends while the bench waits for
	// the ledger: the reference worker's progress interval.
	dataPlaneResendInterval = 500 * time.Millisecond
	// dataPlanePollInterval paces reads of the ledger and of the queues.
	dataPlanePollInterval = 100 * time.Millisecond
	// dataPlaneQueueWait bounds the wait for the managers' receive queues
	// to empty after the load, before the metrics are read.
	dataPlaneQueueWait = 5 * time.Second
	// dataPlaneCleanupTimeout bounds the job cancel and deregistrations.
	dataPlaneCleanupTimeout = 10 * time.Second
	// dataPlaneFailEvery: failed goes up by one every this many rounds.
	dataPlaneFailEvery = 8
	// maxHTTPUpdates is the HTTP progress call's limit of updates
	// (httpapi.MaxProgressUpdates).
	maxHTTPUpdates = 1_000
	// dataPlaneSlack is added to the job's workflow duration and timeout
	// beyond the run's own bounds, so no workflow or job ends on its own.
	dataPlaneSlack = 10 * time.Minute
)

// DataPlaneProgress counts what a run sent so far; the progress bar reads it.
type DataPlaneProgress struct {
	Sent atomic.Int64 // updates
}

// simWorker is one simulated worker and, during the load, its goroutine's
// state.
type simWorker struct {
	id       string
	access   *api.DataPlaneAccess
	interval time.Duration // heartbeat interval
	updates  []progress.Update
	running  atomic.Pointer[[]api.RunningWorkflow] // what the heartbeats report

	enc     *progress.Encoder
	conn    net.Conn
	tcp     *bufio.Writer
	stream  []byte
	inj     *Injector
	injSt   InjectStats
	rounds  int64
	sent    int64 // updates put into frames or requests
	frames  int64 // frames written, or requests sent
	sendErr int64 // frames or requests that failed to leave or were refused
	acked   int64 // HTTP: updates acknowledged
	lastErr error
}

// RunDataPlane runs cfg (see the order above) and returns what it
// measured. It fails on a bad config, a registration refused, a job that
// is not leased in time, or unreadable metrics; an inexact ledger is a
// result (Exact false), not an error.
func RunDataPlane(ctx context.Context, cfg DataPlaneConfig) (*DataPlaneResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.Seed == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		cfg.Seed = binary.BigEndian.Uint64(b[:]) | 1
	}
	bases := make([]string, len(cfg.Addrs))
	for i, a := range cfg.Addrs {
		bases[i], _ = baseURL(a) // checked by Validate
	}
	hc := &http.Client{Timeout: cfg.RequestTimeout, Transport: &http.Transport{Proxy: nil,
		MaxIdleConnsPerHost: cfg.Workers + 4, DisableCompression: true, TLSClientConfig: cfg.TLS}}
	defer hc.CloseIdleConnections()
	if cfg.WaitReady > 0 {
		if err := waitReady(ctx, hc, TargetStrata, bases, cfg.WaitReady); err != nil {
			return nil, fmt.Errorf("bench progress: %w", err)
		}
	}
	cl, err := api.New(api.ClientConfig{Addrs: bases, Token: cfg.Token, Timeout: cfg.RequestTimeout, HTTPClient: hc})
	if err != nil {
		return nil, err
	}
	r := &dpRun{cfg: cfg, cl: cl, hc: hc, bases: bases}
	defer r.cleanup()
	return r.run(ctx)
}

// dpRun is one run's shared state.
type dpRun struct {
	cfg     DataPlaneConfig
	cl      *api.Client
	hc      *http.Client
	bases   []string
	workers []*simWorker
	jobID   string
	stopHB  context.CancelFunc
	hbWG    sync.WaitGroup
	hbLost  atomic.Int64 // heartbeats refused because the worker was unknown
}

func (r *dpRun) run(ctx context.Context) (*DataPlaneResult, error) {
	if err := r.register(ctx); err != nil {
		return nil, err
	}
	hbCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r.stopHB = stop
	for _, w := range r.workers {
		r.hbWG.Go(func() { r.heartbeat(hbCtx, w) })
	}
	elsewhere, err := r.submitAndLease(ctx)
	if err != nil {
		return nil, err
	}
	for _, w := range r.workers {
		if err := r.open(w); err != nil {
			return nil, err
		}
	}
	before, err := r.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	var prog DataPlaneProgress
	stopBar := startDataPlaneBar(r.cfg.Progress, &prog, r.cfg.Duration)
	start := time.Now()
	loadCtx, cancel := context.WithTimeout(ctx, r.cfg.Duration)
	var wg sync.WaitGroup
	for _, w := range r.workers {
		wg.Go(func() { r.load(loadCtx, w, &prog) })
	}
	wg.Wait()
	cancel()
	elapsed := time.Since(start)
	stopBar()
	in := dataPlaneInput{cfg: r.cfg, jobID: r.jobID, managers: r.bases, start: start, elapsed: elapsed}
	for _, w := range r.workers { // the load's counts, before the settle's resends
		in.workflows += len(w.updates)
		in.sent += w.sent
		in.frames += w.frames
		in.sendErr += w.sendErr
		in.acked += w.acked
		in.inject.Lost += w.injSt.Lost
		in.inject.Duplicated += w.injSt.Duplicated
		if w.lastErr != nil {
			in.lastErr = w.lastErr.Error()
		}
	}
	r.waitQueues(ctx)
	after, err := r.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	settleStart := time.Now()
	exact, mismatched := r.settle(ctx)
	if exact {
		in.exactGlobal = r.settleGlobal(ctx, settleStart.Add(r.cfg.SettleTimeout))
	}
	settled, err := r.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	in.elsewhere, in.settle, in.exact, in.mismatched = elsewhere, time.Since(settleStart), exact, mismatched
	in.before, in.after, in.settled, in.hbLost = before, after, settled, r.hbLost.Load()
	return assembleDataPlane(in), nil
}

// register registers the workers, each with room for its share.
func (r *dpRun) register(ctx context.Context) error {
	var nonce [4]byte
	_, _ = rand.Read(nonce[:])
	capacity := uint32((r.cfg.Workflows + r.cfg.Workers - 1) / r.cfg.Workers)
	for i := range r.cfg.Workers {
		id := fmt.Sprintf("bench-%s-%d", hex.EncodeToString(nonce[:]), i+1)
		cctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
		resp, _, err := r.cl.RegisterWorker(cctx, &api.RegisterWorkerRequest{WorkerID: id, Region: r.cfg.Region, Capacity: capacity})
		cancel()
		if err != nil {
			return fmt.Errorf("bench progress: register worker %s: %w", id, err)
		}
		w := &simWorker{id: resp.WorkerID, access: resp.DataPlane, interval: time.Duration(resp.HeartbeatInterval)}
		if w.interval <= 0 {
			w.interval = time.Second
		}
		r.workers = append(r.workers, w)
		if r.cfg.Transport != TransportHTTP && resp.DataPlane == nil {
			return fmt.Errorf("bench progress: the managers of %s offer no data plane (no data_plane_addr): use --http", r.cfg.Region)
		}
	}
	return nil
}

// heartbeat keeps w alive, reporting the workflows it drives, until ctx ends.
func (r *dpRun) heartbeat(ctx context.Context, w *simWorker) {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		var running []api.RunningWorkflow
		if p := w.running.Load(); p != nil {
			running = *p
		}
		cctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
		_, _, err := r.cl.Heartbeat(cctx, w.id, &api.HeartbeatRequest{Running: running})
		cancel()
		var ae *api.Error
		if errors.As(err, &ae) && ae.Code == api.CodeUnknownWorker {
			r.hbLost.Add(1)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// submitAndLease submits the job and waits until the region has leased
// every workflow; it hands those leased to the bench's workers to them and
// returns how many went to other workers.
func (r *dpRun) submitAndLease(ctx context.Context) (int, error) {
	spec := &api.SubmitJobRequest{Tenant: r.cfg.Tenant, Regions: []string{r.cfg.Region},
		Timeout: fsm.Duration(min(r.cfg.Duration+r.cfg.LeaseTimeout+r.cfg.SettleTimeout+2*dataPlaneSlack, fsm.MaxJobTimeout))}
	wfDuration := fsm.Duration(min(r.cfg.Duration+r.cfg.LeaseTimeout+r.cfg.SettleTimeout+dataPlaneSlack, fsm.MaxWorkflowDuration))
	for k, left := 0, r.cfg.Workflows; left > 0; k++ {
		n := min(left, fsm.MaxWorkflowCount)
		spec.Workflows = append(spec.Workflows, fsm.WorkflowSpec{Name: fmt.Sprintf("progress%d", k), Count: uint32(n), Duration: wfDuration, Rate: 1})
		left -= n
	}
	cctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
	res, _, err := r.cl.SubmitJob(cctx, spec, api.WriteOptions{})
	cancel()
	if err != nil {
		return 0, fmt.Errorf("bench progress: submit the job: %w", err)
	}
	r.jobID = res.JobID
	byID := map[string]*simWorker{}
	for _, w := range r.workers {
		byID[w.id] = w
	}
	deadline := time.Now().Add(r.cfg.LeaseTimeout)
	tick := time.NewTicker(dataPlanePollInterval)
	defer tick.Stop()
	for {
		wfs, err := r.workflows(ctx)
		if err == nil && len(wfs) == r.cfg.Workflows && allLeased(wfs) {
			elsewhere := 0
			for _, wf := range wfs {
				w := byID[wf.Worker]
				if w == nil {
					elsewhere++
					continue
				}
				w.updates = append(w.updates, progress.Update{Workflow: wf.ID, Fence: wf.LeaseFence, Completed: wf.Completed, Failed: wf.Failed})
			}
			for _, w := range r.workers {
				slices.SortFunc(w.updates, func(a, b progress.Update) int { return strings.Compare(a.Workflow, b.Workflow) })
				running := make([]api.RunningWorkflow, len(w.updates))
				for i, u := range w.updates {
					running[i] = api.RunningWorkflow{Workflow: u.Workflow, LeaseFence: u.Fence}
				}
				w.running.Store(&running)
			}
			if elsewhere == len(wfs) {
				return 0, fmt.Errorf("bench progress: every workflow of job %s went to other workers: run against a region without free workers (strata dev --workers 0)", r.jobID)
			}
			return elsewhere, nil
		}
		if time.Now().After(deadline) {
			why := fmt.Sprintf("%d of %d workflows seen", len(wfs), r.cfg.Workflows)
			if err != nil {
				why = err.Error()
			}
			return 0, fmt.Errorf("bench progress: job %s not leased within %v: %s", r.jobID, r.cfg.LeaseTimeout, why)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-tick.C:
		}
	}
}

func allLeased(wfs []fsm.WorkflowState) bool {
	for _, wf := range wfs {
		if wf.Status != fsm.WorkflowStatusLeased {
			return false
		}
	}
	return true
}

// workflows reads the job's workflows from the regional ledger.
func (r *dpRun) workflows(ctx context.Context) ([]fsm.WorkflowState, error) {
	cctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
	defer cancel()
	l, _, err := r.cl.JobWorkflows(cctx, r.jobID, api.ReadOptions{Consistency: api.ConsistencyStrong})
	if err != nil {
		return nil, err
	}
	return l.Workflows, nil
}

// open prepares w's sending: its encoder, connection and injector.
func (r *dpRun) open(w *simWorker) error {
	if r.cfg.Transport == TransportHTTP {
		return nil
	}
	key, err := base64.StdEncoding.DecodeString(w.access.Key)
	if err != nil {
		return fmt.Errorf("bench progress: worker %s: data-plane key: %w", w.id, err)
	}
	if w.enc, err = progress.NewEncoder(progress.EncoderConfig{Worker: w.id, KeyID: w.access.KeyID, Key: key}); err != nil {
		return err
	}
	addr := w.access.UDPAddr
	if r.cfg.Transport == TransportTCP {
		addr = w.access.TCPAddr
	}
	if w.conn, err = net.DialTimeout(r.cfg.Transport, addr, r.cfg.RequestTimeout); err != nil {
		return fmt.Errorf("bench progress: worker %s: %w", w.id, err)
	}
	if r.cfg.Transport == TransportTCP {
		w.tcp = bufio.NewWriterSize(w.conn, 64<<10)
	}
	w.inj = NewInjector(r.cfg.Loss, r.cfg.Dup, r.cfg.Reorder, r.cfg.Seed^hash64(w.id))
	return nil
}

// hash64 is FNV-1a of s: distinct injector seeds per worker.
func hash64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := range len(s) {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// load sends rounds until ctx ends, paced to the config's rate.
func (r *dpRun) load(ctx context.Context, w *simWorker, prog *DataPlaneProgress) {
	interval := r.cfg.roundInterval()
	next := time.Now()
	var timer *time.Timer
	if interval > 0 {
		timer = time.NewTimer(0)
		defer timer.Stop()
		<-timer.C
	}
	for ctx.Err() == nil {
		for i := range w.updates {
			u := &w.updates[i]
			u.Completed++
			if w.rounds%dataPlaneFailEvery == 0 {
				u.Failed++
			}
		}
		w.rounds++
		r.send(ctx, w)
		prog.Sent.Add(int64(len(w.updates)))
		if interval == 0 {
			continue
		}
		next = next.Add(interval)
		if d := time.Until(next); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		} else if -d > time.Second {
			next = time.Now() // far behind: do not burst to catch up
		}
	}
}

// send sends w's current counters once: frames (through the injector) or
// HTTP calls.
func (r *dpRun) send(ctx context.Context, w *simWorker) {
	w.sent += int64(len(w.updates))
	if r.cfg.Transport == TransportHTTP {
		r.sendHTTP(ctx, w)
		return
	}
	var err error
	if w.inj == nil {
		err = w.enc.Encode(w.updates, func(f []byte) error { w.write(f); return nil })
	} else {
		var frames [][]byte
		err = w.enc.Encode(w.updates, func(f []byte) error { frames = append(frames, bytes.Clone(f)); return nil })
		for _, f := range w.inj.Round(frames, &w.injSt) {
			w.write(f)
		}
	}
	if err != nil {
		w.lastErr = err
	}
	w.flushTCP()
}

// write writes one frame (TCP: buffered, length-prefixed as FORMAT.md says).
func (w *simWorker) write(f []byte) {
	w.frames++
	var err error
	if w.tcp != nil {
		w.stream = binary.LittleEndian.AppendUint16(w.stream[:0], uint16(len(f)))
		w.stream = append(w.stream, f...)
		_, err = w.tcp.Write(w.stream)
	} else {
		_, err = w.conn.Write(f)
	}
	if err != nil {
		w.sendErr++
		w.lastErr = err
	}
}

func (w *simWorker) flushTCP() {
	if w.tcp == nil {
		return
	}
	if err := w.tcp.Flush(); err != nil {
		w.sendErr++
		w.lastErr = err
	}
}

// sendHTTP sends w's counters as progress calls of at most
// maxHTTPUpdates, acknowledged at LOCAL, one after the other.
func (r *dpRun) sendHTTP(ctx context.Context, w *simWorker) {
	for lo := 0; lo < len(w.updates); lo += maxHTTPUpdates {
		hi := min(lo+maxHTTPUpdates, len(w.updates))
		req := &api.ProgressRequest{Updates: make([]api.ProgressUpdate, 0, hi-lo)}
		for _, u := range w.updates[lo:hi] {
			req.Updates = append(req.Updates, api.ProgressUpdate{Workflow: u.Workflow, LeaseFence: u.Fence, Completed: u.Completed, Failed: u.Failed})
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.RequestTimeout)
		res, _, err := r.cl.ReportProgress(cctx, w.id, req, api.WriteOptions{Durability: api.DurabilityLocal})
		cancel()
		w.frames++
		if err != nil {
			w.sendErr++
			w.lastErr = err
			continue
		}
		refused := 0
		for _, rs := range res.Results {
			if rs.Outcome == fsm.OutcomeRejected.String() {
				refused++
			}
		}
		if refused > 0 {
			w.sendErr++
			w.lastErr = fmt.Errorf("progress call: %d updates refused", refused)
		}
		w.acked += int64(hi - lo - refused)
	}
}

// waitQueues waits (bounded) until every manager's receive queue is
// empty, so the metrics read next count every frame that arrived.
func (r *dpRun) waitQueues(ctx context.Context) {
	if r.cfg.Transport == TransportHTTP {
		return
	}
	deadline := time.Now().Add(dataPlaneQueueWait)
	tick := time.NewTicker(dataPlanePollInterval / 10)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		m, err := scrapeAll(ctx, r.hc, r.bases)
		if err == nil && m.Sum(metricQueue) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// settle resends the last counters every dataPlaneResendInterval and reads
// the ledger every dataPlanePollInterval until it holds them all, or
// SettleTimeout passes. It returns whether it did, and how many workflows
// differ at the last read.
func (r *dpRun) settle(ctx context.Context) (exact bool, mismatched int) {
	want := map[string]Counters{}
	for _, w := range r.workers {
		for _, u := range w.updates {
			want[u.Workflow] = Counters{Completed: u.Completed, Failed: u.Failed}
		}
		if w.inj != nil { // what the reordering still held back
			for _, f := range w.inj.Flush() {
				w.write(f)
			}
			w.flushTCP()
		}
	}
	deadline := time.Now().Add(r.cfg.SettleTimeout)
	tick := time.NewTicker(dataPlanePollInterval)
	defer tick.Stop()
	lastSend := time.Now()
	mismatched = len(want)
	for {
		if wfs, err := r.workflows(ctx); err == nil {
			if mismatched = Mismatched(want, wfs); mismatched == 0 {
				return true, 0
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false, mismatched
		}
		if time.Since(lastSend) >= dataPlaneResendInterval {
			for _, w := range r.workers {
				r.send(ctx, w)
			}
			lastSend = time.Now()
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// settleGlobal reads the job from the gates until the global ledger's
// totals of the region equal the regional ledger's sum over the job's
// workflows (the region reports them coalesced, about every second), or
// deadline passes.
func (r *dpRun) settleGlobal(ctx context.Context, deadline time.Time) bool {
	tick := time.NewTicker(dataPlanePollInterval)
	defer tick.Stop()
	for {
		if wfs, err := r.workflows(ctx); err == nil {
			var want Counters
			for _, wf := range wfs {
				want.Completed += wf.Completed
				want.Failed += wf.Failed
			}
			cctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
			job, _, err := r.cl.Job(cctx, r.jobID, api.ReadOptions{})
			cancel()
			if err == nil {
				if reg := job.Region(r.cfg.Region); reg != nil && (Counters{reg.Completed, reg.Failed}) == want {
					return true
				}
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// Counters are one workflow's cumulative counters.
type Counters struct{ Completed, Failed uint64 }

// Mismatched counts the workflows of want whose ledger counters (wfs)
// differ from want, a workflow missing from wfs included.
func Mismatched(want map[string]Counters, wfs []fsm.WorkflowState) int {
	got := make(map[string]Counters, len(wfs))
	for _, wf := range wfs {
		got[wf.ID] = Counters{Completed: wf.Completed, Failed: wf.Failed}
	}
	n := 0
	for id, c := range want {
		if g, ok := got[id]; !ok || g != c {
			n++
		}
	}
	return n
}

// dpSnapshot is what the bench reads before and after the load.
type dpSnapshot struct {
	m   Metrics
	udp UDPCounters
	at  time.Time
}

func (r *dpRun) snapshot(ctx context.Context) (dpSnapshot, error) {
	m, err := scrapeAll(ctx, r.hc, r.bases)
	if err != nil {
		return dpSnapshot{}, fmt.Errorf("bench progress: %w", err)
	}
	return dpSnapshot{m: m, udp: readUDPCounters(), at: time.Now()}, nil
}

// cleanup cancels the job, stops the heartbeats, closes the connections
// and deregisters the workers, bounded by dataPlaneCleanupTimeout.
func (r *dpRun) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), dataPlaneCleanupTimeout)
	defer cancel()
	if r.jobID != "" {
		_, _, _ = r.cl.CancelJob(ctx, r.jobID, api.CancelJobRequest{Reason: "strata bench progress ended", Requestor: "bench"}, api.WriteOptions{})
	}
	if r.stopHB != nil {
		r.stopHB()
		r.hbWG.Wait()
	}
	for _, w := range r.workers {
		if w.conn != nil {
			w.conn.Close()
		}
		_, _ = r.cl.DeregisterWorker(ctx, w.id)
	}
}
