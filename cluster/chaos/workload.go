package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// The workload's mix, in percent of operations once some job is
// acknowledged: submits (a new key, or a repeat of a key whose submit's
// outcome is unknown), cancels, reads of job ids no one submitted, and
// STRONG reads of acknowledged jobs (the rest).
const (
	pctSubmit  = 30
	pctCancel  = 8
	pctPhantom = 5
	// recentJobs: three reads in four go to the most recent jobs, which
	// are the ones still moving.
	recentJobs = 32
	// settlePoll paces the end phase's reads of jobs not yet terminal.
	settlePoll = time.Second
	// progressEvery paces the progress lines.
	progressEvery = 15 * time.Second
)

// job is one idempotency key of the workload.
type job struct {
	key       string
	spec      *fsm.JobSpec
	id        string // set once a submit was acknowledged
	cancelled bool   // a cancel was sent
	unknown   bool   // a submit's outcome is unknown and not yet resolved
}

type workload struct {
	r       *runner
	prefix  string
	mu      sync.Mutex
	jobs    []*job // in submit order
	acked   []*job
	pending []*job // unknown outcome, not yet acknowledged
	ops     int
}

func newWorkload(r *runner) *workload {
	return &workload{r: r, prefix: fmt.Sprintf("chaos-%d-%d", r.cfg.Seed, r.start.UnixMilli())}
}

// run drives cfg.Clients clients at cfg.Rate operations per second until
// ctx ends.
func (w *workload) run(ctx context.Context) {
	tokens := make(chan struct{})
	var wg sync.WaitGroup
	for i := range w.r.cfg.Clients {
		rng := rand.New(rand.NewPCG(w.r.cfg.Seed, uint64(i)+1))
		wg.Go(func() {
			for range tokens {
				w.step(ctx, i, rng)
			}
		})
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / w.r.cfg.Rate))
	progress := time.NewTicker(progressEvery)
	defer tick.Stop()
	defer progress.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-progress.C:
			w.mu.Lock()
			fmt.Fprintf(w.r.cfg.Log, "chaos: %v: %d operations, %d jobs submitted, %d acknowledged, %d unknown\n",
				w.r.hist.Since().Round(time.Second), w.ops, len(w.jobs), len(w.acked), len(w.pending))
			w.mu.Unlock()
		case <-tick.C:
			select {
			case tokens <- struct{}{}:
			default: // every client is busy: the rate is an upper bound
			}
		}
	}
	close(tokens)
	wg.Wait()
}

// step runs one operation, chosen by rng.
func (w *workload) step(ctx context.Context, client int, rng *rand.Rand) {
	w.mu.Lock()
	w.ops++
	p := rng.IntN(100)
	var target *job
	kind := OpRead
	switch {
	case len(w.acked) == 0 || p < pctSubmit:
		kind = OpSubmit
		if len(w.pending) > 0 && rng.IntN(2) == 0 {
			target = w.pending[rng.IntN(len(w.pending))]
		} else if len(w.jobs) < w.r.cfg.MaxJobs {
			target = w.newJobLocked(rng)
		}
	case p < pctSubmit+pctCancel:
		kind = OpCancel
		target = w.acked[rng.IntN(len(w.acked))]
		if target.cancelled {
			kind = OpRead
		}
		target.cancelled = true
	case p < pctSubmit+pctCancel+pctPhantom:
		w.mu.Unlock()
		w.phantom(ctx, client, rng)
		return
	default:
		n := len(w.acked)
		if n > recentJobs && rng.IntN(4) != 0 {
			target = w.acked[n-recentJobs+rng.IntN(recentJobs)]
		} else {
			target = w.acked[rng.IntN(n)]
		}
	}
	w.mu.Unlock()
	if target == nil {
		return // max jobs reached and nothing to repeat
	}
	switch kind {
	case OpSubmit:
		w.submit(ctx, client, target)
	case OpCancel:
		w.cancel(ctx, client, target)
	default:
		w.read(ctx, client, target, false)
	}
}

// newJobLocked adds a key with a small job in some regions. Callers hold mu.
func (w *workload) newJobLocked(rng *rand.Rand) *job {
	regions := make([]string, 0, len(w.r.regions))
	for _, reg := range w.r.regions {
		if rng.IntN(2) == 0 {
			regions = append(regions, reg)
		}
	}
	if len(regions) == 0 {
		regions = append(regions, w.r.regions[rng.IntN(len(w.r.regions))])
	}
	j := &job{key: fmt.Sprintf("%s-%05d", w.prefix, len(w.jobs)+1), spec: &fsm.JobSpec{
		Tenant: Tenant, Regions: regions, Timeout: fsm.Duration(w.r.cfg.JobTimeout),
		Workflows: []fsm.WorkflowSpec{{Name: "chaos", Count: 1, Duration: fsm.Duration(time.Second), Rate: 10}},
	}}
	j.spec.IdempotencyKey = j.key
	w.jobs = append(w.jobs, j)
	return j
}

// callCtx bounds one operation: the client fails over between gates, each
// attempt bounded by CallTimeout.
func (w *workload) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 2*w.r.cfg.CallTimeout)
}

// classify tells a write's outcome from its error.
func classify(err error) Outcome {
	var ae *api.Error
	switch {
	case err == nil:
		return OK
	case errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 && ae.Status != http.StatusRequestTimeout:
		return Failed // refused before it changed anything
	}
	return Unknown
}

func isNotFound(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// refusedStatus is the terminal status a cancel's 409 names, or 0.
func refusedStatus(err error) fsm.JobStatus {
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		return 0
	}
	name, _ := ae.Details["status"].(string)
	st, perr := fsm.ParseJobStatus(name)
	if perr != nil || !st.Terminal() {
		return 0
	}
	return st
}

func (w *workload) submit(ctx context.Context, client int, j *job) {
	cctx, cancel := w.callCtx(ctx)
	defer cancel()
	op := Op{Client: client, Kind: OpSubmit, Key: j.key, Call: w.r.hist.Since()}
	resp, _, err := w.r.jobs.SubmitJob(cctx, j.spec, api.WriteOptions{Durability: "global"})
	op.Return, op.Outcome = w.r.hist.Since(), classify(err)
	if err != nil {
		op.Err = err.Error()
	} else {
		op.JobID, op.Existing, op.Durability = resp.JobID, resp.Existing, resp.Durability
		if !strings.EqualFold(resp.Durability, "GLOBAL") {
			// Below the level asked: not acknowledged (the check names it
			// an anomaly), and the key stays to be resolved.
			op.Outcome, op.Err = Unknown, "answered "+resp.Durability+", asked GLOBAL"
		}
	}
	w.r.hist.Record(op)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch op.Outcome {
	case OK:
		if j.id == "" {
			j.id = resp.JobID
			w.acked = append(w.acked, j)
		}
		w.dropPendingLocked(j)
	case Unknown:
		if j.id == "" && !j.unknown {
			j.unknown = true
			w.pending = append(w.pending, j)
		}
	}
}

func (w *workload) dropPendingLocked(j *job) {
	if !j.unknown {
		return
	}
	j.unknown = false
	for i, p := range w.pending {
		if p == j {
			w.pending = append(w.pending[:i], w.pending[i+1:]...)
			return
		}
	}
}

func (w *workload) cancel(ctx context.Context, client int, j *job) {
	cctx, cancel := w.callCtx(ctx)
	defer cancel()
	op := Op{Client: client, Kind: OpCancel, Key: j.key, JobID: j.id, Call: w.r.hist.Since()}
	resp, _, err := w.r.jobs.CancelJob(cctx, j.id, api.CancelJobRequest{Reason: "chaos", Requestor: "strata chaos"},
		api.WriteOptions{Durability: "global"})
	op.Return, op.Outcome = w.r.hist.Since(), classify(err)
	switch {
	case err == nil:
		op.Cancel = resp.Outcome
	case isNotFound(err):
		op.Outcome, op.Cancel, op.Err = OK, CancelNotFound, err.Error()
	case refusedStatus(err) != 0:
		op.Outcome, op.Cancel, op.Status, op.Found, op.Err = OK, CancelRefused, refusedStatus(err), true, err.Error()
	default:
		op.Err = err.Error()
	}
	w.r.hist.Record(op)
}

// read reads j strongly and reports whether it is terminal.
func (w *workload) read(ctx context.Context, client int, j *job, final bool) bool {
	cctx, cancel := w.callCtx(ctx)
	defer cancel()
	op := Op{Client: client, Kind: OpRead, Key: j.key, JobID: j.id, Call: w.r.hist.Since(), Final: final}
	st, _, err := w.r.jobs.Job(cctx, j.id, api.ReadOptions{Consistency: "strong"})
	op.Return = w.r.hist.Since()
	switch {
	case err == nil:
		op.Outcome, op.Found, op.Status = OK, true, st.Status
	case isNotFound(err):
		op.Outcome, op.Err = OK, err.Error()
	default:
		op.Outcome, op.Err = Failed, err.Error()
	}
	w.r.hist.Record(op)
	return op.Found && op.Status.Terminal()
}

// phantom reads a job id no one submitted: a STRONG read must not find
// it. The id has a job id's shape and a gate part no gate has.
func (w *workload) phantom(ctx context.Context, client int, rng *rand.Rand) {
	reg := w.r.regions[rng.IntN(len(w.r.regions))]
	n := rng.IntN(100_000)
	j := &job{key: fmt.Sprintf("phantom-%s-%05d", w.prefix, n),
		id: fmt.Sprintf("%s-%d-chaosphantom-%05d", reg, w.r.start.UnixMilli(), n)}
	w.read(ctx, client, j, false)
}

// resolve repeats, until ctx ends, every submit whose outcome is still
// unknown: the repeat says whether the first took effect (Existing), and
// the job joins the acknowledged ones either way.
func (w *workload) resolve(ctx context.Context) {
	for {
		w.mu.Lock()
		pending := append([]*job(nil), w.pending...)
		w.mu.Unlock()
		if len(pending) == 0 {
			return
		}
		w.each(len(pending), func(client, i int) { w.submit(ctx, client, pending[i]) })
		if !sleepUntil(ctx, time.Now().Add(settlePoll)) {
			return
		}
	}
}

// settle reads every acknowledged job (STRONG, marked final) until all are
// terminal or ctx ends: the last read of each is the end check's.
func (w *workload) settle(ctx context.Context) {
	w.mu.Lock()
	left := append([]*job(nil), w.acked...)
	w.mu.Unlock()
	fmt.Fprintf(w.r.cfg.Log, "chaos: waiting for %d acknowledged jobs to end\n", len(left))
	for len(left) > 0 {
		done := make([]bool, len(left))
		w.each(len(left), func(client, i int) {
			// A read of the end phase is not cut by the deadline: the
			// last one of each job is the verdict's.
			done[i] = w.read(context.WithoutCancel(ctx), client, left[i], true)
		})
		var next []*job
		for i, j := range left {
			if !done[i] {
				next = append(next, j)
			}
		}
		left = next
		if len(left) > 0 && !sleepUntil(ctx, time.Now().Add(settlePoll)) {
			return
		}
	}
}

// each runs fn for 0..n-1, cfg.Clients at a time.
func (w *workload) each(n int, fn func(client, i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for c := range w.r.cfg.Clients {
		wg.Go(func() {
			for i := range next {
				fn(c, i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
