package quota

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
)

func TestAllocate_Table(t *testing.T) {
	u := int64(Unbounded)
	tests := []struct {
		name     string
		capacity uint32
		strategy Strategy
		claims   []Claim
		want     map[string]int64
	}{
		{"equal, unbounded demand", 10, EqualShare,
			[]Claim{{Tenant: "a", Demand: u}, {Tenant: "b", Demand: u}},
			map[string]int64{"a": 5, "b": 5}},
		{"equal, remainder goes in tenant order", 10, EqualShare,
			[]Claim{{Tenant: "c", Demand: u}, {Tenant: "a", Demand: u}, {Tenant: "b", Demand: u}},
			map[string]int64{"a": 4, "b": 3, "c": 3}},
		{"equal, a small demand leaves more to the others", 10, EqualShare,
			[]Claim{{Tenant: "a", Demand: 1}, {Tenant: "b", Demand: u}, {Tenant: "c", Demand: u}},
			map[string]int64{"a": 1, "b": 5, "c": 4}},
		{"equal, all demands met, capacity left", 10, EqualShare,
			[]Claim{{Tenant: "a", Demand: 2}, {Tenant: "b", Demand: 3}},
			map[string]int64{"a": 2, "b": 3}},
		{"proportional by weight", 12, Proportional,
			[]Claim{{Tenant: "a", Weight: 1, Demand: u}, {Tenant: "b", Weight: 2, Demand: u}, {Tenant: "c", Weight: 3, Demand: u}},
			map[string]int64{"a": 2, "b": 4, "c": 6}},
		{"proportional, weight 0 counts as 1", 4, Proportional,
			[]Claim{{Tenant: "a", Demand: u}, {Tenant: "b", Weight: 3, Demand: u}},
			map[string]int64{"a": 1, "b": 3}},
		{"proportional, a capped heavy tenant frees its part", 12, Proportional,
			[]Claim{{Tenant: "a", Weight: 1, Demand: u}, {Tenant: "b", Weight: 5, Demand: 2}},
			map[string]int64{"a": 10, "b": 2}},
		{"fixed fits", 10, Fixed,
			[]Claim{{Tenant: "a", Fixed: 3, Demand: u}, {Tenant: "b", Fixed: 4, Demand: u}},
			map[string]int64{"a": 3, "b": 4}},
		{"fixed over capacity cuts the largest first", 10, Fixed,
			[]Claim{{Tenant: "a", Fixed: 2, Demand: u}, {Tenant: "b", Fixed: 8, Demand: u}, {Tenant: "c", Fixed: 8, Demand: u}},
			map[string]int64{"a": 2, "b": 4, "c": 4}},
		{"fixed capped by demand", 10, Fixed,
			[]Claim{{Tenant: "a", Fixed: 5, Demand: 1}},
			map[string]int64{"a": 1}},
		{"reserved minimum then fair share", 10, ReservedFair,
			[]Claim{{Tenant: "a", Reserved: 6, Demand: u}, {Tenant: "b", Demand: u}},
			map[string]int64{"a": 8, "b": 2}},
		{"reserved above demand gives the rest away", 10, ReservedFair,
			[]Claim{{Tenant: "a", Reserved: 6, Demand: 1}, {Tenant: "b", Demand: u}},
			map[string]int64{"a": 1, "b": 9}},
		{"reservations over capacity are scaled", 10, ReservedFair,
			[]Claim{{Tenant: "a", Reserved: 10, Demand: u}, {Tenant: "b", Reserved: 10, Demand: u}},
			map[string]int64{"a": 5, "b": 5}},
		{"no claims", 10, EqualShare, nil, map[string]int64{}},
		{"zero capacity", 0, Proportional,
			[]Claim{{Tenant: "a", Demand: u}}, map[string]int64{"a": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Allocate(tt.capacity, tt.strategy, tt.claims); !maps.Equal(got, tt.want) {
				t.Fatalf("Allocate = %v, want %v", got, tt.want)
			}
		})
	}
}

// Properties over random claims: no share above demand, the sum never
// above capacity, all of the capacity given while demand is left, and
// the claims' order does not matter.
func TestAllocate_Properties(t *testing.T) {
	seed := uint64(42)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	for round := range 2000 {
		n := 1 + rng.IntN(8)
		claims := make([]Claim, n)
		var demand int64
		for i := range claims {
			d := int64(rng.IntN(20))
			if rng.IntN(4) == 0 {
				d = Unbounded
			}
			claims[i] = Claim{Tenant: fmt.Sprintf("t%d", i), Weight: uint32(rng.IntN(5)), Reserved: uint32(rng.IntN(10)),
				Fixed: uint32(rng.IntN(10)), Demand: d}
			demand = min(demand+d, Unbounded/2)
		}
		capacity := uint32(rng.IntN(60))
		strategy := []Strategy{Fixed, EqualShare, Proportional, ReservedFair}[rng.IntN(4)]
		got := Allocate(capacity, strategy, claims)
		var sum int64
		for _, c := range claims {
			s := got[c.Tenant]
			if s < 0 || s > c.Demand {
				t.Fatalf("round %d %s: %s gets %d of demand %d", round, strategy, c.Tenant, s, c.Demand)
			}
			sum += s
		}
		if sum > int64(capacity) {
			t.Fatalf("round %d %s: shares sum to %d over capacity %d", round, strategy, sum, capacity)
		}
		if strategy != Fixed && sum < min(int64(capacity), demand) {
			t.Fatalf("round %d %s: %d of capacity %d given with demand %d left", round, strategy, sum, capacity, demand)
		}
		rng.Shuffle(n, func(i, j int) { claims[i], claims[j] = claims[j], claims[i] })
		if again := Allocate(capacity, strategy, claims); !maps.Equal(again, got) {
			t.Fatalf("round %d %s: the claims' order changed the shares: %v, then %v", round, strategy, got, again)
		}
	}
}

func BenchmarkAllocate(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("tenants=%d", n), func(b *testing.B) {
			claims := make([]Claim, n)
			for i := range claims {
				claims[i] = Claim{Tenant: fmt.Sprintf("t%05d", i), Weight: uint32(i%7 + 1), Demand: int64(i % 50)}
			}
			b.ReportAllocs()
			for b.Loop() {
				Allocate(100_000, Proportional, claims)
			}
		})
	}
}
