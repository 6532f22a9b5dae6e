//go:build unix

// Package proccpu measures the CPU time this process uses, for benchmarks
// and scale tests that report events per CPU-second: on a shared machine
// that says what the code costs whatever else runs, where wall time says
// mostly what the machine gave it.
package proccpu

import (
	"syscall"
	"time"
)

// Used is the user and system CPU time of this process so far (0 if the
// kernel does not say).
func Used() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Timed runs fn and returns its wall time and the process's CPU time
// during it.
func Timed(fn func()) (wall, cpu time.Duration) {
	cpu0, start := Used(), time.Now()
	fn()
	return time.Since(start), Used() - cpu0
}
