package cluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-ledger/strata/hlc"
)

var _ hlc.Persister = (*ClockFile)(nil)

func TestClockFile_RoundTripAndRestartNeverGoesBack(t *testing.T) {
	dir := t.TempDir()
	cf := NewClockFile(dir)
	if b, err := cf.Load(); err != nil || b != 0 {
		t.Fatalf("empty: %d, %v", b, err)
	}
	now := int64(1_700_000_000_000)
	c1, err := hlc.New(hlc.Config{Node: 1, Physical: func() int64 { return now }, Persister: cf})
	if err != nil {
		t.Fatal(err)
	}
	last, err := c1.Now()
	if err != nil {
		t.Fatal(err)
	}
	// Restart with the physical clock an hour behind.
	c2, err := hlc.New(hlc.Config{Node: 1, Physical: func() int64 { return now - 3_600_000 }, Persister: NewClockFile(dir)})
	if err != nil {
		t.Fatal(err)
	}
	first, err := c2.Now()
	if err != nil {
		t.Fatal(err)
	}
	if !last.Less(first) {
		t.Fatalf("restart went back: %v then %v", last, first)
	}
}

func TestClockFile_CorruptFileIsAnError(t *testing.T) {
	dir := t.TempDir()
	cf := NewClockFile(dir)
	if err := cf.Store(12345); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "hlc.bound")
	b, _ := os.ReadFile(path)
	b[0] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := cf.Load(); err == nil {
		t.Fatal("corrupt bound file loaded")
	}
	if err := os.WriteFile(path, b[:5], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := cf.Load(); err == nil {
		t.Fatal("torn bound file loaded")
	}
}
