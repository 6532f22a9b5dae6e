package fsm

import "fmt"

// ForwardPosition is where the regional forwarder stands in one tenant's
// audit chain: every event of the chain with a seq up to Seq was carried
// to the global ledger.
type ForwardPosition struct {
	Tenant string `json:"tenant"`
	Seq    uint64 `json:"seq"`
}

// minForwardPositionBytes is the smallest encoding of a ForwardPosition:
// an empty tenant and a one-byte seq.
const minForwardPositionBytes = 1 + 1

// ForwardMark records the regional forwarder's positions (DESIGN §4):
// the position is replicated state, so a new regional leader resumes
// where the old one stopped. Like worker events it has no job and no
// tenant (it is linked into the empty tenant's chain). Marks are sorted
// by tenant, tenants unique, each Seq at least 1. Applying it raises each
// tenant's stored mark to Seq and never lowers one, so marks proposed by
// two leaders in any order leave the highest.
type ForwardMark struct {
	Marks []ForwardPosition `json:"marks"`
}

// EventType implements Body.
func (*ForwardMark) EventType() EventType { return TypeForwardMark }

func (b *ForwardMark) encode(e *encoder) {
	e.count("marks", len(b.Marks), MaxForwardMarks)
	for _, m := range b.Marks {
		e.str("marks.tenant", m.Tenant, MaxNameBytes)
		e.uvarint(m.Seq)
	}
}

func (b *ForwardMark) decode(r *reader) {
	n := r.count("marks", MaxForwardMarks, minForwardPositionBytes)
	if n == 0 {
		return
	}
	b.Marks = make([]ForwardPosition, n)
	for i := range b.Marks {
		b.Marks[i] = ForwardPosition{Tenant: r.str("marks.tenant", MaxNameBytes), Seq: r.uvarint("marks.seq")}
	}
}

func (b *ForwardMark) validate(v *validator) {
	if len(b.Marks) > MaxForwardMarks {
		v.limit("marks", MaxForwardMarks, len(b.Marks))
		return
	}
	if len(b.Marks) == 0 {
		v.fail("marks", "empty")
	}
	for i, m := range b.Marks {
		v.name("marks.tenant", m.Tenant)
		if i > 0 && b.Marks[i-1].Tenant >= m.Tenant {
			v.fail("marks", fmt.Sprintf("tenant %q not sorted and unique", m.Tenant))
		}
		if m.Seq == 0 {
			v.fail("marks.seq", fmt.Sprintf("tenant %q: must be at least 1", m.Tenant))
		}
	}
}
