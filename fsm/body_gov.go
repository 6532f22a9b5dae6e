package fsm

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/strata-ledger/strata/hlc"
)

// Governance state (issue 18): small named kinds of bounded records —
// quota policies, throttles, breakers, maintenance — kept by the ledger,
// changed only through Raft by PolicySet and PolicyDeleted events, and
// carried by snapshots and state digests, so a leader change or a restore
// keeps them. The ledger does not interpret a record's Value: the feature
// that owns the kind does (cluster/quota, ...).

// Limits of the governance state. Never lower one on a running cluster.
const (
	// MaxPolicyKindBytes bounds a kind name ([a-z0-9_-]).
	MaxPolicyKindBytes = 32
	// MaxPolicyKeyBytes bounds a record's key ([A-Za-z0-9._:/-]).
	MaxPolicyKeyBytes = 200
	// MaxPolicyValueBytes bounds a record's value (compact JSON).
	MaxPolicyValueBytes = 4096
	// MaxPoliciesPerKind bounds the records of one kind: a PolicySet of a
	// new key over it is rejected (ErrLimit).
	MaxPoliciesPerKind = 10_000
)

// Policy is one record of the governance state: Value under (Kind, Key),
// with the change that last set it (its event's HLC, tenant, requestor,
// reason and ticket) so every record says who changed it and why.
type Policy struct {
	Kind   string          `json:"kind"`
	Key    string          `json:"key"`
	Tenant string          `json:"tenant,omitempty"` // empty: fleet-wide
	Value  json.RawMessage `json:"value"`
	HLC    hlc.Timestamp   `json:"hlc"`
	// Audit: who, why, under which ticket.
	Requestor string `json:"requestor,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Ticket    string `json:"ticket,omitempty"`
}

// JobAdmitted admits a held job (JobSpec.Held): the gate leader's
// admission loop proposes it for the best-ranked queued job of a tenant
// when the tenant's quota has room; the ledger checks the quota again
// (Config.Admission) and rejects it if there is none.
type JobAdmitted struct {
	Reason string `json:"reason,omitempty"`
}

// PolicySet puts Value under (Kind, Key), replacing any record there
// (the last applied wins: governance changes apply in Raft order).
type PolicySet struct {
	Kind      string          `json:"kind"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	Reason    string          `json:"reason"`
	Ticket    string          `json:"ticket"`
	Requestor string          `json:"requestor"`
}

// PolicyDeleted removes the record under (Kind, Key); an absent record is
// rejected (ErrUnknownPolicy), so a delete is stored only if it deleted.
type PolicyDeleted struct {
	Kind      string `json:"kind"`
	Key       string `json:"key"`
	Reason    string `json:"reason"`
	Ticket    string `json:"ticket"`
	Requestor string `json:"requestor"`
}

func (*JobAdmitted) EventType() EventType   { return TypeJobAdmitted }
func (*PolicySet) EventType() EventType     { return TypePolicySet }
func (*PolicyDeleted) EventType() EventType { return TypePolicyDeleted }

func (b *JobAdmitted) encode(e *encoder) { e.str("reason", b.Reason, MaxTextBytes) }
func (b *JobAdmitted) decode(r *reader)  { b.Reason = r.str("reason", MaxTextBytes) }
func (b *JobAdmitted) validate(v *validator) {
	v.text("reason", b.Reason, MaxTextBytes)
}

func (e *encoder) audit(reason, ticket, requestor string) {
	e.str("reason", reason, MaxTextBytes)
	e.str("ticket", ticket, MaxTextBytes)
	e.str("requestor", requestor, MaxTextBytes)
}

func (r *reader) audit(reason, ticket, requestor *string) {
	*reason = r.str("reason", MaxTextBytes)
	*ticket = r.str("ticket", MaxTextBytes)
	*requestor = r.str("requestor", MaxTextBytes)
}

func (b *PolicySet) encode(e *encoder) {
	e.str("kind", b.Kind, MaxPolicyKindBytes)
	e.str("key", b.Key, MaxPolicyKeyBytes)
	e.str("value", string(b.Value), MaxPolicyValueBytes)
	e.audit(b.Reason, b.Ticket, b.Requestor)
}

func (b *PolicySet) decode(r *reader) {
	b.Kind = r.str("kind", MaxPolicyKindBytes)
	b.Key = r.str("key", MaxPolicyKeyBytes)
	if v := r.str("value", MaxPolicyValueBytes); v != "" {
		b.Value = json.RawMessage(v)
	}
	r.audit(&b.Reason, &b.Ticket, &b.Requestor)
}

func (b *PolicyDeleted) encode(e *encoder) {
	e.str("kind", b.Kind, MaxPolicyKindBytes)
	e.str("key", b.Key, MaxPolicyKeyBytes)
	e.audit(b.Reason, b.Ticket, b.Requestor)
}

func (b *PolicyDeleted) decode(r *reader) {
	b.Kind = r.str("kind", MaxPolicyKindBytes)
	b.Key = r.str("key", MaxPolicyKeyBytes)
	r.audit(&b.Reason, &b.Ticket, &b.Requestor)
}

func (b *PolicySet) validate(v *validator) {
	v.policyRef(b.Kind, b.Key)
	v.policyValue(b.Value)
	v.auditText(b.Reason, b.Ticket, b.Requestor)
}

func (b *PolicyDeleted) validate(v *validator) {
	v.policyRef(b.Kind, b.Key)
	v.auditText(b.Reason, b.Ticket, b.Requestor)
}

func (v *validator) auditText(reason, ticket, requestor string) {
	v.text("reason", reason, MaxTextBytes)
	v.text("ticket", ticket, MaxTextBytes)
	v.text("requestor", requestor, MaxTextBytes)
}

func (v *validator) policyRef(kind, key string) {
	if v.err != nil {
		return
	}
	if !IsPolicyKind(kind) {
		v.fail("kind", fmt.Sprintf("%q is not a kind of 1 to %d [a-z0-9_-]", kind, MaxPolicyKindBytes))
		return
	}
	if !IsPolicyKey(key) {
		v.fail("key", fmt.Sprintf("%q is not a key of 1 to %d [A-Za-z0-9._:/-]", key, MaxPolicyKeyBytes))
	}
}

// policyValue requires compact JSON (what json.Marshal writes), so the
// value's binary and JSON forms are one canonical form.
func (v *validator) policyValue(val json.RawMessage) {
	if v.err != nil {
		return
	}
	if len(val) > MaxPolicyValueBytes {
		v.limit("value", MaxPolicyValueBytes, len(val))
		return
	}
	if len(val) == 0 || !json.Valid(val) {
		v.fail("value", "not JSON")
		return
	}
	var c bytes.Buffer
	if json.Compact(&c, val) != nil || !bytes.Equal(c.Bytes(), val) {
		v.fail("value", "not compact JSON")
	}
}

// IsPolicyKind reports whether s is a kind name: 1 to MaxPolicyKindBytes
// of [a-z0-9_-].
func IsPolicyKind(s string) bool {
	if len(s) == 0 || len(s) > MaxPolicyKindBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// IsPolicyKey reports whether s is a record key: 1 to MaxPolicyKeyBytes
// of [A-Za-z0-9._:/-] (a tenant and a job type joined by '/', say).
func IsPolicyKey(s string) bool {
	if len(s) == 0 || len(s) > MaxPolicyKeyBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '/' || c == ':' {
			continue
		}
		if !IsName(s[i : i+1]) {
			return false
		}
	}
	return true
}

// AppendPolicy appends a governance record: version, kind, key, tenant,
// value, hlc, requestor, reason, ticket. Stores keep these bytes; the
// state digest of a record hashes them.
func AppendPolicy(b []byte, p *Policy) ([]byte, error) {
	e := beginRecord(b)
	e.str("kind", p.Kind, MaxPolicyKindBytes)
	e.str("key", p.Key, MaxPolicyKeyBytes)
	e.str("tenant", p.Tenant, MaxNameBytes)
	e.str("value", string(p.Value), MaxPolicyValueBytes)
	e.hlc(p.HLC)
	e.audit(p.Reason, p.Ticket, p.Requestor)
	return e.endRecord(b, "policy")
}

// DecodePolicy decodes a governance record and checks its kind and key.
func DecodePolicy(b []byte) (*Policy, error) {
	p := new(Policy)
	err := decodeRecord("policy", b, func(r *reader) {
		p.Kind = r.str("kind", MaxPolicyKindBytes)
		p.Key = r.str("key", MaxPolicyKeyBytes)
		p.Tenant = r.str("tenant", MaxNameBytes)
		if v := r.str("value", MaxPolicyValueBytes); v != "" {
			p.Value = json.RawMessage(v)
		}
		p.HLC = r.hlc("hlc")
		r.audit(&p.Reason, &p.Ticket, &p.Requestor)
		if r.err == nil && (!IsPolicyKind(p.Kind) || !IsPolicyKey(p.Key) || p.Tenant != "" && !IsName(p.Tenant)) {
			r.fail(fmt.Sprintf("policy %q/%q of tenant %q", p.Kind, p.Key, p.Tenant))
		}
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}
