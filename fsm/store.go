package fsm

import "io"

// StoredEvent is an event as the ledger stores it: with its place in its
// tenant's audit chain and the hash of its body.
type StoredEvent struct {
	Event
	// Seq is the event's position in its tenant's chain, from 1.
	Seq uint64
	// Link is the chain link of the event (fsm/DESIGN.md, "Audit chain").
	Link Hash
	// BodyHash is SHA-256 of the body's canonical encoding.
	BodyHash Hash
}

// ChainHead is the end of a tenant's audit chain: the last event's
// sequence number and link. The zero value is an empty chain.
type ChainHead struct {
	Seq  uint64
	Link Hash
}

// Store persists the ledger's state. The Ledger is its only writer and
// decides every value; a Store only keeps and indexes them. The in-memory
// model is fsm/memstore; a bbolt implementation maps each method to
// buckets and cursors.
//
// Rules for implementations:
//   - Update runs fn in one read-write transaction: all of fn's writes
//     become visible together when fn returns nil, and none of them if fn
//     returns an error (which Update returns). The Ledger calls Update once
//     per applied batch. Reads inside fn see fn's own earlier writes.
//   - View runs fn in a read-only transaction over one consistent state
//     (the state after some whole Update). View may be called concurrently
//     with other Views and with Update; an implementation may serialize
//     them (memstore does), a bbolt one need not.
//   - Replace discards all state and runs fn on an empty store in one
//     transaction; if fn fails the old state stays (snapshot restore).
//   - A Tx or ReadTx is valid only inside fn, and fn must not keep it.
//   - Values passed to Put methods belong to the store afterwards; values
//     returned by reads are shared and read-only, and may stay in use after
//     the transaction ends (so a store must not change them in place).
//   - Iterations call fn in the stated order and stop at the first error
//     fn returns, which they return unchanged. fn must not write.
//   - Lookups of absent keys return nil (or false) and a nil error; errors
//     are I/O failures and make the Ledger fail the batch.
type Store interface {
	View(fn func(ReadTx) error) error
	Update(fn func(Tx) error) error
	Replace(fn func(Tx) error) error
}

// ReadTx reads one consistent state.
type ReadTx interface {
	// AppliedIndex is the Raft index of the last applied batch, 0 if none.
	AppliedIndex() (uint64, error)

	// Event returns the tenant's stored event with id, or nil. Event ids
	// are scoped by tenant: two tenants may store the same id, and a
	// lookup never finds another tenant's event (the ForwardMark and
	// worker events belong to the empty tenant).
	Event(tenant string, id EventID) (*StoredEvent, error)
	// JobEvents calls fn for every stored event with that job id (job and
	// workflow events) whose key orders after `after`, in canonical order
	// (Event.Key). The zero key starts at the beginning.
	JobEvents(jobID string, after EventKey, fn func(*StoredEvent) error) error
	// ChainEvents calls fn for the tenant's stored events with Seq > after,
	// in Seq order. Worker events form the chain of the empty tenant.
	ChainEvents(tenant string, after uint64, fn func(*StoredEvent) error) error
	// ChainHead returns the tenant's chain head, false if it has none.
	ChainHead(tenant string) (ChainHead, bool, error)
	// ChainHeads calls fn for every tenant with a chain, in tenant order.
	ChainHeads(fn func(tenant string, head ChainHead) error) error

	// Job returns the job's state, or nil.
	Job(jobID string) (*JobState, error)
	// Jobs calls fn for the jobs of tenant (every tenant if tenant is
	// empty) whose id is greater than after, in id order (byte order).
	Jobs(tenant, after string, fn func(*JobState) error) error
	// JobsMatching calls fn for the jobs that match f (f.Tenant must not
	// be empty) whose id is greater than after, in id order. A store
	// serves it from indexes kept by PutJob (tenant; tenant and status;
	// tenant and region; tenant, region and status), so its cost follows
	// the matching jobs rather than the tenant's jobs; memstore, the
	// model, filters the tenant's jobs instead.
	JobsMatching(f JobFilter, after string, fn func(*JobState) error) error

	// Workflow returns the workflow, or nil.
	Workflow(id string) (*WorkflowState, error)
	// Workflows calls fn for every workflow whose id starts with prefix,
	// in id order.
	Workflows(prefix string, fn func(*WorkflowState) error) error
	// Worker returns the worker, or nil.
	Worker(id string) (*WorkerState, error)
	// Workers calls fn for every worker in id order.
	Workers(fn func(*WorkerState) error) error

	// ForwardMark returns the forwarder's position in the tenant's chain
	// (DESIGN §4), 0 if it has none.
	ForwardMark(tenant string) (uint64, error)
	// ForwardMarks calls fn for every tenant with a forward mark, in
	// tenant order.
	ForwardMarks(fn func(tenant string, seq uint64) error) error

	// Policy returns the governance record under (kind, key), or nil.
	Policy(kind, key string) (*Policy, error)
	// Policies calls fn for the governance records of kind (every kind if
	// kind is empty), in (kind, key) byte order.
	Policies(kind string, fn func(*Policy) error) error

	// Meter returns the rate meter of the governance record (kind, key),
	// or nil (fsm/meter.go).
	Meter(kind, key string) (*Meter, error)
	// Meters calls fn for every rate meter, in (kind, key) byte order.
	Meters(fn func(*Meter) error) error
}

// Tx reads and writes one transaction.
type Tx interface {
	ReadTx
	// SetAppliedIndex records the Raft index of the batch being applied.
	SetAppliedIndex(index uint64) error
	// PutEvent stores an event under its tenant and id and indexes it by
	// job (JobEvents; worker events have no job) and by tenant chain
	// (ChainEvents). A new event's Seq is one more than its tenant's last
	// stored event's. Putting a (tenant, id) already stored replaces that
	// event in place (same job, Seq and HLC required): the Ledger never
	// does, tests of tampering do.
	PutEvent(e *StoredEvent) error
	// PutChainHead records the tenant's chain head.
	PutChainHead(tenant string, head ChainHead) error
	// PutJob stores the job's state under its id and keeps the indexes of
	// Jobs and JobsMatching up to date: the keys of the state it replaces
	// are removed. A job's tenant never changes (an error if it would).
	PutJob(s *JobState) error
	// PutWorkflow stores the workflow under its id.
	PutWorkflow(w *WorkflowState) error
	// PutWorker stores the worker under its id.
	PutWorker(w *WorkerState) error
	// PutForwardMark stores the tenant's forward mark (the Ledger never
	// lowers one; the store keeps what it is given). tenant is not empty.
	PutForwardMark(tenant string, seq uint64) error
	// PutPolicy stores the governance record under (p.Kind, p.Key),
	// replacing any record there.
	PutPolicy(p *Policy) error
	// DeletePolicy removes the record under (kind, key); absent is no
	// error.
	DeletePolicy(kind, key string) error
	// PutMeter stores the rate meter under (m.Kind, m.Key), replacing any
	// meter there.
	PutMeter(m *Meter) error
	// DeleteMeter removes the meter under (kind, key); absent is no error.
	DeleteMeter(kind, key string) error
}

// EncodedEventTx is implemented by a Tx that takes a new event together
// with the encoding of its body, so it can build the stored record
// without encoding the body a second time. The Ledger calls
// PutEncodedEvent instead of PutEvent when its Tx has it; body is the
// canonical encoding of se.Body (the bytes BodyHash covers), valid only
// during the call. The rules of PutEvent apply.
type EncodedEventTx interface {
	PutEncodedEvent(se *StoredEvent, body []byte) error
}

// JobFilter selects the jobs of one tenant by status and assigned region
// (ReadTx.JobsMatching, Ledger.ListJobs).
type JobFilter struct {
	// Tenant is required.
	Tenant string
	// Status filters by status; JobStatusUnknown matches every status.
	Status JobStatus
	// Region filters by assigned region; empty matches every region.
	Region string
}

// Matches reports whether s belongs to f.Tenant and matches f's status
// and region.
func (f *JobFilter) Matches(s *JobState) bool {
	if s.Tenant != f.Tenant || (f.Status != JobStatusUnknown && s.Status != f.Status) {
		return false
	}
	return f.Region == "" || s.regionIndex(f.Region) >= 0
}

// ImageStore is a Store that snapshots itself as a native image
// (SnapshotKindStoreImage) instead of the record stream: a file-backed
// store copies its file from one read transaction while applies go on,
// and restores by streaming an image to a new file and swapping it in,
// so neither side holds the state in memory. Ledger.Snapshot and
// Ledger.Restore use these methods when the store has them; Restore still
// accepts a record stream (through Replace).
//
// Rules: WriteImage writes the whole snapshot, header first (kind
// SnapshotKindStoreImage, the applied index of the state it copies), with
// its own integrity checks after the header; the same store state need
// not give the same bytes across replicas. RestoreImage gets the header
// Ledger.Restore already read and checked and the rest of the stream; it
// replaces the state only if the whole image arrived intact and matches
// the header (applied index, ledger digest), else it keeps the old state
// and returns an error wrapping ErrSnapshot.
type ImageStore interface {
	Store
	WriteImage(w io.Writer) error
	RestoreImage(h SnapshotHeader, r io.Reader) error
}
