package tlsutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"regexp"
	"slices"
	"time"
)

// Validity and naming of what the package makes.
const (
	// CAValidity is how long a CA made by NewCA is valid.
	CAValidity = 10 * 365 * 24 * time.Hour
	// DefaultCertValidity is how long a node or client certificate is
	// valid unless CertRequest.Validity says otherwise.
	DefaultCertValidity = 365 * 24 * time.Hour
	// backdate tolerates clock skew between the signer and the peers.
	backdate = time.Hour
	// NameSuffix ends every common name and DNS name the package makes.
	NameSuffix = "strata"
	// MaxHosts bounds the extra hosts of one certificate.
	MaxHosts = 64
)

// Roles a certificate is made for.
const (
	RoleGate    = "gate"
	RoleManager = "manager"
	RoleClient  = "client"
)

// Sentinel errors.
var (
	// ErrInvalidRequest: a CertRequest names a bad role, region, node or host.
	ErrInvalidRequest = errors.New("tlsutil: invalid certificate request")
	// ErrNotSignedByCA: a certificate does not chain to the CA given with it.
	ErrNotSignedByCA = errors.New("tlsutil: certificate not signed by the CA")
)

// PEMPair is a certificate and its private key, PEM-encoded.
type PEMPair struct {
	Cert []byte
	Key  []byte
}

// NewCA makes a self-signed CA (ECDSA P-256, CAValidity from now - 1 h).
// rnd is the random source (crypto/rand.Reader in production).
func NewCA(rnd io.Reader, now time.Time, name string) (PEMPair, error) {
	if name == "" {
		name = "Strata cluster CA"
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rnd)
	if err != nil {
		return PEMPair{}, fmt.Errorf("tlsutil: ca key: %w", err)
	}
	serial, err := newSerial(rnd)
	if err != nil {
		return PEMPair{}, err
	}
	ski := keyID(&key.PublicKey)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"Strata"}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(CAValidity),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		SubjectKeyId:          ski,
		AuthorityKeyId:        ski,
	}
	der, err := x509.CreateCertificate(rnd, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return PEMPair{}, fmt.Errorf("tlsutil: ca certificate: %w", err)
	}
	return encodePair(der, key)
}

// CertRequest says what certificate to make.
type CertRequest struct {
	// Role is RoleGate, RoleManager or RoleClient.
	Role string
	// Region and Node name a gate or manager (required for them); a
	// client may leave them empty.
	Region string
	Node   string
	// Hosts are extra IPs and DNS names the certificate is valid for;
	// localhost and 127.0.0.1 are always added for nodes.
	Hosts []string
	// Validity defaults to DefaultCertValidity.
	Validity time.Duration
}

var namePart = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// CommonName is the certificate's subject: "<node>.<role>.<region>.strata"
// for a node, "<node or 'cli'>.client.strata" for a client.
func (r CertRequest) CommonName() string {
	if r.Role == RoleClient {
		n := r.Node
		if n == "" {
			n = "cli"
		}
		return n + "." + RoleClient + "." + NameSuffix
	}
	return r.Node + "." + r.Role + "." + r.Region + "." + NameSuffix
}

// Validate names the first bad field of r.
func (r CertRequest) Validate() error {
	switch r.Role {
	case RoleGate, RoleManager:
		if !namePart.MatchString(r.Region) {
			return fmt.Errorf("%w: region %q: want a short lowercase code", ErrInvalidRequest, r.Region)
		}
		if !namePart.MatchString(r.Node) {
			return fmt.Errorf("%w: node %q: want 1-63 of [a-z0-9_-]", ErrInvalidRequest, r.Node)
		}
	case RoleClient:
		if r.Node != "" && !namePart.MatchString(r.Node) {
			return fmt.Errorf("%w: node %q: want 1-63 of [a-z0-9_-]", ErrInvalidRequest, r.Node)
		}
	default:
		return fmt.Errorf("%w: role %q: want %s, %s or %s", ErrInvalidRequest, r.Role, RoleGate, RoleManager, RoleClient)
	}
	if len(r.Hosts) > MaxHosts {
		return fmt.Errorf("%w: %d hosts, over the limit of %d", ErrInvalidRequest, len(r.Hosts), MaxHosts)
	}
	for _, h := range r.Hosts {
		if h == "" || len(h) > 253 {
			return fmt.Errorf("%w: host %q", ErrInvalidRequest, h)
		}
	}
	if r.Validity < 0 || r.Validity > CAValidity {
		return fmt.Errorf("%w: validity %s: want 0 (default) up to %s", ErrInvalidRequest, r.Validity, CAValidity)
	}
	return nil
}

// NewCert makes the certificate req asks for, signed by ca, with a fresh
// ECDSA P-256 key. It never outlives the CA.
func NewCert(rnd io.Reader, now time.Time, ca PEMPair, req CertRequest) (PEMPair, error) {
	if err := req.Validate(); err != nil {
		return PEMPair{}, err
	}
	caCert, caKey, err := ParsePair(ca)
	if err != nil {
		return PEMPair{}, fmt.Errorf("tlsutil: ca: %w", err)
	}
	if !caCert.IsCA {
		return PEMPair{}, fmt.Errorf("%w: %q is not a CA", ErrInvalidRequest, caCert.Subject.CommonName)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rnd)
	if err != nil {
		return PEMPair{}, fmt.Errorf("tlsutil: key: %w", err)
	}
	serial, err := newSerial(rnd)
	if err != nil {
		return PEMPair{}, err
	}
	validity := req.Validity
	if validity == 0 {
		validity = DefaultCertValidity
	}
	notAfter := now.Add(validity)
	if notAfter.After(caCert.NotAfter) {
		notAfter = caCert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:   serial,
		Subject:        pkix.Name{CommonName: req.CommonName(), Organization: []string{"Strata"}, OrganizationalUnit: []string{req.Role}},
		NotBefore:      now.Add(-backdate),
		NotAfter:       notAfter,
		KeyUsage:       x509.KeyUsageDigitalSignature,
		ExtKeyUsage:    []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		SubjectKeyId:   keyID(&key.PublicKey),
		AuthorityKeyId: caCert.SubjectKeyId,
	}
	hosts := slices.Clone(req.Hosts)
	if req.Role != RoleClient {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		hosts = append(hosts, "localhost", "127.0.0.1", req.CommonName(), req.Role+"."+req.Region+"."+NameSuffix)
	}
	addHosts(tmpl, hosts)
	der, err := x509.CreateCertificate(rnd, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return PEMPair{}, fmt.Errorf("tlsutil: certificate %s: %w", req.CommonName(), err)
	}
	return encodePair(der, key)
}

// addHosts puts each host in the IP or DNS SANs, once.
func addHosts(tmpl *x509.Certificate, hosts []string) {
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(tmpl.IPAddresses, ip.Equal) {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			}
		} else if !slices.Contains(tmpl.DNSNames, h) {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
}

// ParsePair decodes a PEM certificate and its ECDSA (or any PKCS #8) key.
func ParsePair(p PEMPair) (*x509.Certificate, any, error) {
	cb, _ := pem.Decode(p.Cert)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, nil, errors.New("no CERTIFICATE block")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate: %w", err)
	}
	kb, _ := pem.Decode(p.Key)
	if kb == nil {
		return nil, nil, errors.New("no key block")
	}
	var key any
	switch kb.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(kb.Bytes)
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(kb.Bytes)
	default:
		err = fmt.Errorf("key block type %q", kb.Type)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("key: %w", err)
	}
	return cert, key, nil
}

// ParseCAPool reads every certificate of a PEM bundle into a pool.
func ParseCAPool(pemBytes []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, errors.New("no CA certificate in PEM")
	}
	return pool, nil
}

func encodePair(der []byte, key *ecdsa.PrivateKey) (PEMPair, error) {
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return PEMPair{}, fmt.Errorf("tlsutil: encode key: %w", err)
	}
	return PEMPair{
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
	}, nil
}

// newSerial is a random 128-bit serial (RFC 5280: positive, at most 20 bytes).
func newSerial(rnd io.Reader) (*big.Int, error) {
	s, err := rand.Int(rnd, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("tlsutil: serial: %w", err)
	}
	return s.Add(s, big.NewInt(1)), nil
}

// keyID is the subject key id: a truncated SHA-256 of the public key.
func keyID(pub *ecdsa.PublicKey) []byte {
	b, _ := x509.MarshalPKIXPublicKey(pub)
	sum := sha256.Sum256(b)
	return sum[:20]
}
