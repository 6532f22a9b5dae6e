package fsm

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// Restore stages: records come in this order (chains first, rate
// meters last).
const (
	stageChains = iota
	stageJobs
	stageWorkflows
	stageWorkers
	stageMarks
	stagePolicies
	stageMeters
)

// restorer checks and stores the records of a snapshot body. It enforces
// the order Snapshot writes (so a damaged or spliced stream is refused)
// and recomputes every chain link while reading.
type restorer struct {
	tx     Tx
	digest *ledgerDigest
	stage  int
	buf    []byte

	haveTenant bool
	tenant     string
	want, head ChainHead // the chain head record, the head recomputed so far
	inChain    bool

	lastJob, lastWorkflow, lastWorker, lastMark string
	lastPolicy                                  string // PolicyStateID of the last governance record
	lastMeter                                   string // PolicyStateID of the last rate meter
}

func (r *restorer) enter(stage int) error {
	if stage < r.stage {
		return fmt.Errorf("record out of order")
	}
	if stage > stageChains {
		if err := r.endChain(); err != nil {
			return err
		}
	}
	r.stage = stage
	return nil
}

func (r *restorer) record(typ byte, p []byte) error {
	switch typ {
	case snapChainHead:
		return r.chainHead(p)
	case snapEvent:
		return r.event(p)
	case snapJob:
		return r.job(p)
	case snapWorkflow:
		return r.workflow(p)
	case snapWorker:
		return r.worker(p)
	case snapMark:
		return r.mark(p)
	case snapPolicy:
		return r.policy(p)
	case snapMeter:
		return r.meter(p)
	}
	return fmt.Errorf("unknown record type %d", typ)
}

func (r *restorer) chainHead(p []byte) error {
	if err := r.enter(stageChains); err != nil {
		return err
	}
	if err := r.endChain(); err != nil {
		return err
	}
	rd := reader{b: p}
	tenant := rd.str("tenant", MaxNameBytes)
	if rd.err != nil {
		return rd.err
	}
	h, err := DecodeChainHead(p[rd.off:])
	if err != nil {
		return err
	}
	if r.haveTenant && tenant <= r.tenant {
		return fmt.Errorf("chain of tenant %q out of order", tenant)
	}
	r.haveTenant, r.tenant, r.want, r.head, r.inChain = true, tenant, h, ChainHead{}, true
	return r.tx.PutChainHead(tenant, h)
}

// endChain checks that the events of the current chain reached its head.
func (r *restorer) endChain() error {
	if !r.inChain {
		return nil
	}
	r.inChain = false
	if r.head != r.want {
		return fmt.Errorf("chain of tenant %q: events end at seq %d, head says %d", r.tenant, r.head.Seq, r.want.Seq)
	}
	return nil
}

func (r *restorer) event(p []byte) error {
	if !r.inChain || r.stage != stageChains {
		return fmt.Errorf("event outside a chain")
	}
	se, err := DecodeStoredEvent(p)
	if err != nil {
		return err
	}
	if err := se.Validate(); err != nil {
		return fmt.Errorf("event %s: %w", se.ID, err)
	}
	if se.Tenant != r.tenant || se.Seq != r.head.Seq+1 {
		return fmt.Errorf("event %s: tenant %q seq %d in the chain of %q at seq %d", se.ID, se.Tenant, se.Seq, r.tenant, r.head.Seq)
	}
	if r.buf, err = AppendBody(r.buf[:0], se.Body); err != nil {
		return err
	}
	if Hash(sha256.Sum256(r.buf)) != se.BodyHash {
		return &ChainError{Tenant: r.tenant, Seq: se.Seq, EventID: se.ID, JobID: se.JobID, Reason: "body does not match its stored hash"}
	}
	link := ChainLink(r.head, &se.Event, se.BodyHash)
	if link != se.Link {
		return &ChainError{Tenant: r.tenant, Seq: se.Seq, EventID: se.ID, JobID: se.JobID, Reason: "stored link does not match the recomputed link"}
	}
	r.head = ChainHead{Seq: se.Seq, Link: link}
	return r.tx.PutEvent(se)
}

func (r *restorer) job(p []byte) error {
	if err := r.enter(stageJobs); err != nil {
		return err
	}
	s, err := DecodeJobState(p)
	if err != nil {
		return err
	}
	if r.lastJob != "" && s.JobID <= r.lastJob {
		return fmt.Errorf("job %s out of order", s.JobID)
	}
	if _, err := ParseJobID(s.JobID); err != nil {
		return err
	}
	r.lastJob = s.JobID
	if err := r.digest.add(s); err != nil {
		return err
	}
	return r.tx.PutJob(s)
}

func (r *restorer) workflow(p []byte) error {
	if err := r.enter(stageWorkflows); err != nil {
		return err
	}
	w, err := DecodeWorkflowState(p)
	if err != nil {
		return err
	}
	if r.lastWorkflow != "" && w.ID <= r.lastWorkflow || w.ID == "" {
		return fmt.Errorf("workflow %q out of order", w.ID)
	}
	r.lastWorkflow = w.ID
	return r.tx.PutWorkflow(w)
}

func (r *restorer) worker(p []byte) error {
	if err := r.enter(stageWorkers); err != nil {
		return err
	}
	w, err := DecodeWorkerState(p)
	if err != nil {
		return err
	}
	if r.lastWorker != "" && w.ID <= r.lastWorker || w.ID == "" {
		return fmt.Errorf("worker %q out of order", w.ID)
	}
	r.lastWorker = w.ID
	return r.tx.PutWorker(w)
}

// mark restores a forward mark: tenants valid names in increasing order,
// seq at least 1 (what a ForwardMark can produce).
func (r *restorer) mark(p []byte) error {
	if err := r.enter(stageMarks); err != nil {
		return err
	}
	rd := reader{b: p}
	tenant := rd.str("tenant", MaxNameBytes)
	if rd.err != nil {
		return rd.err
	}
	seq, err := DecodeForwardMark(p[rd.off:])
	if err != nil {
		return err
	}
	if !IsName(tenant) || tenant <= r.lastMark {
		return fmt.Errorf("forward mark of tenant %q out of order or not a name", tenant)
	}
	if seq == 0 {
		return fmt.Errorf("forward mark of tenant %q: seq 0", tenant)
	}
	r.lastMark = tenant
	return r.tx.PutForwardMark(tenant, seq)
}

// appendTenantMark is the payload of a forward mark record.
func appendTenantMark(b []byte, tenant string, seq uint64) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(tenant)))
	b = append(b, tenant...)
	return AppendForwardMark(b, seq)
}

// appendTenantHead is the payload of a chain head record.
func appendTenantHead(b []byte, tenant string, h ChainHead) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(tenant)))
	b = append(b, tenant...)
	return AppendChainHead(b, h)
}

// policy restores a governance record: (kind, key) in increasing order,
// a value a PolicySet could have set.
func (r *restorer) policy(b []byte) error {
	if err := r.enter(stagePolicies); err != nil {
		return err
	}
	p, err := DecodePolicy(b)
	if err != nil {
		return err
	}
	id := PolicyStateID(p.Kind, p.Key)
	if r.lastPolicy != "" && id <= r.lastPolicy {
		return fmt.Errorf("policy %s/%s out of order", p.Kind, p.Key)
	}
	v := validator{}
	v.policyValue(p.Value)
	if v.err != nil {
		return fmt.Errorf("policy %s/%s: %w", p.Kind, p.Key, v.err)
	}
	r.lastPolicy = id
	return r.tx.PutPolicy(p)
}

// meter restores a rate meter: (kind, key) in increasing order, after the
// governance records, each of a record the snapshot restored (the ledger
// keeps no meter without its record).
func (r *restorer) meter(b []byte) error {
	if err := r.enter(stageMeters); err != nil {
		return err
	}
	m, err := DecodeMeter(b)
	if err != nil {
		return err
	}
	id := PolicyStateID(m.Kind, m.Key)
	if r.lastMeter != "" && id <= r.lastMeter {
		return fmt.Errorf("meter %s/%s out of order", m.Kind, m.Key)
	}
	p, err := r.tx.Policy(m.Kind, m.Key)
	if err != nil {
		return err
	}
	if p == nil {
		return fmt.Errorf("meter %s/%s has no governance record", m.Kind, m.Key)
	}
	r.lastMeter = id
	return r.tx.PutMeter(m)
}
