package devcluster

import (
	"os"
	"syscall"
)

// sysProcAttr puts a node in its own process group, so a Ctrl-C at the
// terminal reaches only the launcher, and has the kernel kill it if the
// launcher dies, so a crashed test leaves no node holding its ports.
// (Pdeathsig follows the thread that started the child; the Go runtime
// keeps its threads unless a goroutine exits while locked to one, which
// the launcher never does.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends sig to the node's whole process group.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	return syscall.Kill(-p.Pid, sig)
}
