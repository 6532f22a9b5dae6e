package compose

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// Bounds of a chaos run; the env knobs are COMPOSE_CHAOS_DURATION,
// COMPOSE_CHAOS_SEED, COMPOSE_CHAOS_SUBMITTERS and COMPOSE_CHAOS_MAX_JOBS.
const (
	defaultChaosDuration = 3 * time.Minute
	defaultSubmitters    = 2
	defaultMaxJobs       = 2000
	maxSubmitters        = 16
	maxMaxJobs           = 100_000
	submitGap            = 400 * time.Millisecond // per submitter, between two jobs
	submitRetryFor       = 30 * time.Second       // one job's submit is retried (same key) this long
	chaosJobTimeout      = 3 * time.Minute        // each job's own timeout: past it, TIMED_OUT
	// finalWait bounds the wait, after the last fault healed, for every
	// acknowledged job to be terminal: the jobs' timeout and a margin.
	finalWait       = chaosJobTimeout + 2*time.Minute
	clusterReadyFor = 3 * time.Minute
	checkParallel   = 8
	applyAttempts   = 3
)

// envDuration, envInt read a knob or its default, failing on a bad value.
func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return d
}

func envInt(t *testing.T, name string, def, lo, hi int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		t.Fatalf("%s=%q: want an integer in %d..%d", name, v, lo, hi)
	}
	return n
}

// chaosLoad is what the submitters did.
type chaosLoad struct {
	mu       sync.Mutex
	acked    []string // job ids acknowledged at GLOBAL
	unacked  int      // submits that gave up without an acknowledgement
	attempts int      // submit attempts that failed and were retried
}

// TestCompose_Chaos runs jobs (and the workers' progress) against the
// compose cluster while a seeded schedule kills, pauses and disconnects
// containers, then checks that every job acknowledged at GLOBAL is in the
// global ledger and terminal, and that every tenant's audit chain
// verifies. COMPOSE_CHAOS_SEED replays a schedule.
func TestCompose_Chaos(t *testing.T) {
	c := composeCluster(t)
	duration := envDuration(t, "COMPOSE_CHAOS_DURATION", defaultChaosDuration)
	if duration < minChaosDuration || duration > maxChaosDurationH*time.Hour {
		t.Fatalf("COMPOSE_CHAOS_DURATION %v: want %v..%dh", duration, minChaosDuration, maxChaosDurationH)
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("COMPOSE_CHAOS_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("COMPOSE_CHAOS_SEED=%q: %v", v, err)
		}
	}
	submitters := envInt(t, "COMPOSE_CHAOS_SUBMITTERS", defaultSubmitters, 1, maxSubmitters)
	maxJobs := envInt(t, "COMPOSE_CHAOS_MAX_JOBS", defaultMaxJobs, 1, maxMaxJobs)
	plan := planFaults(seed, duration, c.services)
	t.Logf("chaos: seed %d (COMPOSE_CHAOS_SEED=%d replays the schedule), %v, %d faults planned (%s), %d submitters",
		seed, seed, duration, len(plan), formatCounts(countByKind(plan)), submitters)
	for _, f := range plan {
		t.Logf("  plan: %v", f)
	}

	ctx := context.Background()
	ids := map[string]string{}
	ipOf := map[string]map[string]string{}
	for _, s := range c.services {
		id, err := container(ctx, s.Name)
		if err != nil {
			t.Fatal(err)
		}
		ids[s.Name], ipOf[s.Name] = id, s.Nets
	}
	t.Cleanup(func() { healAll(context.Background(), c.services, t.Logf) })

	start := time.Now()
	loadCtx, stopLoad := context.WithTimeout(ctx, duration)
	defer stopLoad()
	load := &chaosLoad{}
	var wg sync.WaitGroup
	for i := range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.submitLoop(loadCtx, load, seed, i, maxJobs/submitters)
		}()
	}

	injected, refused := map[faultKind]int{}, map[faultKind]int{}
	var failures []string
	type healAt struct {
		f  fault
		at time.Duration
	}
	var pending []healAt
	runAt := func(at time.Duration) {
		timer := time.NewTimer(time.Until(start.Add(at)))
		defer timer.Stop()
		<-timer.C
	}
	healDue := func(until time.Duration) {
		for len(pending) > 0 && pending[0].at <= until {
			h := pending[0]
			pending = pending[1:]
			runAt(h.at)
			if err := heal(ctx, h.f, ids[h.f.Target], ipOf[h.f.Target][h.f.Network]); err != nil {
				failures = append(failures, fmt.Sprintf("heal %v: %v", h.f, err))
			}
		}
	}
	for _, f := range plan {
		healDue(f.At)
		runAt(f.At)
		if err := applyRetried(ctx, f, ids[f.Target]); err != nil {
			// The daemon may refuse a fault (a pause whose cgroup does
			// not freeze in time on a loaded machine): counted and shown,
			// not a failure of the cluster.
			refused[f.Kind]++
			t.Logf("chaos: not applied: %v: %v", f, err)
			continue
		}
		injected[f.Kind]++
		pending = append(pending, healAt{f, f.At + f.Hold})
		slices.SortFunc(pending, func(a, b healAt) int { return int(a.at - b.at) })
	}
	healDue(duration)
	wg.Wait()
	loadTime := time.Since(start)
	for _, msg := range failures {
		t.Errorf("docker: %s", msg)
	}
	healAll(ctx, c.services, t.Logf)

	// Every acknowledged job must be in the global ledger and end.
	if err := c.waitReady(ctx, clusterReadyFor); err != nil {
		t.Errorf("after the faults: %v", err)
	}
	states, lost, stuck := c.checkAcked(ctx, load.acked, finalWait)
	total := time.Since(start)
	byStatus := map[string]int{}
	var progress uint64
	for _, st := range states {
		byStatus[st.Status.String()]++
		for _, r := range st.Regions {
			progress += r.Completed + r.Failed
		}
	}
	chains := c.verifyChains(ctx, t)

	faults := 0
	for _, n := range injected {
		faults += n
	}
	t.Logf("chaos: seed %d, load %v, total %v", seed, loadTime.Round(time.Second), total.Round(time.Second))
	t.Logf("chaos: faults injected %d (%s); refused by docker: %s", faults, formatCounts(injected), formatCounts(refused))
	t.Logf("chaos: jobs acknowledged %d, terminal %d %v, lost %d, not terminal %d; submits unacknowledged %d, failed attempts retried %d",
		len(load.acked), len(states), byStatus, len(lost), len(stuck), load.unacked, load.attempts)
	t.Logf("chaos: simulated requests counted in terminal jobs %d; audit chains verified: %s", progress, chains)
	row := fmt.Sprintf("| %d | %v | %d | %d | %d | %d | %d | %d | %d | %d | %s |",
		seed, duration, injected[faultKill], injected[faultPause], injected[faultDisconnect],
		len(load.acked), len(states), len(lost), len(stuck), load.unacked, total.Round(time.Second))
	t.Logf("chaos: README row: %s", row)
	if out := os.Getenv("COMPOSE_CHAOS_REPORT"); out != "" {
		if err := os.WriteFile(out, []byte(row+"\n"), 0o644); err != nil {
			t.Errorf("report: %v", err)
		}
	}
	if len(load.acked) == 0 {
		t.Errorf("no job was acknowledged: the load did not run")
	}
	if len(lost) > 0 {
		t.Errorf("%d acknowledged jobs are not in the global ledger: %v", len(lost), head(lost))
	}
	if len(stuck) > 0 {
		t.Errorf("%d acknowledged jobs are not terminal after %v: %v", len(stuck), finalWait, head(stuck))
	}
}

func head(s []string) []string { return s[:min(len(s), 10)] }

// submitLoop submits jobs until ctx ends or it made max: each with its own
// idempotency key, retried with it until acknowledged or submitRetryFor
// passes. Its randomness is drawn from the run's seed and its number.
func (c *cluster) submitLoop(ctx context.Context, load *chaosLoad, seed uint64, n, max int) {
	rng := rand.New(rand.NewPCG(seed, uint64(n)+1))
	for i := 0; i < max && ctx.Err() == nil; i++ {
		regions := slices.Clone(composeRegions)
		rng.Shuffle(len(regions), func(a, b int) { regions[a], regions[b] = regions[b], regions[a] })
		spec := &api.SubmitJobRequest{
			Tenant:         fmt.Sprintf("chaos-%d", rng.IntN(2)),
			IdempotencyKey: fmt.Sprintf("chaos-%d-%d-%d", seed, n, i),
			Regions:        regions[:1+rng.IntN(len(regions))],
			Timeout:        fsm.Duration(chaosJobTimeout),
			Workflows: []fsm.WorkflowSpec{{Name: "load", Count: uint32(1 + rng.IntN(2)),
				Duration: fsm.Duration(time.Duration(1+rng.IntN(3)) * time.Second), Rate: 20, FailureRatio: 0.01}},
		}
		if id, ok := c.submit(ctx, load, spec); ok {
			load.mu.Lock()
			load.acked = append(load.acked, id)
			load.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(submitGap):
		}
	}
}

// submit retries one job's submit with its key until acknowledged.
func (c *cluster) submit(ctx context.Context, load *chaosLoad, spec *api.SubmitJobRequest) (string, bool) {
	deadline := time.Now().Add(submitRetryFor)
	for {
		// The last attempt may outlive the load's context: a submit
		// under way is not cut, so its acknowledgement is counted.
		actx, cancel := context.WithTimeout(context.Background(), 2*clientTimeout)
		sub, _, err := c.client.SubmitJob(actx, spec, api.WriteOptions{})
		cancel()
		if err == nil {
			return sub.JobID, true
		}
		load.mu.Lock()
		load.attempts++
		load.mu.Unlock()
		if time.Now().After(deadline) || ctx.Err() != nil {
			load.mu.Lock()
			load.unacked++
			load.mu.Unlock()
			return "", false
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// waitReady polls every node's /readyz until all answer, within wait.
func (c *cluster) waitReady(ctx context.Context, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		var notReady []string
		for _, s := range c.services {
			if s.Role == "worker" {
				continue
			}
			nc, err := api.New(api.ClientConfig{Addrs: []string{s.apiAddr()}, TLS: c.clientTLS(), Timeout: 3 * time.Second})
			if err == nil {
				_, _, err = nc.Readyz(ctx)
			}
			if err != nil {
				notReady = append(notReady, s.Name)
			}
		}
		if len(notReady) == 0 {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("nodes not ready after %v: %s", wait, strings.Join(notReady, " "))
		}
	}
}

// checkAcked reads every acknowledged job from the global ledger (strong
// reads) until all are terminal or wait passes: lost are the ones the
// ledger does not know, stuck the ones not terminal at the end.
func (c *cluster) checkAcked(ctx context.Context, acked []string, wait time.Duration) (terminal map[string]*fsm.JobState, lost, stuck []string) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	terminal = map[string]*fsm.JobState{}
	todo := slices.Clone(acked)
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		var mu sync.Mutex
		var next, missing []string
		work := make(chan string)
		var wg sync.WaitGroup
		for range checkParallel {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for id := range work {
					st, _, err := c.client.Job(ctx, id, api.ReadOptions{Consistency: api.ConsistencyStrong})
					mu.Lock()
					switch {
					case err == nil && st.Status.Terminal():
						terminal[id] = st
					case isNotFound(err):
						missing = append(missing, id)
						next = append(next, id)
					default:
						next = append(next, id)
					}
					mu.Unlock()
				}
			}()
		}
		for _, id := range todo {
			work <- id
		}
		close(work)
		wg.Wait()
		todo = next
		if len(todo) == 0 {
			return terminal, nil, nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			slices.Sort(missing)
			for _, id := range todo {
				if !slices.Contains(missing, id) {
					stuck = append(stuck, id)
				}
			}
			return terminal, missing, stuck
		}
	}
}

// verifyChains checks the chaos tenants' audit chains on the gates.
func (c *cluster) verifyChains(ctx context.Context, t *testing.T) string {
	var out []string
	for i := range 2 {
		tenant := fmt.Sprintf("chaos-%d", i)
		v, _, err := c.client.VerifyChain(ctx, tenant, api.ReadOptions{Consistency: api.ConsistencyStrong})
		switch {
		case err != nil:
			t.Errorf("verify chain of %s: %v", tenant, err)
			out = append(out, tenant+" error")
		case !v.Verified:
			t.Errorf("chain of %s does not verify: %+v", tenant, v)
			out = append(out, tenant+" BROKEN")
		default:
			out = append(out, fmt.Sprintf("%s %d events", tenant, v.Events))
		}
	}
	return strings.Join(out, ", ")
}

// applyRetried applies f, trying again a few times when the daemon
// refuses (docker pause fails with "unable to freeze" when the cgroup
// does not freeze in time).
func applyRetried(ctx context.Context, f fault, id string) error {
	var err error
	for range applyAttempts {
		if err = apply(ctx, f, id); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
	return err
}
