package boltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/strata-ledger/strata/fsm"
)

// Buckets (FORMAT.md has the byte layout of every key and value). Never
// rename one: a store opened with another set is refused.
var (
	bucketMeta      = []byte("meta")      // "applied", "layout"
	bucketChains    = []byte("chains")    // tenant ‖ 0 ‖ seq (8, BE) → stored event record
	bucketEvents    = []byte("events")    // tenant ‖ 0 ‖ event id (16) → chain key (layout 3)
	bucketHeads     = []byte("heads")     // tenant ‖ 0 → chain head record
	bucketJobs      = []byte("jobs")      // job id → job value
	bucketHistory   = []byte("history")   // job id ‖ 0 ‖ sortable key (32) → chunk
	bucketIndex     = []byte("index")     // secondary job indexes → empty
	bucketWorkflows = []byte("workflows") // workflow id → workflow record
	bucketWorkers   = []byte("workers")   // worker id → worker record
	bucketMarks     = []byte("marks")     // tenant → forward mark record (since layout 2)

	allBuckets = [][]byte{bucketMeta, bucketChains, bucketEvents, bucketHeads, bucketJobs,
		bucketHistory, bucketIndex, bucketWorkflows, bucketWorkers, bucketMarks}

	metaApplied = []byte("applied") // 8 bytes, big-endian
	metaLayout  = []byte("layout")  // 1 byte, layoutVersion
)

// Versions of the bucket layout of FORMAT.md. Never change the meaning
// of a version. Layout 3 keys the events bucket by tenant and id; layouts
// 1 and 2 (ids alone) are refused with ErrOldLayout, not migrated.
const (
	layoutVersion = 3
	layoutV2      = 2 // events keyed by id alone (and forward marks)
	layoutV1      = 1 // layout 2 without forward marks
)

// Index key kinds (the first byte of an index key).
const (
	indexTenant       = 't' // t ‖ tenant ‖ 0 ‖ job id
	indexStatus       = 's' // s ‖ tenant ‖ 0 ‖ status ‖ job id
	indexRegion       = 'r' // r ‖ tenant ‖ 0 ‖ region ‖ 0 ‖ job id
	indexRegionStatus = 'x' // x ‖ tenant ‖ 0 ‖ region ‖ 0 ‖ status ‖ job id
)

const (
	seqLen = 8
	// sortLen is the length of fsm.EventKey.AppendSortable's output.
	sortLen = fsm.EventKeyLen
)

// checkKeyPart refuses a string that cannot be part of a key: the 0 byte
// separates the parts of a key. Tenants, regions and job ids never
// contain it (fsm validates them); this guards the store's own format.
func checkKeyPart(what, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("boltstore: %s %q contains a 0 byte", what, s)
	}
	return nil
}

// appendChainKey appends tenant ‖ 0 ‖ seq (8 bytes, big-endian): a
// tenant's chain in seq order, tenants in byte order.
func appendChainKey(b []byte, tenant string, seq uint64) []byte {
	b = append(b, tenant...)
	b = append(b, 0)
	return binary.BigEndian.AppendUint64(b, seq)
}

// parseChainKey splits a chain key.
func parseChainKey(k []byte) (tenant string, seq uint64, err error) {
	n := len(k) - seqLen - 1
	if n < 0 || k[n] != 0 || bytes.IndexByte(k[:n], 0) >= 0 {
		return "", 0, fmt.Errorf("%w: chain key %x", ErrCorrupt, k)
	}
	return string(k[:n]), binary.BigEndian.Uint64(k[n+1:]), nil
}

// eventIDLen is the length of an event key's id part.
const eventIDLen = len(fsm.EventID{})

// appendEventKey appends tenant ‖ 0 ‖ id (16): event ids are scoped by
// tenant, so two tenants' events with one id have two keys. The worker
// events' tenant "" gives 0 ‖ id.
func appendEventKey(b []byte, tenant string, id fsm.EventID) []byte {
	b = append(b, tenant...)
	b = append(b, 0)
	return append(b, id[:]...)
}

// appendHeadKey appends tenant ‖ 0 (bbolt refuses the empty key of the
// worker events' tenant).
func appendHeadKey(b []byte, tenant string) []byte { return append(append(b, tenant...), 0) }

func parseHeadKey(k []byte) (string, error) {
	n := len(k) - 1
	if n < 0 || k[n] != 0 || bytes.IndexByte(k[:n], 0) >= 0 {
		return "", fmt.Errorf("%w: head key %x", ErrCorrupt, k)
	}
	return string(k[:n]), nil
}

// appendHistoryKey appends job id ‖ 0 ‖ the sortable key of a chunk's
// first entry.
func appendHistoryKey(b []byte, jobID string, first []byte) []byte {
	b = append(b, jobID...)
	b = append(b, 0)
	return append(b, first...)
}

// appendIndexPrefix appends the prefix of an index scan; the job ids
// follow it. status 0 and region "" leave that part out.
func appendIndexPrefix(b []byte, tenant string, status fsm.JobStatus, region string) []byte {
	kind := byte(indexTenant)
	switch {
	case status != fsm.JobStatusUnknown && region != "":
		kind = indexRegionStatus
	case status != fsm.JobStatusUnknown:
		kind = indexStatus
	case region != "":
		kind = indexRegion
	}
	b = append(b, kind)
	b = append(b, tenant...)
	b = append(b, 0)
	if region != "" {
		b = append(b, region...)
		b = append(b, 0)
	}
	if status != fsm.JobStatusUnknown {
		b = append(b, byte(status))
	}
	return b
}

// indexKeys appends to keys every index key of s: by tenant, by tenant
// and status, and per assigned region by tenant and region and by tenant,
// region and status. nil has none.
func indexKeys(keys [][]byte, s *fsm.JobState) [][]byte {
	keys, _ = appendIndexKeys(keys, nil, s)
	return keys
}

// appendIndexKeys is indexKeys with the keys' bytes appended to buf: a
// write transaction carves them from its arena, indexKeysBytes(s) of
// room, instead of allocating two slices per key.
func appendIndexKeys(keys [][]byte, buf []byte, s *fsm.JobState) ([][]byte, []byte) {
	if s == nil {
		return keys, buf
	}
	add := func(status fsm.JobStatus, region string) {
		start := len(buf)
		buf = appendIndexPrefix(buf, s.Tenant, status, region)
		buf = append(buf, s.JobID...)
		keys = append(keys, buf[start:len(buf):len(buf)])
	}
	add(fsm.JobStatusUnknown, "")
	add(s.Status, "")
	for i := range s.Regions {
		add(fsm.JobStatusUnknown, s.Regions[i].Region)
		add(s.Status, s.Regions[i].Region)
	}
	return keys, buf
}

// indexKeysBytes is the length of s's index keys together (0 for nil):
// per key its kind, tenant ‖ 0, job id, and region ‖ 0 and status if it
// has them.
func indexKeysBytes(s *fsm.JobState) int {
	if s == nil {
		return 0
	}
	n := 2*(2+len(s.Tenant)+len(s.JobID)) + 1
	for i := range s.Regions {
		n += 2*(3+len(s.Tenant)+len(s.Regions[i].Region)+len(s.JobID)) + 1
	}
	return n
}

// sameIndexKeys reports whether a and b have the same index keys (the
// common case of PutJob: neither status nor regions change).
func sameIndexKeys(a, b *fsm.JobState) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.JobID != b.JobID || a.Tenant != b.Tenant || a.Status != b.Status || len(a.Regions) != len(b.Regions) {
		return false
	}
	for i := range a.Regions {
		if a.Regions[i].Region != b.Regions[i].Region {
			return false
		}
	}
	return true
}

// seekFloor positions c at the greatest key <= target that starts with
// prefix (the block or chunk that covers target), or, if there is none,
// at the first key after target. Keys are nil at the end.
func seekFloor(c *bolt.Cursor, prefix, target []byte) ([]byte, []byte) {
	k, v := c.Seek(target)
	if bytes.Equal(k, target) {
		return k, v
	}
	if pk, pv := c.Prev(); pk != nil && bytes.HasPrefix(pk, prefix) {
		return pk, pv
	}
	return c.Seek(target)
}
