package httpapi

import (
	"crypto/sha256"
	"slices"
	"sync"

	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// Idempotency keys (DESIGN §9): a submit with a key creates the job with
// an event id derived from (tenant, key), so the replicated ledger itself
// refuses a second job for the key on every gate (the id is stored once
// per tenant — event ids are scoped by tenant, so no other tenant can take
// it; a second JobCreated with that id conflicts). A repeat finds the
// stored JobCreated by (tenant, id): same spec → 200 with the same job,
// other spec → 409.
// Submits still in flight (acknowledged below the tier, not yet applied)
// are remembered in a small per-gate cache so a quick retry to the same
// gate gets the same answer before the ledger has it.

// idempotencyCacheEntries bounds the in-flight keys a gate remembers.
const idempotencyCacheEntries = 65_536

// idempotencyDomain begins the hashed bytes of an idempotent event id. It
// is in the ledger (every keyed JobCreated's id): never change it.
const idempotencyDomain = "strata idempotency v1\x00"

// idempotentEventID is the JobCreated event id of (tenant, key): the
// first 16 bytes of SHA-256(idempotencyDomain ‖ tenant ‖ 0x00 ‖ key).
func idempotentEventID(tenant, key string) fsm.EventID {
	// The bytes of "strata idempotency v1\x00{tenant}\x00{key}", on the
	// stack for the usual sizes (fmt and a hash.Hash cost four
	// allocations a submit: issue 19).
	var buf [256]byte
	b := append(buf[:0], idempotencyDomain...)
	b = append(append(append(b, tenant...), 0), key...)
	sum := sha256.Sum256(b)
	var id fsm.EventID
	copy(id[:], sum[:])
	return id
}

type idemEntry struct {
	jobID string
	spec  *fsm.JobSpec
	hlc   hlc.Timestamp
	// level is what the first submit reached: 0 while it is in flight.
	level commit.Durability
	gen   uint64 // which claim of the id this is (see idempotencyCache.order)
}

// idempotencyCache maps event ids to the job they created, FIFO-bounded.
type idempotencyCache struct {
	mu   sync.Mutex
	max  int
	gen  uint64
	byID map[fsm.EventID]idemEntry
	// order lists claims oldest first. A forgotten key's claim stays
	// until evicted or compacted away, marked stale by its gen: it must
	// not evict a later claim of the same id.
	order []idemClaim
}

type idemClaim struct {
	id  fsm.EventID
	gen uint64
}

func newIdempotencyCache(max int) *idempotencyCache {
	return &idempotencyCache{max: max, byID: map[fsm.EventID]idemEntry{}}
}

// live reports whether cl is still the id's current claim.
func (c *idempotencyCache) live(cl idemClaim) bool {
	e, ok := c.byID[cl.id]
	return ok && e.gen == cl.gen
}

// claim records id → e (in flight) unless id is known; it returns the
// known entry and false then.
func (c *idempotencyCache) claim(id fsm.EventID, e idemEntry) (idemEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if known, ok := c.byID[id]; ok {
		return known, false
	}
	for len(c.byID) >= c.max && len(c.order) > 0 {
		if oldest := c.order[0]; c.live(oldest) {
			delete(c.byID, oldest.id)
		}
		c.order = c.order[1:]
	}
	if len(c.order) >= 2*c.max { // mostly stale claims: drop them
		c.order = slices.DeleteFunc(c.order, func(cl idemClaim) bool { return !c.live(cl) })
	}
	c.gen++
	e.level, e.gen = 0, c.gen
	c.byID[id] = e
	c.order = append(c.order, idemClaim{id, c.gen})
	return idemEntry{}, true
}

// settle records what the claimed submit reached; below LOCAL nothing was
// written, so the key is forgotten and a retry submits afresh.
func (c *idempotencyCache) settle(id fsm.EventID, level commit.Durability) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byID[id]
	if !ok {
		return
	}
	if level < commit.DurabilityLocal {
		delete(c.byID, id)
		return
	}
	e.level = level
	c.byID[id] = e
}

// normalSpec makes nil and empty slices compare equal.
func normalSpec(s *fsm.JobSpec) fsm.JobSpec {
	c := s.ClientSpec() // the gate's own fields (held) are not the client's body
	if len(c.Regions) == 0 {
		c.Regions = nil
	}
	if len(c.Workflows) == 0 {
		c.Workflows = nil
	}
	return c
}
