package httpapi

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"testing"
)

// TestTempRunFile_GoneFromTheDirectoryAtOnce: an NDJSON export's run
// file works, yet is not in the temporary directory from the moment it
// is made, so no exit path of an export leaves it behind.
func TestTempRunFile_GoneFromTheDirectoryAtOnce(t *testing.T) {
	f, err := tempRunFile()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := os.Stat(f.(*os.File).Name()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the run file is still in the directory: %v", err)
	}
	if _, err := f.Write([]byte("a sorted run")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(f); err != nil || string(b) != "a sorted run" {
		t.Fatalf("read back %q: %v", b, err)
	}
}
