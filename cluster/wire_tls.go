package cluster

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/strata-ledger/strata/cluster/keyring"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/tlsutil"
)

// security is what protects a node's traffic (docs/SECURITY.md): the TLS
// material of the API, node-to-node HTTP and Raft, the gossip keyring,
// and the admin listener that serves pprof.
type security struct {
	tls         *tlsutil.Reloader   // nil: TLS off
	keyring     *memberlist.Keyring // nil: gossip in clear
	keyringFile string
	// keyringSvc runs keyring operations (cluster/keyring); built once.
	keyringOnce sync.Once
	keyringSvc  *keyring.Service
	admin       *http.Server
	adminAddr   net.Addr
}

// adminReadHeaderTimeout bounds an admin client's request headers.
const adminReadHeaderTimeout = 10 * time.Second

// openSecurity loads the TLS files and the gossip keyring. A node that
// runs in clear says so.
func (n *Node) openSecurity() error {
	if n.cfg.TLS.Enabled() {
		r, err := tlsutil.NewReloader(tlsutil.Files{CA: n.cfg.TLS.CAFile, Cert: n.cfg.TLS.CertFile, Key: n.cfg.TLS.KeyFile})
		if err != nil {
			return fmt.Errorf("tls: %w", err)
		}
		n.sec.tls = r
	}
	if err := n.openKeyring(); err != nil {
		return err
	}
	if st := n.securityStatus(); len(st.Warnings) > 0 {
		n.log.Warn("node is not fully secured", "insecure", n.cfg.Insecure, "tls", st.TLS,
			"gossip_encrypted", st.GossipEncrypted, "warnings", st.Warnings)
	}
	return nil
}

// openKeyring: the keyring file, when it exists, is the node's keyring (it
// holds the rotations made since gossip_key was written in the config);
// else gossip_key starts it, and the file is written.
func (n *Node) openKeyring() error {
	n.sec.keyringFile = n.cfg.keyringFile()
	keys, err := keyring.ReadFile(n.sec.keyringFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if n.cfg.GossipKey == "" {
			return nil
		}
		k, err := keyring.DecodeKey(n.cfg.GossipKey)
		if err != nil {
			return fmt.Errorf("gossip_key: %w", err)
		}
		keys = [][]byte{k}
		if err := keyring.WriteFile(n.sec.keyringFile, keys); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		if n.cfg.GossipKey != "" {
			n.log.Info("gossip keyring file wins over gossip_key", "file", n.sec.keyringFile)
		}
	}
	if n.sec.keyring, err = memberlist.NewKeyring(keys, keys[0]); err != nil {
		return fmt.Errorf("gossip keyring: %w", err)
	}
	return nil
}

// raftTLS is Raft's mutual TLS config, nil without TLS.
func (n *Node) raftTLS() *tls.Config {
	if n.sec.tls == nil {
		return nil
	}
	return n.sec.tls.MutualConfig()
}

// apiTLS is the API listener's config, nil without TLS: a client
// certificate is verified if given (internal calls must give one, see
// httpapi.requirePeerCert); tenants and workers need none.
func (n *Node) apiTLS() *tls.Config {
	if n.sec.tls == nil {
		return nil
	}
	return n.sec.tls.ServerConfig(tls.VerifyClientCertIfGiven)
}

// securityStatus is GET /v1/cluster/status's security part.
func (n *Node) securityStatus() api.SecurityStatus {
	s := api.SecurityStatus{Insecure: n.cfg.Insecure, TLS: n.sec.tls != nil, GossipEncrypted: n.sec.keyring != nil}
	if n.sec.tls != nil {
		s.CertNotAfter = n.sec.tls.Leaf().NotAfter.UTC().Format(time.RFC3339)
	}
	if n.cfg.Insecure {
		s.Warnings = append(s.Warnings, "insecure: true: the node may listen beyond loopback without TLS or a gossip key")
	}
	if !s.TLS {
		s.Warnings = append(s.Warnings, "no tls: the API, node-to-node calls and Raft are in clear and Raft peers are not authenticated")
	}
	if !s.GossipEncrypted {
		s.Warnings = append(s.Warnings, "no gossip_key: gossip is in clear and not authenticated")
	}
	return s
}

// startAdmin serves pprof on admin_addr (nothing when it is empty), over
// TLS when the node has it.
func (n *Node) startAdmin() error {
	if n.cfg.AdminAddr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", n.cfg.AdminAddr)
	if err != nil {
		return fmt.Errorf("admin listen: %w", err)
	}
	if c := n.apiTLS(); c != nil {
		ln = tls.NewListener(ln, c)
	}
	n.sec.adminAddr = ln.Addr()
	n.sec.admin = &http.Server{Handler: n.api.AdminHandler(), ReadHeaderTimeout: adminReadHeaderTimeout}
	go func() {
		if err := n.sec.admin.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("admin server stopped", "err", err)
		}
	}()
	n.log.Info("admin listener (pprof)", "addr", ln.Addr().String())
	return nil
}

// closeAdmin stops the admin listener.
func (n *Node) closeAdmin() error {
	if n.sec.admin == nil {
		return nil
	}
	return n.sec.admin.Close()
}

// AdminAddr is the admin listener's address, "" when it is off.
func (n *Node) AdminAddr() string {
	if n.sec.adminAddr == nil {
		return ""
	}
	return n.sec.adminAddr.String()
}

// Reload is SIGHUP: it reloads the TLS files named in the running config
// and replaces the API tokens with cfg's. Addresses and the other keys
// need a restart. On error nothing of the failed part changes.
func (n *Node) Reload(cfg NodeConfig) error {
	var errs []error
	if n.sec.tls != nil {
		if err := n.sec.tls.Reload(); err != nil {
			errs = append(errs, err)
		} else {
			n.log.Info("tls reloaded", "not_after", n.sec.tls.Leaf().NotAfter)
		}
	}
	if err := n.auth.Replace(cfg.Tokens); err != nil {
		errs = append(errs, fmt.Errorf("tokens: %w", err))
	} else {
		n.log.Info("tokens reloaded", "tokens", n.auth.Len())
	}
	return errors.Join(errs...)
}
