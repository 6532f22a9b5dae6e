package devcluster

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/tlsutil"
)

// The launcher tests run the test binary itself as each node's "agent":
// with fakeAgentEnv set, TestMain serves /readyz and /livez on the node's
// http_addr, read from agent.yaml the way the real agent reads it. It is
// each worker too: the fake worker logs what it was given and, on SIGTERM,
// checks that its first manager still answers (workers stop first). The
// other variables name the node or worker (by id) that misbehaves.
const (
	fakeAgentEnv       = "DEVCLUSTER_FAKE_AGENT"
	fakeExitEnv        = "DEVCLUSTER_FAKE_EXIT"        // node id: exits with status 3 at once
	fakeIgnoreTermEnv  = "DEVCLUSTER_FAKE_IGNORE_TERM" // node id: ignores SIGTERM
	fakeNotReadyEnv    = "DEVCLUSTER_FAKE_NOT_READY"   // node id: /readyz answers 503
	fakeExitStatus     = 3
	fakeStrataEnvExit  = 7 // a STRATA_ variable reached the node (the worker: other than its token)
	fakeNoManagerExit  = 5 // the worker's manager was gone when the worker was told to stop
	fakeLifetime       = 2 * time.Minute
	fakeShutdownBudget = 2 * time.Second
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeAgentEnv) == "1" {
		if len(os.Args) > 1 && os.Args[1] == "worker" {
			os.Exit(runFakeWorker(os.Args[2:]))
		}
		os.Exit(runFakeAgent(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// runFakeAgent stands in for `strata agent --config FILE`. It lives at
// most fakeLifetime, so no fake outlives a broken test for long.
func runFakeAgent(args []string) int {
	if len(args) != 3 || args[0] != "agent" || args[1] != "--config" {
		fmt.Fprintf(os.Stderr, "fake agent: unexpected args %q\n", args)
		return 2
	}
	cfg, err := loadAgentConfig(args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake agent:", err)
		return 2
	}
	if i := slices.IndexFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, strataEnvPrefix) }); i >= 0 {
		fmt.Fprintf(os.Stderr, "fake agent: inherited %s\n", os.Environ()[i])
		return fakeStrataEnvExit
	}
	if os.Getenv(fakeExitEnv) == cfg.NodeID {
		fmt.Fprintf(os.Stderr, "fake agent %s: exiting as told\n", cfg.NodeID)
		return fakeExitStatus
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	l, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake agent:", err)
		return 1
	}
	notReady := os.Getenv(fakeNotReadyEnv) == cfg.NodeID
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if notReady {
			http.Error(w, "no leader", http.StatusServiceUnavailable)
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: time.Second}
	if cfg.TLS.Enabled() { // as the real agent: TLS 1.3 with the node's certificate
		r, err := tlsutil.NewReloader(tlsutil.Files{CA: cfg.TLS.CAFile, Cert: cfg.TLS.CertFile, Key: cfg.TLS.KeyFile})
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake agent:", err)
			return 1
		}
		l = tls.NewListener(l, r.ServerConfig(tls.VerifyClientCertIfGiven))
	}
	go srv.Serve(l)
	fmt.Fprintf(os.Stderr, "fake agent %s: serving %s\n", cfg.NodeID, cfg.HTTPAddr)
	ignoreTerm := os.Getenv(fakeIgnoreTermEnv) == cfg.NodeID
	lifetime := time.After(fakeLifetime)
	for {
		select {
		case <-term:
			if ignoreTerm {
				continue
			}
		case <-lifetime:
		}
		ctx, cancel := context.WithTimeout(context.Background(), fakeShutdownBudget)
		defer cancel()
		srv.Shutdown(ctx)
		return 0
	}
}

// runFakeWorker stands in for `strata worker --manager M,... --region R
// --capacity N --id ID --log-level L` with the token in STRATA_TOKEN.
func runFakeWorker(args []string) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	managers := fs.String("manager", "", "")
	region := fs.String("region", "", "")
	capacity := fs.Int("capacity", 0, "")
	id := fs.String("id", "", "")
	level := fs.String("log-level", "", "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 || *managers == "" || *id == "" {
		fmt.Fprintf(os.Stderr, "fake worker: unexpected args %q (%v)\n", args, err)
		return 2
	}
	token := os.Getenv(workerTokenEnv)
	caFile := os.Getenv(workerCAFileEnv)
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, strataEnvPrefix) && !strings.HasPrefix(kv, workerTokenEnv+"=") && !strings.HasPrefix(kv, workerCAFileEnv+"=") {
			fmt.Fprintf(os.Stderr, "fake worker: inherited %s\n", kv)
			return fakeStrataEnvExit
		}
	}
	if os.Getenv(fakeExitEnv) == *id {
		fmt.Fprintf(os.Stderr, "fake worker %s: exiting as told\n", *id)
		return fakeExitStatus
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	fmt.Fprintf(os.Stderr, "fake worker %s: region=%s managers=%s capacity=%d log=%s token=%s ca=%s\n",
		*id, *region, *managers, *capacity, *level, token, caFile)
	select {
	case <-term:
	case <-time.After(fakeLifetime):
		return 0
	}
	first, _, _ := strings.Cut(*managers, ",")
	c := http.Client{Timeout: fakeShutdownBudget}
	scheme := "http"
	if caFile != "" {
		tc, err := api.ClientTLS(caFile, "", "")
		if err != nil {
			fmt.Fprintf(os.Stderr, "fake worker %s: %v\n", *id, err)
			return 2
		}
		c.Transport, scheme = &http.Transport{TLSClientConfig: tc}, "https"
	}
	resp, err := c.Get(scheme + "://" + first + "/livez")
	if err != nil {
		fmt.Fprintf(os.Stderr, "fake worker %s: manager %s gone before the worker stopped: %v\n", *id, first, err)
		return fakeNoManagerExit
	}
	resp.Body.Close()
	return 0
}
