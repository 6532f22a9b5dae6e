package progress

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Sender defaults and bounds.
const (
	// MaxSenderWorkflows bounds the workflows a Sender keeps counters for.
	MaxSenderWorkflows = 1 << 16
	// DefaultSendTimeout bounds a TCP dial and one Flush's writes.
	DefaultSendTimeout = 5 * time.Second
)

// ErrTooManyWorkflows is returned by Set beyond MaxSenderWorkflows.
var ErrTooManyWorkflows = errors.New("progress: too many workflows in one sender")

// SenderConfig configures a worker's Sender.
type SenderConfig struct {
	// Encoder names the worker, its key and the frame size.
	Encoder EncoderConfig
	// Addr is the manager's data_plane_addr.
	Addr string
	// Network is "udp" (default) or "tcp" (the fallback where UDP is
	// blocked or configured off).
	Network string
	// Timeout bounds a TCP dial and the writes of one Flush
	// (DefaultSendTimeout).
	Timeout time.Duration
}

// Validate fills the defaults and checks the fields.
func (c *SenderConfig) Validate() error {
	if c.Network == "" {
		c.Network = "udp"
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultSendTimeout
	}
	switch {
	case c.Network != "udp" && c.Network != "tcp":
		return fmt.Errorf("%w: network %q, want udp or tcp", ErrInvalid, c.Network)
	case c.Addr == "":
		return fmt.Errorf("%w: sender needs Addr", ErrInvalid)
	case c.Timeout < 0:
		return fmt.Errorf("%w: Timeout %v", ErrInvalid, c.Timeout)
	}
	return c.Encoder.Validate()
}

// Sender keeps the latest cumulative counters of each workflow a worker
// holds a lease on, and Flush sends all of them, packed into frames. It
// resends unchanged counters on purpose: that is what repairs a lost frame.
// Safe for concurrent use.
type Sender struct {
	cfg SenderConfig

	mu      sync.Mutex
	enc     *Encoder
	latest  map[string]Update
	scratch []Update
	conn    net.Conn      // nil until dialled (TCP: again after an error)
	w       *bufio.Writer // TCP only
	stream  []byte        // TCP only: one length-prefixed frame
	closed  bool
}

// ErrSenderClosed is returned by Flush after Close.
var ErrSenderClosed = errors.New("progress: sender closed")

// NewSender returns a sender; a UDP socket is connected at once (no
// packets), a TCP connection on the first Flush.
func NewSender(cfg SenderConfig) (*Sender, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	enc, err := NewEncoder(cfg.Encoder)
	if err != nil {
		return nil, err
	}
	s := &Sender{cfg: cfg, enc: enc, latest: make(map[string]Update)}
	if cfg.Network == "udp" {
		if s.conn, err = net.Dial("udp", cfg.Addr); err != nil {
			return nil, fmt.Errorf("dial udp %s: %w", cfg.Addr, err)
		}
	}
	return s, nil
}

// Set records u as the latest cumulative counters of u.Workflow; a higher
// fence replaces the workflow's lease.
func (s *Sender) Set(u Update) error {
	if err := validateUpdate(&u); err != nil {
		return err
	}
	u.Histogram = append(Histogram(nil), u.Histogram...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.latest[u.Workflow]; !ok && len(s.latest) >= MaxSenderWorkflows {
		return fmt.Errorf("%w: %d", ErrTooManyWorkflows, MaxSenderWorkflows)
	}
	s.latest[u.Workflow] = u
	return nil
}

// Remove stops sending workflow (its lease ended).
func (s *Sender) Remove(workflow string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.latest, workflow)
}

// Updates returns a copy of the latest counters of every workflow, in no
// particular order (a sender taking over from another starts from them).
func (s *Sender) Updates() []Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Update, 0, len(s.latest))
	for _, u := range s.latest {
		u.Histogram = append(Histogram(nil), u.Histogram...)
		out = append(out, u)
	}
	return out
}

// Flush sends the latest counters of every workflow and returns the number
// of frames written. With no workflows it sends one empty frame, which
// renews the worker's liveness. On UDP it writes every frame and returns
// the first error; on TCP it stops at the first error and redials on the
// next Flush.
func (s *Sender) Flush() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrSenderClosed
	}
	if err := s.dial(); err != nil {
		return 0, err
	}
	s.scratch = s.scratch[:0]
	for _, u := range s.latest {
		s.scratch = append(s.scratch, u)
	}
	if err := s.conn.SetWriteDeadline(time.Now().Add(s.cfg.Timeout)); err != nil {
		return 0, s.broken(err)
	}
	frames := 0
	var first error
	err := s.enc.Encode(s.scratch, func(frame []byte) error {
		frames++
		if s.w == nil {
			if _, err := s.conn.Write(frame); err != nil && first == nil {
				first = fmt.Errorf("send udp %s: %w", s.cfg.Addr, err)
			}
			return nil
		}
		s.stream = appendStreamFrame(s.stream[:0], frame)
		_, err := s.w.Write(s.stream)
		return err
	})
	if err == nil && s.w != nil {
		err = s.w.Flush()
	}
	if err != nil {
		return frames, s.broken(err)
	}
	return frames, first
}

// dial connects a TCP sender that is not connected.
func (s *Sender) dial() error {
	if s.conn != nil {
		return nil
	}
	c, err := net.DialTimeout("tcp", s.cfg.Addr, s.cfg.Timeout)
	if err != nil {
		return fmt.Errorf("dial tcp %s: %w", s.cfg.Addr, err)
	}
	s.conn = c
	s.w = bufio.NewWriterSize(c, 64<<10)
	return nil
}

// broken drops a TCP connection after an error so the next Flush redials.
func (s *Sender) broken(err error) error {
	if s.cfg.Network == "tcp" && s.conn != nil {
		s.conn.Close()
		s.conn, s.w = nil, nil
	}
	return fmt.Errorf("send %s %s: %w", s.cfg.Network, s.cfg.Addr, err)
}

// Close closes the connection.
func (s *Sender) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.conn == nil {
		return nil
	}
	err := s.conn.Close()
	s.conn, s.w = nil, nil
	return err
}
