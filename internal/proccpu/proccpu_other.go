//go:build !unix

package proccpu

import "time"

// Used is not measured here (0).
func Used() time.Duration { return 0 }

// Timed runs fn and returns its wall time (CPU: 0, not measured here).
func Timed(fn func()) (wall, cpu time.Duration) {
	start := time.Now()
	fn()
	return time.Since(start), 0
}
