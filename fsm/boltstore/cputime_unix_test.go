//go:build unix

package boltstore_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the process used so
// far, GC and bbolt's page writes included; ok is false where it is not
// known.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
