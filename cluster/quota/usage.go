package quota

import (
	"errors"
	"fmt"
	"sort"

	"github.com/strata-ledger/strata/fsm"
)

// MaxQueuedScan bounds the queued jobs of a tenant one admission pass
// reads and ranks.
const MaxQueuedScan = 10_000

// Usage is what a tenant (or one of its job types) holds now.
type Usage struct {
	Active int `json:"active"`
	Queued int `json:"queued"`
}

// activeStatuses are the statuses of jobs that hold a slot (PENDING only
// when not queued).
var activeStatuses = []fsm.JobStatus{fsm.JobStatusRunning, fsm.JobStatusCancelling, fsm.JobStatusPending}

// errStop ends a count early.
var errStop = errors.New("quota: stop")

// Count counts the tenant's active and queued jobs (of jobType, every
// type if empty). It stops counting active jobs at stopAt (0: never):
// the admission check needs to know only whether the limit is reached.
func Count(tx fsm.ReadTx, tenant, jobType string, stopAt int) (Usage, error) {
	var u Usage
	for _, st := range activeStatuses {
		err := tx.JobsMatching(fsm.JobFilter{Tenant: tenant, Status: st}, "", func(s *fsm.JobState) error {
			if jobType != "" && s.Spec.Type != jobType {
				return nil
			}
			if s.Queued() {
				u.Queued++
				return nil
			}
			u.Active++
			if stopAt > 0 && u.Active >= stopAt && st != fsm.JobStatusPending {
				return errStop
			}
			return nil
		})
		if errors.Is(err, errStop) {
			continue
		}
		if err != nil {
			return Usage{}, err
		}
	}
	return u, nil
}

// Limit is one limit that applies to a job, as the API names it in a
// refusal's details.
type Limit struct {
	Tenant  string `json:"tenant"`
	JobType string `json:"job_type,omitempty"`
	// Name is the limit: "max_active" (or "max_per_hour", the HTTP
	// layer's).
	Name    string `json:"limit"`
	Allowed int64  `json:"allowed"`
	Used    int    `json:"used"`
	Queued  int    `json:"queued"`
}

func (l *Limit) Error() string {
	what := l.Tenant
	if l.JobType != "" {
		what += " job type " + l.JobType
	}
	return fmt.Sprintf("tenant %s is at its %s of %d (%d active, %d queued)", what, l.Name, l.Allowed, l.Used, l.Queued)
}

// Allowed returns the tenant's effective max_active for jobs of jobType
// ("" for the tenant's own policy): its policy's max_active, lowered to
// its fleet share when a fleet policy exists (tenant policies only); 0
// and false when no max_active applies.
func Allowed(tx fsm.ReadTx, tenant, jobType string) (int64, bool, error) {
	p, err := ReadPolicy(tx, tenant, jobType)
	if err != nil {
		return 0, false, err
	}
	allowed, ok := int64(0), false
	if p != nil && p.MaxActive > 0 {
		allowed, ok = int64(p.MaxActive), true
	}
	if jobType != "" {
		return allowed, ok, nil
	}
	share, shared, err := fleetShare(tx, tenant)
	if err != nil || !shared {
		return allowed, ok, err
	}
	if !ok || share < allowed {
		allowed = share
	}
	return allowed, true, nil
}

// fleetShare is the tenant's share of the fleet capacity, when a fleet
// policy exists and the tenant has a policy of its own. Shares are
// computed from the policies alone (every demand Unbounded), so they
// change only when a policy does.
func fleetShare(tx fsm.ReadTx, tenant string) (int64, bool, error) {
	f, err := ReadFleet(tx)
	if err != nil || f == nil {
		return 0, false, err
	}
	ps, err := ReadPolicies(tx)
	if err != nil {
		return 0, false, err
	}
	var claims []Claim
	member := false
	for _, p := range ps {
		if p.JobType != "" {
			continue
		}
		member = member || p.Tenant == tenant
		claims = append(claims, Claim{Tenant: p.Tenant, Weight: p.Weight, Reserved: p.Reserved, Fixed: p.MaxActive, Demand: Unbounded})
	}
	if !member {
		return 0, false, nil
	}
	return Allocate(f.Capacity, f.Strategy, claims)[tenant], true, nil
}

// Check returns the first max_active limit one more active job of
// (tenant, jobType) would exceed, or nil: the tenant's own (with its
// fleet share), then its job type's.
func Check(tx fsm.ReadTx, tenant, jobType string) (*Limit, error) {
	types := []string{""}
	if jobType != "" {
		types = append(types, jobType)
	}
	for _, jt := range types {
		allowed, ok, err := Allowed(tx, tenant, jt)
		if err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		u, err := Count(tx, tenant, jt, int(min(allowed, MaxActiveLimit)))
		if err != nil {
			return nil, err
		}
		if int64(u.Active) >= allowed {
			return &Limit{Tenant: tenant, JobType: jt, Name: "max_active", Allowed: allowed, Used: u.Active, Queued: u.Queued}, nil
		}
	}
	return nil, nil
}

// Hook is the global ledger's admission hook (fsm.Config.Admission): a
// queued job is admitted only while its tenant (and job type) is under
// max_active.
func Hook(tx fsm.ReadTx, s *fsm.JobState) error {
	l, err := Check(tx, s.Tenant, s.Spec.Type)
	if err != nil {
		return err
	}
	if l != nil {
		return fmt.Errorf("%w: %w", fsm.ErrOverQuota, l)
	}
	return nil
}

// Rank orders queued jobs for admission: higher priority first, then the
// older job (its creation key), then the job id.
func Rank(a, b *fsm.JobState) bool {
	if a.Spec.Priority != b.Spec.Priority {
		return a.Spec.Priority > b.Spec.Priority
	}
	if c := a.Created.Compare(b.Created); c != 0 {
		return c < 0
	}
	return a.JobID < b.JobID
}

// Admissions returns the queued jobs of tenant to admit now, best first
// (Rank): as many as the tenant's limits have room for, skipping the
// jobs skip refuses (throttled, not yet eligible at nowMs) and those
// whose job type is full. Reading at most MaxQueuedScan queued jobs.
func Admissions(tx fsm.ReadTx, tenant string, nowMs int64, skip func(*fsm.JobState) (bool, error)) ([]*fsm.JobState, error) {
	adm, _, err := AdmissionsOf(tx, tenant, nowMs, skip)
	return adm, err
}

// AdmissionsOf is Admissions that also says how many queued jobs it
// found, so a caller can forget a tenant whose queue is empty.
func AdmissionsOf(tx fsm.ReadTx, tenant string, nowMs int64, skip func(*fsm.JobState) (bool, error)) ([]*fsm.JobState, int, error) {
	out, queued, err := admissions(tx, tenant, nowMs, skip)
	return out, queued, err
}

func admissions(tx fsm.ReadTx, tenant string, nowMs int64, skip func(*fsm.JobState) (bool, error)) ([]*fsm.JobState, int, error) {
	var queued []*fsm.JobState
	err := tx.JobsMatching(fsm.JobFilter{Tenant: tenant, Status: fsm.JobStatusPending}, "", func(s *fsm.JobState) error {
		if !s.Queued() {
			return nil
		}
		queued = append(queued, s)
		if len(queued) >= MaxQueuedScan {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, 0, err
	}
	if len(queued) == 0 {
		return nil, 0, nil
	}
	sort.Slice(queued, func(i, j int) bool { return Rank(queued[i], queued[j]) })
	room := map[string]int64{} // job type ("" the tenant) → free slots, read once
	roomOf := func(jt string) (int64, error) {
		if r, ok := room[jt]; ok {
			return r, nil
		}
		allowed, ok, err := Allowed(tx, tenant, jt)
		if err != nil {
			return 0, err
		}
		r := int64(Unbounded)
		if ok {
			u, err := Count(tx, tenant, jt, 0)
			if err != nil {
				return 0, err
			}
			r = max(allowed-int64(u.Active), 0)
		}
		room[jt] = r
		return r, nil
	}
	var out []*fsm.JobState
	for _, s := range queued {
		if s.Spec.EligibleAtMs > nowMs {
			continue
		}
		if skip != nil {
			if sk, err := skip(s); err != nil || sk {
				if err != nil {
					return nil, 0, err
				}
				continue
			}
		}
		tr, err := roomOf("")
		if err != nil {
			return nil, 0, err
		}
		if tr == 0 {
			break
		}
		if s.Spec.Type != "" {
			r, err := roomOf(s.Spec.Type)
			if err != nil {
				return nil, 0, err
			}
			if r == 0 {
				continue
			}
			room[s.Spec.Type] = r - 1
		}
		room[""] = tr - 1
		out = append(out, s)
	}
	return out, len(queued), nil
}
