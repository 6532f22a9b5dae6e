package devcluster

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/tlsutil"
)

// subnetTLS is the launcher's TLS test: one region on 127.0.153.x, on its
// own ports so it never meets test/integration's use of that subnet.
const (
	subnetTLS   = 153
	basePortTLS = 7700
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tlsOptions is one gate, one manager and one worker in use1, with TLS.
func tlsOptions(o *Options) {
	o.Regions, o.TLS, o.BasePort, o.WorkersPerRegion = []string{"use1"}, true, basePortTLS, 1
}

func TestCluster_TLSServesHTTPSAndARestartReusesCAKeysAndGossipKey(t *testing.T) {
	dir := t.TempDir()
	c := newTestClusterWith(t, dir, subnetTLS, tlsOptions)
	// Start polls /readyz: it only succeeds over TLS with the CA it made.
	if err := c.Start(startCtx(t)); err != nil {
		t.Fatal(err)
	}
	ct := c.TLS()
	if ct == nil || ct.CAFile != filepath.Join(dir, "tls", "ca.pem") || ct.CertFile == "" || ct.KeyFile == "" {
		t.Fatalf("TLS() = %+v", ct)
	}
	checkClusterFile(t, c.Cluster)
	if f := c.ClusterFile(); f.TLS == nil || *f.TLS != *ct {
		t.Fatalf("cluster.json tls %+v, want %+v", f.TLS, ct)
	}
	for _, key := range []string{"ca-key.pem", "use1-gate1-key.pem", "use1-mgr1-key.pem", "cli-client-key.pem"} {
		if m := fileMode(t, filepath.Join(dir, "tls", key)); m != 0o600 {
			t.Errorf("%s mode %v, want 0600", key, m)
		}
	}
	var sec secrets
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, secretsFileName)), &sec); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.DecodeGossipKey(sec.GossipKey); err != nil {
		t.Fatalf("secrets.json gossip key: %v", err)
	}
	for _, n := range c.Nodes() {
		cfg, err := loadAgentConfig(n.ConfigPath)
		if err != nil {
			t.Fatal(err)
		}
		want := nodeTLSFiles(dir, n.ID())
		if cfg.TLS != want || cfg.GossipKey != sec.GossipKey {
			t.Errorf("%s: agent.yaml tls %+v gossip_key %q; want %+v and the secrets' key", n.ID(), cfg.TLS, cfg.GossipKey, want)
		}
		url, err := c.URL(n.ID())
		if err != nil || url != "https://"+n.Config.HTTPAddr {
			t.Errorf("URL(%s) = %q, %v", n.ID(), url, err)
		}
		// The node's certificate names its own IP (the CLI dials IPs).
		pair, _ := tlsutil.ReadPair(cfg.TLS.CertFile, cfg.TLS.KeyFile)
		leaf, _, err := tlsutil.ParsePair(pair)
		if err != nil {
			t.Fatal(err)
		}
		host := strings.Split(n.Config.HTTPAddr, ":")[0]
		if err := leaf.VerifyHostname(host); err != nil {
			t.Errorf("%s's certificate: %v", n.ID(), err)
		}
		// A plain-HTTP client gets no answer from the TLS listener.
		if resp, err := (&http.Client{Timeout: time.Second}).Get("http://" + n.Config.HTTPAddr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Errorf("%s answered plain HTTP with 200", n.ID())
			}
		}
	}
	w := c.Workers()[0]
	waitLog(t, w.LogPath, "ca="+ct.CAFile)

	tlsFiles := func() map[string][]byte {
		out := map[string][]byte{}
		entries, err := os.ReadDir(filepath.Join(dir, "tls"))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			out[e.Name()] = readFile(t, filepath.Join(dir, "tls", e.Name()))
		}
		return out
	}
	before := tlsFiles()
	if len(before) != 8 { // CA, 2 nodes, the CLI: a certificate and a key each
		t.Fatalf("DATA/tls holds %d files, want 8", len(before))
	}
	// StopAll fails if the worker could not reach its manager over TLS.
	if err := c.StopAll(); err != nil {
		t.Fatal(err)
	}

	// A restart on the same data dir reuses everything.
	again := newTestClusterWith(t, dir, subnetTLS, tlsOptions)
	if err := again.Start(startCtx(t)); err != nil {
		t.Fatal(err)
	}
	after := tlsFiles()
	for name, b := range before {
		if !bytes.Equal(after[name], b) {
			t.Errorf("restart changed tls/%s", name)
		}
	}
	var sec2 secrets
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, secretsFileName)), &sec2); err != nil {
		t.Fatal(err)
	}
	if sec2 != sec {
		t.Error("restart changed secrets.json")
	}
	if err := again.StopAll(); err != nil {
		t.Fatal(err)
	}

	// The same directory without TLS is refused, naming the flag.
	bin, _ := os.Executable()
	_, err := New(Config{Options: Options{DataDir: dir, Regions: []string{"use1"}, SubnetBase: subnetTLS, BasePort: basePortTLS}, Binary: bin})
	if !errors.Is(err, ErrTLSMismatch) || !strings.Contains(err.Error(), "--tls") {
		t.Fatalf("New without TLS on a TLS data dir: %v", err)
	}
}

func TestNew_TLSOnAPlainDataDirIsRefused(t *testing.T) {
	dir := t.TempDir()
	bin, _ := os.Executable()
	o := Options{DataDir: dir, Regions: []string{"use1"}, SubnetBase: subnetTLS, BasePort: basePortTLS}
	c, err := New(Config{Options: o, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WriteClusterFile(); err != nil {
		t.Fatal(err)
	}
	o.TLS = true
	if _, err := New(Config{Options: o, Binary: bin}); !errors.Is(err, ErrTLSMismatch) || !strings.Contains(err.Error(), "without --tls") {
		t.Fatalf("New with TLS on a plain data dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tls")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused New made DATA/tls: %v", err)
	}
}

func TestCheckTLSMode(t *testing.T) {
	plainFile, _ := json.Marshal(api.ClusterFile{Nodes: []api.ClusterNode{{NodeID: "n", APIAddr: "127.0.0.1:1"}}})
	tlsFile, _ := json.Marshal(api.ClusterFile{Nodes: []api.ClusterNode{{NodeID: "n", APIAddr: "127.0.0.1:1"}}, TLS: &api.ClusterTLS{CAFile: "/ca.pem"}})
	tests := []struct {
		name    string
		files   map[string]string // path under DATA: content
		wantTLS bool
		wantErr bool
	}{
		{name: "empty dir, plain", files: nil},
		{name: "empty dir, tls", files: nil, wantTLS: true},
		{name: "plain cluster.json, plain", files: map[string]string{clusterFileName: string(plainFile)}},
		{name: "plain cluster.json, tls", files: map[string]string{clusterFileName: string(plainFile)}, wantTLS: true, wantErr: true},
		{name: "tls cluster.json, tls", files: map[string]string{clusterFileName: string(tlsFile)}, wantTLS: true},
		{name: "tls cluster.json, plain", files: map[string]string{clusterFileName: string(tlsFile)}, wantErr: true},
		{name: "no cluster.json, a CA, plain", files: map[string]string{"tls/ca.pem": "x"}, wantErr: true},
		{name: "no cluster.json, a node dir, tls", files: map[string]string{"use1-gate1/agent.yaml": "x"}, wantTLS: true, wantErr: true},
		{name: "no cluster.json, a node dir and a CA, tls", files: map[string]string{"use1-gate1/agent.yaml": "x", "tls/ca.pem": "x"}, wantTLS: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for p, content := range tt.files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := checkTLSMode(dir, tt.wantTLS)
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, ErrTLSMismatch)) {
				t.Fatalf("checkTLSMode = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

// pkiSpecs plans one region of one gate and one manager.
func pkiSpecs(t *testing.T, dir string) []NodeSpec {
	t.Helper()
	o := testOptions(dir)
	o.Regions = []string{"use1"}
	specs, err := Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	return specs
}

func TestEnsurePKI_ReusesValidCertsRenewsExpiringOnesAndKeepsTheCA(t *testing.T) {
	dir := t.TempDir()
	specs := pkiSpecs(t, dir)
	now := time.Now()
	if err := ensurePKI(dir, specs, now); err != nil {
		t.Fatal(err)
	}
	gateCert, gateKey := tlsutil.CertFileNames(tlsDir(dir), "use1-gate1")
	mgrCert, mgrKey := tlsutil.CertFileNames(tlsDir(dir), "use1-mgr1")
	ca, gate, mgr := readFile(t, caFile(dir)), readFile(t, gateCert), readFile(t, mgrCert)
	caKey := readFile(t, filepath.Join(tlsDir(dir), tlsutil.CAKeyFile))

	// Every node certificate verifies against the CA, as a server for its IP.
	pool, err := tlsutil.ParseCAPool(ca)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range [][]byte{gate, mgr} {
		leaf, _, err := tlsutil.ParsePair(tlsutil.PEMPair{Cert: b, Key: readFile(t, []string{gateKey, mgrKey}[i])})
		if err != nil {
			t.Fatal(err)
		}
		host := strings.Split(specs[i].Config.HTTPAddr, ":")[0]
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("%s: %v", specs[i].ID(), err)
		}
	}

	// Again, a day later: nothing changes.
	if err := ensurePKI(dir, specs, now.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readFile(t, gateCert), gate) || !bytes.Equal(readFile(t, mgrCert), mgr) {
		t.Fatal("valid certificates were made again")
	}

	// A key that does not match its certificate: that one is made again.
	if err := os.WriteFile(mgrKey, readFile(t, gateKey), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ensurePKI(dir, specs, now.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(readFile(t, mgrCert), mgr) || !bytes.Equal(readFile(t, gateCert), gate) {
		t.Fatal("a mismatched key did not renew exactly its certificate")
	}

	// Within a month of expiry: made again, by the same CA.
	if err := ensurePKI(dir, specs, now.Add(tlsutil.DefaultCertValidity-certRenewBefore+time.Hour)); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(readFile(t, gateCert), gate) {
		t.Fatal("an expiring certificate was kept")
	}
	if !bytes.Equal(readFile(t, caFile(dir)), ca) || !bytes.Equal(readFile(t, filepath.Join(tlsDir(dir), tlsutil.CAKeyFile)), caKey) {
		t.Fatal("the CA changed")
	}

	// Half a CA is an error, never a new CA.
	if err := os.Remove(filepath.Join(tlsDir(dir), tlsutil.CAKeyFile)); err != nil {
		t.Fatal(err)
	}
	if err := ensurePKI(dir, specs, now); err == nil || !strings.Contains(err.Error(), "remove "+tlsDir(dir)) {
		t.Fatalf("ensurePKI without the CA key: %v", err)
	}
	if !bytes.Equal(readFile(t, caFile(dir)), ca) {
		t.Fatal("the CA certificate changed")
	}
}

func TestPlan_TLSGivesEveryNodeItsCertificateAndTheGossipKey(t *testing.T) {
	dir := t.TempDir()
	specs := pkiSpecs(t, dir)
	if err := ensurePKI(dir, specs, time.Now()); err != nil {
		t.Fatal(err)
	}
	o := testOptions(dir)
	o.Regions, o.TLS = []string{"use1"}, true
	if _, err := Plan(o); err == nil || !strings.Contains(err.Error(), "gossip key") {
		t.Fatalf("Plan with TLS and no gossip key: %v", err)
	}
	o.GossipKey = "c2hvcnQ="
	if _, err := Plan(o); err == nil || !strings.Contains(err.Error(), "gossip key") {
		t.Fatalf("Plan with a short gossip key: %v", err)
	}
	o.GossipKey = strings.Repeat("QUFB", 10) + "QUE="
	tlsSpecs, err := Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range tlsSpecs {
		want := cluster.TLSFiles{CAFile: filepath.Join(dir, "tls", "ca.pem"),
			CertFile: filepath.Join(dir, "tls", s.ID()+".pem"), KeyFile: filepath.Join(dir, "tls", s.ID()+"-key.pem")}
		if s.Config.TLS != want || s.Config.GossipKey != o.GossipKey {
			t.Errorf("%s: tls %+v gossip %q", s.ID(), s.Config.TLS, s.Config.GossipKey)
		}
	}
	for _, s := range specs {
		if s.Config.TLS.Enabled() || s.Config.GossipKey != "" {
			t.Errorf("%s without TLS has tls %+v", s.ID(), s.Config.TLS)
		}
	}
}
