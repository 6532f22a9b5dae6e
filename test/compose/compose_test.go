package compose

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// Bounds of the smoke test.
const (
	smokeJobWait  = 2 * time.Minute
	clientTimeout = 10 * time.Second // one attempt on one node
	pollInterval  = 500 * time.Millisecond
)

// cluster is the running compose cluster as the host sees it.
type cluster struct {
	services []service
	secrets  string // deploy/compose/.secrets
	client   *api.Client
	tls      *tls.Config
}

// clientTLS is the client TLS config: the cluster CA.
func (c *cluster) clientTLS() *tls.Config { return c.tls }

// composeCluster connects to the running cluster, or skips the test
// unless STRATA_COMPOSE=1 (the make targets set it after compose-up).
func composeCluster(t *testing.T) *cluster {
	t.Helper()
	if os.Getenv("STRATA_COMPOSE") != "1" {
		t.Skip("needs the compose cluster: make compose-smoke / make compose-chaos (STRATA_COMPOSE=1)")
	}
	dir := os.Getenv("STRATA_COMPOSE_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "deploy", "compose")
	}
	c := &cluster{services: composeServices(composeNet()), secrets: filepath.Join(dir, ".secrets")}
	token, err := os.ReadFile(filepath.Join(c.secrets, "operator.token"))
	if err != nil {
		t.Fatalf("no operator token (is the cluster up? make compose-up): %v", err)
	}
	tlsc, err := api.ClientTLS(filepath.Join(c.secrets, "ca.pem"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	c.tls = tlsc
	// Gates first (jobs live in the global ledger), then the managers,
	// which forward: a paused gate costs one attempt's timeout.
	var addrs []string
	for _, role := range []string{"gate", "manager"} {
		for _, s := range c.services {
			if s.Role == role {
				addrs = append(addrs, s.apiAddr())
			}
		}
	}
	if c.client, err = api.New(api.ClientConfig{Addrs: addrs, Token: strings.TrimSpace(string(token)), TLS: tlsc, Timeout: clientTimeout}); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitTerminal polls job id with strong reads until it is terminal or
// the deadline passes; it returns the last state read (nil if none).
func (c *cluster) waitTerminal(ctx context.Context, id string, wait time.Duration) (*fsm.JobState, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var last *fsm.JobState
	var lastErr error
	for {
		st, _, err := c.client.Job(ctx, id, api.ReadOptions{Consistency: api.ConsistencyStrong})
		if err == nil {
			last = st
			if st.Status.Terminal() {
				return st, nil
			}
		} else {
			lastErr = err
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return last, fmt.Errorf("job %s not terminal after %v (last status %v, last error %v)", id, wait, statusOf(last), lastErr)
		}
	}
}

func statusOf(st *fsm.JobState) string {
	if st == nil {
		return "none"
	}
	return st.Status.String()
}

// TestCompose_Smoke: the cluster speaks TLS only, and one job runs in the
// three regions to COMPLETED with every simulated request counted.
func TestCompose_Smoke(t *testing.T) {
	c := composeCluster(t)
	ctx := context.Background()

	gate := c.services[0]
	plain := &http.Client{Timeout: clientTimeout}
	resp, err := plain.Get("http://" + gate.Nets[gate.Region] + ":7100/livez")
	if err != nil {
		t.Fatalf("plain http to %s: %v", gate.Name, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("plain http to %s: %s, want 400 (TLS only)", gate.Name, resp.Status)
	}

	const count, rate, seconds = 2, 50, 3
	spec := &api.SubmitJobRequest{Tenant: "smoke", IdempotencyKey: fmt.Sprintf("smoke-%d", time.Now().UnixNano()),
		Regions: composeRegions, Timeout: fsm.Duration(smokeJobWait),
		Workflows: []fsm.WorkflowSpec{{Name: "smoke", Count: count, Duration: fsm.Duration(seconds * time.Second), Rate: rate}}}
	sub, _, err := c.client.SubmitJob(ctx, spec, api.WriteOptions{})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	t.Logf("job %s acknowledged at %s", sub.JobID, sub.Durability)
	st, err := c.waitTerminal(ctx, sub.JobID, smokeJobWait)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != fsm.JobStatusCompleted {
		t.Fatalf("job %s ended %v, want COMPLETED", sub.JobID, st.Status)
	}
	for _, r := range st.Regions {
		if want := uint64(count * rate * seconds); r.Completed != want || !r.Done {
			t.Errorf("region %s: completed %d done %v, want %d and done", r.Region, r.Completed, r.Done, want)
		}
	}
	if len(st.Regions) != len(composeRegions) {
		t.Errorf("job ran in %d regions, want %d", len(st.Regions), len(composeRegions))
	}
	t.Logf("job %s COMPLETED in %d regions over TLS", sub.JobID, len(st.Regions))
}

// isNotFound: the API answered 404.
func isNotFound(err error) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}
