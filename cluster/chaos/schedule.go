package chaos

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Kind is a kind of fault.
type Kind string

// Fault kinds, as --faults names them.
const (
	// Kill: SIGKILL the node, restart it after the hold.
	Kill Kind = "kill"
	// Pause: SIGSTOP the node, SIGCONT after the hold: a node that looks
	// alive to its sockets but answers nothing (a GC pause, a frozen VM).
	Pause Kind = "pause"
	// Partition: cut the node off from every other node (Raft and gossip)
	// through its fault layer, heal after the hold.
	Partition Kind = "partition"
	// Skew: shift the node's HLC physical clock by Fault.Offset, reset
	// after the hold.
	Skew Kind = "skew"
)

// Kinds lists every fault kind in a fixed order.
var Kinds = []Kind{Kill, Pause, Partition, Skew}

// ErrBadConfig: a schedule or run config is out of range.
var ErrBadConfig = errors.New("chaos: bad config")

// Bounds of a schedule.
const (
	// MaxDuration bounds a run's fault phase.
	MaxDuration = time.Hour
	// MaxFaults bounds a schedule, whatever its holds and gaps.
	MaxFaults = 10_000
	// MaxSkew bounds a skew fault; it is within faultnet.MaxClockOffset.
	MaxSkew = 3 * time.Second
	// bigSkewFrom is the smallest "large" skew: past the HLC's default max
	// offset (500 ms), so peers reject the node's timestamps.
	bigSkewFrom = 600 * time.Millisecond
	// smallSkewTo bounds a "small" skew, one the HLC must absorb.
	smallSkewTo = 400 * time.Millisecond
)

// ParseKinds reads a comma-separated list of kinds ("kill,pause").
func ParseKinds(s string) ([]Kind, error) {
	var out []Kind
	for _, f := range strings.Split(s, ",") {
		k := Kind(strings.TrimSpace(f))
		if k == "" {
			continue
		}
		if !slices.Contains(Kinds, k) {
			return nil, fmt.Errorf("%w: fault %q; want some of %v", ErrBadConfig, k, Kinds)
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no fault kind given", ErrBadConfig)
	}
	return out, nil
}

// Fault is one scheduled fault.
type Fault struct {
	At     time.Duration `json:"at"`   // since the start of the run
	Kind   Kind          `json:"kind"` // what
	Node   string        `json:"node"` // on which node
	Hold   time.Duration `json:"hold"` // how long until it is healed
	Offset time.Duration `json:"offset,omitempty"`
}

func (f Fault) String() string {
	s := fmt.Sprintf("%8s %-9s %-16s hold %s", f.At.Round(time.Millisecond), f.Kind, f.Node, f.Hold.Round(time.Millisecond))
	if f.Kind == Skew {
		s += fmt.Sprintf(" offset %+v", f.Offset)
	}
	return s
}

// ScheduleConfig is what Schedule needs. Zero holds and gaps take their
// defaults.
type ScheduleConfig struct {
	Seed     uint64
	Duration time.Duration // the fault phase; every fault is healed by its end
	Kinds    []Kind
	Nodes    []string // candidate targets
	MinHold  time.Duration
	MaxHold  time.Duration
	MinGap   time.Duration // between one fault's heal and the next fault
	MaxGap   time.Duration
}

// Defaults of ScheduleConfig: a hold long enough for an election and a
// failover (Raft's election timeout is 1 s, gossip suspicion a few), a
// gap long enough for the cluster to heal.
const (
	DefaultMinHold = 3 * time.Second
	DefaultMaxHold = 10 * time.Second
	DefaultMinGap  = 2 * time.Second
	DefaultMaxGap  = 6 * time.Second
)

func (c ScheduleConfig) withDefaults() ScheduleConfig {
	if c.MinHold == 0 {
		c.MinHold = DefaultMinHold
	}
	if c.MaxHold == 0 {
		c.MaxHold = max(DefaultMaxHold, c.MinHold)
	}
	if c.MinGap == 0 {
		c.MinGap = DefaultMinGap
	}
	if c.MaxGap == 0 {
		c.MaxGap = max(DefaultMaxGap, c.MinGap)
	}
	return c
}

// Validate reports the first field out of range.
func (c ScheduleConfig) Validate() error {
	switch {
	case c.Duration <= 0 || c.Duration > MaxDuration:
		return fmt.Errorf("%w: duration %v outside (0, %v]", ErrBadConfig, c.Duration, MaxDuration)
	case len(c.Kinds) == 0:
		return fmt.Errorf("%w: no fault kind", ErrBadConfig)
	case len(c.Nodes) == 0:
		return fmt.Errorf("%w: no node to target", ErrBadConfig)
	case c.MinHold <= 0 || c.MaxHold < c.MinHold:
		return fmt.Errorf("%w: hold [%v, %v]", ErrBadConfig, c.MinHold, c.MaxHold)
	case c.MinGap <= 0 || c.MaxGap < c.MinGap:
		return fmt.Errorf("%w: gap [%v, %v]", ErrBadConfig, c.MinGap, c.MaxGap)
	}
	return nil
}

// Schedule returns the faults of a run: one at a time, each healed before
// the next starts, every one healed by cfg.Duration. The same config
// gives the same schedule (nodes are sorted first, so their order does
// not matter).
func Schedule(cfg ScheduleConfig) ([]Fault, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	nodes := slices.Sorted(slices.Values(cfg.Nodes))
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed_c4a0_5eed_c4a0))
	var out []Fault
	at := between(rng, cfg.MinGap, cfg.MaxGap)
	for len(out) < MaxFaults {
		f := Fault{At: at, Kind: cfg.Kinds[rng.IntN(len(cfg.Kinds))], Node: nodes[rng.IntN(len(nodes))],
			Hold: between(rng, cfg.MinHold, cfg.MaxHold)}
		if f.Kind == Skew {
			f.Offset = skewOffset(rng)
		}
		if f.At+f.Hold > cfg.Duration {
			break
		}
		out = append(out, f)
		at = f.At + f.Hold + between(rng, cfg.MinGap, cfg.MaxGap)
	}
	return out, nil
}

// between draws a duration uniformly from [lo, hi], in milliseconds.
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	span := (hi - lo).Milliseconds()
	return lo + time.Duration(rng.Int64N(span+1))*time.Millisecond
}

// skewOffset draws a skew: three in four past the HLC max offset (the
// rejection path), one in four within it; either direction.
func skewOffset(rng *rand.Rand) time.Duration {
	d := between(rng, bigSkewFrom, MaxSkew)
	if rng.IntN(4) == 0 {
		d = between(rng, 50*time.Millisecond, smallSkewTo)
	}
	if rng.IntN(2) == 0 {
		d = -d
	}
	return d
}

// CountByKind counts faults by kind.
func CountByKind(fs []Fault) map[Kind]int {
	out := map[Kind]int{}
	for _, f := range fs {
		out[f.Kind]++
	}
	return out
}
