package fsm

// Limits of DESIGN §13 and bounds on every string field. Decoders check them
// before allocating and Validate rejects events that exceed them, so every
// replica accepts exactly the same events. Never lower a limit on a running
// cluster (stored events would stop decoding); raise one only after every
// replica runs a version that accepts the higher bound.
const (
	// MaxEventBodyBytes bounds the binary body of one event (DESIGN §13).
	MaxEventBodyBytes = 64 << 10
	// MaxBatchEvents bounds the events of one batch (DESIGN §13).
	MaxBatchEvents = 10_000
	// MaxBatchBytes bounds one encoded batch, the payload of one Raft
	// entry (DESIGN §7, §13).
	MaxBatchBytes = 1 << 20
	// MaxWorkflowsPerJob bounds the workflows of a job spec (DESIGN §13).
	MaxWorkflowsPerJob = 1_000
	// MaxRegionsPerJob bounds the regions of a job spec and its assigned
	// regions (DESIGN §13).
	MaxRegionsPerJob = 16
	// MaxWorkflowCount bounds the instances of one workflow per region.
	MaxWorkflowCount = 1_000
	// MaxEventsPerJob bounds the events one job's history in the global
	// ledger holds (DESIGN §13): a job's events past it are rejected, so a
	// runaway reporter cannot grow one job without bound. The count is
	// part of the job's state (JobState.Events), the same on every
	// replica whatever the order, so the rule is deterministic.
	MaxEventsPerJob = 1_000_000
	// MaxStats bounds the named counters of one progress report.
	MaxStats = 32
	// MaxForwardMarks bounds the tenant positions of one ForwardMark. The
	// body limit holds too: 1,024 marks fit in it with tenant names of up
	// to 52 bytes; a forwarder with more or longer names splits its marks
	// over several events.
	MaxForwardMarks = 1_024

	// MaxJobIDBytes bounds a job id: region, 19 digits, gate, 5 digits and
	// three separators fit with room to spare.
	MaxJobIDBytes = 96
	// MaxRegionBytes bounds a region code ("use1", "apse1").
	MaxRegionBytes = 16
	// MaxGateBytes bounds the gate id inside a job id.
	MaxGateBytes = 32
	// MaxNameBytes bounds identifiers: tenant, node, worker, workflow name,
	// final status, timeout type, stat name.
	MaxNameBytes = 64
	// MaxWorkflowIDBytes bounds a workflow id
	// ({job_id}/{region}/{name}/{instance}).
	MaxWorkflowIDBytes = 256
	// MaxTextBytes bounds free text: reasons, errors, requestors,
	// idempotency keys.
	MaxTextBytes = 1024

	// maxEnvelopeBytes bounds everything of an encoded event but its body:
	// version, type, id, hlc, fence (uvarint), four length-prefixed
	// strings and the 4-byte body length.
	maxEnvelopeBytes = 1 + 1 + 16 + 16 + 10 + (2 + MaxJobIDBytes) + 3*(2+MaxNameBytes) + 4
	// MaxEventBytes bounds one encoded event.
	MaxEventBytes = maxEnvelopeBytes + MaxEventBodyBytes

	// MaxRecordBytes bounds one stored record (event, job state, workflow,
	// worker, chain head) in a store or a snapshot. A job state holds at
	// most three event bodies (spec, decision, pending completion) and the
	// region counters.
	MaxRecordBytes = 512 << 10

	// MaxJobSeq is the largest sequence number of a job id ({seq:05d}).
	MaxJobSeq = 99_999

	// DefaultListLimit and MaxListLimit bound one page of ListJobs.
	DefaultListLimit = 100
	MaxListLimit     = 1_000
	// DefaultMaxListScan bounds the jobs one ListJobs call over every
	// tenant examines, so a filter that matches rarely costs bounded work
	// per page (a tenant's list is served from the store's indexes).
	DefaultMaxListScan = 10_000
)
