// The cluster as the console finds it from one node: the members each
// gate knows (a gate's gossip holds its region and the other gates), the
// relay path to every node, and each node's Raft status. Operator scope.

import {call, relayed} from './api.js';

const MEMBERS_EVERY_MS = 5000;

// Topology keeps every node ever seen in this session: a node that stops
// answering stays listed, as unreachable, rather than vanishing.
export class Topology {
  constructor(me) {
    this.me = me;           // whoami: the serving node
    this.nodes = new Map(); // id -> {id, role, region, api_addr, status, via: [], raft, error, at}
    this.membersAt = 0;
  }

  path(id, p) {
    const n = this.nodes.get(id);
    return relayed(p, id === this.me.node ? '' : id, n && n.via.length ? n.via.join(',') : '');
  }

  // refresh reads the members (every MEMBERS_EVERY_MS) and every node's
  // Raft status, all at once; it never throws.
  async refresh() {
    if (Date.now() - this.membersAt > MEMBERS_EVERY_MS || this.nodes.size === 0) {
      await this.discover();
    }
    await Promise.all([...this.nodes.values()].map((n) => this.raftOf(n)));
  }

  // discover walks the members lists from the serving node outwards:
  // every gate found is asked for its own list, through the relay path
  // that reached it, so each node gets the shortest path this round.
  async discover() {
    const seen = new Map(); // id -> via, this round
    const add = (m, via) => {
      if (seen.has(m.node_id) && seen.get(m.node_id).length <= via.length) return false;
      seen.set(m.node_id, via);
      const n = this.nodes.get(m.node_id) || {id: m.node_id, raft: null, error: ''};
      Object.assign(n, {role: m.role, region: m.region, api_addr: m.api_addr, status: m.status, via});
      this.nodes.set(n.id, n);
      return true;
    };
    const expanded = new Set();
    const expand = async (id, via) => {
      if (expanded.has(id)) return;
      expanded.add(id);
      let list;
      try {
        list = await call(relayed('/v1/cluster/members', id === this.me.node ? '' : id, via.join(',')), {timeoutMs: 2000});
      } catch (_) { return; }
      const below = id === this.me.node ? via : via.concat([id]);
      const gates = [];
      for (const m of list.members) {
        if (m.node_id === id || m.node_id === this.me.node) continue;
        add(m, below);
        if (m.role === 'gate' && m.status === 'alive') gates.push(m.node_id);
      }
      await Promise.all(gates.map((g) => expand(g, seen.get(g))));
    };
    add({node_id: this.me.node, role: this.me.role, region: this.me.region, status: 'alive'}, []);
    await expand(this.me.node, []);
    this.membersAt = Date.now();
  }

  async raftOf(n) {
    try {
      const st = await call(this.path(n.id, '/v1/cluster/raft'), {timeoutMs: 1500});
      n.raft = st.groups[0];
      n.error = '';
      n.at = Date.now();
    } catch (e) {
      n.error = e.message;
      n.raft = null;
    }
  }

  regions() {
    const rs = new Set();
    for (const n of this.nodes.values()) if (n.region) rs.add(n.region);
    return [...rs].sort();
  }

  inRegion(region, role) {
    return [...this.nodes.values()].filter((n) => n.region === region && (!role || n.role === role))
      .sort((a, b) => a.id.localeCompare(b.id));
  }

  // groups summarises every Raft group from its members' answers: the
  // leader and term the most recent answer gives, voters, how many
  // answer, and how many more failures the group survives.
  groups() {
    const gs = new Map();
    for (const n of this.nodes.values()) {
      const name = n.role === 'gate' ? 'global' : n.region;
      if (!gs.has(name)) gs.set(name, {name, members: [], leader: '', term: 0, voters: new Set()});
      gs.get(name).members.push(n);
    }
    for (const g of gs.values()) {
      for (const n of g.members) {
        const r = n.raft;
        if (!r) continue;
        for (const p of r.peers || []) if (p.suffrage === 'voter') g.voters.add(p.id);
        if (r.term > g.term || (r.term === g.term && r.leader && !g.leader)) { g.term = r.term; g.leader = r.leader; }
      }
      if (g.voters.size === 0) for (const n of g.members) g.voters.add(n.id);
      const up = [...g.voters].filter((id) => { const n = this.nodes.get(id); return n && n.raft; }).length;
      const quorum = Math.floor(g.voters.size / 2) + 1;
      const leaderNode = this.nodes.get(g.leader);
      g.up = up;
      g.quorum = quorum;
      g.survives = up - quorum;
      g.leaderUp = !!(leaderNode && leaderNode.raft && leaderNode.raft.state === 'Leader');
      g.leaderRegion = leaderNode ? leaderNode.region : '';
    }
    return [...gs.values()].sort((a, b) => (a.name === 'global' ? -1 : b.name === 'global' ? 1 : a.name.localeCompare(b.name)));
  }

  // leaderOf returns the node leading group name, or null.
  leaderOf(name) {
    const g = this.groups().find((x) => x.name === name);
    return g && g.leaderUp ? this.nodes.get(g.leader) : null;
  }

  // anyIn returns a node of region that answered, preferring role.
  anyIn(region, role) {
    const ns = this.inRegion(region, role).filter((n) => n.status === 'alive' && !n.error);
    return ns.find((n) => n.raft) || ns[0] || null;
  }
}
