package lifecycle

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

func TestDueSet_PopsWhatIsDueEarliestFirst(t *testing.T) {
	d := newDueSet()
	d.set("c", 30)
	d.set("a", 10)
	d.set("b", 20)
	d.set("a2", 10)
	if got := d.popDue(5); len(got) != 0 {
		t.Fatalf("popDue(5) = %v, want nothing", got)
	}
	if got := d.popDue(20); !slices.Equal(got, []string{"a", "a2", "b"}) {
		t.Fatalf("popDue(20) = %v", got)
	}
	if d.len() != 1 {
		t.Fatalf("len %d, want 1", d.len())
	}
	if got := d.popDue(100); !slices.Equal(got, []string{"c"}) || d.len() != 0 {
		t.Fatalf("popDue(100) = %v, len %d", got, d.len())
	}
}

func TestDueSet_SetMovesAJobAndRemoveDropsIt(t *testing.T) {
	d := newDueSet()
	d.set("a", 10)
	d.set("b", 20)
	d.set("a", 50) // later
	d.set("b", 5)  // earlier
	if at, ok := d.get("a"); !ok || at != 50 {
		t.Fatalf("a at %d %v, want 50", at, ok)
	}
	if got := d.popDue(10); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("popDue(10) = %v, want [b]", got)
	}
	d.remove("a")
	d.remove("missing")
	if _, ok := d.get("a"); ok || d.len() != 0 {
		t.Fatalf("a still there after remove (len %d)", d.len())
	}
	d.set("c", 1)
	d.reset()
	if d.len() != 0 || len(d.popDue(1<<62)) != 0 {
		t.Fatal("reset kept a due time")
	}
}

// TestDueSet_MatchesAMapModel runs random operations against a map of
// due times and compares every pop.
func TestDueSet_MatchesAMapModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	d, model := newDueSet(), map[string]int64{}
	now := int64(0)
	for step := range 20_000 {
		id := fmt.Sprintf("j%d", rng.IntN(200))
		switch rng.IntN(4) {
		case 0, 1:
			at := now + int64(rng.IntN(100))
			d.set(id, at)
			model[id] = at
		case 2:
			d.remove(id)
			delete(model, id)
		case 3:
			now += int64(rng.IntN(20))
			var want []string
			for id, at := range model {
				if at <= now {
					want = append(want, id)
				}
			}
			sort.Slice(want, func(i, j int) bool {
				return model[want[i]] < model[want[j]] || model[want[i]] == model[want[j]] && want[i] < want[j]
			})
			for _, id := range want {
				delete(model, id)
			}
			if got := d.popDue(now); !slices.Equal(got, want) {
				t.Fatalf("step %d: popDue(%d) = %v, want %v", step, now, got, want)
			}
		}
		if d.len() != len(model) {
			t.Fatalf("step %d: len %d, model %d", step, d.len(), len(model))
		}
	}
}
