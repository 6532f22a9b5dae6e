// Package golden reads the golden examples a format document holds, so a
// test can pin the document and the code to each other: a fenced block
// right after a "<!-- golden:NAME -->" line. It keeps no state.
package golden

import (
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Block returns the body of the fenced block (```lang) that follows the
// marker "<!-- golden:name -->" in the document at path.
func Block(t testing.TB, path, name, lang string) string {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "<!-- golden:"+name+" -->\n```"+lang+"\n")
	if !ok {
		t.Fatalf("%s has no golden block %q", path, name)
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("%s: golden block %q is not closed", path, name)
	}
	return block
}

var hexPair = regexp.MustCompile(`^[0-9a-f]{2}$`)

// Bytes returns the bytes of a golden hex block: every line starts with
// hex byte pairs, followed by a label and a comment.
func Bytes(t testing.TB, path, name string) []byte {
	t.Helper()
	var out []byte
	for _, line := range strings.Split(strings.TrimSpace(Block(t, path, name, "")), "\n") {
		for _, tok := range strings.Fields(line) {
			if !hexPair.MatchString(tok) {
				break
			}
			b, _ := hex.DecodeString(tok)
			out = append(out, b...)
		}
	}
	return out
}
