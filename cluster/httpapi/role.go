package httpapi

import "github.com/strata-ledger/strata/transport/gossip"

// Role is the node's role (gossip's role type, the node's one).
type Role = gossip.Role

// Node roles.
const (
	RoleGate    = gossip.RoleGate
	RoleManager = gossip.RoleManager
)
