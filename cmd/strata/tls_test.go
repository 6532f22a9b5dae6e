package main

import (
	"crypto/x509"
	"encoding/pem"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/transport/tlsutil"
)

// readCert parses the one certificate of a PEM file.
func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		t.Fatalf("%s: no CERTIFICATE block", path)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wantMode fails unless path has exactly mode's permission bits.
func wantMode(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != mode {
		t.Fatalf("%s: mode %v, want %v", path, got, mode)
	}
}

// snapshotDir is each file of dir with its content, to check that a
// refused command wrote nothing.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// TestTLSCommands_WriteAVerifiableCAAndNodeCertificates runs `strata tls
// ca create` and `strata tls cert create` as an operator would: the CA
// key is 0600 (it signs every certificate of the cluster), a gate's and a
// manager's certificates chain to the CA for both server and client use
// (Raft and node-to-node calls are mutual TLS), with the node's hosts,
// localhost and 127.0.0.1 in their SANs; a client certificate is for
// client use only.
func TestTLSCommands_WriteAVerifiableCAAndNodeCertificates(t *testing.T) {
	dir := t.TempDir()
	caDir, outDir := filepath.Join(dir, "ca"), filepath.Join(dir, "certs")
	stdout, stderr, code := runCLI(t, "", "tls", "ca", "create", "-o", caDir)
	wantCode(t, code, exitOK, stderr)
	caCertPath, caKeyPath := filepath.Join(caDir, tlsutil.CACertFile), filepath.Join(caDir, tlsutil.CAKeyFile)
	if !strings.Contains(stdout, caCertPath) || !strings.Contains(stdout, caKeyPath) {
		t.Fatalf("ca create does not name its files:\n%s", stdout)
	}
	wantMode(t, caKeyPath, 0o600)
	wantMode(t, caCertPath, 0o644)
	ca := readCert(t, caCertPath)
	if !ca.IsCA || ca.Subject.CommonName != "Strata cluster CA" {
		t.Fatalf("CA: IsCA %v, CN %q", ca.IsCA, ca.Subject.CommonName)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)

	for _, tc := range []struct{ role, region, node, host string }{
		{tlsutil.RoleGate, "use1", "g1", "10.0.0.7"},
		{tlsutil.RoleManager, "euw1", "m2", "m2.example.internal"},
	} {
		stdout, stderr, code := runCLI(t, "", "tls", "cert", "create", "--role", tc.role, "--region", tc.region,
			"--node", tc.node, "--host", tc.host, "--ca", caDir, "-o", outDir)
		wantCode(t, code, exitOK, stderr)
		certPath, keyPath := tlsutil.CertFileNames(outDir, tc.node)
		wantMode(t, keyPath, 0o600)
		wantMode(t, certPath, 0o644)
		cn := tc.node + "." + tc.role + "." + tc.region + ".strata"
		if !strings.Contains(stdout, certPath) || !strings.Contains(stdout, cn) {
			t.Fatalf("cert create output:\n%s", stdout)
		}
		c := readCert(t, certPath)
		if c.Subject.CommonName != cn || c.IsCA {
			t.Fatalf("%s: CN %q, IsCA %v", tc.node, c.Subject.CommonName, c.IsCA)
		}
		// Server use, for each name the node is reached at.
		for _, name := range []string{tc.host, "localhost", "127.0.0.1", cn} {
			if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
				t.Errorf("%s as a server for %s: %v", tc.node, name, err)
			}
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: "other.example", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
			t.Errorf("%s verifies for a host it was not made for", tc.node)
		}
		// Client use: a peer's certificate in mutual TLS.
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s as a client: %v", tc.node, err)
		}
		if want := time.Now().Add(tlsutil.DefaultCertValidity); c.NotAfter.After(want.Add(time.Minute)) || c.NotAfter.Before(want.Add(-time.Hour)) {
			t.Errorf("%s: not after %s, want about %s", tc.node, c.NotAfter, want)
		}
		if _, err := tlsutil.ReadPair(certPath, keyPath); err != nil {
			t.Fatal(err)
		}
	}

	// An operator's client certificate: client use only, no server SANs.
	_, stderr, code = runCLI(t, "", "tls", "cert", "create", "--role", "client", "--ca", caDir, "-o", outDir, "--days", "30")
	wantCode(t, code, exitOK, stderr)
	c := readCert(t, filepath.Join(outDir, "cli-client.pem"))
	wantMode(t, filepath.Join(outDir, "cli-client-key.pem"), 0o600)
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("client certificate: %v", err)
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Fatal("a client certificate verifies for server use")
	}
	if len(c.DNSNames) != 0 || slices.ContainsFunc(c.IPAddresses, net.IP.IsLoopback) {
		t.Fatalf("client certificate has SANs: %v %v", c.DNSNames, c.IPAddresses)
	}
	if c.NotAfter.After(time.Now().Add(31 * 24 * time.Hour)) {
		t.Fatalf("--days 30 gave a certificate valid until %s", c.NotAfter)
	}
}

// TestTLSCommands_BadInputWritesNothing: a bad role, a node certificate
// without its region or node id, a bad --days, a missing CA, and files
// that exist already are refused with a message naming the problem (2 for
// the caller's misuse, 1 for what is on disk), and no file is written or
// changed: a CA key in particular is never replaced.
func TestTLSCommands_BadInputWritesNothing(t *testing.T) {
	dir := t.TempDir()
	caDir, outDir := filepath.Join(dir, "ca"), filepath.Join(dir, "certs")
	_, stderr, code := runCLI(t, "", "tls", "ca", "create", "-o", caDir)
	wantCode(t, code, exitOK, stderr)
	_, stderr, code = runCLI(t, "", "tls", "cert", "create", "--role", "gate", "--region", "use1", "--node", "g1", "--ca", caDir, "-o", outDir)
	wantCode(t, code, exitOK, stderr)
	caBefore, outBefore := snapshotDir(t, caDir), snapshotDir(t, outDir)

	node := []string{"tls", "cert", "create", "--ca", caDir, "-o", outDir}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown role", append(slices.Clone(node), "--role", "admin", "--region", "use1", "--node", "x1"), exitUsage, `role "admin"`},
		{"no role", append(slices.Clone(node), "--region", "use1", "--node", "x1"), exitUsage, `role ""`},
		{"manager without region", append(slices.Clone(node), "--role", "manager", "--node", "m9"), exitUsage, `region ""`},
		{"gate without node", append(slices.Clone(node), "--role", "gate", "--region", "use1"), exitUsage, `node ""`},
		{"bad region", append(slices.Clone(node), "--role", "gate", "--region", "US East", "--node", "g9"), exitUsage, `region "US East"`},
		{"node id with a slash", append(slices.Clone(node), "--role", "gate", "--region", "use1", "--node", "../g9"), exitUsage, `node "../g9"`},
		{"zero days", append(slices.Clone(node), "--role", "gate", "--region", "use1", "--node", "g9", "--days", "0"), exitUsage, "--days 0"},
		{"past the CA", append(slices.Clone(node), "--role", "gate", "--region", "use1", "--node", "g9", "--days", "4000"), exitUsage, "validity"},
		{"argument", append(slices.Clone(node), "--role", "gate", "--region", "use1", "--node", "g9", "extra"), exitUsage, "unknown command"},
		{"missing CA", []string{"tls", "cert", "create", "--role", "gate", "--region", "use1", "--node", "g9", "--ca", filepath.Join(dir, "nope"), "-o", outDir}, exitError, "--ca " + filepath.Join(dir, "nope")},
		{"existing certificate", append(slices.Clone(node), "--role", "gate", "--region", "use1", "--node", "g1"), exitError, "g1.pem exists"},
		{"existing CA", []string{"tls", "ca", "create", "-o", caDir}, exitError, "ca.pem exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, "", tc.args...)
			wantCode(t, code, tc.code, stderr)
			if !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr does not say %q:\n%s", tc.want, stderr)
			}
			if got := snapshotDir(t, caDir); !maps.Equal(got, caBefore) {
				t.Fatalf("the CA directory changed: %v", keysOf(got))
			}
			if got := snapshotDir(t, outDir); !maps.Equal(got, outBefore) {
				t.Fatalf("the certificate directory changed: %v", keysOf(got))
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "nope")); !os.IsNotExist(err) {
		t.Fatalf("a refused command made a directory: %v", err)
	}
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
