//go:build !unix

package boltstore

import "time"

// lockStore does nothing where flock does not exist: bbolt still locks the
// file once it is open, but Open may discard a file another process
// holds. Strata runs on Linux.
func lockStore(string, time.Duration) (func() error, error) { return func() error { return nil }, nil }
