package fsm

import (
	"fmt"
)

// Record encodings: how a store persists the ledger's values and how a
// snapshot carries them (fsm/DESIGN.md, "Records"). Each starts with
// RecordVersion. A bbolt store keeps exactly these bytes as values, so a
// snapshot can copy them without re-encoding. Never change the meaning of
// a version.
const RecordVersion = 1

// Smallest encodings, for bounding counts before allocating.
const minRegionStateBytes = 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1

func (e *encoder) version() { e.b = append(e.b, RecordVersion) }

func (r *reader) version(what string) {
	if !r.need(what, 1) {
		return
	}
	if v := r.b[r.off]; v != RecordVersion {
		r.fail(fmt.Sprintf("%s record version %d", what, v))
		return
	}
	r.off++
}

func (e *encoder) key(k EventKey) {
	e.hlc(k.HLC)
	e.id(k.ID)
}

func (r *reader) key(what string) EventKey {
	return EventKey{HLC: r.hlc(what), ID: r.id(what)}
}

func (e *encoder) u8(v uint8) { e.b = append(e.b, v) }

func (r *reader) u8(what string) uint8 {
	if !r.need(what, 1) {
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

// decodeRecord runs fn over b, exactly, with the record size limit.
func decodeRecord(what string, b []byte, fn func(r *reader)) error {
	if len(b) > MaxRecordBytes {
		return &LimitError{Field: what + " record", Limit: MaxRecordBytes, Got: len(b)}
	}
	r := newReader(b)
	r.version(what)
	fn(&r)
	r.done(what)
	if r.err != nil {
		return fmt.Errorf("decode %s record: %w", what, r.err)
	}
	return nil
}

// beginRecord starts a record at the end of b: its version. The
// encoder is a value, not passed to a function the compiler cannot see,
// so it stays on the stack (issue 19: one allocation less per record).
func beginRecord(b []byte) encoder {
	e := encoder{b: b}
	e.version()
	return e
}

// endRecord ends the record begun at the end of b: e.b, or b and the
// first failure (the record size limit included).
func (e *encoder) endRecord(b []byte, what string) ([]byte, error) {
	if n := len(e.b) - len(b); e.err == nil && n > MaxRecordBytes {
		e.fail(&LimitError{Field: what + " record", Limit: MaxRecordBytes, Got: n})
	}
	if e.err != nil {
		return b, fmt.Errorf("encode %s record: %w", what, e.err)
	}
	return e.b, nil
}

// AppendStoredEvent appends the record of a stored event: version, Seq
// (uvarint), Link (32), BodyHash (32), then the event's encoding.
func AppendStoredEvent(b []byte, se *StoredEvent) ([]byte, error) {
	return AppendStoredEventBody(b, se, nil)
}

// AppendStoredEventBody is AppendStoredEvent with the body already
// encoded: body, if not nil, must be the canonical encoding of se.Body
// (what AppendBody writes and BodyHash covers), as EncodedEventTx gets it.
func AppendStoredEventBody(b []byte, se *StoredEvent, body []byte) ([]byte, error) {
	e := beginRecord(b)
	e.uvarint(se.Seq)
	e.hash(se.Link)
	e.hash(se.BodyHash)
	var err error
	if e.b, err = se.Event.appendBinary(e.b, body); err != nil {
		e.fail(err)
	}
	return e.endRecord(b, "event")
}

// DecodeStoredEvent decodes a stored event record.
func DecodeStoredEvent(b []byte) (*StoredEvent, error) {
	se := new(StoredEvent)
	err := decodeRecord("event", b, func(r *reader) {
		se.Seq = r.uvarint("seq")
		se.Link = r.hash("link")
		se.BodyHash = r.hash("body_hash")
		se.Event = r.event()
	})
	if err != nil {
		return nil, err
	}
	return se, nil
}

// AppendChainHead appends a chain head record: version, Seq, Link.
func AppendChainHead(b []byte, h ChainHead) ([]byte, error) {
	e := beginRecord(b)
	e.uvarint(h.Seq)
	e.hash(h.Link)
	return e.endRecord(b, "chain head")
}

// DecodeChainHead decodes a chain head record.
func DecodeChainHead(b []byte) (ChainHead, error) {
	var h ChainHead
	err := decodeRecord("chain head", b, func(r *reader) {
		h.Seq = r.uvarint("seq")
		h.Link = r.hash("link")
	})
	return h, err
}

// AppendJobState appends a job state record. It is also the canonical
// encoding a job's digest hashes, so equal states have equal bytes.
func AppendJobState(b []byte, s *JobState) ([]byte, error) {
	e := beginRecord(b)
	e.str("job_id", s.JobID, MaxJobIDBytes)
	e.str("tenant", s.Tenant, MaxNameBytes)
	e.u8(uint8(s.Status))
	e.uvarint(s.Fence)
	e.jobSpec(&s.Spec)
	e.count("regions", len(s.Regions), MaxRegionsPerJob)
	for i := range s.Regions {
		e.regionState(&s.Regions[i])
	}
	e.key(s.Created)
	e.hlc(s.HLC)
	e.decision(&s.Decision)
	e.key(s.Last)
	e.u32(s.Events)
	// Optional, last: a pending completion (none: no bytes, so the
	// record of a job without one is what it was before the field).
	if s.Pending.Type != 0 {
		if s.Pending.Type != TypeJobCompleted {
			e.fail(fieldErr("pending.type", "not JobCompleted"))
			return e.endRecord(b, "job")
		}
		e.decision(&s.Pending)
	}
	// Optional, after it: the spec extension and the admission
	// (spec_ext.go; none: no bytes).
	if s.Spec.hasExt() || s.Admitted {
		e.u8(specExtTag)
		e.specExt(&s.Spec)
		e.boolean(s.Admitted)
	}
	return e.endRecord(b, "job")
}

// DecodeJobState decodes a job state record.
func DecodeJobState(b []byte) (*JobState, error) {
	s := new(JobState)
	err := decodeRecord("job", b, func(r *reader) {
		s.JobID = r.str("job_id", MaxJobIDBytes)
		s.Tenant = r.str("tenant", MaxNameBytes)
		s.Status = JobStatus(r.u8("status"))
		if r.err == nil && (s.Status == JobStatusUnknown || s.Status > JobStatusTimedOut) {
			r.fail(fmt.Sprintf("job status %d", s.Status))
		}
		s.Fence = r.uvarint("fence")
		r.jobSpec(&s.Spec)
		if n := r.count("regions", MaxRegionsPerJob, minRegionStateBytes); n > 0 {
			s.Regions = make([]RegionState, n)
			for i := range s.Regions {
				r.regionState(&s.Regions[i])
			}
		}
		s.Created = r.key("created")
		s.HLC = r.hlc("hlc")
		r.decision(&s.Decision)
		s.Last = r.key("last")
		s.Events = r.u32("events")
		if r.err == nil && r.rest() > 0 && r.b[r.off] != specExtTag {
			r.decision(&s.Pending)
			if r.err == nil && s.Pending.Type != TypeJobCompleted {
				r.fail(fmt.Sprintf("pending type %d", s.Pending.Type))
			}
		}
		if r.err == nil && r.rest() > 0 {
			if t := r.u8("job extension"); t != specExtTag {
				r.fail(fmt.Sprintf("job extension tag %#x", t))
			}
			r.specExt(&s.Spec)
			s.Admitted = r.boolean("admitted")
			if r.err == nil && !s.Spec.hasExt() && !s.Admitted {
				r.fail("job extension sets no field")
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (e *encoder) regionState(rs *RegionState) {
	e.str("region", rs.Region, MaxRegionBytes)
	e.boolean(rs.Accepted)
	e.u32(rs.WorkerCount)
	e.uvarint(rs.Completed)
	e.uvarint(rs.Failed)
	e.stats("region.stats", rs.Stats)
	e.boolean(rs.Done)
	e.boolean(rs.CancelAcked)
	e.u32(rs.WorkflowsCancelled)
}

func (r *reader) regionState(rs *RegionState) {
	rs.Region = r.str("region", MaxRegionBytes)
	rs.Accepted = r.boolean("accepted")
	rs.WorkerCount = r.u32("worker_count")
	rs.Completed = r.uvarint("completed")
	rs.Failed = r.uvarint("failed")
	rs.Stats = r.stats("region.stats")
	rs.Done = r.boolean("done")
	rs.CancelAcked = r.boolean("cancel_acked")
	rs.WorkflowsCancelled = r.u32("workflows_cancelled")
}

// decision: type (1 byte, 0 = none); then id, hlc, fence, node and the
// body (4-byte length, canonical encoding).
func (e *encoder) decision(d *Decision) {
	e.u8(uint8(d.Type))
	if d.Type == 0 {
		return
	}
	if d.Body == nil || d.Body.EventType() != d.Type {
		e.fail(fieldErr("decision.body", "missing or of another type"))
		return
	}
	e.id(d.EventID)
	e.hlc(d.HLC)
	e.uvarint(d.Fence)
	e.str("decision.node", d.Node, MaxNameBytes)
	at := len(e.b)
	e.b = append(e.b, 0, 0, 0, 0)
	var err error
	if e.b, err = encodeBody(e.b, d.Body); err != nil {
		e.fail(err)
	}
	n := len(e.b) - at - 4
	if n > MaxEventBodyBytes {
		e.fail(&LimitError{Field: "decision.body", Limit: MaxEventBodyBytes, Got: n})
	}
	e.b[at], e.b[at+1], e.b[at+2], e.b[at+3] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
}

func (r *reader) decision(d *Decision) {
	d.Type = EventType(r.u8("decision.type"))
	if d.Type == 0 || r.err != nil {
		return
	}
	if !d.Type.IsDecisive() {
		r.fail(fmt.Sprintf("decision type %d", d.Type))
		return
	}
	d.EventID = r.id("decision.id")
	d.HLC = r.hlc("decision.hlc")
	d.Fence = r.uvarint("decision.fence")
	d.Node = r.str("decision.node", MaxNameBytes)
	n := int(r.fixed32("decision.body length"))
	if r.err == nil && n > MaxEventBodyBytes {
		r.failErr(&LimitError{Field: "decision.body", Limit: MaxEventBodyBytes, Got: n})
	}
	if !r.need("decision.body", n) {
		return
	}
	body := newBody(d.Type)
	br := r.sub(n)
	body.decode(&br)
	br.done("decision.body")
	if br.err != nil {
		r.failErr(br.err)
		return
	}
	r.off += n
	d.Body = body
}

// AppendWorkflowState appends a workflow record.
func AppendWorkflowState(b []byte, w *WorkflowState) ([]byte, error) {
	e := beginRecord(b)
	e.str("workflow", w.ID, MaxWorkflowIDBytes)
	e.str("job_id", w.JobID, MaxJobIDBytes)
	e.str("tenant", w.Tenant, MaxNameBytes)
	e.str("region", w.Region, MaxRegionBytes)
	e.str("name", w.Name, MaxNameBytes)
	e.u32(w.Instance)
	e.workflowSpec(&w.Spec)
	e.u8(uint8(w.Status))
	e.str("worker", w.Worker, MaxNameBytes)
	e.varint(w.LeaseUntilMs)
	e.uvarint(w.LeaseFence)
	e.uvarint(w.Completed)
	e.uvarint(w.Failed)
	e.stats("stats", w.Stats)
	e.str("error", w.Error, MaxTextBytes)
	e.u32(w.Reschedules)
	e.hlc(w.HLC)
	e.workflowRetries(w)
	return e.endRecord(b, "workflow")
}

// DecodeWorkflowState decodes a workflow record.
func DecodeWorkflowState(b []byte) (*WorkflowState, error) {
	w := new(WorkflowState)
	err := decodeRecord("workflow", b, func(r *reader) {
		w.ID = r.str("workflow", MaxWorkflowIDBytes)
		w.JobID = r.str("job_id", MaxJobIDBytes)
		w.Tenant = r.str("tenant", MaxNameBytes)
		w.Region = r.str("region", MaxRegionBytes)
		w.Name = r.str("name", MaxNameBytes)
		w.Instance = r.u32("instance")
		r.workflowSpec(&w.Spec)
		w.Status = WorkflowStatus(r.u8("status"))
		if r.err == nil && (w.Status == WorkflowStatusUnknown || w.Status > WorkflowStatusCancelled) {
			r.fail(fmt.Sprintf("workflow status %d", w.Status))
		}
		w.Worker = r.str("worker", MaxNameBytes)
		w.LeaseUntilMs = r.varint("lease_until")
		w.LeaseFence = r.uvarint("lease_fence")
		w.Completed = r.uvarint("completed")
		w.Failed = r.uvarint("failed")
		w.Stats = r.stats("stats")
		w.Error = r.str("error", MaxTextBytes)
		w.Reschedules = r.u32("reschedules")
		w.HLC = r.hlc("hlc")
		r.workflowRetries(w)
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// AppendWorkerState appends a worker record.
func AppendWorkerState(b []byte, w *WorkerState) ([]byte, error) {
	e := beginRecord(b)
	e.str("worker", w.ID, MaxNameBytes)
	e.str("region", w.Region, MaxRegionBytes)
	e.u32(w.Capacity)
	e.boolean(w.Active)
	e.str("reason", w.Reason, MaxTextBytes)
	e.hlc(w.HLC)
	return e.endRecord(b, "worker")
}

// DecodeWorkerState decodes a worker record.
func DecodeWorkerState(b []byte) (*WorkerState, error) {
	w := new(WorkerState)
	err := decodeRecord("worker", b, func(r *reader) {
		w.ID = r.str("worker", MaxNameBytes)
		w.Region = r.str("region", MaxRegionBytes)
		w.Capacity = r.u32("capacity")
		w.Active = r.boolean("active")
		w.Reason = r.str("reason", MaxTextBytes)
		w.HLC = r.hlc("hlc")
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// AppendForwardMark appends a forward mark record: version, Seq (uvarint).
// The tenant is the record's key (a store's key, a snapshot record's
// prefix).
func AppendForwardMark(b []byte, seq uint64) ([]byte, error) {
	e := beginRecord(b)
	e.uvarint(seq)
	return e.endRecord(b, "forward mark")
}

// DecodeForwardMark decodes a forward mark record.
func DecodeForwardMark(b []byte) (uint64, error) {
	var seq uint64
	err := decodeRecord("forward mark", b, func(r *reader) { seq = r.uvarint("seq") })
	return seq, err
}
