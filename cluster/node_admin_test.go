package cluster

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// adminGet is GET path on addr (plain HTTP: the admin listener serves TLS
// only when the node has it) with token.
func adminGet(t *testing.T, addr, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: nodeTestWait}).Do(req)
	if err != nil {
		t.Fatalf("GET %s on %s: %v", path, addr, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// refused reports whether nothing accepts TCP connections on addr.
func refused(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err == nil {
		conn.Close()
		return false
	}
	return true
}

// TestAdmin_PprofOnlyOnTheAdminListener: pprof is served on admin_addr
// only (operator token), and the public API answers 404 for it, as for
// any path it does not serve. admin_addr is off by default
// (DefaultNodeConfig, docs/SECURITY.md "admin_addr"): profiles show
// goroutine stacks, heap contents and command lines, and a CPU profile or
// trace costs the node while it runs, so a node opens no port for them
// unless its operator asks; when asked, the address must be on loopback
// unless the node serves TLS (validateSecurity;
// TestConfig_NonLoopbackNodeNeedsTLSAndAGossipKeyUnlessInsecure). A node
// without admin_addr listens for nothing of the kind, and a closed node's
// admin listener is closed with it.
func TestAdmin_PprofOnlyOnTheAdminListener(t *testing.T) {
	if DefaultNodeConfig().AdminAddr != "" {
		t.Fatalf("admin_addr is on by default: %q", DefaultNodeConfig().AdminAddr)
	}
	const adminAddr = "127.0.71.1:7600"
	c := startTestCluster(t, 71, func(cfg *NodeConfig) {
		if cfg.NodeID == "g1" {
			cfg.AdminAddr = adminAddr
		}
	})
	if got := c.node("g1").AdminAddr(); got != adminAddr {
		t.Fatalf("g1's admin listener is %q, want %q", got, adminAddr)
	}

	for _, tc := range []struct {
		path, token string
		status      int
		body        string
	}{
		{"/debug/pprof/", testAdminToken, http.StatusOK, "goroutine"},
		{"/debug/pprof/goroutine?debug=1", testAdminToken, http.StatusOK, "goroutine profile"},
		{"/debug/pprof/", "", http.StatusUnauthorized, ""},
		{"/debug/pprof/", testAcmeToken, http.StatusForbidden, ""},
		{"/v1/jobs", testAdminToken, http.StatusNotFound, "no such endpoint"}, // the admin listener is not the API
	} {
		if code, body := adminGet(t, adminAddr, tc.path, tc.token); code != tc.status || !strings.Contains(body, tc.body) {
			t.Errorf("admin GET %s: %d %.200s", tc.path, code, body)
		}
	}
	// Not on the public API, with any token.
	for _, id := range []string{"g1", "g2", "m1"} {
		for _, p := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/debug/pprof/profile?seconds=1", "/debug/pprof/trace?seconds=1"} {
			if r := c.call(id, "GET", p, testAdminToken, nil); r.status != http.StatusNotFound {
				t.Errorf("API of %s serves %s: %d %.200s", id, p, r.status, r.body)
			}
		}
	}
	// Off where it is not configured: nothing listens on the port.
	if got := c.node("g2").AdminAddr(); got != "" {
		t.Fatalf("g2 without admin_addr has an admin listener on %s", got)
	}
	if !refused("127.0.71.2:7600") {
		t.Fatal("something listens on g2's admin port")
	}
	c.stop("g1")
	if !refused(adminAddr) {
		t.Fatal("g1's admin listener outlives the node")
	}
}
