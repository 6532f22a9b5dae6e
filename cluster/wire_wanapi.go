package cluster

import (
	"fmt"
	"net"
)

// A gate on two networks (deploy/compose: its region's network and the
// WAN between gates) serves the API on both: http_addr for its region's
// managers, http_wan_addr for the other regions' gates, which learn it
// from the WAN pool's gossip. Its node-to-node calls then leave from
// whichever address the kernel's route to the peer picks, not from
// http_addr's IP, which the other network cannot answer.

// listenHTTPWAN opens the second API listener of a gate with
// http_wan_addr; nothing otherwise.
func (n *Node) listenHTTPWAN() error {
	if n.cfg.HTTPWANAddr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", n.cfg.HTTPWANAddr)
	if err != nil {
		return fmt.Errorf("http wan listen: %w", err)
	}
	n.lnWAN = n.faults.WrapListener(ln)
	return nil
}

// wanAPIAddr is the API address the node gossips in the WAN pool: ""
// means its http_addr, as in the LAN pool.
func (n *Node) wanAPIAddr() string {
	if n.lnWAN == nil {
		return ""
	}
	return n.lnWAN.Addr().String()
}

// peerSourceAddr is the address node-to-node calls leave from: http_addr
// (so the fault layer of a loopback cluster knows the caller by its IP),
// or "" (the kernel chooses) for a gate on two networks.
func (n *Node) peerSourceAddr() string {
	if n.lnWAN != nil {
		return ""
	}
	return n.cfg.HTTPAddr
}
