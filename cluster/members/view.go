package members

// This file holds what the pools tell a node: memberlist's events and leave
// intents, and memberView, the deterministic core they feed, which the
// queries of Membership read.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/strata-ledger/strata/transport/gossip"
)

// Pool is one memberlist pool a node gossips in (DESIGN §1).
type Pool uint8

// Pools. A manager is in its region's LAN pool; a gate is in its region's
// LAN pool and in the WAN pool of all gates.
const (
	PoolLAN Pool = iota
	PoolWAN
	poolCount
)

// String returns "lan" or "wan", the value of the metrics' pool label.
func (p Pool) String() string {
	switch p {
	case PoolLAN:
		return "lan"
	case PoolWAN:
		return "wan"
	}
	return fmt.Sprintf("pool(%d)", uint8(p))
}

// MarshalText writes the pool as String does, for JSON.
func (p Pool) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// MemberStatus is what this node's memberlist believes of a member.
//
// There is no "suspect": memberlist announces no event when it suspects a
// node, and its node state may only be read under its own lock, so a
// suspected member shows as alive until memberlist declares it dead.
type MemberStatus uint8

// Member statuses; the zero value means "not in this pool".
const (
	// MemberAlive: the member answers probes, or is suspected and not yet
	// declared dead.
	MemberAlive MemberStatus = iota + 1
	// MemberDead: the member stopped answering (crash, restart, partition).
	// Its Raft membership is unchanged, and the rejoin loop keeps contacting
	// it until Config.ForgetDeadAfter.
	MemberDead
	// MemberLeft: the member left through Leave (an operator removal) and
	// this node got its leave intent.
	MemberLeft
)

// String returns "alive", "dead" or "left", the value of the metrics'
// status label.
func (s MemberStatus) String() string {
	switch s {
	case MemberAlive:
		return "alive"
	case MemberDead:
		return "dead"
	case MemberLeft:
		return "left"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// MarshalText writes the status as String does, for JSON.
func (s MemberStatus) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Member is one node as this node's gossip knows it, across pools.
type Member struct {
	Meta gossip.Meta
	// Status is the most alive of its pool statuses.
	Status MemberStatus
	// Pools holds its state in each pool this node shares with it, LAN
	// first.
	Pools []PoolMember
}

// PoolMember is a member's state in one pool.
type PoolMember struct {
	Pool   Pool
	Status MemberStatus
	Addr   string    // its gossip host:port in this pool
	Since  time.Time // when this node learnt Status
}

// In returns the member's state in pool p, if it is in p.
func (m Member) In(p Pool) (PoolMember, bool) {
	for _, pm := range m.Pools {
		if pm.Pool == p {
			return pm, true
		}
	}
	return PoolMember{}, false
}

// poolEvents receives one pool's memberlist events. memberlist calls it
// under its node lock, one event at a time, so it must not call back into
// memberlist.
type poolEvents struct {
	m    *Membership
	pool Pool
}

var _ memberlist.EventDelegate = poolEvents{}

func (e poolEvents) NotifyJoin(n *memberlist.Node)   { e.m.observe(e.pool, n, MemberAlive) }
func (e poolEvents) NotifyUpdate(n *memberlist.Node) { e.m.observe(e.pool, n, MemberAlive) }

// NotifyLeave covers both a failure and a leave, and the node state it
// passes is stale: the view tells them apart by the leave intents.
func (e poolEvents) NotifyLeave(n *memberlist.Node) { e.m.observe(e.pool, n, MemberDead) }

// poolDelegate serves the node's metadata and carries leave intents.
type poolDelegate struct {
	*gossip.MetaDelegate
	m    *Membership
	pool *gossipPool
}

var _ memberlist.Delegate = poolDelegate{}

// NotifyMsg receives a leave intent, records it and passes it on once.
func (d poolDelegate) NotifyMsg(b []byte) {
	id, err := decodeLeaveIntent(b)
	if err != nil {
		d.m.log.Debug("gossip: ignoring message", "pool", d.pool.which.String(), "err", err)
		return
	}
	if id == d.m.cfg.Self.NodeID {
		return // this node leaves only through Leave
	}
	if d.m.recordLeaveIntent(d.pool.which, id) {
		d.pool.intents.QueueBroadcast(&leaveBroadcast{node: id})
		d.m.log.Info("gossip: member leaving", "pool", d.pool.which.String(), "node", id)
	}
}

// GetBroadcasts returns the leave intents due for sending.
func (d poolDelegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.pool.intents.GetBroadcasts(overhead, limit)
}

// leaveBroadcast is the leave intent of one node; a newer one for the same
// node replaces it in the queue.
type leaveBroadcast struct {
	node string
	sent chan struct{} // if not nil, closed once the queue is done with it
}

var _ memberlist.NamedBroadcast = (*leaveBroadcast)(nil)

func (b *leaveBroadcast) Name() string    { return "leave/" + b.node }
func (b *leaveBroadcast) Message() []byte { return encodeLeaveIntent(b.node) }
func (b *leaveBroadcast) Finished() {
	if b.sent != nil {
		close(b.sent)
	}
}
func (b *leaveBroadcast) Invalidates(other memberlist.Broadcast) bool {
	o, ok := other.(memberlist.NamedBroadcast)
	return ok && o.Name() == b.Name()
}

// recordLeaveIntent records that node id leaves pool and reports whether
// that was news.
func (m *Membership) recordLeaveIntent(pool Pool, id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := m.view.leaveIntent(pool, id, time.Now())
	if changed {
		m.publishLocked()
	}
	return changed
}

func (m *Membership) aliveCount(pool Pool) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.view.aliveCount(pool)
}

// observe records one event in the view and wakes the waiters.
func (m *Membership) observe(which Pool, n *memberlist.Node, status MemberStatus) {
	meta, metaErr := gossip.MetaOf(n)
	if metaErr != nil && status == MemberAlive {
		m.log.Warn("gossip: ignoring member with bad metadata", "pool", which.String(), "err", metaErr)
		return
	}
	o := memberEvent{
		Pool: which, Name: n.Name, Addr: n.Address(),
		Meta: meta, MetaOK: metaErr == nil, Status: status, At: time.Now(),
	}
	m.mu.Lock()
	now, err := m.view.observe(o)
	if err == nil {
		m.publishLocked()
	}
	m.mu.Unlock()
	if err != nil {
		m.log.Warn("gossip: ignoring member event", "err", err)
		return
	}
	m.log.Info("gossip: member status", "pool", which.String(), "node", n.Name, "status", now.String(), "addr", o.Addr)
}

// inPool reports whether this node gossips in pool p: every node is in its
// LAN pool, gates also in the WAN pool. (m.pools is being filled while the
// first events arrive, so events must not read it.)
func (m *Membership) inPool(p Pool) bool {
	return p == PoolLAN || m.cfg.Self.Role == gossip.RoleGate
}

// publishLocked refreshes the gauges and wakes everyone waiting for a
// change. Callers hold mu.
func (m *Membership) publishLocked() {
	for p := range poolCount {
		if m.inPool(p) {
			for status, n := range m.view.counts(p) {
				m.members.WithLabelValues(p.String(), status.String()).Set(float64(n))
			}
		}
	}
	close(m.changed)
	m.changed = make(chan struct{})
}

// memberEvent is one memberlist event about one node of one pool.
type memberEvent struct {
	Pool   Pool
	Name   string // memberlist node name: the node id
	Addr   string // gossip host:port
	Meta   gossip.Meta
	MetaOK bool // Meta decoded; false for a leave whose metadata is unreadable
	Status MemberStatus
	At     time.Time
}

// poolState is a member's state in one pool; the zero value means absent.
type poolState struct {
	status MemberStatus
	addr   string
	since  time.Time
	// leaving: the member announced it leaves (a leave intent), so its
	// coming departure is a leave, not a failure.
	leaving bool
}

type viewEntry struct {
	meta  gossip.Meta
	pools [poolCount]poolState
}

// memberView is the deterministic core of Membership: the members of every
// pool, keyed by node id, built from memberlist events and queried by the
// API. It does no I/O and reads no clock: times come with the observations.
// It is not safe for concurrent use; Membership guards it.
type memberView struct {
	self    string
	entries map[string]*viewEntry // at most maxTrackedMembers
}

// maxTrackedMembers bounds the members a view holds. DESIGN §1 gives a
// region at most a handful of gates and managers and the WAN pool two gates
// per region, so reaching it means a misconfigured or hostile pool.
const maxTrackedMembers = 1024

func newMemberView(self string) *memberView {
	return &memberView{self: self, entries: make(map[string]*viewEntry)}
}

// observe applies one event and returns the member's resulting status in
// the pool: a departure after a leave intent is left. It rejects an unknown
// node without metadata, and metadata naming another node: the node id is
// the memberlist name, so a mismatch is a misconfigured or hostile node.
func (v *memberView) observe(o memberEvent) (MemberStatus, error) {
	if o.MetaOK && o.Meta.NodeID != o.Name {
		return 0, fmt.Errorf("gossip %s node %q: metadata names node %q", o.Pool, o.Name, o.Meta.NodeID)
	}
	e := v.entries[o.Name]
	if e == nil {
		if !o.MetaOK {
			return 0, fmt.Errorf("gossip %s node %q: %s without readable metadata", o.Pool, o.Name, o.Status)
		}
		if len(v.entries) >= maxTrackedMembers {
			return 0, fmt.Errorf("gossip %s node %q: already tracking %d members, the limit", o.Pool, o.Name, len(v.entries))
		}
		e = &viewEntry{}
		v.entries[o.Name] = e
	}
	if o.MetaOK {
		e.meta = o.Meta
	}
	ps := &e.pools[o.Pool]
	status := o.Status
	switch {
	case status == MemberDead && ps.leaving:
		status = MemberLeft
	case status == MemberAlive && ps.status != MemberAlive:
		ps.leaving = false // back after a failure or a leave: a new life
	}
	if ps.status != status {
		ps.since = o.At
	}
	ps.status, ps.addr = status, o.Addr
	return status, nil
}

// leaveIntent records that node id announced, in pool, that it leaves: its
// departure then shows as left, not dead; if it is already held dead, it
// shows as left from now. It reports whether the view changed, so that the
// intent is passed on only once.
func (v *memberView) leaveIntent(pool Pool, id string, at time.Time) bool {
	e := v.entries[id]
	if e == nil {
		return false
	}
	ps := &e.pools[pool]
	switch {
	case ps.status == MemberAlive && !ps.leaving:
		ps.leaving = true
		return true
	case ps.status == MemberDead:
		ps.status, ps.since, ps.leaving = MemberLeft, at, true
		return true
	}
	return false
}

// aliveCount returns how many members are alive in pool, this node included.
func (v *memberView) aliveCount(pool Pool) int {
	n := 0
	for _, e := range v.entries {
		if e.pools[pool].status == MemberAlive {
			n++
		}
	}
	return n
}

// member returns the exported form of an entry.
func (e *viewEntry) member() Member {
	m := Member{Meta: e.meta}
	for p, ps := range e.pools {
		if ps.status == 0 {
			continue
		}
		m.Pools = append(m.Pools, PoolMember{Pool: Pool(p), Status: ps.status, Addr: ps.addr, Since: ps.since})
		if m.Status == 0 || ps.status < m.Status { // alive < dead < left
			m.Status = ps.status
		}
	}
	return m
}

func memberByNodeID(a, b Member) int { return strings.Compare(a.Meta.NodeID, b.Meta.NodeID) }

// members returns every known member, sorted by node id.
func (v *memberView) members() []Member {
	out := make([]Member, 0, len(v.entries))
	for _, e := range v.entries {
		out = append(out, e.member())
	}
	slices.SortFunc(out, memberByNodeID)
	return out
}

// lookup returns the member with node id id.
func (v *memberView) lookup(id string) (Member, bool) {
	e := v.entries[id]
	if e == nil {
		return Member{}, false
	}
	return e.member(), true
}

// groupPool returns the pool whose members form role's Raft group: the
// region's LAN pool for managers, the WAN pool for gates.
func groupPool(role gossip.Role) Pool {
	if role == gossip.RoleGate {
		return PoolWAN
	}
	return PoolLAN
}

// peers returns the members alive in the pool of role's Raft group that
// belong to it, sorted by node id: for managers those of region, for gates
// all of them (the global group spans regions; region is ignored).
func (v *memberView) peers(role gossip.Role, region string) []Member {
	pool := groupPool(role)
	var out []Member
	for _, e := range v.entries {
		if e.pools[pool].status != MemberAlive || e.meta.Role != role {
			continue
		}
		if role == gossip.RoleManager && e.meta.Region != region {
			continue
		}
		out = append(out, e.member())
	}
	slices.SortFunc(out, memberByNodeID)
	return out
}

// counts returns how many members pool holds in each status.
func (v *memberView) counts(pool Pool) map[MemberStatus]int {
	out := make(map[MemberStatus]int, int(MemberLeft))
	for s := MemberAlive; s <= MemberLeft; s++ {
		out[s] = 0
	}
	for _, e := range v.entries {
		if s := e.pools[pool].status; s != 0 {
			out[s]++
		}
	}
	return out
}

// rejoinTargets returns the addresses the rejoin loop contacts in pool this
// round, at most limit: first the seeds that are neither this node nor the
// address of a member alive in the pool, then the members held dead, taken
// in node-id order starting at an offset that advances with round, so that
// every dead member is tried when more than limit are dead.
func (v *memberView) rejoinTargets(pool Pool, seeds []string, round, limit int) []string {
	alive := make(map[string]bool) // this node is alive in its pools
	var dead []string
	for _, id := range v.sortedIDs() {
		ps := v.entries[id].pools[pool]
		switch {
		case ps.status == MemberAlive:
			alive[ps.addr] = true
		case ps.status == MemberDead && id != v.self:
			dead = append(dead, ps.addr)
		}
	}
	var out []string
	seen := make(map[string]bool)
	add := func(addr string) {
		if len(out) < limit && !seen[addr] && !alive[addr] {
			seen[addr] = true
			out = append(out, addr)
		}
	}
	for _, s := range seeds {
		add(s)
	}
	for i := range dead {
		add(dead[(round*limit+i)%len(dead)])
	}
	return out
}

// forget drops pool states that have been dead since before deadBefore or
// left since before leftBefore, and members left in no pool; it reports
// whether it dropped any. This node is never forgotten.
func (v *memberView) forget(deadBefore, leftBefore time.Time) bool {
	dropped := false
	for id, e := range v.entries {
		if id == v.self {
			continue
		}
		kept := false
		for p := range e.pools {
			ps := &e.pools[p]
			if (ps.status == MemberDead && ps.since.Before(deadBefore)) ||
				(ps.status == MemberLeft && ps.since.Before(leftBefore)) {
				*ps = poolState{}
				dropped = true
			}
			kept = kept || ps.status != 0
		}
		if !kept {
			delete(v.entries, id)
		}
	}
	return dropped
}

func (v *memberView) sortedIDs() []string {
	ids := make([]string, 0, len(v.entries))
	for id := range v.entries {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Leave intents are the only user messages the pools carry. memberlist does
// not tell its event delegate whether a departed node left or failed (the
// state it passes is stale), so, as Serf does, a leaving node first gossips
// an intent, and members that received it report the departure as left.
//
// Wire format (never change a released message type):
//
//	offset  size  field
//	0       1     message type: msgLeaveIntent
//	1       n     node id: 1..gossip.MaxNodeIDBytes bytes of printable ASCII
//
// A receiver ignores message types it does not know.
const msgLeaveIntent byte = 1

// errBadLeaveIntent is returned for a message that is not a valid intent.
var errBadLeaveIntent = errors.New("cluster: invalid leave intent")

// encodeLeaveIntent returns the intent of node id, which must be a valid
// node id.
func encodeLeaveIntent(id string) []byte {
	return append([]byte{msgLeaveIntent}, id...)
}

// decodeLeaveIntent returns the node id of an intent. It allocates only
// the id, at most gossip.MaxNodeIDBytes.
func decodeLeaveIntent(b []byte) (string, error) {
	if len(b) < 2 || len(b) > 1+gossip.MaxNodeIDBytes {
		return "", fmt.Errorf("%w: %d bytes, want 2..%d", errBadLeaveIntent, len(b), 1+gossip.MaxNodeIDBytes)
	}
	if b[0] != msgLeaveIntent {
		return "", fmt.Errorf("%w: message type %d", errBadLeaveIntent, b[0])
	}
	for i, c := range b[1:] {
		if c <= ' ' || c > '~' {
			return "", fmt.Errorf("%w: node id byte %#x at %d", errBadLeaveIntent, c, i)
		}
	}
	return string(b[1:]), nil
}
