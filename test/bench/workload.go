package bench

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/transport/api"
)

// Workload names, as reported.
const (
	WorkloadJobSubmit          = "job-submit"
	WorkloadJobCreatedBatch    = "job-created-events"
	WorkloadWorkflowDispatched = "workflow-dispatched-events"
	WorkloadEtcdPut            = "etcd-put"
)

// Fixed parts of the generated events. Every value written into JSON here
// is plain ASCII that needs no escaping; Config.Validate checks the
// caller's tenant and region for the same reason.
const (
	benchNode        = "bench"        // Event.Node of every event
	benchWorkflow    = "bench"        // prefix of workflow names
	benchJobTimeout  = "1h"           // a job's timeout
	benchWorkflowDur = "1m"           // a workflow's duration
	padByte          = 'x'            // padding of idempotency keys and names
	keyPrefixLen     = 8 + 1 + 8 + 1  // "{nonce}-{client}-" of an idempotency key
	seqHexLen        = 16             // the sequence part of an idempotency key
	etcdKeyPrefix    = "strata-bench" // etcd keys: {prefix}/{nonce}/{client}/{seq}
)

// spec is what every generator of one run shares.
type spec struct {
	target, tier, durability string
	tenant, region           string
	batch                    int
	nonce                    uint32 // random per run: ids never collide across runs
	startMs                  int64  // wall ms at the start: part of job ids
	pad                      int    // padding bytes that bring bodies to the payload size
	bodyBytes                int    // the resulting binary body size (or etcd value size)
	workload                 string
}

// newSpec picks the workload of cfg (validated, with defaults) and the
// padding that brings each event's body closest to cfg.PayloadBytes.
func newSpec(cfg Config, nonce uint32, start time.Time) (*spec, error) {
	s := &spec{
		target: cfg.Target, tier: cfg.Tier, durability: cfg.Durability,
		tenant: cfg.Tenant, region: cfg.Region, batch: cfg.Batch,
		nonce: nonce, startMs: start.UnixMilli(),
	}
	switch {
	case cfg.Target == TargetEtcd:
		s.workload, s.pad, s.bodyBytes = WorkloadEtcdPut, cfg.PayloadBytes, cfg.PayloadBytes
		return s, nil
	case cfg.Tier == TierRegional:
		s.workload = WorkloadWorkflowDispatched
	case cfg.Batch == 1:
		s.workload = WorkloadJobSubmit
	default:
		s.workload = WorkloadJobCreatedBatch
	}
	size := func(pad int) int {
		s.pad = pad
		b, err := fsm.AppendBody(nil, s.generator(0).event(0).Body)
		if err != nil {
			return -1
		}
		return len(b)
	}
	lo, hi := 0, s.maxPad()
	minBytes, maxBytes := size(lo), size(hi)
	if cfg.PayloadBytes < minBytes || cfg.PayloadBytes > maxBytes {
		return nil, fmt.Errorf("%w: payload %d bytes: a %s body is %d..%d bytes", ErrInvalidConfig, cfg.PayloadBytes, s.workload, minBytes, maxBytes)
	}
	// Body size grows with the padding: binary search the smallest pad
	// whose body is at least the payload, then take the closer neighbour.
	for lo < hi {
		mid := (lo + hi) / 2
		if size(mid) < cfg.PayloadBytes {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	best := lo
	if lo > 0 && cfg.PayloadBytes-size(lo-1) < size(lo)-cfg.PayloadBytes {
		best = lo - 1
	}
	s.bodyBytes = size(best)
	s.pad = best
	return s, nil
}

// maxPad is the most padding the workload's padded field takes.
func (s *spec) maxPad() int {
	if s.workload == WorkloadWorkflowDispatched {
		return fsm.MaxNameBytes - len(benchWorkflow)
	}
	return fsm.MaxTextBytes - keyPrefixLen - seqHexLen
}

// generator is one client's source of requests. Not safe for concurrent
// use; each client has its own.
type generator struct {
	s      *spec
	client uint32
	seq    uint64 // events generated so far
	gate   string // the gate part of this client's job ids
	jobID  string // the one job of this client's workflow events
	name   string // this client's workflow name
	pad    string
	buf    []byte
	value  string // etcd: the base64 value, the same for every put
}

func (s *spec) generator(client int) *generator {
	g := &generator{s: s, client: uint32(client)}
	g.gate = fmt.Sprintf("b%08xc%d", s.nonce, client)
	g.jobID = fsm.JobID{Region: s.region, UnixMs: s.startMs, Gate: g.gate, Seq: 1}.String()
	g.name = benchWorkflow + strings.Repeat("w", min(s.pad, fsm.MaxNameBytes-len(benchWorkflow)))
	g.pad = strings.Repeat(string(rune(padByte)), s.pad)
	if s.target == TargetEtcd {
		g.value = base64.StdEncoding.EncodeToString([]byte(g.pad))
	}
	return g
}

// path is the request path (with query) of every request of the run.
func (s *spec) path() string {
	var p string
	switch s.workload {
	case WorkloadEtcdPut:
		return "/v3/kv/put"
	case WorkloadJobSubmit:
		p = "/v1/jobs"
	default:
		p = "/v1/events:batch"
	}
	return p + "?" + api.ParamDurability + "=" + s.durability
}

// next returns the body of the client's next request and the number of
// events it carries. The body is valid until the next call.
func (g *generator) next(now time.Time) ([]byte, int) {
	b := g.buf[:0]
	switch g.s.workload {
	case WorkloadEtcdPut:
		b = g.appendEtcdPut(b)
		g.seq++
		g.buf = b
		return b, 1
	case WorkloadJobSubmit:
		b = g.appendJobSpec(b, g.seq)
		g.seq++
		g.buf = b
		return b, 1
	}
	b = append(b, `{"events":[`...)
	for i := range g.s.batch {
		if i > 0 {
			b = append(b, ',')
		}
		b = g.appendEvent(b, now)
		g.seq++
	}
	b = append(b, "]}"...)
	g.buf = b
	return b, g.s.batch
}

// eventID is unique per run, client and sequence number.
func (g *generator) eventID(seq uint64) fsm.EventID {
	var id fsm.EventID
	binary.BigEndian.PutUint32(id[0:], g.s.nonce)
	binary.BigEndian.PutUint32(id[4:], g.client)
	binary.BigEndian.PutUint64(id[8:], seq)
	return id
}

// hlcAt is the HLC of the client's event seq made at now: the wall clock,
// the low bits of seq as logical counter (unique within a millisecond),
// the client as node ordinal.
func (g *generator) hlcAt(now time.Time, seq uint64) hlc.Timestamp {
	return hlc.Timestamp{WallMs: now.UnixMilli(), Logical: uint32(seq), Node: g.client + 1}
}

// jobIDOf is the id of the client's seq-th job (JobCreated workloads):
// MaxJobSeq sequence numbers per millisecond after the run's start.
func (g *generator) jobIDOf(seq uint64) string {
	return fsm.JobID{Region: g.s.region, UnixMs: g.s.startMs + int64(seq/fsm.MaxJobSeq),
		Gate: g.gate, Seq: uint32(seq%fsm.MaxJobSeq) + 1}.String()
}

// idempotencyKey is "{nonce}-{client}-{seq}" in fixed-width hex plus the
// padding: unique, and the same length for every request.
func (g *generator) idempotencyKey(b []byte, seq uint64) []byte {
	b = fmt.Appendf(b, "%08x-%08x-%016x", g.s.nonce, g.client, seq)
	return append(b, g.pad...)
}

// event builds the client's seq-th event as a struct: what appendEvent
// writes as JSON (tests check they agree) and what sizes the padding.
func (g *generator) event(seq uint64) fsm.Event {
	e := fsm.Event{ID: g.eventID(seq), Tenant: g.s.tenant, Region: g.s.region, Node: benchNode}
	wf := fsm.WorkflowSpec{Count: 1, Duration: fsm.Duration(time.Minute)}
	if g.s.workload == WorkloadWorkflowDispatched {
		wf.Name = g.name
		e.Type, e.JobID = fsm.TypeWorkflowDispatched, g.jobID
		e.Body = &fsm.WorkflowDispatched{
			Workflow: fsm.WorkflowID(g.jobID, g.s.region, g.name, uint32(seq)),
			Name:     g.name, Instance: uint32(seq), Spec: wf,
		}
		return e
	}
	wf.Name = benchWorkflow
	e.Type, e.JobID, e.Fence = fsm.TypeJobCreated, g.jobIDOf(seq), 1
	e.Body = &fsm.JobCreated{Spec: g.jobSpec(seq), AssignedRegions: []string{g.s.region}}
	return e
}

func (g *generator) jobSpec(seq uint64) fsm.JobSpec {
	return fsm.JobSpec{
		Tenant: g.s.tenant, IdempotencyKey: string(g.idempotencyKey(nil, seq)),
		Regions: []string{g.s.region}, Timeout: fsm.Duration(time.Hour),
		Workflows: []fsm.WorkflowSpec{{Name: benchWorkflow, Count: 1, Duration: fsm.Duration(time.Minute)}},
	}
}

// appendJobSpec writes jobSpec(seq) as JSON (the body of POST /v1/jobs).
func (g *generator) appendJobSpec(b []byte, seq uint64) []byte {
	b = append(b, `{"tenant":"`...)
	b = append(b, g.s.tenant...)
	b = append(b, `","idempotency_key":"`...)
	b = g.idempotencyKey(b, seq)
	b = append(b, `","regions":["`...)
	b = append(b, g.s.region...)
	b = append(b, `"],"timeout":"`+benchJobTimeout+`","workflows":[{"name":"`+benchWorkflow+
		`","count":1,"duration":"`+benchWorkflowDur+`","rate":0,"failure_ratio":0}]}`...)
	return b
}

// appendEvent writes event(g.seq), stamped at now, as the API's event JSON.
func (g *generator) appendEvent(b []byte, now time.Time) []byte {
	seq := g.seq
	id := g.eventID(seq)
	b = append(b, `{"id":"`...)
	b = hex.AppendEncode(b, id[:])
	if g.s.workload == WorkloadWorkflowDispatched {
		b = append(b, `","type":"WorkflowDispatched","job_id":"`...)
		b = append(b, g.jobID...)
	} else {
		b = append(b, `","type":"JobCreated","job_id":"`...)
		b = append(b, g.jobIDOf(seq)...)
	}
	b = append(b, `","tenant":"`...)
	b = append(b, g.s.tenant...)
	b = append(b, `","region":"`...)
	b = append(b, g.s.region...)
	b = append(b, `","node":"`+benchNode+`","hlc":"`...)
	b = g.hlcAt(now, seq).AppendText(b)
	if g.s.workload == WorkloadWorkflowDispatched {
		b = append(b, `","fence":0,"body":{"workflow":"`...)
		b = append(b, g.jobID...)
		b = append(b, '/')
		b = append(b, g.s.region...)
		b = append(b, '/')
		b = append(b, g.name...)
		b = append(b, '/')
		b = strconv.AppendUint(b, uint64(uint32(seq)), 10)
		b = append(b, `","name":"`...)
		b = append(b, g.name...)
		b = append(b, `","instance":`...)
		b = strconv.AppendUint(b, uint64(uint32(seq)), 10)
		b = append(b, `,"spec":{"name":"`...)
		b = append(b, g.name...)
		return append(b, `","count":1,"duration":"`+benchWorkflowDur+`","rate":0,"failure_ratio":0}}}`...)
	}
	b = append(b, `","fence":1,"body":{"spec":`...)
	b = g.appendJobSpec(b, seq)
	b = append(b, `,"assigned_regions":["`...)
	b = append(b, g.s.region...)
	return append(b, `"]}}`...)
}

// appendEtcdPut writes {"key": base64, "value": base64}.
func (g *generator) appendEtcdPut(b []byte) []byte {
	b = append(b, `{"key":"`...)
	var key [64]byte
	k := fmt.Appendf(key[:0], "%s/%08x/%d/%d", etcdKeyPrefix, g.s.nonce, g.client, g.seq)
	b = base64.StdEncoding.AppendEncode(b, k)
	b = append(b, `","value":"`...)
	b = append(b, g.value...)
	return append(b, `"}`...)
}
