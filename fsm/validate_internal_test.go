package fsm

import "testing"

// TestIsName_MatchesItsCharacterClass checks the bit masks of isName
// against the class they encode, [A-Za-z0-9._-], for every byte.
func TestIsName_MatchesItsCharacterClass(t *testing.T) {
	for c := range 256 {
		want := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if got := IsName(string([]byte{byte(c)})); got != want {
			t.Errorf("byte %d: isName %v, want %v", c, got, want)
		}
	}
}
