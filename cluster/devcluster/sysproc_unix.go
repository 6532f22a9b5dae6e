//go:build unix && !linux

package devcluster

import (
	"os"
	"syscall"
)

// sysProcAttr puts a node in its own process group, so a Ctrl-C at the
// terminal reaches only the launcher. Without Linux's Pdeathsig a node
// outlives a launcher killed with SIGKILL.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to the node's whole process group.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	return syscall.Kill(-p.Pid, sig)
}
