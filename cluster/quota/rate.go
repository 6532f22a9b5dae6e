package quota

import "github.com/strata-ledger/strata/fsm"

// The submit rate of a quota (max_per_hour, burst), exact for the
// cluster: one token bucket per policy, kept by the global ledger as a
// rate meter (fsm.Meter) and advanced by each JobCreated's own HLC wall
// time at apply (MeterHook, fsm.Config.Meter). See the package doc.

const (
	// UnitsPerToken is a meter's unit: a meter counts tokens in
	// 1/3,600,000 of a token (one millisecond of an hour), so a rate of
	// max_per_hour N refills exactly N units per millisecond. Integers
	// only: every replica, on any CPU, computes the same meter (floats
	// could round or fuse differently). Never change: meters are stored.
	UnitsPerToken = 3_600_000
	// MaxDebtTokens bounds how far ahead a meter reserves: tokens taken
	// beyond it are all due at the time it reaches (the jobs still wait,
	// none is lost). At 1 job per hour it is 114,000 years ahead; it only
	// keeps the arithmetic far from overflow.
	MaxDebtTokens = 1_000_000_000
)

// bucket is a policy's rate: tokens earned per ms (in units) and the
// capacity (in units).
type bucket struct {
	perMs, capUnits int64
}

// bucketOf returns p's bucket; false if p has no max_per_hour.
func bucketOf(p *Policy) (bucket, bool) {
	if p == nil || p.MaxPerHour == 0 {
		return bucket{}, false
	}
	return bucket{perMs: int64(p.MaxPerHour), capUnits: int64(p.BurstOrDefault()) * UnitsPerToken}, true
}

// advance returns the level of meter m (nil: a full bucket) at atMs and
// the time that level is at: refilled by the time since the meter's, at
// most to the capacity (a policy lowered since is cut here). A meter
// already past atMs (a JobCreated stamped earlier than one applied
// before it) earns nothing and keeps its time: time never goes back.
func (b bucket) advance(m *fsm.Meter, atMs int64) (level, at int64) {
	if m == nil {
		return b.capUnits, atMs
	}
	level, at = m.Level, m.AtMs
	if atMs > at {
		if need := b.capUnits - level; need <= 0 || atMs-at >= (need+b.perMs-1)/b.perMs {
			level = b.capUnits
		} else {
			level += (atMs - at) * b.perMs
		}
		at = atMs
	}
	return min(level, b.capUnits), at
}

// dueAt is when a meter at level (after a token was taken) at time at
// has paid the token back: at itself if level is not negative.
func (b bucket) dueAt(level, at int64) int64 {
	if level >= 0 {
		return at
	}
	return at + (-level+b.perMs-1)/b.perMs
}

// take takes one token of meter m (nil: none yet, a full bucket) of
// policy record (Kind, key) at atMs: the meter afterwards and, if the
// job must wait for its token, the Unix ms it is due (0: it had one).
// A token not there is reserved ahead: the meter goes negative, and the
// next job's token is due one token's time later, so held jobs are
// eligible one after the other, at the policy's rate.
func (b bucket) take(m *fsm.Meter, key string, atMs int64) (fsm.Meter, int64) {
	level, at := b.advance(m, atMs)
	level = max(level-UnitsPerToken, -MaxDebtTokens*UnitsPerToken)
	next := fsm.Meter{Kind: Kind, Key: key, Level: level, AtMs: at}
	if level >= 0 {
		return next, 0
	}
	return next, b.dueAt(level, at)
}

// wait is how long (ms) after nowMs meter m has a token to give at once;
// 0 if it has one now.
func (b bucket) wait(m *fsm.Meter, nowMs int64) int64 {
	level, at := b.advance(m, nowMs)
	if level >= UnitsPerToken {
		return 0
	}
	return b.dueAt(level-UnitsPerToken, at) - nowMs
}

// rateKeys are the policy keys whose max_per_hour meters a job of
// (tenant, jobType): the tenant's, then its job type's.
func rateKeys(tenant, jobType string) []string {
	if jobType == "" {
		return []string{Key(tenant, "")}
	}
	return []string{Key(tenant, ""), Key(tenant, jobType)}
}

// ratePolicy reads the policy under key for its rate; a record whose
// value does not decode is skipped (no rate), deterministically: the
// API validates every policy it proposes, and a replica must not stop
// over a record it cannot read.
func ratePolicy(tx fsm.ReadTx, key string) (*Policy, bucket, bool, error) {
	r, err := tx.Policy(Kind, key)
	if err != nil || r == nil {
		return nil, bucket{}, false, err
	}
	p, err := decodePolicy(r)
	if err != nil {
		return nil, bucket{}, false, nil
	}
	b, ok := bucketOf(p)
	return p, b, ok, nil
}

// MeterHook is the global ledger's meter hook (fsm.Config.Meter): every
// new job of a tenant (and job type) with a max_per_hour takes a token of
// each such policy's meter at its JobCreated's HLC wall time; a job that
// finds none is held until its token is due (the latest of its
// policies'). The gate's fast path (RateCheck) refuses or queues before
// proposing; this is where the rate is exact, whatever the gate
// answered, however many gates there are.
func MeterHook(tx fsm.ReadTx, job *fsm.JobState, atMs int64) (fsm.MeterDecision, error) {
	var d fsm.MeterDecision
	for _, key := range rateKeys(job.Tenant, job.Spec.Type) {
		_, b, ok, err := ratePolicy(tx, key)
		if err != nil || !ok {
			if err != nil {
				return fsm.MeterDecision{}, err
			}
			continue
		}
		m, err := tx.Meter(Kind, key)
		if err != nil {
			return fsm.MeterDecision{}, err
		}
		next, due := b.take(m, key, atMs)
		d.Meters = append(d.Meters, next)
		d.HoldUntilMs = max(d.HoldUntilMs, due)
	}
	return d, nil
}

// RateCheck is the gate's fast path of max_per_hour: the first rate limit
// (the tenant's, then its job type's) a job submitted at nowMs would have
// to wait for, with the wait in ms; nil if every meter has a token now.
// metered says whether any max_per_hour applies to the job at all.
// It reads the replicated meters, so it never refuses a submit the
// ledger would take at once (the ledger only sees more tokens taken, not
// fewer); submits racing on several gates may all pass it, and then the
// ledger holds the ones past the rate (MeterHook).
func RateCheck(tx fsm.ReadTx, tenant, jobType string, nowMs int64) (worst *Limit, wait int64, metered bool, err error) {
	for _, key := range rateKeys(tenant, jobType) {
		p, b, ok, err := ratePolicy(tx, key)
		if err != nil || !ok {
			if err != nil {
				return nil, 0, false, err
			}
			continue
		}
		metered = true
		m, err := tx.Meter(Kind, key)
		if err != nil {
			return nil, 0, false, err
		}
		if w := b.wait(m, nowMs); w > 0 && (worst == nil || w > wait) {
			worst, wait = &Limit{Tenant: tenant, JobType: p.JobType, Name: "max_per_hour", Allowed: int64(p.MaxPerHour)}, w
		}
	}
	return worst, wait, metered, nil
}
