package keyring

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFile_RoundTripIsPrivateAndOrdered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gossip.keyring")
	keys := [][]byte{bytes.Repeat([]byte{1}, KeyBytes), bytes.Repeat([]byte{2}, KeyBytes)}
	if err := WriteFile(path, keys); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("keyring file mode %v, %v: want 0600", fi.Mode(), err)
	}
	got, err := ReadFile(path)
	if err != nil || len(got) != 2 || !bytes.Equal(got[0], keys[0]) || !bytes.Equal(got[1], keys[1]) {
		t.Fatalf("read back %x, %v", got, err)
	}
}

func TestFile_RefusesWhatIsNotAKeyring(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(make([]byte, KeyBytes))
	many := `["` + strings.Repeat(key+`","`, MaxKeys) + key + `"]`
	for name, body := range map[string]string{
		"not json":     `{`,
		"no keys":      `[]`,
		"too many":     many,
		"not base64":   `["***"]`,
		"short key":    `["` + base64.StdEncoding.EncodeToString(make([]byte, 16)) + `"]`,
		"over the cap": `["` + strings.Repeat("A", maxFileBytes) + `"]`,
	} {
		path := filepath.Join(t.TempDir(), "k")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFile(path); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := DecodeKey(key); err != nil {
		t.Fatalf("a good key: %v", err)
	}
}
