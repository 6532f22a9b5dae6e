//go:build unix

package boltstore

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockPollInterval is how often a busy lock is tried again until the
// timeout (flock cannot wait with a deadline).
const lockPollInterval = 10 * time.Millisecond

// lockStore takes the exclusive lock of the store at path (flock of
// path+".lock") before Open looks at, and maybe discards, its file; it
// gives up after timeout. The lock is held until release.
func lockStore(path string, timeout time.Duration) (release func() error, err error) {
	f, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("boltstore: lock %s: %w", path, err)
	}
	deadline := time.Now().Add(timeout)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f.Close, nil // closing the file releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("boltstore: lock %s (another store holds it?): %w", path, err)
		}
		time.Sleep(lockPollInterval)
	}
}
