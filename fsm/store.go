package fsm

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

	// Event returns the stored event with id, or nil.
	Event(id EventID) (*StoredEvent, error)
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

	// Workflow returns the workflow, or nil.
	Workflow(id string) (*WorkflowState, error)
	// Workflows calls fn for every workflow whose id starts with prefix,
	// in id order.
	Workflows(prefix string, fn func(*WorkflowState) error) error
	// Worker returns the worker, or nil.
	Worker(id string) (*WorkerState, error)
	// Workers calls fn for every worker in id order.
	Workers(fn func(*WorkerState) error) error
}

// Tx reads and writes one transaction.
type Tx interface {
	ReadTx
	// SetAppliedIndex records the Raft index of the batch being applied.
	SetAppliedIndex(index uint64) error
	// PutEvent stores an event under its id and indexes it by job
	// (JobEvents; worker events have no job) and by tenant chain
	// (ChainEvents). A new event's Seq is one more than its tenant's last
	// stored event's. Putting an id already stored replaces that event in
	// place (same tenant, job, Seq and HLC required): the Ledger never
	// does, tests of tampering do.
	PutEvent(e *StoredEvent) error
	// PutChainHead records the tenant's chain head.
	PutChainHead(tenant string, head ChainHead) error
	// PutJob stores the job's state under its id (indexed by tenant).
	PutJob(s *JobState) error
	// PutWorkflow stores the workflow under its id.
	PutWorkflow(w *WorkflowState) error
	// PutWorker stores the worker under its id.
	PutWorker(w *WorkerState) error
}
