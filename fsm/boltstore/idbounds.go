package boltstore

import "bytes"

// Event id bounds (issue 19, "hot state in memory"). Every new event is
// first looked up by its key in the events bucket (tenant ‖ 0 ‖ id), the
// ledger's idempotency check, and the lookup of a new event finds
// nothing: a B-tree search per event, for an answer known in advance
// when ids increase. idBounds keeps, for a few key prefixes, an
// exclusive upper bound of the keys stored under the prefix: a key at or
// above its prefix's bound is not stored, and Event answers so without
// searching.
//
// Two prefixes of a key are tracked: the tenant's (tenant ‖ 0), which
// catches ids that increase per tenant (fsm.TimeOrderedEventID, what
// nodes make), and the tenant's and the id's first idPrefixBytes, which
// catches ids that increase per client (`strata bench` sends nonce ‖
// client ‖ counter; fsmtest.ID is a constant ‖ counter).
//
// Exactness. A bound is learnt from a search that found nothing: the
// cursor stops at the first key after the one sought, and if that key
// is not under a prefix (or there is none), every key under the prefix
// is below the one sought, which becomes the prefix's bound. PutEvent,
// the only writer of the events bucket in an Update, raises the bound of
// a key it puts at or above it. A bound stays an upper bound when keys
// go away, so a rolled-back transaction cannot make one wrong; a new
// file (Replace, RestoreImage) clears them all, and so does every clear
// of the hot state. The bounds are the write path's (Update's): Views
// and Replace do not use them.
type idBounds struct {
	max int
	m   map[string]*idBound // prefix -> bound
}

// idBound is the exclusive upper bound of the keys under one prefix;
// its buffer is reused as the bound rises.
type idBound struct{ lim []byte }

const (
	// maxIDBounds bounds the prefixes idBounds tracks (about 100 bytes
	// each): tenants and clients beyond it are searched for as before.
	maxIDBounds = 4096
	// idPrefixBytes is the part of an event id that names its client in
	// the second tracked prefix.
	idPrefixBytes = 8
)

func newIDBounds(max int) *idBounds {
	return &idBounds{max: max, m: make(map[string]*idBound)}
}

// prefixes returns the tracked prefixes of event key k of a tenant of
// tenantLen bytes.
func idPrefixes(k []byte, tenantLen int) [2][]byte {
	return [2][]byte{k[:tenantLen+1], k[:tenantLen+1+idPrefixBytes]}
}

// absent reports whether event key k is certainly not stored.
func (b *idBounds) absent(k []byte, tenantLen int) bool {
	if b == nil {
		return false
	}
	for _, p := range idPrefixes(k, tenantLen) {
		if e := b.m[string(p)]; e != nil && bytes.Compare(k, e.lim) >= 0 {
			return true
		}
	}
	return false
}

// missed learns from a search for k that found nothing and stopped at
// next (nil: the end of the bucket): k bounds every prefix of k that
// next is not under.
func (b *idBounds) missed(k, next []byte, tenantLen int) {
	if b == nil {
		return
	}
	for _, p := range idPrefixes(k, tenantLen) {
		if next != nil && bytes.HasPrefix(next, p) {
			continue
		}
		if e := b.m[string(p)]; e != nil {
			if bytes.Compare(k, e.lim) < 0 {
				e.lim = append(e.lim[:0], k...)
			}
			continue
		}
		b.add(p, k)
	}
}

// put raises the bounds that event key k, now stored, reaches.
func (b *idBounds) put(k []byte, tenantLen int) {
	if b == nil {
		return
	}
	for _, p := range idPrefixes(k, tenantLen) {
		if e := b.m[string(p)]; e != nil && bytes.Compare(k, e.lim) >= 0 {
			e.lim = append(append(e.lim[:0], k...), 0) // the least key above k
		}
	}
}

func (b *idBounds) add(p, lim []byte) {
	if len(b.m) >= b.max {
		for k := range b.m { // any one: a bound forgotten costs a search
			delete(b.m, k)
			break
		}
	}
	b.m[string(p)] = &idBound{lim: append(make([]byte, 0, len(lim)+1), lim...)}
}

func (b *idBounds) clear() {
	if b != nil {
		clear(b.m)
	}
}
