// Package members runs a node's gossip (hashicorp/memberlist): its
// region's LAN pool and, for a gate, the WAN pool of all gates (DESIGN §1),
// and keeps the view of the members they report — role, region, node id,
// API, Raft and data-plane addresses, version — with a status per pool.
// See Membership for how it rejoins after partitions and tells a leave
// from a failure.
//
// Invariants: gossip only reports, it never changes Raft membership (a
// restart is not a leave); the view holds at most maxTrackedMembers
// members and forgets the dead and the departed after a while; node ids
// follow one rule (IsNodeID).
//
// Concurrency: every method of Membership is safe for concurrent use.
//
// What it does not do: encrypt gossip (no keyring yet), report suspicion,
// or decide anything from what it sees: bootstrap, forwarding and delivery
// read the view and decide themselves.
package members
