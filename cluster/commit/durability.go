package commit

import (
	"errors"
	"fmt"
	"strings"

	"github.com/strata-ledger/strata/wal"
)

// Durability is the level at which a write is acknowledged (DESIGN §4).
// The zero value is invalid, so a forgotten field never means "do not
// wait".
type Durability uint8

// Durability levels, weakest first.
const (
	// DurabilityNone: acknowledged when received; nothing survives yet.
	DurabilityNone Durability = iota + 1
	// DurabilityLocal: fsynced in the receiving node's NodeWAL.
	DurabilityLocal
	// DurabilityRegional: committed and applied by the region's Raft group.
	DurabilityRegional
	// DurabilityGlobal: committed and applied by the gates' Raft group.
	DurabilityGlobal
)

// Errors of durability levels.
var (
	// ErrInvalidDurability is returned for a level that is not one of the
	// four, or a tier that is neither REGIONAL nor GLOBAL.
	ErrInvalidDurability = errors.New("cluster: invalid durability level")
	// ErrAboveTier is matched (errors.Is) by *DurabilityError.
	ErrAboveTier = errors.New("cluster: durability above the node's tier")
)

var durabilityNames = [...]string{"", "NONE", "LOCAL", "REGIONAL", "GLOBAL"}

// String returns the level's name: NONE, LOCAL, REGIONAL or GLOBAL.
func (d Durability) String() string {
	if d >= DurabilityNone && d <= DurabilityGlobal {
		return durabilityNames[d]
	}
	return fmt.Sprintf("Durability(%d)", uint8(d))
}

// ParseDurability reads a level name, in any case ("local", "REGIONAL").
func ParseDurability(s string) (Durability, error) {
	for d := DurabilityNone; d <= DurabilityGlobal; d++ {
		if strings.EqualFold(s, durabilityNames[d]) {
			return d, nil
		}
	}
	return 0, fmt.Errorf("%w: %q", ErrInvalidDurability, s)
}

// DurabilityError is returned for a write that asks for a level above the
// tier its node's ledger lands in (DESIGN §4: GLOBAL on a manager). Nothing
// was written.
type DurabilityError struct {
	Requested Durability
	Tier      Durability
}

func (e *DurabilityError) Error() string {
	return fmt.Sprintf("cluster: durability %s is above this node's tier %s", e.Requested, e.Tier)
}

// Is makes errors.Is(err, ErrAboveTier) hold.
func (e *DurabilityError) Is(target error) bool { return target == ErrAboveTier }

// checkTier reports whether tier is a node's tier: REGIONAL (manager) or
// GLOBAL (gate).
func checkTier(tier Durability) error {
	if tier != DurabilityRegional && tier != DurabilityGlobal {
		return fmt.Errorf("%w: tier %s must be REGIONAL or GLOBAL", ErrInvalidDurability, tier)
	}
	return nil
}

// AckLevel returns the level a write asking for level is acknowledged at on
// a node of tier. The path is NONE → LOCAL → tier: a level not on it rounds
// up (REGIONAL on a gate is GLOBAL); a level above the tier is a
// *DurabilityError.
func AckLevel(level, tier Durability) (Durability, error) {
	switch {
	case level < DurabilityNone || level > DurabilityGlobal:
		return 0, fmt.Errorf("%w: %s", ErrInvalidDurability, level)
	case level > tier:
		return 0, &DurabilityError{Requested: level, Tier: tier}
	case level >= DurabilityRegional:
		return tier, nil
	}
	return level, nil
}

// walLevel is the NodeWAL watermark of a tier.
func walLevel(tier Durability) wal.Level {
	if tier == DurabilityGlobal {
		return wal.Global
	}
	return wal.Regional
}

// WALLevel is the NodeWAL watermark of tier: REGIONAL for a manager's
// ledger, GLOBAL for a gate's.
func WALLevel(tier Durability) wal.Level { return walLevel(tier) }
