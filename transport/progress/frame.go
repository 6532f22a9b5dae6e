package progress

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strings"
)

// Sentinel errors; a decode error wraps one of them, and the receiver
// counts drops by which.
var (
	// ErrMalformed: the frame breaks FORMAT.md (version, flags, a length,
	// a count, id order, trailing bytes).
	ErrMalformed = errors.New("progress: malformed frame")
	// ErrTooLarge: the frame is longer than the configured maximum.
	ErrTooLarge = errors.New("progress: frame too large")
	// ErrUnknownWorker: Keys has no key for the frame's (worker, key id).
	ErrUnknownWorker = errors.New("progress: unknown worker or key id")
	// ErrBadMAC: the MAC does not verify under the worker's key.
	ErrBadMAC = errors.New("progress: bad MAC")
	// ErrInvalid: an update or a config the encoder refuses.
	ErrInvalid = errors.New("progress: invalid")
)

// Header is what precedes a frame's updates.
type Header struct {
	// KeyID names the worker's registration key; the receiver looks the key
	// up by (Worker, KeyID).
	KeyID uint32
	// Seq numbers the frames of one (worker, key id) from 1. It is only
	// counted (duplicates, reordering): cumulative counters make replays
	// harmless.
	Seq uint64
	// Worker is the sending worker's id, 1..MaxWorkerBytes bytes.
	Worker string
}

// Histogram holds cumulative latency counts in fixed log2 buckets: bucket 0
// counts latencies under 1 µs, bucket i (1 ≤ i < 31) those in
// [2^(i-1), 2^i) µs, bucket 31 those of 2^30 µs (about 17.9 min) and more.
// A nil Histogram is no histogram; the decoder returns one that ends at its
// last non-zero bucket.
type Histogram []uint64

// Update is one workflow's cumulative counters under one lease.
type Update struct {
	// Workflow is the fsm workflow id, {job_id}/{region}/{name}/{instance},
	// 1..MaxWorkflowBytes bytes.
	Workflow string
	// Fence is the lease fence the worker holds the workflow under.
	Fence uint64
	// Completed and Failed count requests since the lease began.
	Completed uint64
	Failed    uint64
	// Histogram is optional; counts are cumulative, like the counters.
	Histogram Histogram
}

// Frame is a decoded frame.
type Frame struct {
	Header
	Updates []Update
}

// Offsets of the header's fixed fields (FORMAT.md).
const (
	offVersion   = 0
	offFlags     = 1
	offKeyID     = 2
	offSeq       = 6
	offWorkerLen = 14
	offWorker    = 15
)

// appendHeader appends h with a zero update count; the count sits at
// len(result)-countBytes.
func appendHeader(dst []byte, h Header) []byte {
	dst = append(dst, Version, 0)
	dst = binary.LittleEndian.AppendUint32(dst, h.KeyID)
	dst = binary.LittleEndian.AppendUint64(dst, h.Seq)
	dst = append(dst, byte(len(h.Worker)))
	dst = append(dst, h.Worker...)
	return append(dst, 0, 0)
}

// appendUpdate appends u, its id compressed against prev (the previous id
// of the frame, "" for the first).
func appendUpdate(dst []byte, prev string, u *Update) []byte {
	p := commonPrefix(prev, u.Workflow)
	dst = binary.AppendUvarint(dst, uint64(p))
	dst = binary.AppendUvarint(dst, uint64(len(u.Workflow)-p))
	dst = append(dst, u.Workflow[p:]...)
	dst = binary.AppendUvarint(dst, u.Fence)
	dst = binary.AppendUvarint(dst, u.Completed)
	dst = binary.AppendUvarint(dst, u.Failed)
	first, n := histogramSpan(u.Histogram)
	dst = append(dst, byte(n))
	if n == 0 {
		return dst
	}
	dst = append(dst, byte(first))
	for _, c := range u.Histogram[first : first+n] {
		dst = binary.AppendUvarint(dst, c)
	}
	return dst
}

// commonPrefix returns the length of the longest common prefix of a and b,
// short of all of b (a suffix is never empty).
func commonPrefix(a, b string) int {
	n := min(len(a), len(b)-1)
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// histogramSpan returns the first non-zero bucket and the number of buckets
// up to the last non-zero one; n == 0 when all are zero.
func histogramSpan(h Histogram) (first, n int) {
	last := len(h) - 1
	for last >= 0 && h[last] == 0 {
		last--
	}
	if last < 0 {
		return 0, 0
	}
	for h[first] == 0 {
		first++
	}
	return first, last - first + 1
}

// finishFrame writes the update count of the frame that starts at
// buf[start:] and appends its MAC.
func finishFrame(buf []byte, start, countOff, count int, mac hash.Hash, sum []byte) []byte {
	frame := buf[start:]
	binary.LittleEndian.PutUint16(frame[countOff:], uint16(count))
	mac.Reset()
	mac.Write(frame)
	sum = mac.Sum(sum[:0])
	return append(buf, sum[:MACBytes]...)
}

// validateUpdate checks what the wire format cannot carry.
func validateUpdate(u *Update) error {
	switch {
	case len(u.Workflow) == 0 || len(u.Workflow) > MaxWorkflowBytes:
		return fmt.Errorf("%w: workflow id %q: length %d not in 1..%d", ErrInvalid, u.Workflow, len(u.Workflow), MaxWorkflowBytes)
	case len(u.Histogram) > HistogramBuckets:
		return fmt.Errorf("%w: workflow %s: %d histogram buckets, at most %d", ErrInvalid, u.Workflow, len(u.Histogram), HistogramBuckets)
	}
	return nil
}

func validateHeader(worker string, key []byte) error {
	switch {
	case len(worker) == 0 || len(worker) > MaxWorkerBytes:
		return fmt.Errorf("%w: worker id %q: length %d not in 1..%d", ErrInvalid, worker, len(worker), MaxWorkerBytes)
	case len(key) < MinKeyBytes:
		return fmt.Errorf("%w: key of %d bytes, at least %d", ErrInvalid, len(key), MinKeyBytes)
	}
	return nil
}

// AppendFrame appends one frame holding h and updates, MAC'd under key, to
// dst. Updates must be sorted by Workflow with no repeats. It enforces the
// wire limits but not a frame size: Encoder packs updates into frames of a
// bounded size.
func AppendFrame(dst []byte, h Header, updates []Update, key []byte) ([]byte, error) {
	if err := validateHeader(h.Worker, key); err != nil {
		return dst, err
	}
	if len(updates) > MaxUpdatesPerFrame {
		return dst, fmt.Errorf("%w: %d updates, at most %d", ErrInvalid, len(updates), MaxUpdatesPerFrame)
	}
	start := len(dst)
	frame := appendHeader(dst, h)
	prev := ""
	for i := range updates {
		u := &updates[i]
		if err := validateUpdate(u); err != nil {
			return dst, err
		}
		if i > 0 && u.Workflow <= prev {
			return dst, fmt.Errorf("%w: workflow ids not strictly increasing at %q", ErrInvalid, u.Workflow)
		}
		frame = appendUpdate(frame, prev, u)
		prev = u.Workflow
	}
	if len(frame)-start+MACBytes > LimitMaxFrameBytes {
		return dst, fmt.Errorf("%w: frame of %d bytes, at most %d", ErrInvalid, len(frame)-start+MACBytes, LimitMaxFrameBytes)
	}
	var sum [sha256.Size]byte
	return finishFrame(frame, start, offWorker+len(h.Worker), len(updates), hmac.New(sha256.New, key), sum[:]), nil
}

// sortUpdates orders updates by workflow id and refuses repeats.
func sortUpdates(updates []Update) error {
	if !slices.IsSortedFunc(updates, compareWorkflow) {
		slices.SortFunc(updates, compareWorkflow)
	}
	for i := 1; i < len(updates); i++ {
		if updates[i-1].Workflow == updates[i].Workflow {
			return fmt.Errorf("%w: workflow %q twice", ErrInvalid, updates[i].Workflow)
		}
	}
	return nil
}

func compareWorkflow(a, b Update) int { return strings.Compare(a.Workflow, b.Workflow) }
