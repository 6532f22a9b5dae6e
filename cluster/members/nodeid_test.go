package members

import (
	"regexp"
	"strings"
	"testing"
)

// IsNodeID agrees with the documented pattern on every string of a small
// alphabet up to length 3, and at the length bound.
func TestIsNodeID_AgreesWithThePattern(t *testing.T) {
	re := regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	alphabet := []string{"a", "z", "0", "9", "_", "-", "A", ".", " "}
	var all []string
	var grow func(prefix string, n int)
	grow = func(prefix string, n int) {
		all = append(all, prefix)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			grow(prefix+c, n-1)
		}
	}
	grow("", 3)
	all = append(all, strings.Repeat("a", 63), strings.Repeat("a", 64))
	for _, s := range all {
		if got, want := IsNodeID(s), re.MatchString(s); got != want {
			t.Fatalf("IsNodeID(%q) = %v, pattern says %v", s, got, want)
		}
	}
}
