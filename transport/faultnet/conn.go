package faultnet

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Conn is a connection with one peer, subject to that peer's rules. Writes
// with no delay go straight to the underlying connection; delayed writes are
// copied into a FIFO queue drained by one writer goroutine per connection,
// each chunk leaving at its due time. Due times never decrease along the
// queue, so bytes are never reordered.
type Conn struct {
	net.Conn
	f    *Faults
	peer string

	// wmu serialises Write calls, so a direct write can never overtake
	// bytes still queued: a direct write happens only when queued is 0, and
	// only a Write holding wmu makes queued grow.
	wmu    sync.Mutex
	queued atomic.Int64 // bytes accepted by Write, not yet on the wire

	mu            sync.Mutex // guards below; never held across I/O
	queue         []chunk
	lastDue       time.Time
	err           error // sticky: why the connection stopped working
	writerRunning bool
	closed        bool // Close was called
	writeDeadline time.Time

	wake     chan struct{} // cap 1: the queue grew, or Close wants a flush
	room     chan struct{} // cap 1: the queue shrank
	dead     chan struct{} // closed once the underlying connection is closed
	once     sync.Once
	closeErr error // result of closing the underlying connection
}

type chunk struct {
	b   []byte
	due time.Time
}

func newConn(f *Faults, c net.Conn, peer string) *Conn {
	return &Conn{
		Conn: c,
		f:    f,
		peer: peer,
		wake: make(chan struct{}, 1),
		room: make(chan struct{}, 1),
		dead: make(chan struct{}),
	}
}

// Peer returns the peer key the connection is attributed to.
func (c *Conn) Peer() string { return c.peer }

// Write sends b now, or queues a copy to leave after the peer's delay.
// Queued bytes report success at once; a later failure to send them is
// returned by the next Write and closes the connection.
func (c *Conn) Write(b []byte) (int, error) {
	d := c.f.nextDelay(c.peer)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if d == 0 && c.queued.Load() == 0 {
		n, err := c.Conn.Write(b)
		if err != nil {
			err = c.explain(err)
		}
		return n, err
	}
	return c.enqueue(b, d)
}

func (c *Conn) enqueue(b []byte, d time.Duration) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if err := c.waitForRoom(int64(len(b))); err != nil {
		return 0, err
	}
	buf := append([]byte(nil), b...) // the caller may reuse b once Write returns
	c.f.metrics.delayedWrites.Inc()
	c.mu.Lock()
	if c.err != nil || c.closed {
		defer c.mu.Unlock()
		return 0, c.stateErrLocked()
	}
	due := time.Now().Add(d)
	if due.Before(c.lastDue) {
		due = c.lastDue // never overtake the chunk ahead
	}
	c.lastDue = due
	c.queue = append(c.queue, chunk{b: buf, due: due})
	c.queued.Add(int64(len(b)))
	if !c.writerRunning {
		c.writerRunning = true
		go c.runWriter()
	}
	c.mu.Unlock()
	signal(c.wake)
	return len(b), nil
}

// waitForRoom blocks until n more bytes fit in the queue (or the queue is
// empty), the write deadline passes, or the connection dies.
func (c *Conn) waitForRoom(n int64) error {
	limit := int64(c.f.cfg.MaxQueuedBytesPerConn)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		c.mu.Lock()
		if c.err != nil || c.closed {
			defer c.mu.Unlock()
			return c.stateErrLocked()
		}
		q := c.queued.Load()
		deadline := c.writeDeadline
		c.mu.Unlock()
		if q == 0 || q+n <= limit {
			return nil
		}
		var expired <-chan time.Time
		if !deadline.IsZero() {
			wait := time.Until(deadline)
			if wait <= 0 {
				return os.ErrDeadlineExceeded // a net.Error with Timeout() true
			}
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			expired = timer.C
		}
		select {
		case <-c.room:
		case <-c.dead:
		case <-expired:
		}
	}
}

// runWriter drains the queue, each chunk at its due time. It exits when the
// connection dies, or closes it once a Close has been flushed.
func (c *Conn) runWriter() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next, ok := c.nextChunk()
		if !ok {
			return
		}
		if wait := time.Until(next.due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-c.dead:
				return
			}
		}
		_, err := c.Conn.Write(next.b)
		c.mu.Lock()
		c.queue[0] = chunk{}
		c.queue = c.queue[1:]
		if len(c.queue) == 0 {
			c.queue = nil // let the drained backing array go
		}
		c.queued.Add(-int64(len(next.b)))
		c.mu.Unlock()
		signal(c.room)
		if err != nil {
			c.closeUnderlying(fmt.Errorf("delayed write to %s: %w", c.peer, err))
			return
		}
	}
}

// nextChunk waits for the head of the queue. It returns false when the
// writer should stop: the connection died, or it was closed and is flushed.
func (c *Conn) nextChunk() (chunk, bool) {
	c.mu.Lock()
	for len(c.queue) == 0 {
		if c.err != nil {
			c.mu.Unlock()
			return chunk{}, false
		}
		if c.closed {
			c.mu.Unlock()
			c.closeUnderlying(net.ErrClosed)
			return chunk{}, false
		}
		c.mu.Unlock()
		select {
		case <-c.wake:
		case <-c.dead:
			return chunk{}, false
		}
		c.mu.Lock()
	}
	next := c.queue[0] // stays queued (and counted) until written
	c.mu.Unlock()
	return next, true
}

// Read reads from the underlying connection; reads are never delayed.
func (c *Conn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		err = c.explain(err)
	}
	return n, err
}

// Close closes the connection. Bytes still queued by a delay are flushed in
// the background, as a kernel flushes a socket after close, for at most
// flushGrace past the last due time; readers are released at once.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return net.ErrClosed
	}
	c.closed = true
	flush := len(c.queue) > 0 && c.err == nil
	flushBy := c.lastDue.Add(flushGrace)
	c.mu.Unlock()
	if !flush {
		return c.closeUnderlying(net.ErrClosed)
	}
	// Still registered until flushed: a partition now drops the rest.
	_ = c.Conn.SetReadDeadline(time.Unix(1, 0))
	_ = c.Conn.SetWriteDeadline(flushBy)
	signal(c.wake)
	return nil
}

// cut closes the connection at once, dropping queued bytes: a partition.
func (c *Conn) cut() {
	_ = c.closeUnderlying(fmt.Errorf("connection with %s: %w", c.peer, ErrPartitioned))
}

// closeUnderlying records why the connection stopped, releases every waiter
// and closes the underlying connection, once.
func (c *Conn) closeUnderlying(why error) error {
	c.once.Do(func() {
		c.mu.Lock()
		if c.err == nil {
			c.err = why
		}
		c.queue = nil
		c.queued.Store(0)
		c.mu.Unlock()
		close(c.dead)
		c.closeErr = c.Conn.Close()
	})
	c.f.unregister(c)
	return c.closeErr
}

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.setWriteDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetDeadline(t)
}

// SetWriteDeadline sets the write deadline. It bounds waiting for queue room
// and the underlying writes of queued chunks.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	if err := c.setWriteDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetWriteDeadline(t)
}

// SetReadDeadline sets the read deadline.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return net.ErrClosed
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *Conn) setWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return net.ErrClosed
	}
	c.writeDeadline = t
	signal(c.room) // let a blocked writer re-read the deadline
	return nil
}

// explain replaces an I/O error caused by Close or a partition with the
// cause, so callers see ErrPartitioned or net.ErrClosed.
func (c *Conn) explain(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.err != nil {
		return c.stateErrLocked()
	}
	return err
}

func (c *Conn) stateErrLocked() error {
	if c.err != nil && !errors.Is(c.err, net.ErrClosed) {
		return c.err
	}
	return net.ErrClosed
}

// signal wakes the receiver of a 1-buffered channel without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
