package fsm

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Reads. Each runs in one store View, so it sees the state of one applied
// batch. Tenant-scoped reads answer ErrNotFound for another tenant's job,
// so they do not reveal that it exists.

// errStop ends an iteration early.
var errStop = errors.New("stop")

// Job returns the state of a job of tenant.
func (l *Ledger) Job(tenant, jobID string) (*JobState, error) {
	var s *JobState
	err := l.store.View(func(tx ReadTx) error {
		var err error
		s, err = tx.Job(jobID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fsm: read job %s: %w", jobID, err)
	}
	if s == nil || s.Tenant != tenant {
		return nil, fmt.Errorf("fsm: job %s: %w", jobID, ErrNotFound)
	}
	return s, nil
}

// JobQuery selects a page of jobs.
type JobQuery struct {
	// Tenant scopes the list; empty lists every tenant (operators only:
	// the HTTP layer decides who may).
	Tenant string
	// Status and Region filter; zero values match every job.
	Status JobStatus
	Region string
	// Limit bounds the page: default DefaultListLimit, at most
	// MaxListLimit.
	Limit int
	// Cursor continues a previous page (JobPage.Next); empty starts at the
	// first job.
	Cursor string
}

// JobPage is one page of jobs in id order. Next is the cursor of the
// following page, empty at the end. A tenant's page comes from the
// store's indexes and holds Limit jobs unless it is the last; a page of
// every tenant (empty Tenant) with a status or region filter may hold
// fewer than Limit jobs and still have a Next: it examines at most
// MaxListScan jobs.
type JobPage struct {
	Jobs []*JobState
	Next string
}

// ListJobs returns a page of jobs matching q, in id order.
func (l *Ledger) ListJobs(q JobQuery) (JobPage, error) {
	limit, err := pageLimit(q.Limit)
	if err != nil {
		return JobPage{}, err
	}
	after, err := decodeCursor(q.Cursor, 'j')
	if err != nil {
		return JobPage{}, err
	}
	f := JobFilter{Tenant: q.Tenant, Status: q.Status, Region: q.Region}
	var page JobPage
	err = l.store.View(func(tx ReadTx) error {
		if q.Tenant != "" {
			return tx.JobsMatching(f, after, func(s *JobState) error {
				page.Jobs = append(page.Jobs, s)
				if len(page.Jobs) == limit {
					page.Next = encodeCursor('j', s.JobID)
					return errStop
				}
				return nil
			})
		}
		scanned := 0
		return tx.Jobs("", after, func(s *JobState) error {
			scanned++
			if f.Tenant = s.Tenant; f.Matches(s) {
				page.Jobs = append(page.Jobs, s)
			}
			if len(page.Jobs) == limit || scanned == l.maxScan {
				page.Next = encodeCursor('j', s.JobID)
				return errStop
			}
			return nil
		})
	})
	if err != nil && !errors.Is(err, errStop) {
		return JobPage{}, fmt.Errorf("fsm: list jobs: %w", err)
	}
	return page, nil
}

func pageLimit(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultListLimit, nil
	case n < 0:
		return 0, fmt.Errorf("fsm: page limit %d is negative", n)
	case n > MaxListLimit:
		return 0, &LimitError{Field: "limit", Limit: MaxListLimit, Got: n}
	}
	return n, nil
}

// Cursors are opaque to clients: base64url of a kind byte and the position
// (a job id, a sortable event key, a workflow id).
func encodeCursor(kind byte, pos string) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte{kind}, pos...))
}

func decodeCursor(c string, kind byte) (string, error) {
	if c == "" {
		return "", nil
	}
	if len(c) > 2*MaxWorkflowIDBytes {
		return "", fmt.Errorf("%w: %d bytes", ErrInvalidCursor, len(c))
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) < 2 || b[0] != kind {
		return "", ErrInvalidCursor
	}
	return string(b[1:]), nil
}

// EventQuery selects a page of a job's events.
type EventQuery struct {
	Tenant string
	JobID  string
	Limit  int    // default DefaultListLimit, at most MaxListLimit
	Cursor string // EventPage.Next of the previous page
}

// EventPage is a page of a job's stored events (job and workflow events)
// in canonical order, each with its HLC, chain sequence and link.
type EventPage struct {
	Events []*StoredEvent
	Next   string
}

// JobEvents returns a page of a job's history.
func (l *Ledger) JobEvents(q EventQuery) (EventPage, error) {
	limit, err := pageLimit(q.Limit)
	if err != nil {
		return EventPage{}, err
	}
	pos, err := decodeCursor(q.Cursor, 'e')
	if err != nil {
		return EventPage{}, err
	}
	var after EventKey
	if pos != "" {
		if after, err = parseSortableKey(pos); err != nil {
			return EventPage{}, err
		}
	}
	var page EventPage
	err = l.store.View(func(tx ReadTx) error {
		s, err := tx.Job(q.JobID)
		if err != nil {
			return err
		}
		if s != nil && s.Tenant != q.Tenant {
			return ErrNotFound
		}
		return tx.JobEvents(q.JobID, after, func(se *StoredEvent) error {
			if se.Tenant != q.Tenant {
				return ErrNotFound
			}
			page.Events = append(page.Events, se)
			if len(page.Events) == limit {
				page.Next = encodeCursor('e', string(se.Key().AppendSortable(nil)))
				return errStop
			}
			return nil
		})
	})
	if err != nil && !errors.Is(err, errStop) {
		return EventPage{}, fmt.Errorf("fsm: job %s events: %w", q.JobID, err)
	}
	if len(page.Events) == 0 && pos == "" {
		return EventPage{}, fmt.Errorf("fsm: job %s events: %w", q.JobID, ErrNotFound)
	}
	return page, nil
}

func parseSortableKey(s string) (EventKey, error) {
	if len(s) != EventKeyLen {
		return EventKey{}, ErrInvalidCursor
	}
	b := []byte(s)
	var k EventKey
	var w uint64
	for _, c := range b[:8] {
		w = w<<8 | uint64(c)
	}
	if w > 1<<63-1 {
		return EventKey{}, ErrInvalidCursor
	}
	k.HLC.WallMs = int64(w)
	k.HLC.Logical = uint32(b[8])<<24 | uint32(b[9])<<16 | uint32(b[10])<<8 | uint32(b[11])
	k.HLC.Node = uint32(b[12])<<24 | uint32(b[13])<<16 | uint32(b[14])<<8 | uint32(b[15])
	copy(k.ID[:], b[16:])
	return k, nil
}

// WorkflowQuery selects a page of a job's workflows.
type WorkflowQuery struct {
	Tenant string
	JobID  string
	Limit  int
	Cursor string
}

// WorkflowPage is a page of workflows in id order.
type WorkflowPage struct {
	Workflows []*WorkflowState
	Next      string
}

// Workflows returns a page of the workflows of a job.
func (l *Ledger) Workflows(q WorkflowQuery) (WorkflowPage, error) {
	limit, err := pageLimit(q.Limit)
	if err != nil {
		return WorkflowPage{}, err
	}
	after, err := decodeCursor(q.Cursor, 'w')
	if err != nil {
		return WorkflowPage{}, err
	}
	prefix := q.JobID + "/"
	if after != "" && !strings.HasPrefix(after, prefix) {
		return WorkflowPage{}, ErrInvalidCursor
	}
	var page WorkflowPage
	err = l.store.View(func(tx ReadTx) error {
		return tx.Workflows(prefix, func(w *WorkflowState) error {
			if w.ID <= after {
				return nil
			}
			if w.Tenant != q.Tenant {
				return ErrNotFound
			}
			page.Workflows = append(page.Workflows, w)
			if len(page.Workflows) == limit {
				page.Next = encodeCursor('w', w.ID)
				return errStop
			}
			return nil
		})
	})
	if err != nil && !errors.Is(err, errStop) {
		return WorkflowPage{}, fmt.Errorf("fsm: job %s workflows: %w", q.JobID, err)
	}
	return page, nil
}

// Workers returns the worker registry in id order.
func (l *Ledger) Workers() ([]*WorkerState, error) {
	var ws []*WorkerState
	err := l.store.View(func(tx ReadTx) error {
		return tx.Workers(func(w *WorkerState) error {
			ws = append(ws, w)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("fsm: list workers: %w", err)
	}
	return ws, nil
}

// ForwardMarks returns the regional forwarder's replicated positions
// (DESIGN §4): per tenant, the chain seq up to which it forwarded.
func (l *Ledger) ForwardMarks() (map[string]uint64, error) {
	marks := map[string]uint64{}
	err := l.store.View(func(tx ReadTx) error {
		return tx.ForwardMarks(func(tenant string, seq uint64) error {
			marks[tenant] = seq
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("fsm: forward marks: %w", err)
	}
	return marks, nil
}

// ForwardMark returns the forwarder's position in a tenant's chain, 0 if
// it has none.
func (l *Ledger) ForwardMark(tenant string) (uint64, error) {
	var seq uint64
	err := l.store.View(func(tx ReadTx) error {
		var err error
		seq, err = tx.ForwardMark(tenant)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("fsm: forward mark of %q: %w", tenant, err)
	}
	return seq, nil
}

// ChainHead returns a tenant's audit chain head (zero if it has none).
func (l *Ledger) ChainHead(tenant string) (ChainHead, error) {
	var h ChainHead
	err := l.store.View(func(tx ReadTx) error {
		var err error
		h, _, err = tx.ChainHead(tenant)
		return err
	})
	if err != nil {
		return ChainHead{}, fmt.Errorf("fsm: chain head %q: %w", tenant, err)
	}
	return h, nil
}

// VerifyChain recomputes a tenant's audit chain from its stored events and
// returns the verified head, or a *ChainError naming the first broken link
// (sequence number, event id, job id).
func (l *Ledger) VerifyChain(tenant string) (ChainHead, error) {
	var h ChainHead
	err := l.store.View(func(tx ReadTx) error {
		var err error
		h, err = verifyChain(tx, tenant)
		return err
	})
	return h, err
}

// VerifyChainPage recomputes at most limit (0: every) events of a
// tenant's audit chain in one read view: those after the event of
// sequence number after (0: from the first), continuing from link, that
// event's link as the previous page verified it (nil: its stored link).
// A page that does not reach the stored head is not Done: the next one
// starts after its Head. A broken link is a *ChainError, an after beyond
// the chain ErrInvalidCursor.
func (l *Ledger) VerifyChainPage(tenant string, after uint64, link *Hash, limit int) (ChainPage, error) {
	var p ChainPage
	err := l.store.View(func(tx ReadTx) error {
		var err error
		p, err = verifyChainPage(tx, tenant, after, link, limit)
		return err
	})
	return p, err
}

// JobDigest returns the state digest of a job of tenant.
func (l *Ledger) JobDigest(tenant, jobID string) (Hash, error) {
	s, err := l.Job(tenant, jobID)
	if err != nil {
		return Hash{}, err
	}
	return s.Digest()
}

// Digest returns the whole-ledger digest: SHA-256 over every job's id and
// state digest, in id order, and the applied index it was taken at.
func (l *Ledger) Digest() (Hash, uint64, error) {
	return l.digestAt("digest", LedgerDigest)
}

// digestAt computes digest in one read view with the applied index it
// was taken at.
func (l *Ledger) digestAt(what string, digest func(ReadTx) (Hash, error)) (Hash, uint64, error) {
	var h Hash
	var index uint64
	err := l.store.View(func(tx ReadTx) error {
		var err error
		if index, err = tx.AppliedIndex(); err != nil {
			return err
		}
		h, err = digest(tx)
		return err
	})
	if err != nil {
		return Hash{}, 0, fmt.Errorf("fsm: %s: %w", what, err)
	}
	return h, index, nil
}

// LedgerDigest computes the whole-ledger digest of the state tx reads
// (fsm/DESIGN.md, "Digests"); stores use it to check a restored image.
func LedgerDigest(tx ReadTx) (Hash, error) {
	d := newLedgerDigest()
	if err := tx.Jobs("", "", d.add); err != nil {
		return Hash{}, err
	}
	return d.sum(), nil
}

// JobByID returns a job's state whatever its tenant: for callers that
// check the tenant themselves (an operator token sees every tenant).
func (l *Ledger) JobByID(jobID string) (*JobState, error) {
	return lookup(l, "job "+jobID, func(tx ReadTx) (*JobState, error) { return tx.Job(jobID) })
}

// Event returns the tenant's stored event with id (ErrNotFound if none,
// also when only another tenant has an event with that id: event ids are
// scoped by tenant).
func (l *Ledger) Event(tenant string, id EventID) (*StoredEvent, error) {
	return lookup(l, "event "+id.String(), func(tx ReadTx) (*StoredEvent, error) { return tx.Event(tenant, id) })
}

// lookup reads one value in a View; absent is ErrNotFound.
func lookup[T any](l *Ledger, what string, get func(ReadTx) (*T, error)) (*T, error) {
	var v *T
	err := l.store.View(func(tx ReadTx) error {
		var err error
		v, err = get(tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fsm: read %s: %w", what, err)
	}
	if v == nil {
		return nil, fmt.Errorf("fsm: %s: %w", what, ErrNotFound)
	}
	return v, nil
}

// View runs fn in a read transaction of the ledger's store: the state of
// some applied batch (anti-entropy digests records with it).
func (l *Ledger) View(fn func(ReadTx) error) error { return l.store.View(fn) }

// Policy returns the governance record under (kind, key), or nil.
func (l *Ledger) Policy(kind, key string) (*Policy, error) {
	var p *Policy
	err := l.store.View(func(tx ReadTx) error {
		var err error
		p, err = tx.Policy(kind, key)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fsm: policy %s/%s: %w", kind, key, err)
	}
	return p, nil
}

// Policies returns the governance records of kind (every kind if empty),
// in (kind, key) order: at most MaxPoliciesPerKind per kind.
func (l *Ledger) Policies(kind string) ([]*Policy, error) {
	var ps []*Policy
	err := l.store.View(func(tx ReadTx) error {
		return tx.Policies(kind, func(p *Policy) error {
			ps = append(ps, p)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("fsm: policies %q: %w", kind, err)
	}
	return ps, nil
}

// GovernanceDigest returns the digest of the governance state: SHA-256
// over every record's encoding (AppendPolicy, length-prefixed), in
// (kind, key) order, then the rate meters' (appendMetersDigest), and the applied index it was taken at. Replicas of
// a group at one index have equal ones; the ledger digest (Digest) stays
// the jobs' alone, since regional and global ledgers keep different
// governance state.
func (l *Ledger) GovernanceDigest() (Hash, uint64, error) {
	return l.digestAt("governance digest", GovernanceDigest)
}

// GovernanceDigest computes the governance digest of the state tx reads.
func GovernanceDigest(tx ReadTx) (Hash, error) {
	d := sha256.New()
	var buf []byte
	err := tx.Policies("", func(p *Policy) error {
		var err error
		if buf, err = AppendPolicy(buf[:0], p); err != nil {
			return err
		}
		d.Write(binary.AppendUvarint(nil, uint64(len(buf))))
		d.Write(buf)
		return nil
	})
	if err == nil {
		err = appendMetersDigest(tx, d)
	}
	var h Hash
	d.Sum(h[:0])
	return h, err
}
