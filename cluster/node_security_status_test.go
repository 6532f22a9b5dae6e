package cluster

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/strata-ledger/strata/transport/api"
)

// logCapture is a node's log, in text, safe to read while the node runs.
type logCapture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logCapture) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logCapture) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// restartLogged stops node id, changes its config with change, and starts
// it again with its log captured (the harness discards logs); it waits
// until the node is ready.
func (c *testCluster) restartLogged(id string, change func(*NodeConfig)) *logCapture {
	c.t.Helper()
	c.stop(id)
	for i := range c.cfgs {
		if c.cfgs[i].NodeID == id && change != nil {
			change(&c.cfgs[i])
		}
	}
	capture := &logCapture{}
	c.startLogging(id, slog.New(slog.NewTextHandler(capture, &slog.HandlerOptions{Level: slog.LevelInfo})))
	c.waitReady(id)
	return capture
}

// securityOf reads GET /v1/cluster/status of node id.
func (c *testCluster) securityOf(id string) api.SecurityStatus {
	c.t.Helper()
	r := c.call(id, "GET", api.PathClusterStatus, testAdminToken, nil)
	if r.status != http.StatusOK {
		c.t.Fatalf("status of %s: %d %s", id, r.status, r.body)
	}
	var st api.ClusterStatus
	r.decode(c.t, &st)
	return st.Security
}

// Words of cluster/wire_tls.go securityStatus's warnings.
const (
	warnInsecure = "insecure: true"
	warnNoTLS    = "no tls"
	warnNoGossip = "no gossip_key"
	// logNotSecured is the warning a node logs at start when it is not.
	logNotSecured = "node is not fully secured"
)

func hasWarning(ws []string, prefix string) bool {
	for _, w := range ws {
		if strings.HasPrefix(w, prefix) {
			return true
		}
	}
	return false
}

// TestSecurityStatus_AClusterInClearSaysSo: nodes on loopback may run
// without TLS and a gossip key (docs/SECURITY.md, "insecure"), but they
// must not do so silently: GET /v1/cluster/status (operator scope) of
// every node says tls false and gossip_encrypted false with a warning for
// each, and the node logs the same warning at start. A node whose config
// says insecure: true says that too. (A TLS cluster with a gossip key
// answers tls and gossip_encrypted with no warning and logs none:
// TestTLS_ClusterServesAndRefusesStrangers.)
func TestSecurityStatus_AClusterInClearSaysSo(t *testing.T) {
	c := startTestCluster(t, 70)
	for _, id := range []string{"g1", "g2", "m1", "m3"} {
		s := c.securityOf(id)
		if s.TLS || s.GossipEncrypted || s.Insecure || s.CertNotAfter != "" {
			t.Fatalf("%s: %+v", id, s)
		}
		if !hasWarning(s.Warnings, warnNoTLS) || !hasWarning(s.Warnings, warnNoGossip) || hasWarning(s.Warnings, warnInsecure) || len(s.Warnings) != 2 {
			t.Fatalf("%s warns %q", id, s.Warnings)
		}
	}
	// The posture is the operators': a tenant token gets no answer.
	if r := c.call("g1", "GET", api.PathClusterStatus, testAcmeToken, nil); r.status != http.StatusForbidden {
		t.Fatalf("status with a tenant token: %d %s", r.status, r.body)
	}
	if r := c.call("g1", "GET", api.PathClusterStatus, "", nil); r.status != http.StatusUnauthorized {
		t.Fatalf("status without a token: %d %s", r.status, r.body)
	}

	log := c.restartLogged("m3", func(cfg *NodeConfig) { cfg.Insecure = true })
	s := c.securityOf("m3")
	if !s.Insecure || s.TLS || s.GossipEncrypted || !hasWarning(s.Warnings, warnInsecure) || len(s.Warnings) != 3 {
		t.Fatalf("m3 with insecure: true: %+v", s)
	}
	line := ""
	for l := range strings.Lines(log.String()) {
		if strings.Contains(l, logNotSecured) {
			line = l
		}
	}
	for _, want := range []string{"level=WARN", "insecure=true", "tls=false", "gossip_encrypted=false", warnNoTLS, warnNoGossip} {
		if !strings.Contains(line, want) {
			t.Fatalf("m3's start log does not say %q:\n%s", want, log.String())
		}
	}
}
