package fsmtest

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// Gen produces a random stream of events that exercises every rule:
// conflicting decisive events with random fences and nodes, events that
// arrive out of canonical order (the recompute path), duplicates, reused
// ids with other content, ids of one tenant's events reused by another
// tenant (ids are scoped by tenant), unknown jobs, unassigned regions,
// foreign tenants, invalid events, workflow and worker events, legal or not, and
// forward marks that raise, repeat or go back.
// It knows nothing of the rules; the Ledger and the Model decide.
type Gen struct {
	rng       *rand.Rand
	wall      int64
	logical   uint32
	ids       uint64
	jobs      []*genJob
	sent      []fsm.Event
	workflows []*genWorkflow
	workers   []string
	// gov adds the governance extension to the stream (NewGovGen): job
	// specs with type, priority and held, JobAdmitted, PolicySet and
	// PolicyDeleted. Off, the stream is what it was before them.
	gov bool
}

type genJob struct {
	id, tenant string
	regions    []string
	created    hlc.Timestamp
}

type genWorkflow struct {
	id, jobID, tenant string
	instance          uint32
	lease             uint64
	worker            string
}

var (
	genTenants = []string{"acme", "globex", "initech"}
	genRegions = []string{"apse1", "euw1", "use1"}
)

// NewGovGen returns a generator seeded with seed whose stream includes
// the governance extension.
func NewGovGen(seed uint64) *Gen {
	g := NewGen(seed)
	g.gov = true
	return g
}

// NewGen returns a generator seeded with seed.
func NewGen(seed uint64) *Gen {
	return &Gen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), wall: 1_700_000_000_000}
}

func (g *Gen) pct(p int) bool { return g.rng.IntN(100) < p }

func (g *Gen) id() fsm.EventID {
	g.ids++
	var id fsm.EventID
	for i := range id {
		id[i] = byte(g.rng.Uint32())
	}
	id[0] |= 1 // never zero
	return id
}

// now advances the generator's clock and returns a timestamp of node n.
func (g *Gen) now(n uint32) hlc.Timestamp {
	if g.pct(60) {
		g.wall += int64(g.rng.IntN(3)) + 1
		g.logical = 0
	} else {
		g.logical++
	}
	return hlc.Timestamp{WallMs: g.wall, Logical: g.logical, Node: n}
}

// past returns a timestamp between the job's creation and now, mostly
// after the creation (2% before it).
func (g *Gen) past(j *genJob, n uint32) hlc.Timestamp {
	if g.pct(2) {
		return hlc.Timestamp{WallMs: j.created.WallMs - int64(g.rng.IntN(3)), Logical: 0, Node: n}
	}
	w := j.created.WallMs + g.rng.Int64N(g.wall-j.created.WallMs+1)
	return hlc.Timestamp{WallMs: w, Logical: j.created.Logical + 1 + uint32(g.rng.IntN(3)), Node: n}
}

// Next returns the next event of the stream.
func (g *Gen) Next() fsm.Event {
	var e fsm.Event
	switch r := g.rng.IntN(100); {
	case r < 5 && len(g.sent) > 0:
		e = g.resend()
	case r < 12 || len(g.jobs) == 0:
		e = g.create()
	case r < 72:
		e = g.jobEvent()
	case r < 91:
		e = g.workflowEvent()
	case r < 97:
		e = g.workerEvent()
	case g.gov && r >= 99:
		e = g.governance()
	default:
		e = g.forwardMark()
	}
	if g.pct(2) {
		e = g.spoil(e)
	}
	g.sent = append(g.sent, e)
	return e
}

// resend repeats an earlier event, or reuses its id with other content:
// the same event with another fence, or a new job event or JobCreated
// (likely of another tenant: not a conflict, a new event).
func (g *Gen) resend() fsm.Event {
	e := g.sent[g.rng.IntN(len(g.sent))]
	switch r := g.rng.IntN(100); {
	case r < 60:
		return e
	case r < 80:
		e.Fence++
		return e
	}
	var n fsm.Event
	if len(g.jobs) > 0 && g.pct(70) {
		n = g.jobEvent()
	} else {
		n = g.create()
	}
	n.ID = e.ID
	return n
}

// spoil makes an event invalid in one of a few ways.
func (g *Gen) spoil(e fsm.Event) fsm.Event {
	switch g.rng.IntN(4) {
	case 0:
		e.ID = fsm.EventID{}
	case 1:
		e.Region = "Bad-Region"
	case 2:
		e.HLC = hlc.Timestamp{}
	default:
		e.Node = ""
	}
	return e
}

func (g *Gen) node() uint32 { return uint32(g.rng.IntN(4)) + 1 }

func (g *Gen) event(jobID, tenant, region string, ts hlc.Timestamp, fence uint64, body fsm.Body) fsm.Event {
	return NewEvent(g.id(), jobID, tenant, region, NodeName(ts.Node), ts, fence, body)
}

func (g *Gen) create() fsm.Event {
	if len(g.jobs) > 0 && g.pct(3) { // a second JobCreated for a job
		j := g.jobs[g.rng.IntN(len(g.jobs))]
		return g.event(j.id, j.tenant, "use1", g.now(1), 1, &fsm.JobCreated{Spec: Spec(j.tenant, j.regions...), AssignedRegions: j.regions})
	}
	n := 1 + g.rng.IntN(len(genRegions))
	regions := slices.Clone(genRegions)
	g.rng.Shuffle(len(regions), func(i, k int) { regions[i], regions[k] = regions[k], regions[i] })
	regions = regions[:n]
	tenant := genTenants[g.rng.IntN(len(genTenants))]
	ts := g.now(g.node())
	id := fsm.JobID{Region: "use1", UnixMs: ts.WallMs, Gate: "gate1", Seq: uint32(len(g.jobs)%fsm.MaxJobSeq + 1)}.String()
	j := &genJob{id: id, tenant: tenant, regions: regions, created: ts}
	g.jobs = append(g.jobs, j)
	spec := Spec(tenant, regions...)
	if g.gov && g.pct(25) { // the spec extension: type, priority, held
		spec.Type, spec.Priority, spec.Held = "render", int32(g.rng.IntN(21)-10), g.pct(60)
		if spec.Held {
			spec.Admission = fsm.AdmissionQueue
		}
	}
	return g.event(id, tenant, "use1", ts, 1, &fsm.JobCreated{Spec: spec, AssignedRegions: regions})
}

// jobEvent returns an event of a random job (recent jobs are likelier).
func (g *Gen) jobEvent() fsm.Event {
	j := g.jobs[len(g.jobs)-1-min(len(g.jobs)-1, g.rng.IntN(8))]
	if g.pct(2) {
		j = &genJob{id: fmt.Sprintf("use1-1-gate9-%05d", g.rng.IntN(9)+1), tenant: j.tenant, regions: j.regions, created: j.created}
	}
	n := g.node()
	ts := g.now(n)
	if g.pct(20) {
		ts = g.past(j, n)
	}
	tenant := j.tenant
	if g.pct(2) {
		tenant = "umbrella"
	}
	region := j.regions[g.rng.IntN(len(j.regions))]
	if g.pct(3) {
		region = "sae1"
	}
	fence := uint64(g.rng.IntN(4)) + 1
	return g.event(j.id, tenant, region, ts, fence, g.jobBody(region))
}

func (g *Gen) jobBody(region string) fsm.Body {
	switch r := g.rng.IntN(100); {
	case r < 15:
		return &fsm.JobAccepted{Region: region, WorkerCount: uint32(g.rng.IntN(10))}
	case r < 50:
		return &fsm.JobProgressReported{Region: region, Completed: g.rng.Uint64N(1000), Failed: g.rng.Uint64N(50),
			Stats: g.stats(), Done: g.pct(20)}
	case r < 60:
		return &fsm.JobCancellationRequested{Reason: "operator", Requestor: "alice"}
	case r < 75:
		return &fsm.JobCancellationAcked{Region: region, WorkflowsCancelled: uint32(g.rng.IntN(5))}
	case r < 85:
		return &fsm.JobCompleted{FinalStatus: "SUCCEEDED", Aggregate: fsm.Aggregate{Completed: g.rng.Uint64N(1000)}}
	case r < 93:
		fr := ""
		if g.pct(50) {
			fr = region
		}
		return &fsm.JobFailed{Error: "boom", FailedRegion: fr}
	case g.gov && r < 97:
		return &fsm.JobAdmitted{Reason: "capacity freed"}
	}
	return &fsm.JobTimedOut{TimeoutType: "job", LastProgressHLC: hlc.Timestamp{WallMs: g.wall - 5}}
}

// stats returns a few counters from a pool of 40 names, so merged stats
// sometimes pass MaxStats.
func (g *Gen) stats() fsm.Stats {
	var s fsm.Stats
	for i := range 40 {
		if g.pct(12) {
			s = append(s, fsm.Stat{Name: fmt.Sprintf("s%02d", i), Value: g.rng.Uint64N(1 << 20)})
		}
	}
	if len(s) > fsm.MaxStats {
		s = s[:fsm.MaxStats]
	}
	return s
}

// governance returns a PolicySet (mostly) or a PolicyDeleted of a few
// keys of two kinds, fleet-wide or of a tenant (so some changes name
// another tenant than the record's).
func (g *Gen) governance() fsm.Event {
	kind := []string{"quota", "throttle"}[g.rng.IntN(2)]
	key := fmt.Sprintf("k%d", g.rng.IntN(4))
	tenant := ""
	if g.pct(60) {
		tenant = genTenants[g.rng.IntN(len(genTenants))]
	}
	var b fsm.Body = &fsm.PolicySet{Kind: kind, Key: key, Value: []byte(fmt.Sprintf(`{"n":%d}`, g.rng.IntN(100))),
		Reason: "test", Ticket: "T-1", Requestor: "op"}
	if g.pct(30) {
		b = &fsm.PolicyDeleted{Kind: kind, Key: key, Reason: "test", Ticket: "T-2", Requestor: "op"}
	}
	return g.event("", tenant, "use1", g.now(g.node()), 0, b)
}
