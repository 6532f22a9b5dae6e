package chaos

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Anomaly kinds.
const (
	// AnomalyLost: an acknowledged job is not in the global ledger at the
	// end (a STRONG read answered 404).
	AnomalyLost = "lost"
	// AnomalyNotTerminal: an acknowledged job did not reach a terminal
	// state within the settle wait, or could not be read at all.
	AnomalyNotTerminal = "not-terminal"
	// AnomalyNotLinearizable: a job's STRONG reads and GLOBAL writes have
	// no linearization (a stale or phantom read, a status that went back).
	AnomalyNotLinearizable = "not-linearizable"
	// AnomalyTwoJobsOneKey: one idempotency key was answered with two
	// job ids.
	AnomalyTwoJobsOneKey = "two-jobs-one-key"
	// AnomalyWeakAck: a GLOBAL write answered 2xx at a lower level.
	AnomalyWeakAck = "weak-ack"
)

// Anomaly is one thing the check found wrong.
type Anomaly struct {
	Kind   string `json:"kind"`
	Key    string `json:"key"`
	JobID  string `json:"job_id,omitempty"`
	Detail string `json:"detail"`
}

func (a Anomaly) String() string {
	return fmt.Sprintf("%-16s %s %s: %s", a.Kind, a.JobID, a.Key, a.Detail)
}

// Verdict is what Check found.
type Verdict struct {
	Ops     map[OpKind]map[Outcome]int `json:"ops"`
	Dropped int                        `json:"dropped_ops,omitempty"`
	// Jobs: keys submitted at least once; Acked: keys with an
	// acknowledged submit.
	Jobs  int `json:"jobs_submitted"`
	Acked int `json:"jobs_acknowledged"`
	// Ambiguous submits (outcome unknown) later resolved by a repeat of
	// their key: TookEffect if the repeat found the job already there.
	AmbiguousTookEffect int             `json:"ambiguous_took_effect"`
	AmbiguousDidNot     int             `json:"ambiguous_did_not"`
	AmbiguousUnresolved int             `json:"ambiguous_unresolved"`
	EndStates           map[string]int  `json:"end_states"` // acknowledged jobs by their last status read
	JobsTerminal        int             `json:"jobs_terminal"`
	Lost                int             `json:"jobs_lost"`
	NotTerminal         int             `json:"jobs_not_terminal"`
	Linearizability     Linearizability `json:"linearizability"`
	Anomalies           []Anomaly       `json:"anomalies"`
}

// CheckConfig bounds the linearizability check.
type CheckConfig struct {
	PerJob time.Duration // one job's history; default DefaultCheckPerJob
	Total  time.Duration // the whole check; default DefaultCheckTotal
}

// Defaults of CheckConfig. A job's history is a few dozen operations with
// little concurrency: it checks in microseconds, so these bounds only
// matter for a pathological history.
const (
	DefaultCheckPerJob = 10 * time.Second
	DefaultCheckTotal  = 2 * time.Minute
)

// maxOpsInAnomaly bounds the operations an anomaly's detail lists.
const maxOpsInAnomaly = 12

// Check checks a history: see the package doc.
func Check(ops []Op, dropped int, cfg CheckConfig) Verdict {
	if cfg.PerJob <= 0 {
		cfg.PerJob = DefaultCheckPerJob
	}
	if cfg.Total <= 0 {
		cfg.Total = DefaultCheckTotal
	}
	v := Verdict{Ops: map[OpKind]map[Outcome]int{}, EndStates: map[string]int{}, Dropped: dropped}
	byKey := map[string][]Op{}
	for _, op := range ops {
		if v.Ops[op.Kind] == nil {
			v.Ops[op.Kind] = map[Outcome]int{}
		}
		v.Ops[op.Kind][op.Outcome]++
		byKey[op.Key] = append(byKey[op.Key], op)
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range byKey {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		v.checkJob(k, byKey[k])
	}
	v.Linearizability = checkLinearizable(byKey, cfg.PerJob, cfg.Total)
	for _, k := range v.Linearizability.Illegal {
		v.Anomalies = append(v.Anomalies, Anomaly{Kind: AnomalyNotLinearizable, Key: k, JobID: jobIDOf(byKey[k]),
			Detail: "no linearization of: " + describeOps(byKey[k])})
	}
	return v
}

// checkJob runs the end checks of one key's operations.
func (v *Verdict) checkJob(key string, ops []Op) {
	var submitted, acked, ambiguous bool
	var ids []string
	var final *Op
	for i, op := range ops {
		switch {
		case op.Kind == OpSubmit:
			submitted = true
			if op.Durability != "" && !strings.EqualFold(op.Durability, "GLOBAL") {
				v.Anomalies = append(v.Anomalies, Anomaly{Kind: AnomalyWeakAck, Key: key, JobID: op.JobID,
					Detail: fmt.Sprintf("submit asked GLOBAL, answered %s: %s", op.Durability, op)})
			}
			if op.Outcome == Unknown && !acked {
				ambiguous = true
			}
			if op.Outcome != OK {
				continue
			}
			if ambiguous && !acked {
				if op.Existing {
					v.AmbiguousTookEffect++
				} else {
					v.AmbiguousDidNot++
				}
			}
			acked = true
			if !slices.Contains(ids, op.JobID) {
				ids = append(ids, op.JobID)
			}
		case op.Kind == OpRead && op.Final && op.Outcome == OK:
			final = &ops[i]
		}
	}
	if !submitted {
		return // reads of ids no one submitted: only the model checks them
	}
	v.Jobs++
	if ambiguous && !acked {
		v.AmbiguousUnresolved++
	}
	if !acked {
		return
	}
	v.Acked++
	if len(ids) > 1 {
		v.Anomalies = append(v.Anomalies, Anomaly{Kind: AnomalyTwoJobsOneKey, Key: key, JobID: ids[0],
			Detail: fmt.Sprintf("job ids %v for one idempotency key", ids)})
	}
	switch {
	case final == nil:
		v.NotTerminal++
		v.Anomalies = append(v.Anomalies, Anomaly{Kind: AnomalyNotTerminal, Key: key, JobID: ids[0],
			Detail: "no STRONG read of the job answered at the end"})
	case !final.Found:
		v.Lost++
		v.Anomalies = append(v.Anomalies, Anomaly{Kind: AnomalyLost, Key: key, JobID: ids[0],
			Detail: fmt.Sprintf("acknowledged, then not found by a STRONG read at %v: %s", final.Return.Round(time.Millisecond), describeOps(ops))})
	case !final.Status.Terminal():
		v.NotTerminal++
		v.EndStates[final.Status.String()]++
		v.Anomalies = append(v.Anomalies, Anomaly{Kind: AnomalyNotTerminal, Key: key, JobID: ids[0],
			Detail: "still " + final.Status.String() + " at the end of the settle wait"})
	default:
		v.JobsTerminal++
		v.EndStates[final.Status.String()]++
	}
}

func jobIDOf(ops []Op) string {
	for _, op := range ops {
		if op.JobID != "" {
			return op.JobID
		}
	}
	return ""
}

// describeOps lists ops, the first and last few when there are many.
func describeOps(ops []Op) string {
	s := ""
	for i, op := range ops {
		if len(ops) > maxOpsInAnomaly && i == maxOpsInAnomaly/2 {
			s += fmt.Sprintf("; ... %d more", len(ops)-maxOpsInAnomaly)
		}
		if len(ops) > maxOpsInAnomaly && i >= maxOpsInAnomaly/2 && i < len(ops)-maxOpsInAnomaly/2 {
			continue
		}
		if s != "" {
			s += "; "
		}
		s += op.String()
	}
	return s
}
