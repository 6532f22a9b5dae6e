package antientropy

import (
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
)

// Hash is a node's hash, or one job's item hash: a 256-bit unsigned
// integer in little-endian byte order (byte 0 is the least significant).
// A node's hash is the sum, mod 2^256, of the item hashes of the jobs below
// it; an empty subtree hashes to zero.
type Hash [32]byte

// sum is a Hash as four little-endian 64-bit limbs, limb 0 least
// significant; the arithmetic is done on it.
type sum [4]uint64

func (h Hash) sum() sum {
	return sum{
		binary.LittleEndian.Uint64(h[0:]), binary.LittleEndian.Uint64(h[8:]),
		binary.LittleEndian.Uint64(h[16:]), binary.LittleEndian.Uint64(h[24:]),
	}
}

func (s sum) hash() (h Hash) {
	binary.LittleEndian.PutUint64(h[0:], s[0])
	binary.LittleEndian.PutUint64(h[8:], s[1])
	binary.LittleEndian.PutUint64(h[16:], s[2])
	binary.LittleEndian.PutUint64(h[24:], s[3])
	return h
}

func (s sum) add(o sum) (r sum) {
	var c uint64
	r[0], c = bits.Add64(s[0], o[0], 0)
	r[1], c = bits.Add64(s[1], o[1], c)
	r[2], c = bits.Add64(s[2], o[2], c)
	r[3], _ = bits.Add64(s[3], o[3], c)
	return r
}

func (s sum) sub(o sum) (r sum) {
	var b uint64
	r[0], b = bits.Sub64(s[0], o[0], 0)
	r[1], b = bits.Sub64(s[1], o[1], b)
	r[2], b = bits.Sub64(s[2], o[2], b)
	r[3], _ = bits.Sub64(s[3], o[3], b)
	return r
}

func (s sum) isZero() bool { return s[0]|s[1]|s[2]|s[3] == 0 }

// ItemHash is a job's contribution to the tree: SHA-256 of
// uvarint(len(id)) ‖ id ‖ digest, where digest is the job's state digest
// (fsm's JobState.Digest). Never change it: it is part of the wire
// contract (FORMAT.md).
func ItemHash(id string, digest [32]byte) Hash {
	var buf [binary.MaxVarintLen64 + MaxIDBytes + 32]byte
	n := binary.PutUvarint(buf[:], uint64(len(id)))
	n += copy(buf[n:], id)
	n += copy(buf[n:], digest[:])
	return sha256.Sum256(buf[:n])
}

// bucketHash places a job id: FNV-1a 64 of the id, finished with
// MurmurHash3's fmix64 so that ids differing only in their last
// characters (the sequence number) spread over the top bits. The bucket
// depends on the id alone, so a job never moves when its state changes.
// Never change it (FORMAT.md).
func bucketHash(id string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= prime
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// BucketOf returns the leaf bucket of a job id in a tree of the given
// depth: the top depth bits of bucketHash(id).
func BucketOf(id string, depth int) uint32 {
	return uint32(bucketHash(id) >> (64 - uint(depth)))
}
