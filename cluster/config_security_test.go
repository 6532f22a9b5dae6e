package cluster

import (
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/transport/tlsutil"
)

// TestConfig_NonLoopbackNodeNeedsTLSAndAGossipKeyUnlessInsecure: secure by
// default (docs/SECURITY.md).
func TestConfig_NonLoopbackNodeNeedsTLSAndAGossipKeyUnlessInsecure(t *testing.T) {
	dir := t.TempDir()
	ca, _ := tlsutil.NewCA(rand.Reader, time.Now(), "")
	node, _ := tlsutil.NewCert(rand.Reader, time.Now(), ca, tlsutil.CertRequest{Role: "manager", Region: "use1", Node: "m1"})
	caFile := filepath.Join(dir, "ca.pem")
	_ = os.WriteFile(caFile, ca.Cert, 0o644)
	cert, key := tlsutil.CertFileNames(dir, "m1")
	if err := tlsutil.WritePair(cert, key, node, true); err != nil {
		t.Fatal(err)
	}
	files := TLSFiles{CAFile: caFile, CertFile: cert, KeyFile: key}
	gkey := base64.StdEncoding.EncodeToString(make([]byte, GossipKeyBytes))
	base := func(addr string) NodeConfig {
		c := DefaultNodeConfig()
		c.NodeID, c.Role, c.Region, c.DataDir = "m1", RoleManager, "use1", t.TempDir()
		c.HTTPAddr, c.RaftAddr, c.GossipAddr, c.DataPlaneAddr = addr+":7100", "127.0.0.1:7200", "127.0.0.1:7300", "127.0.0.1:7500"
		c.Tokens, c.ClusterToken = testTokens(), testClusterToken
		return c
	}
	for _, tc := range []struct {
		name    string
		adjust  func(*NodeConfig)
		addr    string
		wantErr string
	}{
		{"loopback in clear", nil, "127.0.0.1", ""},
		{"localhost in clear", nil, "localhost", ""},
		{"public in clear", nil, "10.1.2.3", "insecure"},
		{"all interfaces in clear", nil, "0.0.0.0", "insecure"},
		{"public with tls only", func(c *NodeConfig) { c.TLS = files }, "10.1.2.3", "insecure"},
		{"public with a gossip key only", func(c *NodeConfig) { c.GossipKey = gkey }, "10.1.2.3", "insecure"},
		{"public with both", func(c *NodeConfig) { c.TLS, c.GossipKey = files, gkey }, "10.1.2.3", ""},
		{"public, insecure: true", func(c *NodeConfig) { c.Insecure = true }, "10.1.2.3", ""},
		{"half a tls block", func(c *NodeConfig) { c.TLS = TLSFiles{CAFile: caFile} }, "127.0.0.1", "tls.cert_file"},
		{"short gossip key", func(c *NodeConfig) { c.GossipKey = "c2hvcnQ=" }, "127.0.0.1", "gossip_key"},
		{"public admin in clear", func(c *NodeConfig) { c.AdminAddr = "10.1.2.3:6060" }, "127.0.0.1", "admin_addr"},
		{"loopback admin", func(c *NodeConfig) { c.AdminAddr = "127.0.0.1:0" }, "127.0.0.1", ""},
		{"a manager with http_wan_addr", func(c *NodeConfig) { c.HTTPWANAddr = "127.0.0.2:7100" }, "127.0.0.1", "http_wan_addr"},
		{"a gate's public http_wan_addr in clear", func(c *NodeConfig) {
			c.Role, c.GossipWANAddr, c.HTTPWANAddr = RoleGate, "127.0.0.1:7400", "10.1.2.4:7100"
		}, "127.0.0.1", "insecure"},
		{"a gate's loopback http_wan_addr", func(c *NodeConfig) {
			c.Role, c.GossipWANAddr, c.HTTPWANAddr = RoleGate, "127.0.0.1:7400", "127.0.0.2:7100"
		}, "127.0.0.1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base(tc.addr)
			if tc.adjust != nil {
				tc.adjust(&c)
			}
			err := c.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Validate() = %v, want an error naming %q", err, tc.wantErr)
			}
		})
	}
}
