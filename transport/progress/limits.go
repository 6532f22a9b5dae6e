package progress

// Wire-format constants and limits. Those marked "wire" are part of frame
// version 1 (FORMAT.md): never change them; add a format version instead.
const (
	// Version is the frame format version this package writes (wire).
	Version = 1

	// MACBytes is the length of the frame's MAC: HMAC-SHA256 truncated to
	// 128 bits (wire).
	MACBytes = 16
	// MinKeyBytes is the shortest key a Keys implementation may return;
	// a shorter key is treated as no key (unknown worker).
	MinKeyBytes = 16

	// MaxWorkerBytes bounds a worker id (wire; fsm.MaxNameBytes).
	MaxWorkerBytes = 64
	// MaxWorkflowBytes bounds a workflow id (wire; fsm.MaxWorkflowIDBytes).
	MaxWorkflowBytes = 256
	// HistogramBuckets is the number of fixed log2 latency buckets (wire).
	HistogramBuckets = 32

	// headerFixedBytes is version, flags, key id, seq and the worker length.
	headerFixedBytes = 1 + 1 + 4 + 8 + 1
	// countBytes is the update count after the worker id.
	countBytes = 2
	// minUpdateBytes is the smallest encoded update: prefix, suffix length,
	// one suffix byte, fence, completed, failed, histogram length.
	minUpdateBytes = 7
	// maxUpdateBytes is the largest encoded update: two 2-byte uvarint
	// lengths, the longest id, three 10-byte uvarints, the histogram's two
	// bytes and its buckets.
	maxUpdateBytes = 2 + 2 + MaxWorkflowBytes + 3*10 + 2 + HistogramBuckets*10
	// minFrameBytes is the smallest frame: no worker id is not allowed, so
	// one byte of it, no updates.
	minFrameBytes = headerFixedBytes + 1 + countBytes + MACBytes
	// maxHeaderBytes is the largest header before the first update.
	maxHeaderBytes = headerFixedBytes + MaxWorkerBytes + countBytes

	// DefaultMaxFrameBytes is the default frame size: 1,200 bytes fit one
	// UDP datagram without fragmentation on any IPv4 or IPv6 path (IPv6's
	// minimum MTU is 1,280 = 1,232 bytes of UDP payload), as QUIC assumes.
	DefaultMaxFrameBytes = 1200
	// MinMaxFrameBytes is the smallest frame size one may configure: any
	// valid update fits in an otherwise empty frame.
	MinMaxFrameBytes = 1024
	// LimitMaxFrameBytes is the largest frame size one may configure: the
	// largest UDP payload over IPv4 (and what a 2-byte TCP length prefix
	// can carry).
	LimitMaxFrameBytes = 65507
	// MaxUpdatesPerFrame bounds the update count of any frame (wire): what
	// the largest frame could carry.
	MaxUpdatesPerFrame = (LimitMaxFrameBytes - minFrameBytes) / minUpdateBytes
)

// A compile-time check: every valid update fits in the smallest frame.
var _ = [MinMaxFrameBytes - (maxHeaderBytes + maxUpdateBytes + MACBytes)]struct{}{}
