package replica

import (
	"fmt"
	"slices"

	"github.com/strata-ledger/strata/antientropy/ledgertree"
)

// Verdict is what a node concludes of its own ledger from the group's
// checkpoints.
type Verdict struct {
	// State is Unverified (nothing shared to compare yet), Verified (at
	// the newest index this node shares with a peer, its root is the one
	// the group holds) or Divergent (the other replicas agree on a root
	// this node does not have).
	State State
	// Index is the checkpoint the verdict rests on (0 for Unverified).
	Index uint64
	// Reason says what was compared, for logs and /readyz.
	Reason string
	// Alone: the group has this node only, there is nothing to compare.
	Alone bool
}

// State of a replica's ledger.
type State uint8

// States of Verdict.
const (
	Unverified State = iota
	Verified
	Divergent
)

func (s State) String() string {
	switch s {
	case Verified:
		return "verified"
	case Divergent:
		return "divergent"
	}
	return "unverified"
}

// Judge compares self's checkpoints with its peers' at the newest index
// self shares with at least one peer. There, self is Divergent when the
// peers that have the index agree on one root and self's differs, and
// there are at least two of them or they are every other member of the
// group (groupSize): a lone peer that disagrees may be the damaged one.
// Self is Verified when some peer has its root, or when it is alone in
// its group. It is pure: no I/O, no clock.
func Judge(self []ledgertree.Checkpoint, peers map[string][]ledgertree.Checkpoint, groupSize int) Verdict {
	switch {
	case groupSize == 1:
		return Verdict{State: Verified, Alone: true, Reason: "alone in its group"}
	case groupSize < 1:
		// A new node before its group is formed: its ledger is empty.
		return Verdict{State: Verified, Reason: "no group configuration yet: a new ledger"}
	}
	mine := map[uint64]ledgertree.Checkpoint{}
	for _, c := range self {
		mine[c.Index] = c
	}
	var index uint64
	for _, cps := range peers {
		for _, c := range cps {
			if _, ok := mine[c.Index]; ok && c.Index > index {
				index = c.Index
			}
		}
	}
	if index == 0 {
		return Verdict{State: Unverified, Reason: "no checkpoint shared with a peer yet"}
	}
	own := mine[index].Root
	var agree, disagree []string
	others := map[[32]byte]bool{}
	for id, cps := range peers {
		for _, c := range cps {
			if c.Index != index {
				continue
			}
			if c.Root == own {
				agree = append(agree, id)
			} else {
				disagree = append(disagree, id)
				others[c.Root] = true
			}
		}
	}
	slices.Sort(agree)
	slices.Sort(disagree)
	switch {
	case len(agree) > 0:
		return Verdict{State: Verified, Index: index, Reason: fmt.Sprintf("root at index %d equals %v's", index, agree)}
	case len(others) == 1 && (len(disagree) >= 2 || len(disagree) == groupSize-1):
		return Verdict{State: Divergent, Index: index,
			Reason: fmt.Sprintf("root at index %d differs from the one %v agree on", index, disagree)}
	}
	return Verdict{State: Unverified, Index: index,
		Reason: fmt.Sprintf("root at index %d differs from %v's, who do not make a majority that agrees", index, disagree)}
}
