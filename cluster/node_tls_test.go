package cluster

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/members"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/tlsutil"
)

// testPKI is a CA and per-node certificates on disk for a TLS cluster.
type testPKI struct {
	t   *testing.T
	dir string
	ca  tlsutil.PEMPair
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	ca, err := tlsutil.NewCA(rand.Reader, time.Now(), "")
	if err != nil {
		t.Fatal(err)
	}
	p := &testPKI{t: t, dir: t.TempDir(), ca: ca}
	if err := os.WriteFile(filepath.Join(p.dir, tlsutil.CACertFile), ca.Cert, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// issue writes (or rewrites) node's certificate for its API IP and returns
// the TLS block of its config.
func (p *testPKI) issue(cfg *NodeConfig) TLSFiles {
	p.t.Helper()
	host, _, _ := net.SplitHostPort(cfg.HTTPAddr)
	pair, err := tlsutil.NewCert(rand.Reader, time.Now(), p.ca, tlsutil.CertRequest{Role: string(cfg.Role), Region: cfg.Region, Node: cfg.NodeID, Hosts: []string{host}})
	if err != nil {
		p.t.Fatal(err)
	}
	cert, key := tlsutil.CertFileNames(p.dir, cfg.NodeID)
	if err := tlsutil.WritePair(cert, key, pair, true); err != nil {
		p.t.Fatal(err)
	}
	return TLSFiles{CAFile: filepath.Join(p.dir, tlsutil.CACertFile), CertFile: cert, KeyFile: key}
}

func newGossipKey(t *testing.T) string {
	t.Helper()
	var k [GossipKeyBytes]byte
	if _, err := rand.Read(k[:]); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(k[:])
}

// foreignClient is a TLS client that trusts the cluster CA but presents a
// certificate of another CA.
func foreignClientTLS(t *testing.T, clusterCA []byte) *tls.Config {
	t.Helper()
	other := newTestPKI(t)
	pair, err := tlsutil.NewCert(rand.Reader, time.Now(), other.ca, tlsutil.CertRequest{Role: tlsutil.RoleGate, Region: "use1", Node: "intruder"})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(pair.Cert, pair.Key)
	if err != nil {
		t.Fatal(err)
	}
	pool, _ := tlsutil.ParseCAPool(clusterCA)
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS13}
}

// TestTLS_ClusterServesAndRefusesStrangers runs a TLS cluster with an
// encrypted gossip: jobs go through (a manager forwards to a gate over
// node-to-node TLS), and a plain-HTTP client, an internal call without a
// client certificate, and a certificate of another CA on the API and on
// Raft are all refused. Then a certificate reload of every node and a
// keyring rotation (install, use, remove, and a restart) keep the cluster
// serving throughout: a background load (bgLoad) runs across them, every
// request on a new TLS connection, and not one request may fail (a
// reload swaps the certificate atomically and the rotation's steps each
// reach every node before the next, so no request has a reason to).
func TestTLS_ClusterServesAndRefusesStrangers(t *testing.T) {
	pki := newTestPKI(t)
	key1 := newGossipKey(t)
	c := startTestCluster(t, 151, func(cfg *NodeConfig) {
		cfg.TLS = pki.issue(cfg)
		cfg.GossipKey = key1
	})

	// Served over TLS, forwarded node to node.
	if r := c.submitJob("m1", "", "tls-1"); r.status != http.StatusCreated && r.status != http.StatusOK {
		t.Fatalf("submit through a manager: %d %s", r.status, r.body)
	}
	var st api.ClusterStatus
	r := c.call("g1", "GET", api.PathClusterStatus, testAdminToken, nil)
	r.decode(t, &st)
	if !st.Security.TLS || !st.Security.GossipEncrypted || st.Security.Insecure || len(st.Security.Warnings) > 0 {
		t.Fatalf("status: %+v", st.Security)
	}

	t.Run("PlainHTTPIsRefused", func(t *testing.T) {
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + c.cfg("g1").HTTPAddr + "/readyz")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "HTTPS") {
				t.Fatalf("plain HTTP got %d %q", resp.StatusCode, b)
			}
		}
	})
	t.Run("InternalCallNeedsAClientCertificate", func(t *testing.T) {
		r := c.call("g2", "POST", KeyringPath, testClusterToken, []byte(`{"op":"`+api.KeyringList+`"}`))
		if r.status != http.StatusUnauthorized || !strings.Contains(string(r.body), "client certificate") {
			t.Fatalf("internal call with the token, without a certificate: %d %s", r.status, r.body)
		}
	})
	t.Run("AnotherCAIsRefusedOnAPIAndRaft", func(t *testing.T) {
		foreign := foreignClientTLS(t, pki.ca.Cert)
		hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: foreign}}
		req, _ := http.NewRequest("POST", "https://"+c.cfg("g2").HTTPAddr+KeyringPath, strings.NewReader(`{"op":"list"}`))
		req.Header.Set("Authorization", "Bearer "+testClusterToken)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("an internal call with another CA's certificate got %d", resp.StatusCode)
		}
		for _, id := range []string{"g1", "m1"} {
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", c.cfg(id).RaftAddr, withInsecureServer(foreign))
			if err == nil {
				_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
				_, err = conn.Write([]byte{0}) // raft RPC type byte
				if err == nil {
					_, err = conn.Read(make([]byte, 1))
				}
				conn.Close()
			}
			if err == nil {
				t.Fatalf("raft on %s accepted a certificate of another CA", id)
			}
		}
	})
	// The load of the two subtests below: submits through g1 (whose
	// certificate is reloaded first) and m2 (forwarding to a gate), strong
	// reads on g2 and m1. m3 is left out: it restarts.
	loadSubmit, loadRead := []string{"g1", "m2"}, []string{"g2", "m1"}
	t.Run("ReloadKeepsServing", func(t *testing.T) {
		load := c.startLoad("reload", loadSubmit, loadRead)
		load.advance(4)
		for _, cfg := range c.cfgs { // every node, one after another, under load
			n := c.node(cfg.NodeID)
			before := n.sec.tls.Leaf().SerialNumber
			pki.issue(&cfg)
			if err := n.Reload(cfg); err != nil {
				t.Fatal(err)
			}
			if n.sec.tls.Leaf().SerialNumber.Cmp(before) == 0 {
				t.Fatalf("reload of %s kept the old certificate", cfg.NodeID)
			}
			load.advance(4)
		}
		ops, failed := load.stop()
		if len(failed) > 0 {
			t.Fatalf("%d of %d requests failed across the reloads: %q", len(failed), ops, failed)
		}
		t.Logf("%d requests across the reload of 6 certificates, none failed", ops)
		c.http.CloseIdleConnections()
		if r := c.submitJob("g1", "", "tls-2"); r.status != http.StatusCreated && r.status != http.StatusOK {
			t.Fatalf("submit after reload: %d %s", r.status, r.body)
		}
		if r := c.submitJob("m2", "", "tls-3"); r.status != http.StatusCreated && r.status != http.StatusOK {
			t.Fatalf("submit through a manager after reload: %d %s", r.status, r.body)
		}
	})
	t.Run("KeyringRotation", func(t *testing.T) {
		load := c.startLoad("rotation", loadSubmit, loadRead)
		load.advance(4)
		key2 := newGossipKey(t)
		for _, step := range []api.KeyringRequest{{Op: api.KeyringInstall, Key: key2}, {Op: api.KeyringUse, Key: key2}, {Op: api.KeyringRemove, Key: key1}} {
			body, _ := json.Marshal(step)
			r := c.call("m1", "POST", api.PathKeyring, testAdminToken, body) // forwarded to a gate
			var out api.KeyringResponse
			r.decode(t, &out)
			if r.status != http.StatusOK || len(out.Nodes) != 6 {
				t.Fatalf("%s: %d %s", step.Op, r.status, r.body)
			}
			for _, nd := range out.Nodes {
				if nd.Error != "" {
					t.Fatalf("%s on %s: %s", step.Op, nd.NodeID, nd.Error)
				}
			}
			load.advance(4)
		}
		r := c.call("g1", "GET", api.PathKeyring, testAdminToken, nil)
		var out api.KeyringResponse
		r.decode(t, &out)
		for _, nd := range out.Nodes {
			if len(nd.Keys) != 1 || nd.Keys[0] != key2 || nd.Primary != key2 {
				t.Fatalf("after rotation %s holds %v (primary %s)", nd.NodeID, nd.Keys, nd.Primary)
			}
		}
		// Gossip still works with the new key alone: every node sees every
		// other alive after the rotation.
		for _, id := range []string{"g1", "m1"} {
			for _, other := range []string{"g2", "g3", "m2", "m3"} {
				if m, ok := c.node(id).members.Lookup(other); !ok || m.Status != members.MemberAlive {
					t.Fatalf("after the rotation %s sees %s as %v", id, other, m.Status)
				}
			}
		}
		// A node restarted after the rotation gossips with the new key only
		// (its keyring file), and rejoins; it logs no security warning.
		log := c.restartLogged("m3", nil)
		c.waitFor("g1 sees m3 alive again", func() bool {
			m, ok := c.node("g1").members.Lookup("m3")
			return ok && m.Status == members.MemberAlive
		})
		load.advance(4)
		ops, failed := load.stop()
		if len(failed) > 0 {
			t.Fatalf("%d of %d requests failed across the rotation: %q", len(failed), ops, failed)
		}
		t.Logf("%d requests across install, use, remove and a restart, none failed", ops)
		if strings.Contains(log.String(), logNotSecured) {
			t.Fatalf("a node with TLS and a gossip key warns it is not secured:\n%s", log)
		}
		if r := c.submitJob("m3", "", "tls-4"); r.status != http.StatusCreated && r.status != http.StatusOK {
			t.Fatalf("submit through the restarted manager: %d %s", r.status, r.body)
		}
	})
}

func withInsecureServer(c *tls.Config) *tls.Config {
	c = c.Clone()
	c.InsecureSkipVerify = true // the test is about the server refusing us
	return c
}
