package fsm

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
)

// Digest returns the job's state digest: SHA-256 of its record encoding
// (AppendJobState), which is canonical. Two ledgers that stored the same
// set of a job's events have equal digests; anti-entropy compares them.
func (s *JobState) Digest() (Hash, error) {
	b, err := AppendJobState(nil, s)
	if err != nil {
		return Hash{}, err
	}
	return sha256.Sum256(b), nil
}

// ledgerDigest folds (job id, job digest) pairs in id order into the
// whole-ledger digest: SHA-256 over, per job, uvarint(len(id)) ‖ id ‖
// digest.
type ledgerDigest struct {
	h   hash.Hash
	buf []byte
}

func newLedgerDigest() *ledgerDigest { return &ledgerDigest{h: sha256.New()} }

func (d *ledgerDigest) add(s *JobState) error {
	var err error
	if d.buf, err = AppendJobState(d.buf[:0], s); err != nil {
		return err
	}
	jd := sha256.Sum256(d.buf)
	d.buf = binary.AppendUvarint(d.buf[:0], uint64(len(s.JobID)))
	d.buf = append(d.buf, s.JobID...)
	d.buf = append(d.buf, jd[:]...)
	d.h.Write(d.buf)
	return nil
}

func (d *ledgerDigest) sum() (h Hash) {
	d.h.Sum(h[:0])
	return h
}
