package devcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/strata-ledger/strata/transport/api"
)

// The control channel lets another process on this machine (`strata
// chaos`) kill, stop, start, restart, pause and resume the nodes and
// workers of a running launcher. Only the launcher can restart a process
// it supervises, so the channel is the launcher's, not the nodes'.
//
// It is HTTP/1.1 over a unix socket, DATA/control.sock, mode 0600 in a
// 0700 data directory: the file permissions are the authentication, the
// same as for cluster.json and its token, and no TCP port is opened. The
// routes:
//
//	GET  /v1/processes              ControlProcess for every node and worker
//	POST /v1/processes/{id}/{verb}  verb: kill, stop, start, restart, pause, resume
//
// A refused call answers with the API's error envelope: 404 for an
// unknown id or verb, 409 when the process is not in a state the verb
// needs (pause of a stopped node), 500 when the signal or start failed.

// ControlSocketName is the control socket's name in the data directory.
const ControlSocketName = "control.sock"

// Bounds of the control channel.
const (
	// maxSocketPathBytes is the room in sockaddr_un.sun_path (108 on
	// Linux, 104 on BSDs) less the terminating NUL.
	maxSocketPathBytes = 103
	// controlHeaderTimeout bounds reading a request's headers; a verb
	// itself is bounded by the launcher's stop and kill timeouts.
	controlHeaderTimeout = 5 * time.Second
	// controlCallTimeout bounds one call of ControlClient: a stop drains
	// for up to DefaultStopTimeout.
	controlCallTimeout = DefaultStopTimeout + killWaitTimeout + 5*time.Second
	// maxControlResponseBytes bounds what the client reads of an answer.
	maxControlResponseBytes = 1 << 20
)

// Control verbs.
const (
	VerbKill    = "kill"    // SIGKILL, wait for the exit (Cluster.Kill)
	VerbStop    = "stop"    // SIGTERM, drain, then SIGKILL (Cluster.Stop)
	VerbStart   = "start"   // start a stopped process; does not wait for readiness
	VerbRestart = "restart" // stop, then start (Cluster.Restart)
	VerbPause   = "pause"   // SIGSTOP: the process freezes, its sockets stay open
	VerbResume  = "resume"  // SIGCONT
)

var controlVerbs = []string{VerbKill, VerbStop, VerbStart, VerbRestart, VerbPause, VerbResume}

// ControlProcess is one node or worker as the control channel reports it.
type ControlProcess struct {
	ID     string `json:"id"`
	Role   string `json:"role"` // gate, manager or worker
	Region string `json:"region"`
	PID    int    `json:"pid"` // 0: not running
	Paused bool   `json:"paused"`
}

// ErrPaused: the verb needs a running process that is not paused.
var ErrPaused = errors.New("process is paused")

// ControlServer serves a Cluster's control channel. Close stops it and
// removes the socket.
type ControlServer struct {
	c    *Cluster
	path string
	ln   net.Listener
	srv  *http.Server
	done chan struct{}

	mu     sync.Mutex // serialises verbs, so pause/kill/start of one id never interleave
	paused map[string]bool
}

// ServeControl listens on DATA/control.sock and serves c's control
// channel until Close. A socket left by a launcher that died is replaced;
// one that answers (another launcher on this data directory) is an error.
func ServeControl(c *Cluster) (*ControlServer, error) {
	path := filepath.Join(c.DataDir(), ControlSocketName)
	if len(path) > maxSocketPathBytes {
		return nil, fmt.Errorf("control socket %s: path of %d bytes, over the limit of %d; use a shorter --data", path, len(path), maxSocketPathBytes)
	}
	if conn, err := net.DialTimeout("unix", path, time.Second); err == nil {
		conn.Close()
		return nil, fmt.Errorf("control socket %s: another launcher answers on it", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("control socket: remove stale %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	// The data directory is 0700 already; the socket's own mode closes
	// the window of a directory whose mode a user loosened.
	if err := os.Chmod(path, privateFileMode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	s := &ControlServer{c: c, path: path, ln: ln, done: make(chan struct{}), paused: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/processes", s.list)
	mux.HandleFunc("POST /v1/processes/{id}/{verb}", s.act)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: controlHeaderTimeout}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // ends with ErrServerClosed at Close
	}()
	return s, nil
}

// Path is the socket's path.
func (s *ControlServer) Path() string { return s.path }

// Close stops serving, resumes every process it paused (a frozen node
// would not drain at StopAll) and removes the socket.
func (s *ControlServer) Close() error {
	err := s.srv.Close()
	<-s.done
	s.mu.Lock()
	for id := range s.paused {
		err = errors.Join(err, s.c.signalRunning(id, syscall.SIGCONT))
	}
	clear(s.paused)
	s.mu.Unlock()
	if rmErr := os.Remove(s.path); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
		err = errors.Join(err, rmErr)
	}
	return err
}

func (s *ControlServer) list(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	writeControlJSON(w, http.StatusOK, s.processesLocked())
}

func (s *ControlServer) processesLocked() []ControlProcess {
	var out []ControlProcess
	for _, n := range s.c.Nodes() {
		out = append(out, ControlProcess{ID: n.ID(), Role: string(n.Config.Role), Region: n.Config.Region,
			PID: s.c.PID(n.ID()), Paused: s.paused[n.ID()]})
	}
	for _, wk := range s.c.Workers() {
		out = append(out, ControlProcess{ID: wk.ID, Role: "worker", Region: wk.Region, PID: s.c.PID(wk.ID), Paused: s.paused[wk.ID]})
	}
	return out
}

func (s *ControlServer) act(w http.ResponseWriter, r *http.Request) {
	id, verb := r.PathValue("id"), r.PathValue("verb")
	if !slices.Contains(controlVerbs, verb) {
		writeControlError(w, http.StatusNotFound, api.CodeNotFound, fmt.Sprintf("unknown verb %q; want one of %v", verb, controlVerbs))
		return
	}
	if err := s.c.known(id); err != nil {
		writeControlError(w, http.StatusNotFound, api.CodeNotFound, err.Error())
		return
	}
	s.mu.Lock()
	err := s.doLocked(id, verb)
	p := ControlProcess{ID: id, PID: s.c.PID(id), Paused: s.paused[id]}
	s.mu.Unlock()
	switch {
	case errors.Is(err, ErrNotRunning), errors.Is(err, ErrRunning), errors.Is(err, ErrPaused):
		writeControlError(w, http.StatusConflict, api.CodeConflict, err.Error())
	case err != nil:
		writeControlError(w, http.StatusInternalServerError, api.CodeInternal, err.Error())
	default:
		writeControlJSON(w, http.StatusOK, p)
	}
}

// doLocked performs verb on id. A paused process is resumed before it is
// stopped or restarted (SIGTERM waits in the kernel while a process is
// stopped); SIGKILL reaches it as it is.
func (s *ControlServer) doLocked(id, verb string) error {
	running := s.c.PID(id) != 0
	switch verb {
	case VerbKill:
		delete(s.paused, id)
		return s.c.Kill(id)
	case VerbStop, VerbRestart:
		if s.paused[id] {
			if err := s.c.signalRunning(id, syscall.SIGCONT); err != nil {
				return err
			}
			delete(s.paused, id)
		}
		if verb == VerbStop {
			return s.c.Stop(id)
		}
		return s.c.Restart(id)
	case VerbStart:
		delete(s.paused, id) // a process that died while paused starts afresh
		return s.c.StartNode(id)
	case VerbPause:
		if !running {
			return fmt.Errorf("pause %s: %w", id, ErrNotRunning)
		}
		if s.paused[id] {
			return fmt.Errorf("pause %s: %w already", id, ErrPaused)
		}
		if err := s.c.signalRunning(id, syscall.SIGSTOP); err != nil {
			return err
		}
		s.paused[id] = true
		return nil
	default: // VerbResume
		if !s.paused[id] {
			return nil // resuming a running process is harmless
		}
		delete(s.paused, id)
		if !running {
			return nil
		}
		return s.c.signalRunning(id, syscall.SIGCONT)
	}
}

// signalRunning sends sig to id's process group, if it runs.
func (c *Cluster) signalRunning(id string, sig syscall.Signal) error {
	c.mu.Lock()
	p := c.running[id]
	c.mu.Unlock()
	if p == nil || p.exited() {
		return fmt.Errorf("signal %s: %w", id, ErrNotRunning)
	}
	if err := p.signal(sig); err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	return nil
}

func writeControlJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeControlError(w http.ResponseWriter, status int, code, msg string) {
	writeControlJSON(w, status, api.ErrorEnvelope{Error: &api.Error{Code: code, Message: msg}})
}

// ControlClient calls a launcher's control channel.
type ControlClient struct {
	hc *http.Client
}

// DialControl returns a client of the control socket in dataDir. It
// checks the socket answers.
func DialControl(ctx context.Context, dataDir string) (*ControlClient, error) {
	path := filepath.Join(dataDir, ControlSocketName)
	d := net.Dialer{Timeout: time.Second}
	cc := &ControlClient{hc: &http.Client{Timeout: controlCallTimeout, Transport: &http.Transport{
		Proxy:       nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "unix", path) },
	}}}
	if _, err := cc.Processes(ctx); err != nil {
		return nil, fmt.Errorf("control socket %s (is `strata dev --data %s` running?): %w", path, dataDir, err)
	}
	return cc, nil
}

// Processes lists the launcher's nodes and workers.
func (cc *ControlClient) Processes(ctx context.Context) ([]ControlProcess, error) {
	var out []ControlProcess
	return out, cc.call(ctx, http.MethodGet, "/v1/processes", &out)
}

// Do performs verb (VerbKill, ...) on the node or worker id.
func (cc *ControlClient) Do(ctx context.Context, id, verb string) (ControlProcess, error) {
	var out ControlProcess
	return out, cc.call(ctx, http.MethodPost, "/v1/processes/"+id+"/"+verb, &out)
}

func (cc *ControlClient) call(ctx context.Context, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://strata-dev"+path, nil)
	if err != nil {
		return err
	}
	resp, err := cc.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxControlResponseBytes))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var env api.ErrorEnvelope
		if json.Unmarshal(body, &env) == nil && env.Error != nil {
			return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, env.Error.Message)
		}
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	return json.Unmarshal(body, out)
}
