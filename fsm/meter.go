package fsm

import (
	"encoding/binary"
	"fmt"
)

// Rate meters (issue 18 §1, "max_per_hour exact across gates"): a meter
// is replicated state the ledger keeps for one governance record (its
// kind and key), so a rate limit is one bucket for the whole cluster
// instead of one per gate, and survives gate restarts and leader changes.
//
// The ledger never interprets a meter. Config.Meter, the hook (built by
// cluster/quota from a quota's max_per_hour and burst), decides at the
// apply of every new JobCreated what the job takes from its meters, from
// the meters and policies it reads and the JobCreated's own HLC wall
// time, and whether the job must wait (a hold: the job becomes queued,
// eligible no earlier than the time the hook names). The ledger only
// stores what the hook returns, checks it, and removes a meter with its
// record (PolicyDeleted), so meters are never more than the governance
// records (MaxPoliciesPerKind per kind).
//
// Order: the global ledger applies one Raft log, so every replica calls
// the hook at the same point of the same state and stores the same
// meters. A duplicate JobCreated (same tenant and id: a NodeWAL replay, a
// client's repeat) stops before the hook, so it never takes twice.

// MaxMeterLevel bounds the magnitude of Meter.Level (a hook's units):
// far beyond any meter's use, it keeps every sum of two levels in int64.
const MaxMeterLevel = 1 << 60

// MaxMetersPerCreate bounds the meters one JobCreated may change (a
// tenant's quota and its job type's take two).
const MaxMetersPerCreate = 4

// Meter is the state of one rate meter: a level in the hook's units
// (negative when the hook reserves ahead) as of AtMs (Unix ms, the
// wall time the hook last advanced it to).
type Meter struct {
	// Kind and Key name the governance record the meter belongs to.
	Kind, Key string
	Level     int64
	AtMs      int64
}

// MeterDecision is what Config.Meter decides of a new job.
type MeterDecision struct {
	// Meters are the meters to store (new values), each of an existing
	// governance record, at most MaxMetersPerCreate, each once.
	Meters []Meter
	// HoldUntilMs, if positive, holds the job: its state is queued
	// (Spec.Held) and not admissible before this Unix ms
	// (Spec.EligibleAtMs, the later of the gate's and this).
	HoldUntilMs int64
}

// MeterHook decides what a new job takes from its rate meters (see
// Config.Meter). job is the new job's state (read-only); atMs is its
// JobCreated's HLC wall time.
type MeterHook func(tx ReadTx, job *JobState, atMs int64) (MeterDecision, error)

// validMeter checks a meter's fields: a record's kind and key, a level
// within MaxMeterLevel, a time not before the epoch.
func validMeter(m *Meter) error {
	switch {
	case !IsPolicyKind(m.Kind) || !IsPolicyKey(m.Key):
		return fieldErr("meter", fmt.Sprintf("%q/%q is not a governance kind and key", m.Kind, m.Key))
	case m.Level > MaxMeterLevel || m.Level < -MaxMeterLevel:
		return &LimitError{Field: "meter level (magnitude)", Limit: MaxMeterLevel, Got: MaxMeterLevel + 1}
	case m.AtMs < 0:
		return fieldErr("meter.at_ms", fmt.Sprintf("%d is before the epoch", m.AtMs))
	}
	return nil
}

// AppendMeter appends a meter record: version, kind, key, level
// (varint), at_ms (varint). Stores keep these bytes; snapshots carry
// them (record type 8); its state digest hashes them.
func AppendMeter(b []byte, m *Meter) ([]byte, error) {
	if err := validMeter(m); err != nil {
		return b, fmt.Errorf("encode meter record: %w", err)
	}
	e := beginRecord(b)
	e.str("kind", m.Kind, MaxPolicyKindBytes)
	e.str("key", m.Key, MaxPolicyKeyBytes)
	e.varint(m.Level)
	e.varint(m.AtMs)
	return e.endRecord(b, "meter")
}

// DecodeMeter decodes a meter record and checks its fields.
func DecodeMeter(b []byte) (*Meter, error) {
	m := new(Meter)
	err := decodeRecord("meter", b, func(r *reader) {
		m.Kind = r.str("kind", MaxPolicyKindBytes)
		m.Key = r.str("key", MaxPolicyKeyBytes)
		m.Level = r.varint("level")
		m.AtMs = r.varint("at_ms")
		if r.err == nil {
			if err := validMeter(m); err != nil {
				r.fail(err.Error())
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// meterCreate runs the meter hook for job s, created by e, and applies
// its decision: the meters it returns are stored, a hold makes s queued.
// A decision that breaks the hook's contract is an error (the batch
// fails): it is a bug of the hook, and storing it would spread it.
func (a *applier) meterCreate(e *Event, s *JobState) error {
	d, err := a.meter(a.tx, s, e.HLC.WallMs)
	if err != nil {
		return fmt.Errorf("meter hook: job %s: %w", e.JobID, err)
	}
	if len(d.Meters) > MaxMetersPerCreate {
		return fmt.Errorf("meter hook: job %s: %d meters, at most %d", e.JobID, len(d.Meters), MaxMetersPerCreate)
	}
	for i := range d.Meters {
		m := d.Meters[i]
		if err := validMeter(&m); err != nil {
			return fmt.Errorf("meter hook: job %s: %w", e.JobID, err)
		}
		for _, o := range d.Meters[:i] {
			if o.Kind == m.Kind && o.Key == m.Key {
				return fmt.Errorf("meter hook: job %s: meter %s/%s twice", e.JobID, m.Kind, m.Key)
			}
		}
		p, err := a.tx.Policy(m.Kind, m.Key)
		if err != nil {
			return err
		}
		if p == nil {
			return fmt.Errorf("meter hook: job %s: meter %s/%s has no governance record", e.JobID, m.Kind, m.Key)
		}
		a.changed = append(a.changed, StateKey{StateMeter, PolicyStateID(m.Kind, m.Key)})
		if err := a.tx.PutMeter(&m); err != nil {
			return err
		}
	}
	if d.HoldUntilMs > 0 {
		s.Spec.Held = true
		s.Spec.EligibleAtMs = max(s.Spec.EligibleAtMs, d.HoldUntilMs)
	}
	return nil
}

// dropMeter removes the meter of a deleted governance record, if any.
func (a *applier) dropMeter(kind, key string) error {
	m, err := a.tx.Meter(kind, key)
	if err != nil || m == nil {
		return err
	}
	a.changed = append(a.changed, StateKey{StateMeter, PolicyStateID(kind, key)})
	return a.tx.DeleteMeter(kind, key)
}

// appendMetersDigest adds every meter's record (length-prefixed, in
// (kind, key) order) to a governance digest, after a 0 byte (a length no
// record has, so policies and meters never read as each other); no
// meter, no bytes, so a state without meters keeps the digest it had
// before meters existed.
func appendMetersDigest(tx ReadTx, d interface{ Write([]byte) (int, error) }) error {
	var buf []byte
	first := true
	return tx.Meters(func(m *Meter) error {
		if first {
			d.Write([]byte{0})
			first = false
		}
		var err error
		if buf, err = AppendMeter(buf[:0], m); err != nil {
			return err
		}
		d.Write(binary.AppendUvarint(nil, uint64(len(buf))))
		d.Write(buf)
		return nil
	})
}

// Meters returns every rate meter, in (kind, key) order: at most one per
// governance record.
func (l *Ledger) Meters() ([]*Meter, error) {
	var ms []*Meter
	err := l.store.View(func(tx ReadTx) error {
		return tx.Meters(func(m *Meter) error {
			ms = append(ms, m)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("fsm: meters: %w", err)
	}
	return ms, nil
}
