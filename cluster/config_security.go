package cluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"

	"github.com/strata-ledger/strata/cluster/keyring"
)

// GossipKeyBytes is the size of a gossip key: AES-256 (keyring.KeyBytes).
const GossipKeyBytes = keyring.KeyBytes

// DecodeGossipKey decodes a base64 gossip key (keyring.DecodeKey).
func DecodeGossipKey(s string) ([]byte, error) { return keyring.DecodeKey(s) }

// DefaultKeyringFile is where a node keeps its gossip keyring, under its
// data dir, when gossip_keyring_file does not say.
const DefaultKeyringFile = "gossip.keyring"

// TLSFiles is the tls: {ca_file, cert_file, key_file} block. All three or
// none: with them, the API and node-to-node HTTP serve TLS and Raft and
// internal calls are mutual TLS (docs/SECURITY.md).
type TLSFiles struct {
	CAFile   string `koanf:"ca_file"`
	CertFile string `koanf:"cert_file"`
	KeyFile  string `koanf:"key_file"`
}

// Enabled reports whether TLS is configured.
func (t TLSFiles) Enabled() bool { return t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" }

// validateSecurity checks the security keys, and that a node listening
// beyond loopback has TLS and a gossip key unless it says insecure: true.
func (c *NodeConfig) validateSecurity() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.TLS.Enabled() {
		for key, f := range map[string]string{"tls.ca_file": c.TLS.CAFile, "tls.cert_file": c.TLS.CertFile, "tls.key_file": c.TLS.KeyFile} {
			if f == "" {
				bad(key, "required when any tls key is set")
			} else if _, err := os.Stat(f); err != nil {
				bad(key, "%v", err)
			}
		}
	}
	if c.GossipKey != "" {
		if _, err := DecodeGossipKey(c.GossipKey); err != nil {
			bad("gossip_key", "%v", err)
		}
	}
	if c.AdminAddr != "" {
		host, _, err := net.SplitHostPort(c.AdminAddr)
		switch {
		case err != nil:
			bad("admin_addr", "%q is not host:port", c.AdminAddr)
		case !isLoopbackHost(host) && !c.TLS.Enabled():
			bad("admin_addr", "%q is not on loopback: pprof off loopback needs tls", c.AdminAddr)
		}
	}
	if c.Insecure {
		return errs
	}
	var public []string
	for key, a := range map[string]string{"http_addr": c.HTTPAddr, "raft_addr": c.RaftAddr, "gossip_addr": c.GossipAddr, "gossip_wan_addr": c.GossipWANAddr, "http_wan_addr": c.HTTPWANAddr} {
		if host, _, err := net.SplitHostPort(a); err == nil && !isLoopbackHost(host) {
			public = append(public, key+" "+a)
		}
	}
	sort.Strings(public)
	if len(public) > 0 && (!c.TLS.Enabled() || !c.gossipEncrypted()) {
		bad("insecure", "the node listens beyond loopback (%v) but has no tls and gossip_key: configure both, or set insecure: true to run in clear", public)
	}
	return errs
}

// gossipEncrypted: the node has a gossip key, given or kept in its keyring file.
func (c *NodeConfig) gossipEncrypted() bool {
	if c.GossipKey != "" {
		return true
	}
	_, err := os.Stat(c.keyringFile())
	return err == nil
}

// keyringFile is where the node keeps its gossip keyring.
func (c *NodeConfig) keyringFile() string {
	if c.GossipKeyringFile != "" {
		return c.GossipKeyringFile
	}
	return filepath.Join(c.DataDir, DefaultKeyringFile)
}

// isLoopbackHost: a loopback IP or "localhost". An empty host or 0.0.0.0
// listens on every interface: not loopback.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
