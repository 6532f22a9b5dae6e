package quota

import (
	"math"
	"sort"
)

// Unbounded is the demand of a tenant whose demand is not counted: it
// takes whatever its share is.
const Unbounded = math.MaxInt64

// Claim is one tenant's part in sharing the fleet capacity.
type Claim struct {
	Tenant string
	// Weight is the tenant's weight for Proportional (0 counts as 1).
	Weight uint32
	// Reserved is the tenant's reserved minimum for ReservedFair.
	Reserved uint32
	// Fixed is the tenant's own max_active for Fixed (0: no cap of its
	// own, so it shares what the others leave equally).
	Fixed uint32
	// Demand caps what the tenant gets (active and queued jobs); Unbounded
	// when not counted.
	Demand int64
}

// Allocate shares capacity among claims by strategy and returns each
// tenant's share. It is pure and deterministic: the same claims (in any
// order) give the same shares. No tenant gets more than its demand, and
// the shares never sum to more than capacity; capacity left over once
// every demand is met stays unallocated.
//
//   - Fixed: each tenant's own Fixed (capped by demand); if they do not
//     all fit, the largest are cut first (max-min fair with caps Fixed).
//   - EqualShare: max-min fair: every tenant the same, except that a
//     tenant demanding less gets its demand and the rest is shared again.
//   - Proportional: weighted max-min fair by Weight.
//   - ReservedFair: every tenant first gets min(Reserved, demand) (scaled
//     down by reservation if the reservations do not fit), then the rest
//     of the capacity is shared max-min fair.
//
// Integer shares: the units a floor division leaves are handed out one
// at a time in tenant order.
func Allocate(capacity uint32, strategy Strategy, claims []Claim) map[string]int64 {
	cs := append([]Claim(nil), claims...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].Tenant < cs[j].Tenant })
	n := len(cs)
	caps := make([]int64, n)
	weights := make([]int64, n)
	for i, c := range cs {
		caps[i], weights[i] = max(c.Demand, 0), 1
	}
	out := make(map[string]int64, n)
	var alloc []int64
	switch strategy {
	case Fixed:
		for i, c := range cs {
			if c.Fixed > 0 {
				caps[i] = min(caps[i], int64(c.Fixed))
			}
		}
		alloc = waterFill(int64(capacity), caps, weights)
	case Proportional:
		for i, c := range cs {
			weights[i] = max(int64(c.Weight), 1)
		}
		alloc = waterFill(int64(capacity), caps, weights)
	case ReservedFair:
		reserved := make([]int64, n)
		for i, c := range cs {
			reserved[i] = min(int64(c.Reserved), caps[i])
		}
		// The reservations, scaled down by their own size if they do
		// not all fit.
		first := waterFill(int64(capacity), reserved, reserved)
		left := int64(capacity)
		rest := make([]int64, n)
		for i := range cs {
			left -= first[i]
			rest[i] = caps[i] - first[i]
		}
		second := waterFill(left, rest, weights)
		alloc = make([]int64, n)
		for i := range cs {
			alloc[i] = first[i] + second[i]
		}
	default: // EqualShare
		alloc = waterFill(int64(capacity), caps, weights)
	}
	for i, c := range cs {
		out[c.Tenant] = alloc[i]
	}
	return out
}

// waterFill is weighted max-min fair sharing of capacity among claims
// capped at caps: every round gives each unsaturated claim its weighted
// part of what is left (at most its cap); when the floor divisions leave
// only units smaller than a part, they go one by one in index order. A
// zero weight gets nothing.
func waterFill(capacity int64, caps, weights []int64) []int64 {
	alloc := make([]int64, len(caps))
	left := max(capacity, 0)
	for left > 0 {
		var total int64
		for i := range caps {
			if alloc[i] < caps[i] && weights[i] > 0 {
				total += weights[i]
			}
		}
		if total == 0 {
			break
		}
		given := int64(0)
		for i := range caps {
			if alloc[i] >= caps[i] || weights[i] <= 0 {
				continue
			}
			part := mulDiv(left, weights[i], total)
			part = min(part, caps[i]-alloc[i])
			alloc[i] += part
			given += part
		}
		if given == 0 { // every part rounded to 0: one unit each, in order
			for i := range caps {
				if left-given == 0 {
					break
				}
				if alloc[i] < caps[i] && weights[i] > 0 {
					alloc[i]++
					given++
				}
			}
		}
		left -= given
	}
	return alloc
}

// mulDiv is a*b/c without overflow for the bounded values used here
// (capacity ≤ 1e6, weights ≤ 1e6 summed over ≤ 1e4 claims).
func mulDiv(a, b, c int64) int64 {
	if a > 0 && b > math.MaxInt64/a {
		return int64(float64(a) * float64(b) / float64(c))
	}
	return a * b / c
}
