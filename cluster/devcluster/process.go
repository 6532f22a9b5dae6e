package devcluster

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// killWaitTimeout bounds the wait for a process after SIGKILL; only a
// process stuck in the kernel (uninterruptible I/O) takes longer.
const killWaitTimeout = 10 * time.Second

// strataEnvPrefix marks the environment variables `strata agent` reads as
// config; they would override a node's agent.yaml, so nodes never inherit
// them from the launcher.
const strataEnvPrefix = "STRATA_"

// process is one run of one node. done closes once the process has been
// reaped; state and waitErr are set before.
type process struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	state   *os.ProcessState
	waitErr error
	// stopping is set (under Cluster.mu) before the launcher signals the
	// process, so its exit is not reported as unexpected.
	stopping bool
}

// startProcess runs `binary args...` in dir for who ("node use1-gate1",
// "worker w-use1-1"), output appended to logPath. The returned process is
// running; a goroutine reaps it.
func startProcess(binary string, args, env []string, who, dir, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, privateFileMode)
	if err != nil {
		return nil, fmt.Errorf("%s: open log: %w", who, err)
	}
	// The child holds its own descriptor; ours closes once it has started.
	defer logFile.Close()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w", who, binary, err)
	}
	p := &process{cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		p.state = cmd.ProcessState
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has been reaped.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// status says how the process ended, e.g. "exit status 1" or
// "signal: killed". Only call it after done.
func (p *process) status() string {
	if p.state != nil {
		return p.state.String()
	}
	return fmt.Sprint(p.waitErr)
}

// signal sends sig to the process group unless the process is gone. The
// group id is the node's pid, which the kernel cannot reuse before the
// reaper goroutine has waited for it; the window between that wait and
// exited() turning true is the only, tiny, chance of a stray signal.
func (p *process) signal(sig syscall.Signal) error {
	if p.exited() {
		return nil
	}
	if err := signalGroup(p.cmd.Process, sig); err != nil && !p.exited() {
		return fmt.Errorf("signal %v: %w", sig, err)
	}
	return nil
}

// wait waits up to d for the process to exit and reports whether it did.
func (p *process) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// nodeEnv is the launcher's environment without STRATA_ variables, then
// extra.
func nodeEnv(environ, extra []string) []string {
	env := make([]string, 0, len(environ)+len(extra))
	for _, kv := range environ {
		if !strings.HasPrefix(kv, strataEnvPrefix) {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}
