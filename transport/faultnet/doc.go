// Package faultnet injects network faults into connections and datagrams at
// the byte level — partitions, fixed per-peer delays with seeded jitter, and an
// added latency towards peers in other regions — so that Raft and gossip run
// unmodified over a network that misbehaves on command. Nothing above this
// package knows a fault exists: Raft and memberlist only see slow, failing or
// closed connections and lost packets, as they would on a real network.
//
// # Peers
//
// A rule names a peer by its key. PeerOf maps a network address to a key; the
// default (HostKey) keeps the host and drops the port, so one rule covers every
// listener of a node: its Raft groups and its gossip port alike. Inbound
// connections and datagrams are attributed by their source address. That is
// why the stream layers of this module dial from the IP they listen on, and why
// several nodes on one machine need one loopback address each (127.0.0.1,
// 127.0.0.2, …): with all nodes on 127.0.0.1 a rule could not tell them apart.
//
// # Semantics, seen from the node that holds the rules
//
//   - Partition(peer): live connections to and from peer are closed at once
//     (queued bytes are dropped); dials to peer block until their deadline and
//     then fail with ErrPartitioned, as a dial into a black hole would;
//     connections from peer are accepted and closed immediately; datagrams to
//     and from peer are dropped. A rule on one side cuts both directions.
//   - Delay(peer, d) and DelayWithJitter(peer, d, j): every write to peer — a
//     chunk of a stream or a datagram — leaves d plus a uniform jitter in
//     [0, j) after it was written. Within a connection, bytes keep their order:
//     a chunk never leaves before the chunk written ahead of it. Connections are
//     independent: each has its own queue and writer goroutine, started on its
//     first delayed write. Reads are never delayed, so a delay is one-way; set
//     it on both nodes for a symmetric link.
//   - SetWANLatency(d): d is added to every write to a peer whose region
//     (Config.RegionOf) differs from Config.LocalRegion.
//   - Rule changes apply to live connections from their next write on.
//   - ClockOffset (Rules, bounded by MaxClockOffset either way) shifts the
//     physical clock the node's HLC reads (Clock): the clock-skew fault. It
//     touches no connection; the node's timestamps move, and a shift past
//     the HLC max offset exercises the skew-rejection path on either side.
//
// With no delay rule and no WAN latency, a write is passed straight to the
// underlying connection after one atomic load; see the raftnet benchmarks for
// the measured cost of the inactive layer.
//
// # Bounds
//
// A connection queues at most Config.MaxQueuedBytesPerConn bytes of delayed
// writes; a writer beyond that blocks until the queue drains, its write
// deadline passes or the connection closes. A single write larger than the
// bound is admitted when the queue is empty. At most Config.MaxDelayedPackets
// datagrams wait at once; more are dropped, like a full router queue. Every
// delay, jitter and WAN latency is at most MaxDelay.
//
// # Concurrency
//
// A Faults and its connections may be used from any goroutine. A Conn keeps
// net.Conn's contract: Read and Write may run concurrently; concurrent Writes
// are serialised in call order.
//
// # Not done
//
// No bandwidth shaping, random loss rates, duplication or corruption; TLS
// handshakes done below a wrapped connection are not delayed; a rule names
// peers as they appear on the wire, so a rule set by host name does not match
// connections from that host's IP unless Config.PeerKey resolves both.
package faultnet
