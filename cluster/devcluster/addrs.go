package devcluster

import (
	"errors"
	"fmt"
	"net"
)

// ErrAddrUnusable is returned when a planned address cannot be bound.
var ErrAddrUnusable = errors.New("address unusable")

// checkIPs binds each node's IP on an ephemeral port. Linux routes all of
// 127.0.0.0/8 to lo; other systems (macOS) only answer on 127.0.0.1 until
// aliases are added, which is what the error says.
func checkIPs(plan []NodeSpec) error {
	seen := make(map[string]bool, len(plan))
	for _, s := range plan {
		host, _, err := net.SplitHostPort(s.Config.HTTPAddr)
		if err != nil {
			return fmt.Errorf("node %s http_addr %q: %w", s.ID(), s.Config.HTTPAddr, err)
		}
		if seen[host] {
			continue
		}
		seen[host] = true
		if err := checkIP(host); err != nil {
			return fmt.Errorf("node %s: %w", s.ID(), err)
		}
	}
	return nil
}

func checkIP(ip string) error {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return fmt.Errorf("%w: cannot bind %s (%v); every node needs its own loopback IP: "+
			"on Linux all of 127.0.0.0/8 is local, elsewhere add an alias (e.g. `sudo ifconfig lo0 alias %s`)",
			ErrAddrUnusable, ip, err, ip)
	}
	return l.Close()
}

// checkPortsFree binds every address node s will listen on and lets go at
// once, so a port taken by another process (often a dev cluster still
// running on the same subnet) is named before the node starts and dies.
// Gossip and the data plane listen on TCP and UDP.
func checkPortsFree(s NodeSpec) error {
	c := s.Config
	addrs := []struct{ key, addr string }{
		{"http_addr", c.HTTPAddr}, {"raft_addr", c.RaftAddr}, {"gossip_addr", c.GossipAddr},
		{"gossip_wan_addr", c.GossipWANAddr}, {"data_plane_addr", c.DataPlaneAddr},
	}
	for _, a := range addrs {
		if a.addr == "" {
			continue
		}
		if err := bindAndRelease(a.addr, a.key != "http_addr" && a.key != "raft_addr"); err != nil {
			return fmt.Errorf("%w: node %s %s %s is in use (%v); is another dev cluster running on this subnet? stop it or pick another subnet",
				ErrAddrUnusable, s.ID(), a.key, a.addr, err)
		}
	}
	return nil
}

func bindAndRelease(addr string, udpToo bool) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if err := l.Close(); err != nil {
		return err
	}
	if !udpToo {
		return nil
	}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	return pc.Close()
}
