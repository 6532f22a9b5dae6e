package tlsutil

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func mustCA(t *testing.T) PEMPair {
	t.Helper()
	ca, err := NewCA(rand.Reader, time.Now(), "")
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func mustCert(t *testing.T, ca PEMPair, req CertRequest) PEMPair {
	t.Helper()
	p, err := NewCert(rand.Reader, time.Now(), ca, req)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// writeNode writes ca and a node pair into dir and returns the Files.
func writeNode(t *testing.T, dir string, ca, node PEMPair) Files {
	t.Helper()
	f := Files{CA: filepath.Join(dir, CACertFile)}
	f.Cert, f.Key = CertFileNames(dir, "node")
	if err := os.WriteFile(f.CA, ca.Cert, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WritePair(f.Cert, f.Key, node, true); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestNewCert_ChainVerifiesWithRoleNamesAndHosts(t *testing.T) {
	ca := mustCA(t)
	node := mustCert(t, ca, CertRequest{Role: RoleManager, Region: "use1", Node: "m1", Hosts: []string{"10.0.0.7", "m1.example"}})
	caCert, _, err := ParsePair(ca)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _, err := ParsePair(node)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := leaf.Subject.CommonName, "m1.manager.use1.strata"; got != want {
		t.Errorf("common name %q, want %q", got, want)
	}
	if !caCert.IsCA || caCert.NotAfter.Sub(caCert.NotBefore) < CAValidity {
		t.Errorf("ca: IsCA %v, validity %s", caCert.IsCA, caCert.NotAfter.Sub(caCert.NotBefore))
	}
	pool, _ := ParseCAPool(ca.Cert)
	for _, host := range []string{"10.0.0.7", "m1.example", "localhost", "127.0.0.1", "manager.use1.strata"} {
		for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
				t.Errorf("host %s usage %v: %v", host, usage, err)
			}
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "10.0.0.8"}); err == nil {
		t.Error("verified for a host it does not name")
	}
	client := mustCert(t, ca, CertRequest{Role: RoleClient})
	cl, _, _ := ParsePair(client)
	if _, err := cl.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("a client certificate verified as a server's")
	}
	if _, err := cl.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
}

func TestNewCert_NeverOutlivesTheCA(t *testing.T) {
	ca, err := NewCA(rand.Reader, testNow, "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewCert(rand.Reader, testNow.Add(CAValidity-time.Hour), ca, CertRequest{Role: RoleGate, Region: "use1", Node: "g1"})
	if err != nil {
		t.Fatal(err)
	}
	leaf, _, _ := ParsePair(p)
	if want := testNow.Add(CAValidity); leaf.NotAfter.After(want) {
		t.Errorf("not after %s, past the CA's %s", leaf.NotAfter, want)
	}
}

func TestCertRequest_Validate(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  CertRequest
		ok   bool
	}{
		{"gate", CertRequest{Role: RoleGate, Region: "use1", Node: "g1"}, true},
		{"client without node", CertRequest{Role: RoleClient}, true},
		{"unknown role", CertRequest{Role: "worker", Region: "use1", Node: "w1"}, false},
		{"manager without region", CertRequest{Role: RoleManager, Node: "m1"}, false},
		{"bad node", CertRequest{Role: RoleManager, Region: "use1", Node: "M 1"}, false},
		{"empty host", CertRequest{Role: RoleGate, Region: "use1", Node: "g1", Hosts: []string{""}}, false},
		{"validity past the CA", CertRequest{Role: RoleGate, Region: "use1", Node: "g1", Validity: 2 * CAValidity}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Validate()
			if tc.ok != (err == nil) {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("error %v is not ErrInvalidRequest", err)
			}
		})
	}
}

func TestWritePair_KeyIs0600AndNoOverwrite(t *testing.T) {
	dir := t.TempDir()
	ca := mustCA(t)
	cert, key := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	if err := WritePair(cert, key, ca, false); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(key)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v, want 0600", st.Mode().Perm())
	}
	if err := WritePair(cert, key, ca, false); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("second write: %v, want an 'exists' error", err)
	}
	back, err := ReadPair(cert, key)
	if err != nil || string(back.Key) != string(ca.Key) {
		t.Fatalf("read back: %v", err)
	}
}

func TestReloader_RefusesACertificateOfAnotherCA(t *testing.T) {
	ca, other := mustCA(t), mustCA(t)
	f := writeNode(t, t.TempDir(), ca, mustCert(t, other, CertRequest{Role: RoleGate, Region: "use1", Node: "g1"}))
	if _, err := NewReloader(f); !errors.Is(err, ErrNotSignedByCA) {
		t.Fatalf("NewReloader = %v, want ErrNotSignedByCA", err)
	}
}

// handshake runs one TLS connection between server and client configs over
// loopback TCP (a net.Pipe deadlocks on alerts) and returns both sides'
// errors; every step is bounded by a deadline.
func handshake(t *testing.T, server, client *tls.Config) (srvErr, cliErr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	deadline := time.Now().Add(10 * time.Second)
	done := make(chan error, 1)
	go func() {
		a, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		_ = a.SetDeadline(deadline)
		s := tls.Server(a, server)
		err = s.Handshake()
		if err == nil { // TLS 1.3: the client's certificate is checked after the client's Handshake returns
			_, err = io.ReadFull(s, make([]byte, 1))
		}
		_ = s.Close()
		done <- err
	}()
	b, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = b.SetDeadline(deadline)
	c := tls.Client(b, client)
	cliErr = c.Handshake()
	if cliErr == nil {
		_, cliErr = c.Write([]byte{1})
	}
	srvErr = <-done
	_ = c.Close()
	return srvErr, cliErr
}

func TestReloader_MutualTLS(t *testing.T) {
	ca, other := mustCA(t), mustCA(t)
	node := func(ca PEMPair, name string) *Reloader {
		f := writeNode(t, t.TempDir(), ca, mustCert(t, ca, CertRequest{Role: RoleManager, Region: "use1", Node: name}))
		r, err := NewReloader(f)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b, stranger := node(ca, "m1"), node(ca, "m2"), node(other, "x1")

	if srv, cli := handshake(t, a.MutualConfig(), withServerName(b.MutualConfig(), "127.0.0.1")); srv != nil || cli != nil {
		t.Fatalf("same CA: server %v, client %v", srv, cli)
	}
	if srv, _ := handshake(t, a.MutualConfig(), withServerName(stranger.MutualConfig(), "127.0.0.1")); srv == nil {
		t.Error("a client of another CA was accepted by the server")
	}
	if _, cli := handshake(t, stranger.MutualConfig(), withServerName(a.MutualConfig(), "127.0.0.1")); cli == nil {
		t.Error("a server of another CA was accepted by the client")
	}
	noCert := &tls.Config{InsecureSkipVerify: true, MinVersion: MinVersion} // a plain TLS client, no certificate
	if srv, _ := handshake(t, a.MutualConfig(), noCert); srv == nil {
		t.Error("a client without a certificate was accepted")
	}
	// HTTP-style client: full verification of chain and name.
	if srv, cli := handshake(t, a.ServerConfig(tls.VerifyClientCertIfGiven), b.ClientConfig("127.0.0.1")); srv != nil || cli != nil {
		t.Fatalf("http client: server %v, client %v", srv, cli)
	}
	if _, cli := handshake(t, a.ServerConfig(tls.VerifyClientCertIfGiven), b.ClientConfig("10.9.9.9")); cli == nil {
		t.Error("http client accepted a server certificate that does not name the host")
	}
}

// Node-to-node HTTP trusts a node certificate of the cluster CA whatever
// address it was dialled at (a pod IP its certificate cannot name), and
// nothing else: not a CLI certificate of the same CA, not a node of
// another CA.
func TestReloader_PeerConfigTrustsNodesOfTheCANotAddresses(t *testing.T) {
	ca, other := mustCA(t), mustCA(t)
	reloader := func(ca PEMPair, req CertRequest) *Reloader {
		r, err := NewReloader(writeNode(t, t.TempDir(), ca, mustCert(t, ca, req)))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	caller := reloader(ca, CertRequest{Role: RoleGate, Region: "use1", Node: "g1"})
	peer := reloader(ca, CertRequest{Role: RoleManager, Region: "use1", Node: "m1"})
	cli := reloader(ca, CertRequest{Role: RoleClient})
	stranger := reloader(other, CertRequest{Role: RoleManager, Region: "use1", Node: "m1"})
	const podIP = "10.244.1.17" // named by no certificate here
	server := func(r *Reloader) *tls.Config { return r.ServerConfig(tls.RequireAndVerifyClientCert) }

	if srv, c := handshake(t, server(peer), caller.PeerConfig(podIP)); srv != nil || c != nil {
		t.Fatalf("a node of the CA at an address its certificate does not name: server %v, client %v", srv, c)
	}
	if _, c := handshake(t, server(cli), caller.PeerConfig(podIP)); c == nil {
		t.Error("a CLI certificate of the CA was accepted as a node")
	}
	if _, c := handshake(t, server(stranger), caller.PeerConfig(podIP)); c == nil {
		t.Error("a node of another CA was accepted")
	}
	// The API's client config still checks names: only peers skip them.
	if _, c := handshake(t, server(peer), caller.ClientConfig(podIP)); c == nil {
		t.Error("ClientConfig accepted a certificate that does not name the host")
	}
}

func withServerName(c *tls.Config, name string) *tls.Config {
	c = c.Clone()
	c.ServerName = name
	return c
}

func TestReloader_ReloadSwapsCertificateAndCA(t *testing.T) {
	dir := t.TempDir()
	ca1, ca2 := mustCA(t), mustCA(t)
	f := writeNode(t, dir, ca1, mustCert(t, ca1, CertRequest{Role: RoleGate, Region: "use1", Node: "g1"}))
	r, err := NewReloader(f)
	if err != nil {
		t.Fatal(err)
	}
	first := r.Leaf().SerialNumber

	peer1 := mustCert(t, ca1, CertRequest{Role: RoleGate, Region: "use1", Node: "g2"})
	peer2 := mustCert(t, ca2, CertRequest{Role: RoleGate, Region: "use1", Node: "g2"})
	leaf := func(p PEMPair) []*x509.Certificate { c, _, _ := ParsePair(p); return []*x509.Certificate{c} }
	if err := r.VerifyPeerCertificate(leaf(peer1), x509.ExtKeyUsageClientAuth, ""); err != nil {
		t.Fatalf("before reload, a peer of ca1: %v", err)
	}

	// A half-done rotation (new certificate, old CA) is refused and changes nothing.
	if err := WritePair(f.Cert, f.Key, mustCert(t, ca2, CertRequest{Role: RoleGate, Region: "use1", Node: "g1"}), true); err != nil {
		t.Fatal(err)
	}
	if err := r.Reload(); !errors.Is(err, ErrNotSignedByCA) {
		t.Fatalf("Reload with a mismatched CA = %v, want ErrNotSignedByCA", err)
	}
	if r.Leaf().SerialNumber.Cmp(first) != 0 {
		t.Fatal("a failed reload changed the certificate")
	}

	// Complete it: the CA file now holds ca2.
	if err := os.WriteFile(f.CA, ca2.Cert, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if r.Leaf().SerialNumber.Cmp(first) == 0 {
		t.Fatal("reload kept the old certificate")
	}
	got, _ := r.GetCertificate(nil)
	if got.Leaf.SerialNumber.Cmp(r.Leaf().SerialNumber) != 0 {
		t.Fatal("GetCertificate does not present the reloaded certificate")
	}
	if err := r.VerifyPeerCertificate(leaf(peer1), x509.ExtKeyUsageClientAuth, ""); err == nil {
		t.Error("after reload, a peer of the old CA still verifies")
	}
	if err := r.VerifyPeerCertificate(leaf(peer2), x509.ExtKeyUsageClientAuth, ""); err != nil {
		t.Errorf("after reload, a peer of the new CA: %v", err)
	}
}
