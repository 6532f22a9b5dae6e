package tlsutil

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// MinVersion is the oldest TLS version any config of the package accepts.
const MinVersion = tls.VersionTLS13

// ErrNoPeerCertificate: a peer presented no certificate where one is required.
var ErrNoPeerCertificate = errors.New("tlsutil: peer presented no certificate")

// Reloader holds a node's certificate, key and CA pool, loaded from Files,
// and swaps them atomically on Reload.
type Reloader struct {
	files Files
	now   func() time.Time
	cur   atomic.Pointer[material]
}

// material is one consistent load of the three files.
type material struct {
	cert   tls.Certificate // Leaf set
	pool   *x509.CertPool
	loaded time.Time
}

// NewReloader loads files; it fails if they do not load or the
// certificate does not chain to the CA.
func NewReloader(files Files) (*Reloader, error) {
	if files.CA == "" || files.Cert == "" || files.Key == "" {
		return nil, errors.New("tlsutil: ca_file, cert_file and key_file are all required")
	}
	r := &Reloader{files: files, now: time.Now}
	if err := r.Reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// Files returns where the reloader reads from.
func (r *Reloader) Files() Files { return r.files }

// Reload reads the files again and, if they load and the certificate
// chains to the CA, makes them current for every new handshake. On error
// the previous material stays current.
func (r *Reloader) Reload() error {
	m, err := load(r.files, r.now())
	if err != nil {
		return err
	}
	r.cur.Store(m)
	return nil
}

func load(f Files, now time.Time) (*material, error) {
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("tlsutil: ca_file: %w", err)
	}
	pool, err := ParseCAPool(caPEM)
	if err != nil {
		return nil, fmt.Errorf("tlsutil: ca_file %s: %w", f.CA, err)
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("tlsutil: cert_file/key_file: %w", err)
	}
	// tls.LoadX509KeyPair sets Leaf since Go 1.23.
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("tlsutil: cert_file %s: %w", f.Cert, err)
		}
	}
	inter := x509.NewCertPool()
	for _, der := range cert.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	if _, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return nil, fmt.Errorf("%w: %s does not verify against %s: %w", ErrNotSignedByCA, f.Cert, f.CA, err)
	}
	return &material{cert: cert, pool: pool, loaded: now}, nil
}

// Leaf is the current certificate.
func (r *Reloader) Leaf() *x509.Certificate { return r.cur.Load().cert.Leaf }

// Pool is the current CA pool.
func (r *Reloader) Pool() *x509.CertPool { return r.cur.Load().pool }

// GetCertificate presents the current certificate (server side).
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c := r.cur.Load().cert
	return &c, nil
}

// GetClientCertificate presents the current certificate (client side).
func (r *Reloader) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	c := r.cur.Load().cert
	return &c, nil
}

// VerifyPeerCertificate checks that a peer's chain verifies against the
// current CA pool for usage (ExtKeyUsageServerAuth when this side is the
// client, ExtKeyUsageClientAuth when it is the server); with host set, the
// certificate must also name it.
func (r *Reloader) VerifyPeerCertificate(certs []*x509.Certificate, usage x509.ExtKeyUsage, host string) error {
	if len(certs) == 0 {
		return ErrNoPeerCertificate
	}
	opts := x509.VerifyOptions{Roots: r.Pool(), Intermediates: x509.NewCertPool(), DNSName: host,
		CurrentTime: r.now(), KeyUsages: []x509.ExtKeyUsage{usage}}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := certs[0].Verify(opts); err != nil {
		return fmt.Errorf("tlsutil: peer certificate %q: %w", certs[0].Subject.CommonName, err)
	}
	return nil
}

// ServerConfig is the config of a listener: it presents the current
// certificate, and asks for client certificates as clientAuth says,
// verifying any it gets against the current CA (the standard library's
// own verification, on a config built per handshake).
func (r *Reloader) ServerConfig(clientAuth tls.ClientAuthType) *tls.Config {
	return &tls.Config{
		MinVersion: MinVersion,
		NextProtos: []string{"http/1.1"},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := r.cur.Load()
			return &tls.Config{MinVersion: MinVersion, NextProtos: []string{"http/1.1"},
				Certificates: []tls.Certificate{m.cert}, ClientCAs: m.pool, ClientAuth: clientAuth}, nil
		},
	}
}

// ClientConfig is a snapshot client config for one server name (a host or
// IP): the current certificate, the current CA as the only root, and the
// standard library's verification of the server's chain and name.
func (r *Reloader) ClientConfig(serverName string) *tls.Config {
	m := r.cur.Load()
	return &tls.Config{MinVersion: MinVersion, NextProtos: []string{"http/1.1"}, ServerName: serverName,
		RootCAs: m.pool, Certificates: []tls.Certificate{m.cert}}
}

// MutualConfig is one config for both ends of a stream layer whose dials
// do not name the server (raftnet): as a server it requires and verifies a
// client certificate from the current CA; as a client it presents the
// current certificate and verifies that the server's chains to the current
// CA and is a server certificate. The server's name is not checked: every
// node certificate of the cluster CA is a Raft peer (as Consul without
// verify_server_hostname); the Raft configuration names the peers.
func (r *Reloader) MutualConfig() *tls.Config {
	c := r.ServerConfig(tls.RequireAndVerifyClientCert)
	c.NextProtos = nil
	c.GetClientCertificate = r.GetClientCertificate
	// The standard verification would use a RootCAs fixed now; the check
	// is done below against the CA of the moment instead.
	c.InsecureSkipVerify = true
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		return r.VerifyPeerCertificate(cs.PeerCertificates, x509.ExtKeyUsageServerAuth, "")
	}
	inner := c.GetConfigForClient
	c.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		sc, err := inner(h)
		if sc != nil {
			sc.NextProtos = nil
		}
		return sc, err
	}
	return c
}

// PeerConfig is the client config of node-to-node HTTP to the node at
// host: it presents the current certificate and accepts a server whose
// certificate chains to the current CA as a node's (server auth: gates
// and managers have it, CLI certificates do not), whether or not it names
// host. Nodes trust each other as Raft does (MutualConfig): by the CA,
// not by address, because a node's address is not always known when its
// certificate is made (a Kubernetes pod's IP, a NATed address); the
// internal endpoints also require the cluster token. host only sets SNI.
func (r *Reloader) PeerConfig(host string) *tls.Config {
	c := r.ClientConfig(host)
	c.RootCAs = nil
	// The check below replaces the standard one, which would also match
	// the name, against the CA of the moment.
	c.InsecureSkipVerify = true
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		return r.VerifyPeerCertificate(cs.PeerCertificates, x509.ExtKeyUsageServerAuth, "")
	}
	return c
}

// DialTLS returns a DialTLSContext for the node-to-node http.Transport:
// dial opens the connection (through the fault layer, from the node's
// address), then a TLS handshake with PeerConfig(host of addr), bounded by
// ctx.
func (r *Reloader) DialTLS(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		raw, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(raw, r.PeerConfig(host))
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = raw.Close()
			return nil, err
		}
		return tc, nil
	}
}
