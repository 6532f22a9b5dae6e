package api

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
)

// Paths of the security endpoints (docs/SECURITY.md).
const (
	// PathClusterStatus is GET: the node's identity and security posture.
	PathClusterStatus = "/v1/cluster/status"
	// PathKeyring is GET (list) and POST (install, use, remove) of the
	// cluster's gossip keyring, operator only, served by a gate for the
	// whole cluster.
	PathKeyring = "/v1/operator/keyring"
)

// Keyring operations.
const (
	KeyringList    = "list"
	KeyringInstall = "install"
	KeyringUse     = "use"
	KeyringRemove  = "remove"
)

// ClusterStatus is GET /v1/cluster/status.
type ClusterStatus struct {
	NodeID   string         `json:"node_id"`
	Role     string         `json:"role"`
	Region   string         `json:"region"`
	Security SecurityStatus `json:"security"`
	// Maintenance is the maintenance mode (issue 18): a manager's
	// region's (its own, its copy of the cluster's, what it does), a
	// gate's the cluster's once an operator set it.
	Maintenance *MaintenanceStatus `json:"maintenance,omitempty"`
}

// SecurityStatus says what protects a node's traffic.
type SecurityStatus struct {
	// Insecure is the node's `insecure: true`: it may listen beyond
	// loopback without TLS or a gossip key.
	Insecure bool `json:"insecure"`
	// TLS: the API and node-to-node HTTP serve TLS, Raft and internal
	// calls are mutual TLS.
	TLS bool `json:"tls"`
	// CertNotAfter is when the node's certificate expires (RFC 3339).
	CertNotAfter string `json:"cert_not_after,omitempty"`
	// GossipEncrypted: memberlist traffic is encrypted with the keyring.
	GossipEncrypted bool `json:"gossip_encrypted"`
	// Warnings name what is not defended, in words.
	Warnings []string `json:"warnings,omitempty"`
}

// KeyringRequest is the body of POST /v1/operator/keyring.
type KeyringRequest struct {
	Op  string `json:"op"`            // install, use or remove
	Key string `json:"key,omitempty"` // base64, 32 bytes
}

// KeyringResponse is every node's answer to a keyring operation.
type KeyringResponse struct {
	Nodes []KeyringNode `json:"nodes"`
}

// KeyringNode is one node's keyring after an operation, or its error.
type KeyringNode struct {
	NodeID  string   `json:"node_id"`
	Region  string   `json:"region"`
	Keys    []string `json:"keys,omitempty"`
	Primary string   `json:"primary,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// ClusterStatus reads the status of the first node (pinned: it is about
// that node).
func (c *Client) ClusterStatus(ctx context.Context) (ClusterStatus, error) {
	var out ClusterStatus
	_, err := c.do(ctx, request{method: http.MethodGet, path: PathClusterStatus, retrySafe: true, pinned: true}, &out)
	return out, err
}

// Keyring runs a keyring operation across the cluster: list (GET), or
// install, use or remove a key (POST).
func (c *Client) Keyring(ctx context.Context, req KeyringRequest) (KeyringResponse, error) {
	var out KeyringResponse
	r := request{method: http.MethodGet, path: PathKeyring, retrySafe: true}
	if req.Op != KeyringList {
		r = request{method: http.MethodPost, path: PathKeyring, body: req, retrySafe: true}
	}
	_, err := c.do(ctx, r, &out)
	return out, err
}

// ClientTLS builds a client's TLS config: caFile is the cluster CA (the
// only root trusted), certFile and keyFile an optional client certificate.
func ClientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	pemBytes, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("tls ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, fmt.Errorf("tls ca %s: no certificate", caFile)
	}
	c := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("tls: a client certificate needs both its cert and key files")
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("tls client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
