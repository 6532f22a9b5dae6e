package members

import "time"

// fastDeadGossip is how long FastTimings keep gossiping to a dead node.
const fastDeadGossip = time.Second

// FastTimings make a LAN or WAN pool declare a silent node dead within
// about a second: for clusters on one machine's loopback (tests), where
// memberlist's LAN defaults would make every failure test wait for
// seconds. Dead nodes stop being gossiped to after a second.
func FastTimings() PoolTimings {
	return PoolTimings{
		ProbeInterval:       200 * time.Millisecond,
		ProbeTimeout:        100 * time.Millisecond,
		SuspicionMult:       2,
		GossipInterval:      50 * time.Millisecond,
		PushPullInterval:    time.Second,
		TCPTimeout:          500 * time.Millisecond,
		GossipToTheDeadTime: fastDeadGossip,
	}
}
