package plan

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/strata-ledger/strata/fsm"
)

func TestTruncateText_KeepsTheLimitAndWholeRunes(t *testing.T) {
	long := strings.Repeat("é", fsm.MaxTextBytes) // 2 bytes a rune
	for _, s := range []string{"", "short", strings.Repeat("a", fsm.MaxTextBytes), strings.Repeat("a", fsm.MaxTextBytes+1), long, "a" + long} {
		got := truncateText(s)
		if len(got) > fsm.MaxTextBytes || !utf8.ValidString(got) || !strings.HasPrefix(s, got) {
			t.Errorf("truncateText(%d bytes) = %d bytes, valid %v", len(s), len(got), utf8.ValidString(got))
		}
		if len(s) <= fsm.MaxTextBytes && got != s {
			t.Errorf("a text within the limit was cut: %d → %d bytes", len(s), len(got))
		}
		if len(s) > fsm.MaxTextBytes && len(got) < fsm.MaxTextBytes-utf8.UTFMax {
			t.Errorf("cut too much: %d bytes left", len(got))
		}
	}
}

func TestAddStats_SumsByNameInOrderUpToTheLimit(t *testing.T) {
	a := fsm.Stats{{Name: "a", Value: 1}, {Name: "c", Value: 3}}
	b := fsm.Stats{{Name: "b", Value: 2}, {Name: "c", Value: 4}}
	got := addStats(a, b)
	want := fsm.Stats{{Name: "a", Value: 1}, {Name: "b", Value: 2}, {Name: "c", Value: 7}}
	if len(got) != len(want) {
		t.Fatalf("addStats = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("addStats = %v, want %v", got, want)
		}
	}
	var many, more fsm.Stats
	for i := range fsm.MaxStats {
		many = append(many, fsm.Stat{Name: string(rune('A' + i)), Value: 1})
		more = append(more, fsm.Stat{Name: string(rune('a' + i)), Value: 1})
	}
	if got := addStats(more, many); len(got) != fsm.MaxStats || got[0].Name != "A" {
		t.Fatalf("over the limit: %d names starting %q, want the %d smallest", len(got), got[0].Name, fsm.MaxStats)
	}
}
