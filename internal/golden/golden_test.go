package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestBytesAndBlock(t *testing.T) {
	doc := "# Doc\n\n<!-- golden:rec -->\n```\n01 02  a label   comment\nff    another\n```\n\n<!-- golden:obj -->\n```json\n{\"a\": 1}\n```\n"
	path := filepath.Join(t.TempDir(), "FORMAT.md")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := Bytes(t, path, "rec"); !bytes.Equal(got, []byte{1, 2, 0xff}) {
		t.Fatalf("Bytes = % x", got)
	}
	if got := Block(t, path, "obj", "json"); got != "{\"a\": 1}\n" {
		t.Fatalf("Block = %q", got)
	}
}
