package fsm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/strata-ledger/strata/hlc"
)

// JobID is a parsed job id, {region}-{unix_ms}-{gate}-{seq:05d}
// (DESIGN §3): use1-1704931200000-gate42-00001.
type JobID struct {
	Region string // region code of the gate
	UnixMs int64  // HLC wall time of creation, ms
	Gate   string // gate id: lowercase letters and digits
	Seq    uint32 // 1..MaxJobSeq within UnixMs
}

// String renders the id.
func (j JobID) String() string {
	var seq [5]byte
	n := j.Seq
	for i := len(seq) - 1; i >= 0; i-- {
		seq[i] = byte('0' + n%10)
		n /= 10
	}
	return j.Region + "-" + strconv.FormatInt(j.UnixMs, 10) + "-" + j.Gate + "-" + string(seq[:])
}

// Compare orders ids of one gate by creation: (UnixMs, Seq).
func (j JobID) Compare(o JobID) int {
	switch {
	case j.UnixMs != o.UnixMs:
		return cmpInt(j.UnixMs < o.UnixMs)
	case j.Seq != o.Seq:
		return cmpInt(j.Seq < o.Seq)
	}
	return 0
}

func cmpInt(less bool) int {
	if less {
		return -1
	}
	return 1
}

// ParseJobID parses and validates a job id. Only the canonical form is
// accepted (no leading zeros in the time, exactly five sequence digits), so
// ParseJobID(s).String() == s.
func ParseJobID(s string) (JobID, error) {
	if len(s) > MaxJobIDBytes {
		return JobID{}, fmt.Errorf("%w: %d bytes, limit %d", ErrInvalidJobID, len(s), MaxJobIDBytes)
	}
	region, rest, ok1 := strings.Cut(s, "-")
	ms, rest, ok2 := strings.Cut(rest, "-")
	gate, seq, ok3 := strings.Cut(rest, "-")
	if !ok1 || !ok2 || !ok3 {
		return JobID{}, fmt.Errorf("%w: %q is not region-unixms-gate-seq", ErrInvalidJobID, s)
	}
	if !IsRegion(region) {
		return JobID{}, fmt.Errorf("%w: region %q", ErrInvalidJobID, region)
	}
	if !isGate(gate) {
		return JobID{}, fmt.Errorf("%w: gate %q", ErrInvalidJobID, gate)
	}
	unixMs, ok := parseDigits(ms, 19)
	if !ok || (len(ms) > 1 && ms[0] == '0') || unixMs > 1<<63-1 {
		return JobID{}, fmt.Errorf("%w: unix ms %q", ErrInvalidJobID, ms)
	}
	n, ok := parseDigits(seq, 5)
	if !ok || len(seq) != 5 {
		return JobID{}, fmt.Errorf("%w: seq %q is not five digits", ErrInvalidJobID, seq)
	}
	return JobID{Region: region, UnixMs: int64(unixMs), Gate: gate, Seq: uint32(n)}, nil
}

// parseDigits reads 1 to max ASCII digits.
func parseDigits(s string, max int) (uint64, bool) {
	if len(s) == 0 || len(s) > max {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, true
}

func isGate(s string) bool {
	if len(s) == 0 || len(s) > MaxGateBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// DefaultMaxClockReads bounds how often Next reads the clock to move past
// a millisecond whose sequence numbers are used up. An hlc.Clock carries
// its 16-bit logical counter into the next millisecond, so 2^17 reads
// always suffice for it.
const DefaultMaxClockReads = 1 << 17

// JobIDConfig configures a JobIDGenerator.
type JobIDConfig struct {
	// Region and Gate name this gate; they are part of every id.
	Region string
	Gate   string
	// Clock returns HLC timestamps that never go backwards, even across
	// restarts (hlc.Clock.Now). Required.
	Clock func() (hlc.Timestamp, error)
	// MaxClockReads bounds the reads Next makes to reach the next
	// millisecond; default DefaultMaxClockReads.
	MaxClockReads int
}

// Validate fills defaults and checks c.
func (c *JobIDConfig) Validate() error {
	if c.MaxClockReads == 0 {
		c.MaxClockReads = DefaultMaxClockReads
	}
	switch {
	case !IsRegion(c.Region):
		return fmt.Errorf("fsm: job id config: region %q is not a region code", c.Region)
	case !isGate(c.Gate):
		return fmt.Errorf("fsm: job id config: gate %q is not lowercase letters and digits", c.Gate)
	case c.Clock == nil:
		return errors.New("fsm: job id config: Clock is required")
	case c.MaxClockReads < 1:
		return fmt.Errorf("fsm: job id config: MaxClockReads %d is below 1", c.MaxClockReads)
	}
	return nil
}

// JobIDGenerator hands out the job ids of one gate: unique and increasing
// (JobID.Compare) for as long as its clock never goes backwards, which an
// hlc.Clock guarantees across restarts (DESIGN §6).
//
// Rules: the id's time is the HLC wall time; a second id in the same
// millisecond takes the next sequence number; when sequence 99999 is used
// up, Next reads the clock until it reaches a later millisecond ("borrows
// the next ms" from the clock, so the borrowed millisecond is one the clock
// has handed out and persisted, and a restarted gate starts above it). A
// clock reading below the last id's time (a clock that is not an HLC)
// keeps using the last id's time. Safe for concurrent use.
type JobIDGenerator struct {
	region, gate string
	clock        func() (hlc.Timestamp, error)
	maxReads     int

	mu      sync.Mutex
	lastMs  int64
	lastSeq uint32
}

// NewJobIDGenerator returns a generator for one gate.
func NewJobIDGenerator(cfg JobIDConfig) (*JobIDGenerator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &JobIDGenerator{region: cfg.Region, gate: cfg.Gate, clock: cfg.Clock, maxReads: cfg.MaxClockReads}, nil
}

// Next returns a new job id and the HLC timestamp read for it (the
// JobCreated event's HLC). It fails if the clock fails or does not advance
// within MaxClockReads reads (ErrClockStalled).
func (g *JobIDGenerator) Next() (string, hlc.Timestamp, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ts, err := g.clock()
	if err != nil {
		return "", hlc.Timestamp{}, fmt.Errorf("job id: read clock: %w", err)
	}
	ms, seq := max(ts.WallMs, g.lastMs), uint32(1)
	if ms == g.lastMs {
		seq = g.lastSeq + 1
	}
	if seq > MaxJobSeq {
		if ts, err = g.nextMillisecond(); err != nil {
			return "", hlc.Timestamp{}, err
		}
		ms, seq = ts.WallMs, 1
	}
	g.lastMs, g.lastSeq = ms, seq
	return JobID{Region: g.region, UnixMs: ms, Gate: g.gate, Seq: seq}.String(), ts, nil
}

// nextMillisecond reads the clock until its wall time passes lastMs.
func (g *JobIDGenerator) nextMillisecond() (hlc.Timestamp, error) {
	for range g.maxReads {
		ts, err := g.clock()
		if err != nil {
			return hlc.Timestamp{}, fmt.Errorf("job id: read clock: %w", err)
		}
		if ts.WallMs > g.lastMs {
			return ts, nil
		}
	}
	return hlc.Timestamp{}, fmt.Errorf("job id: %w past %d ms in %d reads", ErrClockStalled, g.lastMs, g.maxReads)
}
