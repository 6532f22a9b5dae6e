package regionsync

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/antientropy"
	"github.com/strata-ledger/strata/antientropy/ledgertree"
	"github.com/strata-ledger/strata/cluster/lifecycle/plan"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

const (
	// DefaultInterval is how often a region's leader runs a round.
	DefaultInterval = 30 * time.Second
	// RoundTimeout bounds one round: both comparisons and the repairs.
	RoundTimeout = 2 * time.Minute
	// MaxRepairsPerRound bounds the jobs one round sends again, so a
	// round's work is bounded whatever the divergence; the next round
	// takes the rest. It also bounds the comparison (Compare.SetLimit):
	// a round descends into about this many differing subtrees, so it
	// ends within maxCompareSteps however many jobs differ (a region
	// whose forwarding lags by 100k jobs, say), and reports those it found.
	MaxRepairsPerRound = 1_000
	// repairBatchEvents bounds one delivery of a repair: well under
	// fsm.MaxBatchBytes even with the largest progress reports.
	repairBatchEvents = 200
	// maxCompareSteps bounds the round trips of one comparison (the
	// depth plus a margin for paged leaves).
	maxCompareSteps = antientropy.MaxDepth + 64
)

// Status is the outcome of the latest round: the regional-global pair of
// GET /v1/cluster/antientropy.
type Status = api.AntiEntropyPair

// Config wires a Syncer; every field but Interval, Logger and Registerer
// is required.
type Config struct {
	Region string
	// View is the region's ledger's view of its reports (ledgertree.NewRegionView).
	View *ledgertree.Tracker
	// Ledger reads the region's ledger.
	Ledger func(func(fsm.ReadTx) error) error
	// IsLeader: rounds run only on the region's leader.
	IsLeader func() bool
	// Gate is the API address of a gate to compare with ("" if none).
	Gate func() string
	// Deliver proposes an encoded batch to the global group (cross-group
	// delivery, idempotent by event id).
	Deliver      func(ctx context.Context, batch []byte) error
	Client       *http.Client
	ClusterToken string
	Interval     time.Duration
	Logger       *slog.Logger
	Registerer   prometheus.Registerer
}

// Syncer runs the region's rounds.
type Syncer struct {
	cfg Config
	m   syncMetrics

	roundMu sync.Mutex // one round at a time (schedule and on demand)
	mu      sync.Mutex
	status  Status
}

type syncMetrics struct {
	rounds, differences, repairs, bytes prometheus.Counter
	duration                            prometheus.Observer
}

// New returns a Syncer.
func New(cfg Config) (*Syncer, error) {
	if cfg.Region == "" || cfg.View == nil || cfg.Ledger == nil || cfg.IsLeader == nil || cfg.Gate == nil ||
		cfg.Deliver == nil || cfg.Client == nil || cfg.ClusterToken == "" {
		return nil, errors.New("regionsync: Region, View, Ledger, IsLeader, Gate, Deliver, Client and ClusterToken are required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	kind := prometheus.Labels{"kind": "regional-global"}
	hist := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_antientropy_round_duration_seconds",
		Help: "Duration of anti-entropy rounds by kind.", ConstLabels: kind, Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)})
	s := &Syncer{cfg: cfg, status: newStatus(cfg.Region), m: syncMetrics{
		rounds: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_antientropy_rounds_total",
			Help: "Anti-entropy rounds by kind.", ConstLabels: kind}),
		differences: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_antientropy_differences_total",
			Help: "Records found different by anti-entropy, by kind.", ConstLabels: kind}),
		repairs: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_antientropy_repairs_total",
			Help: "Anti-entropy repairs by kind.", ConstLabels: kind}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_antientropy_bytes_total",
			Help: "Bytes anti-entropy comparisons exchanged, both directions, by kind.", ConstLabels: kind}),
		duration: hist,
	}}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{s.m.rounds, s.m.differences, s.m.repairs, s.m.bytes, hist} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// Status is the latest round's.
func (s *Syncer) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Run runs a round every interval while this node leads its region.
func (s *Syncer) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		if s.cfg.IsLeader() {
			if _, err := s.Round(ctx); err != nil && ctx.Err() == nil {
				s.cfg.Logger.Warn("regional anti-entropy round failed", "err", err)
			}
		}
	}
}

// Round compares the region's view with a gate's, sends again the events
// of every job that differs (at most MaxRepairsPerRound), compares again
// and returns the outcome.
func (s *Syncer) Round(ctx context.Context) (Status, error) {
	s.roundMu.Lock()
	defer s.roundMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, RoundTimeout)
	defer cancel()
	start := time.Now()
	st := newStatus(s.cfg.Region)
	st.LastRound = start
	gate := s.cfg.Gate()
	diffs, n, err := s.compare(ctx, gate)
	st.Bytes += n
	if err == nil {
		st.Differences = len(diffs)
		s.m.differences.Add(float64(len(diffs)))
		st.Repaired, err = s.repair(ctx, diffs, gate)
		s.m.repairs.Add(float64(st.Repaired))
	}
	if err == nil && len(diffs) > 0 {
		var after []string
		after, n, err = s.compare(ctx, gate)
		st.Bytes += n
		st.RootsEqual = err == nil && len(after) == 0
	} else {
		st.RootsEqual = err == nil
	}
	st.DurationMs = time.Since(start).Milliseconds()
	s.m.rounds.Inc()
	s.m.bytes.Add(float64(st.Bytes))
	s.m.duration.Observe(time.Since(start).Seconds())
	if err != nil {
		st.Error = err.Error()
	}
	s.mu.Lock()
	st.Rounds = s.status.Rounds + 1
	s.status = st
	s.mu.Unlock()
	if st.Differences > 0 {
		s.cfg.Logger.Info("regional anti-entropy round", "differences", st.Differences, "repaired", st.Repaired,
			"roots_equal", st.RootsEqual, "bytes", st.Bytes)
	}
	return st, err
}

func newStatus(region string) Status {
	return Status{Kind: api.AntiEntropyRegionalGlobal, Region: region, Group: region}
}

// compare runs the descend protocol against a gate and returns the ids
// that differ and the bytes exchanged.
func (s *Syncer) compare(ctx context.Context, gate string) ([]string, int, error) {
	if gate == "" {
		return nil, 0, errors.New("no gate to compare with")
	}
	if err := s.cfg.View.Sync(s.cfg.Ledger); err != nil {
		return nil, 0, err
	}
	var local *antientropy.Tree
	if err := s.cfg.View.Read(func(t *antientropy.Tree) error { local = t.Clone(); return nil }); err != nil {
		return nil, 0, err
	}
	c := antientropy.NewCompare(local)
	c.SetLimit(MaxRepairsPerRound)
	req := c.Start()
	exchanged := 0
	for range maxCompareSteps {
		body, err := req.MarshalBinary()
		if err != nil {
			return nil, exchanged, err
		}
		out, err := s.post(ctx, gate, CompareAnswerPath, body)
		exchanged += len(body) + len(out)
		if err != nil {
			return nil, exchanged, err
		}
		var page antientropy.Page
		if err := page.UnmarshalBinary(out); err != nil {
			return nil, exchanged, fmt.Errorf("gate %s: %w", gate, err)
		}
		next, done, err := c.Step(page)
		if err != nil {
			return nil, exchanged, err
		}
		if done {
			return c.Differences(), exchanged, nil
		}
		req = next
	}
	return nil, exchanged, fmt.Errorf("comparison with %s did not end in %d steps", gate, maxCompareSteps)
}

func (s *Syncer) post(ctx context.Context, gate, path string, body []byte) ([]byte, error) {
	u := "http://" + gate + path + "?region=" + url.QueryEscape(s.cfg.Region)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.cfg.ClusterToken)
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, antientropy.MaxMessageBytes+1))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("gate %s: %d %s", gate, resp.StatusCode, bytes.TrimSpace(out))
	}
	return out, nil
}

// repair sends again the forwardable events of every differing job this
// region's ledger holds, in batches, through the normal delivery; the
// jobs it does not hold it asks the gate to deliver again.
func (s *Syncer) repair(ctx context.Context, jobs []string, gate string) (int, error) {
	if len(jobs) > MaxRepairsPerRound {
		jobs = jobs[:MaxRepairsPerRound]
	}
	repaired := 0
	var batch, missing = []fsm.Event(nil), []string(nil)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		enc, err := fsm.EncodeBatch(batch)
		if err != nil {
			return err
		}
		batch = batch[:0]
		return s.cfg.Deliver(ctx, enc)
	}
	for _, id := range jobs {
		evs, err := s.forwardable(id)
		if err != nil {
			return repaired, err
		}
		if len(evs) == 0 {
			if held, err := s.holds(id); err != nil {
				return repaired, err
			} else if !held {
				missing = append(missing, id) // only the global ledger holds it
			}
			continue
		}
		for _, e := range evs {
			if len(batch) == repairBatchEvents {
				if err := flush(); err != nil {
					return repaired, err
				}
			}
			batch = append(batch, e)
		}
		repaired++
	}
	if err := flush(); err != nil {
		return repaired, err
	}
	if len(missing) > 0 {
		body, err := json.Marshal(redeliverRequest{Jobs: missing})
		if err != nil {
			return repaired, err
		}
		if _, err := s.post(ctx, gate, RedeliverPath, body); err != nil {
			return repaired, fmt.Errorf("redeliver %d jobs: %w", len(missing), err)
		}
		repaired += len(missing)
	}
	return repaired, nil
}

// holds reports whether the region's ledger holds job id.
func (s *Syncer) holds(id string) (bool, error) {
	var held bool
	err := s.cfg.Ledger(func(tx fsm.ReadTx) error {
		j, err := tx.Job(id)
		held = j != nil
		return err
	})
	return held, err
}

// forwardable returns the events of job id the forwarder carries to the
// global ledger, as the region's ledger holds them.
func (s *Syncer) forwardable(id string) ([]fsm.Event, error) {
	var out []fsm.Event
	err := s.cfg.Ledger(func(tx fsm.ReadTx) error {
		return tx.JobEvents(id, fsm.EventKey{}, func(se *fsm.StoredEvent) error {
			if plan.Forwarded(&se.Event, s.cfg.Region) {
				out = append(out, se.Event)
			}
			return nil
		})
	})
	return out, err
}
