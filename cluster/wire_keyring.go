package cluster

import (
	"net/http"

	"github.com/strata-ledger/strata/cluster/httpapi"
	"github.com/strata-ledger/strata/cluster/keyring"
	"github.com/strata-ledger/strata/cluster/members"
)

// KeyringPath is the internal endpoint of one node's keyring.
const KeyringPath = keyring.Path

// keyringService is the node's gossip keyring service (cluster/keyring),
// built on first use; its views read the node's members and peers at call
// time, so it may be built before they open.
func (n *Node) keyringService() *keyring.Service {
	n.sec.keyringOnce.Do(func() {
		n.sec.keyringSvc = keyring.New(keyring.Config{
			NodeID: n.cfg.NodeID, Region: n.cfg.Region, Gate: n.role.gate, ClusterToken: n.cfg.ClusterToken,
			Members:    func() []members.Member { return n.members.Members() },
			HTTPClient: func() *http.Client { return n.peers.HTTPClient() },
			Keyring:    n.sec.keyring,
			Save:       func(keys [][]byte) error { return keyring.WriteFile(n.sec.keyringFile, keys) },
			DecodeKey:  keyring.DecodeKey, MaxKeys: keyring.MaxKeys, Logger: n.log,
		})
	})
	return n.sec.keyringSvc
}

// keyringAPI is the keyring service the API calls (gates; a manager's
// refuses with 501).
func (n *Node) keyringAPI() httpapi.Keyring { return n.keyringService() }
