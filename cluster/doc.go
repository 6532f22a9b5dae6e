// Package cluster assembles one gate or manager from the node's parts —
// and is nothing but that wiring (cluster/DESIGN.md):
//
//   - group: the Raft group, the ledger FSM, the proposer, the read index;
//   - commit: the NodeWAL pipeline and the event stamper;
//   - peer: node-to-node calls (forwarded proposals, cross-group delivery);
//   - members: gossip pools and the member view;
//   - lifecycle (and lifecycle/plan): reconcilers, forwarder, workers'
//     liveness and lease view;
//   - httpapi and auth: the HTTP API and its tokens.
//
// StartNode opens them in dependency order — clock, ledger store and
// lifecycle (the FSM's apply observer), Raft, the HTTP listener, gossip,
// NodeWAL, proposer, peers and pipeline, then the API — and Close stops
// them in reverse. The role is chosen once, here: a gate's group is the
// global one and its tier GLOBAL, a manager's its region's and REGIONAL.
//
// Concurrency: a Node's exported methods are safe for concurrent use.
//
// What it does not do: no handler, planner or protocol lives here; each
// part declares the narrow interfaces it consumes and the wiring hands it
// the node's implementations.
package cluster
