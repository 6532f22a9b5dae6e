package lifecycle

import (
	"crypto/sha256"
	"encoding/binary"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/govern"
	"github.com/strata-ledger/strata/cluster/lifecycle/plan"
	"github.com/strata-ledger/strata/fsm"
)

// BreakerRequestor is the requestor of the breaker transitions the
// regional leader proposes on its own (an operator's carry their token's
// name).
const BreakerRequestor = "strata/breaker"

// regionGov is the regional reconciler's governance for one term (issue
// 18 §2–§3): it reads the region's breaker and maintenance records in the
// pass's view, counts workflow outcomes into each breaker's window,
// proposes the transitions of cluster/govern's breaker rules, and gives
// the planner a plan.Governance (maintenance, admission by breaker,
// retries by policy). Its windows and probe tallies are the term's memory
// (cluster/govern's doc says why that is enough); its records come from
// the ledger at every pass. Only the pass goroutine touches it.
type regionGov struct {
	cfg      govern.BreakerConfig
	defaults map[string]govern.RetryPolicy
	region   string
	m        *govMetrics

	// mode is the region's maintenance as the pass read it (its own
	// record or the cluster's copy, govern.EffectiveMaintenance); moved
	// says it changed since the previous pass.
	mode  govern.MaintenanceMode
	moved bool
	// breakers by key (govern.BreakerKey), with the record value each
	// was last restored from (or last proposed).
	breakers map[string]*breakerSlot
	// counted is, per job and workflow, what the term counted of it.
	counted map[string]map[string]seen
	// running counts, per breaker key, the workflows leased during this
	// pass (half-open admission); reset each pass.
	running map[string]int
	// leased caches, per half-open breaker key, its workflows leased
	// when the pass read the ledger; reset each pass.
	leased map[string]int
	// propose holds this pass's transitions.
	propose []fsm.Event
}

type breakerSlot struct {
	b       govern.Breaker
	tenant  string
	jobType string
	value   string // the record value the ledger holds, as last read
	want    string // a value proposed and not yet read back; "" if none
	wantEv  fsm.Event
	tries   int // passes want was proposed in
	// ledger is the state the ledger holds, for giving up on want.
	ledger       govern.BreakerState
	ledgerSince  int64
	ledgerForced bool
}

// maxTransitionTries bounds how many passes a transition is proposed in
// before the term gives it up and takes the ledger's state back (a
// proposal the ledger keeps refusing must not be retried forever).
const maxTransitionTries = 20

func newRegionGov(l *Lifecycle) *regionGov {
	return &regionGov{cfg: l.cfg.Breakers, defaults: l.cfg.RetryDefaults, region: l.cfg.Region, m: l.govM,
		breakers: map[string]*breakerSlot{}, counted: map[string]map[string]seen{}}
}

// read loads the region's records in the pass's view.
func (g *regionGov) read(tx fsm.ReadTx) error {
	g.running, g.leased, g.propose = map[string]int{}, map[string]int{}, nil
	mode, err := readMaintenance(tx, g.region)
	if err != nil {
		return err
	}
	g.moved, g.mode = mode != g.mode, mode
	g.m.maintenance.Set(boolGauge(mode.On))
	g.m.draining.Set(boolGauge(mode.Drain))
	seen := map[string]bool{}
	err = tx.Policies(govern.KindBreaker, func(p *fsm.Policy) error {
		tenant, jobType, ok := govern.SplitBreakerKey(p.Key)
		if !ok {
			return nil
		}
		r, state, err := govern.DecodeBreaker(p.Value)
		if err != nil {
			return nil // not ours to judge: the ledger accepted it, the rules ignore it
		}
		seen[p.Key] = true
		s := g.slot(tenant, jobType)
		v := string(p.Value)
		s.ledger, s.ledgerSince, s.ledgerForced = state, r.SinceMs, r.Forced
		switch {
		case v == s.want:
			s.value, s.want = v, "" // our transition is in
		case v != s.value:
			s.value, s.want = v, "" // someone else's change (an operator, an earlier term)
			s.b.Restore(state, r.SinceMs, r.Forced)
		}
		g.m.state.WithLabelValues(tenant, jobType).Set(float64(state))
		return nil
	})
	for key, s := range g.breakers {
		if !seen[key] && s.value != "" { // deleted: back to closed
			s.value = ""
			s.b.Restore(govern.BreakerClosed, 0, false)
		}
	}
	return err
}

func (g *regionGov) slot(tenant, jobType string) *breakerSlot {
	key := govern.BreakerKey(tenant, jobType)
	s := g.breakers[key]
	if s == nil {
		s = &breakerSlot{tenant: tenant, jobType: jobType}
		g.breakers[key] = s
	}
	return s
}

// observe counts the outcomes of job s's workflows that this term has
// not counted yet and that ended within the breaker window of nowMs, and
// the retries scheduled since (metrics).
func (g *regionGov) observe(s *fsm.JobState, wfs map[string]*fsm.WorkflowState, nowMs int64) {
	jobType := s.Spec.Type
	counted := g.counted[s.JobID]
	if counted == nil {
		counted = map[string]seen{}
		g.counted[s.JobID] = counted
	}
	oldest := nowMs - g.cfg.Window.Milliseconds()
	for id, w := range wfs { // any order: the windows are the term's memory, not replicated
		c := counted[id]
		for _, h := range w.RetryHistory {
			recent := h.FailedAt.WallMs >= oldest
			if h.Attempt > c.retried {
				c.retried = h.Attempt
				if recent {
					g.m.retries.WithLabelValues(h.Cause).Inc()
				}
			}
			if h.Attempt > c.outcome { // its failure, if no pass saw it FAILED
				c.outcome = h.Attempt
				if recent {
					g.outcome(s.Tenant, jobType, nowMs, true)
				}
			}
		}
		ended := w.Status == fsm.WorkflowStatusCompleted || w.Status == fsm.WorkflowStatusFailed
		if ended && w.Attempt() > c.outcome {
			c.outcome = w.Attempt()
			if w.HLC.WallMs >= oldest {
				g.outcome(s.Tenant, jobType, nowMs, w.Status == fsm.WorkflowStatusFailed)
			}
		}
		counted[id] = c
	}
}

// seen is what a term counted of one workflow: the highest attempt whose
// outcome went into a window, and whose retry into the metrics.
type seen struct{ outcome, retried uint32 }

func (g *regionGov) outcome(tenant, jobType string, nowMs int64, failed bool) {
	if jobType == "" {
		return // no type, no breaker
	}
	s := g.slot(tenant, jobType)
	if t, moved := s.b.Observe(g.cfg, nowMs, failed); moved {
		g.transition(s, t, nowMs)
	}
}

// tick half-opens the open breakers whose cool-down passed, and
// proposes again a transition not read back yet.
func (g *regionGov) tick(nowMs int64) {
	for _, key := range plan.SortedKeys(g.breakers) {
		s := g.breakers[key]
		if t, moved := s.b.Tick(g.cfg, nowMs); moved {
			g.transition(s, t, nowMs)
			continue
		}
		if s.want == "" || g.proposing(s) {
			continue
		}
		if s.tries++; s.tries > maxTransitionTries {
			s.want, s.tries = "", 0
			s.b.Restore(s.ledger, s.ledgerSince, s.ledgerForced)
			continue
		}
		g.propose = append(g.propose, s.wantEv)
	}
}

func (g *regionGov) proposing(s *breakerSlot) bool {
	for _, e := range g.propose {
		if e.ID == s.wantEv.ID {
			return true
		}
	}
	return false
}

// transition proposes s's new state as its record.
func (g *regionGov) transition(s *breakerSlot, t govern.Transition, nowMs int64) {
	g.m.transitions.WithLabelValues(t.To.String()).Inc()
	v, err := govern.EncodeBreaker(govern.BreakerRecord{State: s.b.State.String(), SinceMs: s.b.SinceMs, Forced: s.b.Forced, Why: t.Reason})
	if err != nil {
		return // cannot happen: the rules only make valid records
	}
	key := govern.BreakerKey(s.tenant, s.jobType)
	e := fsm.Event{ID: transitionID(key, t, nowMs), Type: fsm.TypePolicySet, Tenant: s.tenant,
		Body: &fsm.PolicySet{Kind: govern.KindBreaker, Key: key, Value: v, Reason: t.Reason,
			Requestor: BreakerRequestor}}
	s.want, s.wantEv, s.tries = string(v), e, 1
	g.propose = append(g.propose, e)
}

// transitionID is a transition's event id, the same for the same
// transition however often it is proposed.
func transitionID(key string, t govern.Transition, nowMs int64) fsm.EventID {
	h := sha256.New()
	h.Write([]byte("strata/breaker/v1\x00" + key + "\x00" + t.From.String() + "\x00" + t.To.String() + "\x00"))
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(nowMs))
	h.Write(n[:])
	var id fsm.EventID
	copy(id[:], h.Sum(nil))
	return id
}

// governance is the pass's plan.Governance; leased counts the workflows
// of each breaker already leased (for half-open admission).
func (g *regionGov) governance(leased func(key string) int) *plan.Governance {
	return &plan.Governance{
		Maintenance: g.mode.On,
		Drain:       g.mode.Drain,
		Admit: func(s *fsm.JobState) int {
			if s.Spec.Type == "" {
				return -1
			}
			key := govern.BreakerKey(s.Tenant, s.Spec.Type)
			slot := g.breakers[key]
			if slot == nil || slot.b.State == govern.BreakerClosed {
				return -1
			}
			if slot.b.State == govern.BreakerOpen {
				return 0
			}
			// Half-open: count the type's leased workflows once a pass.
			n, ok := g.leased[key]
			if !ok {
				n = leased(key)
				g.leased[key] = n
			}
			return slot.b.Admit(g.cfg, n+g.running[key])
		},
		Leased: func(s *fsm.JobState) {
			if s.Spec.Type != "" {
				g.running[govern.BreakerKey(s.Tenant, s.Spec.Type)]++
			}
		},
		Retry: g.retry,
	}
}

// retry decides about FAILED workflow w of job s under the job's retry
// policy (or its type's default).
func (g *regionGov) retry(s *fsm.JobState, w *fsm.WorkflowState) (*fsm.WorkflowRetryScheduled, string) {
	p, ok := g.policy(s)
	if !ok {
		return nil, "no retry policy"
	}
	d := govern.DecideRetry(p, w.ID, w.Attempt(), w.Error, w.HLC.WallMs)
	if !d.Retry {
		return nil, d.Why
	}
	return &fsm.WorkflowRetryScheduled{Workflow: w.ID, Attempt: d.Attempt, Cause: string(d.Cause), NotBeforeMs: d.NotBeforeMs}, ""
}

func (g *regionGov) policy(s *fsm.JobState) (govern.RetryPolicy, bool) {
	if r := s.Spec.Retry; r != nil {
		return govern.RetryPolicy{MaxAttempts: r.MaxAttempts, InitialBackoff: time.Duration(r.InitialBackoff),
			MaxBackoff: time.Duration(r.MaxBackoff), RetryOn: r.RetryOn}.WithDefaults(), true
	}
	if s.Spec.Type != "" {
		if p, ok := g.defaults[s.Spec.Type]; ok {
			return p.WithDefaults(), true
		}
	}
	return govern.RetryPolicy{}, false
}

// forget drops a job the reconciler dropped.
func (g *regionGov) forget(jobID string) { delete(g.counted, jobID) }

// govMetrics are the region's governance metrics (registered once per
// node; the leader of each term sets them).
type govMetrics struct {
	state       *prometheus.GaugeVec
	transitions *prometheus.CounterVec
	retries     *prometheus.CounterVec
	maintenance prometheus.Gauge
	draining    prometheus.Gauge
}

func newGovMetrics(reg prometheus.Registerer) *govMetrics {
	m := &govMetrics{
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "strata_breaker_state",
			Help: "Circuit breaker state per tenant and job type, as the regional leader last read it: 0 closed, 1 open, 2 half-open."},
			[]string{"tenant", "job_type"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_breaker_transitions_total",
			Help: "Circuit breaker transitions this node proposed as regional leader, by the state entered."}, []string{"to"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_workflow_retries_total",
			Help: "Workflow retries the regional leader saw scheduled, by failure cause."}, []string{"cause"}),
		maintenance: prometheus.NewGauge(prometheus.GaugeOpts{Name: "strata_maintenance_mode",
			Help: "1 while the region is in maintenance mode (no new lease; its own or the cluster's), as the regional leader last read it."}),
		draining: prometheus.NewGauge(prometheus.GaugeOpts{Name: "strata_maintenance_draining",
			Help: "1 while the region drains (maintenance that also takes running workflows back), as the regional leader last read it."}),
	}
	reg.MustRegister(m.state, m.transitions, m.retries, m.maintenance, m.draining)
	return m
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
