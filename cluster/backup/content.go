package backup

import (
	"crypto/sha256"
	"hash"

	"github.com/strata-ledger/strata/fsm"
)

// contentHash hashes a record stream written through it without its
// ledger header (which holds the applied index) and its last 4 bytes
// (the CRC, which covers the header): what is left depends on the
// ledger's content only, so a checkpoint mark leaves it equal.
type contentHash struct {
	h    hash.Hash
	skip int     // header bytes still to drop
	tail [4]byte // the last bytes seen, held back
	n    int     // bytes held in tail
}

func newContentHash() *contentHash {
	return &contentHash{h: sha256.New(), skip: fsm.SnapshotHeaderLen}
}

func (c *contentHash) Write(p []byte) (int, error) {
	size := len(p)
	k := min(c.skip, len(p))
	p, c.skip = p[k:], c.skip-k
	if len(p) >= len(c.tail) {
		c.h.Write(c.tail[:c.n])
		c.h.Write(p[:len(p)-len(c.tail)])
		c.n = copy(c.tail[:], p[len(p)-len(c.tail):])
		return size, nil
	}
	all := append(c.tail[:c.n:c.n], p...) // a copy: its capacity is c.n
	if extra := len(all) - len(c.tail); extra > 0 {
		c.h.Write(all[:extra])
		all = all[extra:]
	}
	c.n = copy(c.tail[:], all)
	return size, nil
}

func (c *contentHash) sum() (s fsm.Hash) {
	copy(s[:], c.h.Sum(nil))
	return s
}
