//go:build unix

package cluster

import (
	"syscall"
	"time"
)

// processCPU is the user and system CPU time of this process so far: on
// a shared machine, events per CPU-second say what the code costs
// whatever else runs.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
