//go:build unix

package proccpu

import (
	"crypto/sha256"
	"testing"
)

func TestTimed_CountsTheWorkItRuns(t *testing.T) {
	var sum [32]byte
	wall, cpu := Timed(func() {
		for i := 0; i < 200_000; i++ {
			sum = sha256.Sum256(sum[:])
		}
	})
	if cpu <= 0 || wall <= 0 {
		t.Fatalf("wall %s, cpu %s for 200,000 hashes", wall, cpu)
	}
	if Used() < cpu {
		t.Fatalf("the process used %s in all, less than the %s measured", Used(), cpu)
	}
}
