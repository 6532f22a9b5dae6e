package progress

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Leases says whether a worker holds a workflow's lease at a fence. The
// manager implements it from its regional ledger; it is called once per
// update from the receiver's fold goroutine, must be fast and safe for
// concurrent use, and must not call into the Receiver.
type Leases interface {
	Holds(worker, workflow string, fence uint64) bool
}

// Receiver defaults and bounds.
const (
	// DefaultReceiveFrameBytes is the largest frame a receiver accepts by
	// default: a full Ethernet-MTU UDP payload (1,500 − 20 − 8), above the
	// senders' DefaultMaxFrameBytes.
	DefaultReceiveFrameBytes = 1472
	// DefaultQueueFrames bounds the frames between the readers and the
	// fold goroutine (about 6 MiB of buffers at the default frame size).
	DefaultQueueFrames = 4096
	// MaxQueueFrames bounds QueueFrames.
	MaxQueueFrames = 1 << 20
	// DefaultReadBatch is how many datagrams one UDP read takes
	// (recvmmsg); BenchmarkUDPRead measures it against single reads.
	DefaultReadBatch = 32
	// MaxReadBatch bounds ReadBatch.
	MaxReadBatch = 1024
	// DefaultSocketBufferBytes is the UDP socket's receive buffer asked of
	// the kernel (SO_RCVBUF; Linux caps it at net.core.rmem_max): room for
	// bursts while the reader is descheduled.
	DefaultSocketBufferBytes = 4 << 20
	// DefaultMaxConns bounds concurrent TCP connections.
	DefaultMaxConns = 256
	// DefaultTCPIdleTimeout closes a TCP connection that sends no frame
	// for this long.
	DefaultTCPIdleTimeout = 30 * time.Second
	// foldBatchFrames bounds the frames folded between two looks at the
	// request channel (Drain, Forget) and per fold-duration sample.
	foldBatchFrames = 64
	// MaxTrackedSenders bounds the per-sender sequence windows kept for
	// the reordered/duplicate counts; the map is cleared when full.
	MaxTrackedSenders = 1 << 16
)

// Config configures a Receiver.
type Config struct {
	// UDPAddr and TCPAddr are where to listen (the node's data_plane_addr,
	// usually both); an empty one is not listened on, and at least one is
	// required. Port 0 picks a free port (see UDPAddr(), TCPAddr()).
	UDPAddr string
	TCPAddr string
	// Keys and Leases are consulted for every frame and update.
	Keys   Keys
	Leases Leases
	// MaxFrameBytes is the largest frame accepted (DefaultReceiveFrameBytes);
	// it must be at least every sender's MaxFrameBytes.
	MaxFrameBytes int
	// QueueFrames bounds the receive queue (DefaultQueueFrames).
	QueueFrames int
	// ReadBatch is the datagrams per UDP read (DefaultReadBatch); 1 reads
	// one datagram per system call.
	ReadBatch int
	// SocketBufferBytes is the UDP receive buffer (DefaultSocketBufferBytes).
	SocketBufferBytes int
	// MaxConns bounds TCP connections (DefaultMaxConns).
	MaxConns int
	// TCPIdleTimeout is the per-connection read deadline for each frame
	// (DefaultTCPIdleTimeout).
	TCPIdleTimeout time.Duration
	// Registerer receives the metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Logger logs read errors at debug level; nil discards.
	Logger *slog.Logger
}

// Validate fills the defaults and checks the bounds.
func (c *Config) Validate() error {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxFrameBytes, DefaultReceiveFrameBytes)
	def(&c.QueueFrames, DefaultQueueFrames)
	def(&c.ReadBatch, DefaultReadBatch)
	def(&c.MaxConns, DefaultMaxConns)
	def(&c.SocketBufferBytes, DefaultSocketBufferBytes)
	if c.TCPIdleTimeout == 0 {
		c.TCPIdleTimeout = DefaultTCPIdleTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.UDPAddr == "" && c.TCPAddr == "":
		return fmt.Errorf("%w: receiver needs UDPAddr or TCPAddr", ErrInvalid)
	case c.Keys == nil || c.Leases == nil:
		return fmt.Errorf("%w: receiver needs Keys and Leases", ErrInvalid)
	case c.MaxFrameBytes < MinMaxFrameBytes || c.MaxFrameBytes > LimitMaxFrameBytes:
		return fmt.Errorf("%w: MaxFrameBytes %d not in %d..%d", ErrInvalid, c.MaxFrameBytes, MinMaxFrameBytes, LimitMaxFrameBytes)
	case c.QueueFrames < 1 || c.QueueFrames > MaxQueueFrames:
		return fmt.Errorf("%w: QueueFrames %d not in 1..%d", ErrInvalid, c.QueueFrames, MaxQueueFrames)
	case c.ReadBatch < 1 || c.ReadBatch > MaxReadBatch:
		return fmt.Errorf("%w: ReadBatch %d not in 1..%d", ErrInvalid, c.ReadBatch, MaxReadBatch)
	case c.SocketBufferBytes < 0:
		return fmt.Errorf("%w: SocketBufferBytes %d", ErrInvalid, c.SocketBufferBytes)
	case c.MaxConns < 1:
		return fmt.Errorf("%w: MaxConns %d", ErrInvalid, c.MaxConns)
	case c.TCPIdleTimeout < 0:
		return fmt.Errorf("%w: TCPIdleTimeout %v", ErrInvalid, c.TCPIdleTimeout)
	}
	return nil
}

// ErrClosed is returned by Start on a closed receiver.
var ErrClosed = errors.New("progress: receiver closed")

// frameBuf is one queued frame; b has room for MaxFrameBytes+1 so that a
// longer datagram shows as too large rather than silently cut.
type frameBuf struct {
	b []byte
	n int
}

// request runs fn on the fold goroutine, which owns the aggregates.
type request struct {
	fn   func(*Aggregates)
	done chan struct{}
}

// Receiver listens for frames on UDP and TCP, queues them (bounded), and
// folds them on one goroutine into Aggregates. Its methods are safe for
// concurrent use. Lifecycle: New, Start, then Close once; Close returns
// after every goroutine it started has exited.
type Receiver struct {
	cfg     Config
	m       *metrics
	queue   chan *frameBuf
	bufs    sync.Pool
	reqs    chan request
	readers sync.WaitGroup
	folded  chan struct{} // closed when the fold goroutine exits

	// Owned by the fold goroutine until folded is closed, then by mu.
	agg  *Aggregates
	dec  *Decoder
	seqs map[senderID]*seqWindow

	// afterFrame, if set before Start, runs on the fold goroutine after
	// each frame (tests wait on it instead of sleeping).
	afterFrame func()

	mu      sync.Mutex
	started bool
	closed  bool
	udp     *net.UDPConn
	tcp     net.Listener
	conns   map[net.Conn]struct{}
	connSem chan struct{}
}

// New validates cfg and registers the metrics; Start listens.
func New(cfg Config) (*Receiver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Receiver{
		cfg:     cfg,
		queue:   make(chan *frameBuf, cfg.QueueFrames),
		reqs:    make(chan request),
		folded:  make(chan struct{}),
		agg:     NewAggregates(),
		dec:     NewDecoder(cfg.Keys),
		seqs:    make(map[senderID]*seqWindow),
		conns:   make(map[net.Conn]struct{}),
		connSem: make(chan struct{}, cfg.MaxConns),
	}
	size := cfg.MaxFrameBytes + 1
	r.bufs.New = func() any { return &frameBuf{b: make([]byte, size)} }
	m, err := newMetrics(cfg.Registerer, r.QueueFill)
	if err != nil {
		return nil, fmt.Errorf("register progress metrics: %w", err)
	}
	r.m = m
	return r, nil
}

// Start binds the listeners and starts the readers and the fold goroutine.
func (r *Receiver) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if r.started {
		return fmt.Errorf("%w: receiver already started", ErrInvalid)
	}
	if r.cfg.UDPAddr != "" {
		addr, err := net.ResolveUDPAddr("udp", r.cfg.UDPAddr)
		if err != nil {
			return fmt.Errorf("resolve udp %s: %w", r.cfg.UDPAddr, err)
		}
		if r.udp, err = net.ListenUDP("udp", addr); err != nil {
			return fmt.Errorf("listen udp %s: %w", r.cfg.UDPAddr, err)
		}
		if err := r.udp.SetReadBuffer(r.cfg.SocketBufferBytes); err != nil {
			r.cfg.Logger.Debug("progress: udp receive buffer", "bytes", r.cfg.SocketBufferBytes, "err", err)
		}
	}
	if r.cfg.TCPAddr != "" {
		ln, err := net.Listen("tcp", r.cfg.TCPAddr)
		if err != nil {
			if r.udp != nil {
				r.udp.Close()
				r.udp = nil
			}
			return fmt.Errorf("listen tcp %s: %w", r.cfg.TCPAddr, err)
		}
		r.tcp = ln
	}
	r.started = true
	if r.udp != nil {
		r.readers.Add(1)
		go r.readUDP(r.udp)
	}
	if r.tcp != nil {
		r.readers.Add(1)
		go r.acceptTCP(r.tcp)
	}
	go r.foldLoop()
	return nil
}

// UDPAddr returns the bound UDP address, nil if none.
func (r *Receiver) UDPAddr() net.Addr {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.udp == nil {
		return nil
	}
	return r.udp.LocalAddr()
}

// TCPAddr returns the bound TCP address, nil if none.
func (r *Receiver) TCPAddr() net.Addr {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tcp == nil {
		return nil
	}
	return r.tcp.Addr()
}

// Close stops listening, closes every TCP connection, folds what is
// already queued and waits for every goroutine to exit. The aggregates
// stay readable (Drain, Get).
func (r *Receiver) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	started := r.started
	var errs []error
	if r.udp != nil {
		errs = append(errs, r.udp.Close())
	}
	if r.tcp != nil {
		errs = append(errs, r.tcp.Close())
	}
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	if !started {
		close(r.folded)
		return errors.Join(errs...)
	}
	r.readers.Wait()
	close(r.queue)
	<-r.folded
	return errors.Join(errs...)
}

// QueueFill returns the receive queue's fill, 0 to 1.
func (r *Receiver) QueueFill() float64 {
	return float64(len(r.queue)) / float64(cap(r.queue))
}

// Backpressure returns the AD-37 level for the current queue fill, for the
// manager to return on heartbeats.
func (r *Receiver) Backpressure() Level { return LevelForFill(r.QueueFill()) }

// Stats returns the receiver's running totals and its queue now.
func (r *Receiver) Stats() Stats {
	fill := r.QueueFill()
	return Stats{Frames: r.m.nFrames.Load(), Updates: r.m.nUpdates.Load(), Dropped: r.m.nDropped.Load(),
		QueueFill: fill, Level: LevelForFill(fill)}
}

// Drain returns the aggregates that changed since the last Drain (see
// Aggregates.Drain).
func (r *Receiver) Drain() []Progress {
	var out []Progress
	r.do(func(a *Aggregates) { out = a.Drain() })
	return out
}

// Get returns the aggregate of (workflow, worker).
func (r *Receiver) Get(workflow, worker string) (p Progress, ok bool) {
	r.do(func(a *Aggregates) { p, ok = a.Get(workflow, worker) })
	return p, ok
}

// Forget drops the aggregate of (workflow, worker) (see Aggregates.Forget).
func (r *Receiver) Forget(workflow, worker string) {
	r.do(func(a *Aggregates) { a.Forget(workflow, worker) })
}

// do runs fn on the fold goroutine, or under mu when there is none (not
// started yet, or exited).
func (r *Receiver) do(fn func(*Aggregates)) {
	r.mu.Lock()
	if !r.started {
		defer r.mu.Unlock()
		fn(r.agg)
		return
	}
	r.mu.Unlock()
	req := request{fn: fn, done: make(chan struct{})}
	select {
	case r.reqs <- req:
		<-req.done
	case <-r.folded:
		r.mu.Lock()
		defer r.mu.Unlock()
		fn(r.agg)
	}
}

// enqueue queues fb or drops it when the queue is full; it reports whether
// fb was queued (else the caller still owns it).
func (r *Receiver) enqueue(fb *frameBuf) bool {
	select {
	case r.queue <- fb:
		return true
	default:
		r.m.drop(ReasonQueueFull, 1)
		return false
	}
}

func (r *Receiver) getBuf() *frameBuf { return r.bufs.Get().(*frameBuf) }

func (r *Receiver) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}
