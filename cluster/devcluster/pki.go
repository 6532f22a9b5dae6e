package devcluster

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/strata-ledger/strata/cluster"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/tlsutil"
)

// The TLS material of a dev cluster run with Options.TLS, all made by the
// code behind `strata tls` (transport/tlsutil), under DATA/tls:
//
//	ca.pem, ca-key.pem (0600)      the cluster CA, made once, reused on every restart
//	<node_id>.pem, <node_id>-key.pem  each node's certificate, for its loopback IP
//	cli-client.pem, cli-client-key.pem  a client certificate the CLI presents
//
// The gossip key lives in secrets.json (0600) with the tokens.
const (
	tlsDirName = "tls"
	// cliCertName is the base name of the CLI's client certificate
	// (what `strata tls cert create --role client` names it).
	cliCertName = "cli-client"
	// certRenewBefore: a node or client certificate expiring sooner is
	// made again at start (the CA is kept), so a dev cluster restarted a
	// year later still starts.
	certRenewBefore = 30 * 24 * time.Hour
	// caTooOldBefore: a CA expiring sooner is refused (its certificates
	// could not outlive it); the error says to remove DATA/tls.
	caTooOldBefore = certRenewBefore
)

// ErrTLSMismatch is returned when --tls differs from the run that made
// the data directory: switching would leave nodes with a gossip keyring
// (or without one) that their peers cannot talk to.
var ErrTLSMismatch = errors.New("data dir holds a dev cluster run with another --tls setting")

// TLS is what a client of the cluster needs to talk TLS to it (the CA and
// the CLI's client certificate, as cluster.json's tls member), or nil
// when the nodes serve plain HTTP.
func (c *Cluster) TLS() *api.ClusterTLS {
	if c.tls == nil {
		return nil
	}
	t := *c.tls
	return &t
}

// URL is the base URL of a node's API: https://host:port with TLS, else
// http://host:port.
func (c *Cluster) URL(id string) (string, error) {
	s, err := c.Node(id)
	if err != nil {
		return "", err
	}
	return c.scheme() + "://" + s.Config.HTTPAddr, nil
}

func (c *Cluster) scheme() string {
	if c.tls != nil {
		return "https"
	}
	return "http"
}

// readyClient is the launcher's client of /readyz: over TLS with the CA
// and the CLI's certificate when tlsFiles is set.
func readyClient(tlsFiles *api.ClusterTLS) (*http.Client, error) {
	t := &http.Transport{Proxy: nil}
	if tlsFiles != nil {
		tc, err := api.ClientTLS(tlsFiles.CAFile, tlsFiles.CertFile, tlsFiles.KeyFile)
		if err != nil {
			return nil, err
		}
		t.TLSClientConfig = tc
	}
	return &http.Client{Timeout: readyRequestTimeout, Transport: t}, nil
}

// tlsDir is DATA/tls.
func tlsDir(dataDir string) string { return filepath.Join(dataDir, tlsDirName) }

// caFile is the path of the cluster CA certificate.
func caFile(dataDir string) string { return filepath.Join(tlsDir(dataDir), tlsutil.CACertFile) }

// nodeTLSFiles is the tls block of node id's config.
func nodeTLSFiles(dataDir, id string) cluster.TLSFiles {
	cert, key := tlsutil.CertFileNames(tlsDir(dataDir), id)
	return cluster.TLSFiles{CAFile: caFile(dataDir), CertFile: cert, KeyFile: key}
}

// clusterTLS is cluster.json's tls member: the CA and the CLI's client
// certificate.
func clusterTLS(dataDir string) *api.ClusterTLS {
	cert, key := tlsutil.CertFileNames(tlsDir(dataDir), cliCertName)
	return &api.ClusterTLS{CAFile: caFile(dataDir), CertFile: cert, KeyFile: key}
}

// checkTLSMode refuses a data directory made by a run whose --tls differs
// from want. The record is cluster.json's tls member; without a
// cluster.json (a run that died early), the CA file or a node's
// agent.yaml says. An empty directory has no record.
func checkTLSMode(dataDir string, want bool) error {
	var had, known bool
	b, err := readStateFile(filepath.Join(dataDir, clusterFileName))
	switch {
	case err != nil:
		return err
	case b != nil:
		f, err := decodeClusterFile(b)
		if err != nil {
			return fmt.Errorf("cluster file %s: %w", filepath.Join(dataDir, clusterFileName), err)
		}
		had, known = f.TLS != nil, true
	default:
		if _, err := os.Stat(caFile(dataDir)); err == nil {
			had, known = true, true
		} else if hasNodeDir(dataDir) {
			had, known = false, true
		}
	}
	if !known || had == want {
		return nil
	}
	if had {
		return fmt.Errorf("%w: %s was run with --tls; run with --tls again, or use another data dir", ErrTLSMismatch, dataDir)
	}
	return fmt.Errorf("%w: %s was run without --tls; run without it, or use another data dir", ErrTLSMismatch, dataDir)
}

// hasNodeDir reports whether some subdirectory of dataDir holds an agent.yaml.
func hasNodeDir(dataDir string) bool {
	entries, err := os.ReadDir(dataDir)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(entries, func(e fs.DirEntry) bool {
		_, err := os.Stat(filepath.Join(dataDir, e.Name(), "agent.yaml"))
		return e.IsDir() && err == nil
	})
}

// newGossipKey is a fresh gossip key, base64 (cluster.DecodeGossipKey).
func newGossipKey(rnd io.Reader) (string, error) {
	k := make([]byte, cluster.GossipKeyBytes)
	if _, err := io.ReadFull(rnd, k); err != nil {
		return "", fmt.Errorf("gossip key: %w", err)
	}
	return base64.StdEncoding.EncodeToString(k), nil
}

// ensurePKI makes what DATA/tls lacks: the CA on first start, then a
// certificate for every planned node (for its loopback IP) and for the
// CLI. What is there is reused if it still chains to the CA, names the
// node's IP and is valid past now+certRenewBefore; otherwise that one
// certificate is made again. The CA key is written 0600 and never leaves
// the directory.
func ensurePKI(dataDir string, specs []NodeSpec, now time.Time) error {
	dir := tlsDir(dataDir)
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("tls dir: %w", err)
	}
	ca, caCert, err := ensureCA(dir, now)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	reqs := make([]tlsutil.CertRequest, 0, len(specs)+1)
	for _, s := range specs {
		host, _, err := net.SplitHostPort(s.Config.HTTPAddr)
		if err != nil {
			return fmt.Errorf("node %s: http_addr %q: %w", s.ID(), s.Config.HTTPAddr, err)
		}
		reqs = append(reqs, tlsutil.CertRequest{Role: string(s.Config.Role), Region: s.Config.Region, Node: s.ID(), Hosts: []string{host}})
	}
	reqs = append(reqs, tlsutil.CertRequest{Role: tlsutil.RoleClient, Node: "cli"})
	for _, req := range reqs {
		name := req.Node
		if req.Role == tlsutil.RoleClient {
			name = cliCertName
		}
		cert, key := tlsutil.CertFileNames(dir, name)
		if certUsable(cert, key, pool, req, now) {
			continue
		}
		p, err := tlsutil.NewCert(rand.Reader, now, ca, req)
		if err != nil {
			return err
		}
		if err := tlsutil.WritePair(cert, key, p, true); err != nil {
			return err
		}
	}
	return nil
}

// ensureCA loads DATA/tls's CA, or makes it if neither of its files
// exists. Half a CA (one file of two) is an error: making a new one
// would orphan every certificate the old one signed.
func ensureCA(dir string, now time.Time) (tlsutil.PEMPair, *x509.Certificate, error) {
	certPath, keyPath := filepath.Join(dir, tlsutil.CACertFile), filepath.Join(dir, tlsutil.CAKeyFile)
	_, certErr := os.Stat(certPath)
	_, keyErr := os.Stat(keyPath)
	if errors.Is(certErr, fs.ErrNotExist) && errors.Is(keyErr, fs.ErrNotExist) {
		p, err := tlsutil.NewCA(rand.Reader, now, "Strata dev cluster CA")
		if err != nil {
			return tlsutil.PEMPair{}, nil, err
		}
		if err := tlsutil.WritePair(certPath, keyPath, p, false); err != nil {
			return tlsutil.PEMPair{}, nil, err
		}
	}
	p, err := tlsutil.ReadPair(certPath, keyPath)
	if err != nil {
		return tlsutil.PEMPair{}, nil, fmt.Errorf("dev cluster CA (remove %s to make a new one): %w", dir, err)
	}
	cert, _, err := tlsutil.ParsePair(p)
	if err != nil {
		return tlsutil.PEMPair{}, nil, fmt.Errorf("dev cluster CA %s (remove %s to make a new one): %w", certPath, dir, err)
	}
	if !cert.IsCA || now.Add(caTooOldBefore).After(cert.NotAfter) {
		return tlsutil.PEMPair{}, nil, fmt.Errorf("dev cluster CA %s is not a CA valid past %s; remove %s to make a new one",
			certPath, now.Add(caTooOldBefore).UTC().Format(time.DateOnly), dir)
	}
	return p, cert, nil
}

// certUsable reports whether the pair at certPath and keyPath can serve
// req for another certRenewBefore: the key matches, the certificate has
// req's name, chains to pool and names every host of req.
func certUsable(certPath, keyPath string, pool *x509.CertPool, req tlsutil.CertRequest, now time.Time) bool {
	p, err := tlsutil.ReadPair(certPath, keyPath)
	if err != nil {
		return false
	}
	pair, err := tls.X509KeyPair(p.Cert, p.Key) // also: the key is the certificate's
	if err != nil {
		return false
	}
	cert := pair.Leaf
	if cert == nil || cert.Subject.CommonName != req.CommonName() {
		return false
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now.Add(certRenewBefore),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return false
	}
	for _, h := range req.Hosts {
		if cert.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}
