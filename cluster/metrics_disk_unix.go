//go:build linux || darwin

package cluster

import "golang.org/x/sys/unix"

// diskSpace is the size of the file system holding dir and the bytes an
// unprivileged writer may still use on it.
func diskSpace(dir string) (total, avail uint64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, false
	}
	bs := uint64(st.Bsize)
	return st.Blocks * bs, st.Bavail * bs, true
}
