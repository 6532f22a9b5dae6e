// Package fsmtest holds what tests of the fsm package and of every
// fsm.Store share: event builders, a random event stream, a naive
// reference model of the ledger's rules, and store-independent test
// suites (RunStoreSuite) that a store package runs against itself:
//
//	func TestLedgerSuite(t *testing.T) {
//		fsmtest.RunStoreSuite(t, func(t testing.TB) fsm.Store { return memstore.New() })
//	}
//
// Nothing here is used outside tests.
package fsmtest

import (
	"encoding/binary"
	"fmt"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// ID returns a deterministic, non-zero event id for n.
func ID(n uint64) fsm.EventID {
	var id fsm.EventID
	binary.BigEndian.PutUint64(id[:8], 0x5374726174610000) // "Strata\0\0"
	binary.BigEndian.PutUint64(id[8:], n)
	return id
}

// TS returns an HLC timestamp.
func TS(wallMs int64, logical, node uint32) hlc.Timestamp {
	return hlc.Timestamp{WallMs: wallMs, Logical: logical, Node: node}
}

// NewEvent builds an event; its type is the body's.
func NewEvent(id fsm.EventID, jobID, tenant, region, node string, ts hlc.Timestamp, fence uint64, body fsm.Body) fsm.Event {
	return fsm.Event{ID: id, Type: body.EventType(), JobID: jobID, Tenant: tenant, Region: region,
		Node: node, HLC: ts, Fence: fence, Body: body}
}

// Spec returns a small valid job spec.
func Spec(tenant string, regions ...string) fsm.JobSpec {
	return fsm.JobSpec{
		Tenant:  tenant,
		Regions: regions,
		Timeout: fsm.Duration(600e9),
		Workflows: []fsm.WorkflowSpec{
			{Name: "checkout", Count: 4, Duration: fsm.Duration(30e9), Rate: 200, FailureRatio: 0.01},
		},
	}
}

// Job builds the events of one job with deterministic ids and increasing
// HLC timestamps (or explicit ones through At).
type Job struct {
	ID      string
	Tenant  string
	Regions []string
	// Next is the next event id number; Wall the next HLC wall time.
	Next uint64
	Wall int64
}

// NewJob returns a builder for job id of tenant assigned to regions; ids
// start at idBase.
func NewJob(id, tenant string, idBase uint64, regions ...string) *Job {
	return &Job{ID: id, Tenant: tenant, Regions: regions, Next: idBase, Wall: 1_700_000_000_000}
}

// Ev returns the job's next event from node (HLC node ordinal nodeOrd),
// one millisecond after the previous.
func (j *Job) Ev(nodeOrd uint32, fence uint64, body fsm.Body) fsm.Event {
	j.Wall++
	return j.At(TS(j.Wall, 0, nodeOrd), fence, body)
}

// At returns the job's next event at an explicit HLC.
func (j *Job) At(ts hlc.Timestamp, fence uint64, body fsm.Body) fsm.Event {
	j.Next++
	return NewEvent(ID(j.Next), j.ID, j.Tenant, "use1", NodeName(ts.Node), ts, fence, body)
}

// Created returns the job's JobCreated with fence 1.
func (j *Job) Created() fsm.Event {
	return j.Ev(1, 1, &fsm.JobCreated{Spec: Spec(j.Tenant, j.Regions...), AssignedRegions: j.Regions})
}

// NodeName is the node id of HLC node ordinal n.
func NodeName(n uint32) string {
	return "gate" + string(rune('0'+n%10))
}

// JobsCreated returns the JobCreated events of jobs first..first+n-1 of
// tenant, each assigned to region, with distinct ids and job ids
// (anti-entropy's large ledgers).
func JobsCreated(first, n int, tenant, region string) []fsm.Event {
	out := make([]fsm.Event, 0, n)
	for k := first; k < first+n; k++ {
		j := NewJob(fmt.Sprintf("%s-1700000000000-g%d-%05d", region, k/fsm.MaxJobSeq, k%fsm.MaxJobSeq+1), tenant, uint64(k)*10, region)
		out = append(out, j.Created())
	}
	return out
}
