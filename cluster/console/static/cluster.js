// Cluster view: every region side by side, its gate and managers with
// their Raft state, every group's leader and term and how many more
// failures it survives, NodeWAL watermarks, each manager's data-plane
// rate and backpressure, the forwarder, anti-entropy, and the workers. Refreshed every REFRESH_MS, so a killed
// leader shows within two seconds.

import {call} from './api.js';
import {h, replace, table, badge, num, ago, short} from './dom.js';

const REFRESH_MS = 1000;
const SLOW_EVERY = 5; // anti-entropy and workers: every 5th refresh

export function clusterView(ctx) {
  const el = h('section', {class: 'cluster'});
  let timer = 0, ticks = 0, stopped = false, ae = null, aeError = '';
  const workers = new Map(); // region -> WorkerList or {error}
  const dpSeen = new Map();  // node -> {updates, dropped, at}: the last data-plane totals read

  async function tick() {
    const t0 = performance.now();
    await ctx.topo.refresh();
    if (ticks % SLOW_EVERY === 0) await slow();
    ticks++;
    if (stopped) return;
    render();
    ctx.status('cluster refreshed in ' + Math.round(performance.now() - t0) + ' ms');
    timer = setTimeout(tick, Math.max(100, REFRESH_MS - (performance.now() - t0)));
  }

  async function slow() {
    const jobs = [call('/v1/cluster/antientropy', {timeoutMs: 3000}).then((x) => { ae = x; aeError = ''; }, (e) => { aeError = e.message; })];
    for (const region of ctx.topo.regions()) {
      const leader = ctx.topo.leaderOf(region);
      if (!leader) { workers.set(region, {error: 'no leader'}); continue; }
      jobs.push(call(ctx.topo.path(leader.id, '/v1/workers'), {timeoutMs: 2000})
        .then((x) => workers.set(region, x), (e) => workers.set(region, {error: e.message})));
    }
    await Promise.all(jobs);
  }

  function render() {
    const topo = ctx.topo;
    const groups = topo.groups();
    replace(el,
      h('h1', {}, 'Cluster'),
      h('div', {class: 'groups'}, groups.map(groupCard)),
      h('div', {class: 'regions'}, topo.regions().map((r) => regionColumn(r, groups))),
      aeError ? h('p', {class: 'error'}, 'anti-entropy: ' + aeError) : null);
  }

  function groupCard(g) {
    const ok = g.leaderUp && g.survives >= 0;
    let survives = g.survives > 0 ? 'survives ' + g.survives + ' more failure' + (g.survives > 1 ? 's' : '')
      : g.survives === 0 ? 'survives no more failure' : 'NO QUORUM';
    return h('div', {class: 'card group ' + (ok ? (g.survives > 0 ? 'ok' : 'warn') : 'bad'),
      'data-group': g.name, 'data-leader': g.leaderUp ? g.leader : ''},
    h('h3', {}, g.name === 'global' ? 'global (gates)' : g.name + ' (managers)'),
    h('div', {class: 'big'}, g.leaderUp ? g.leader : 'no leader'),
    h('div', {}, 'term ', h('b', {}, num(g.term)), ' · voters up ', h('b', {}, g.up + '/' + g.voters.size)),
    h('div', {class: 'survive'}, survives),
    ae ? ae.pairs.filter((p) => p.kind === 'replica' && p.group === g.name).map((p) =>
      h('div', {class: 'small'}, 'replicas ', badge(p.error ? 'error' : p.roots_equal ? 'equal' : 'differ'))) : null);
  }

  function regionColumn(region, groups) {
    const topo = ctx.topo;
    const rg = groups.find((g) => g.name === region);
    const leader = rg && rg.leaderUp ? topo.nodes.get(rg.leader) : null;
    const fw = leader && leader.raft && leader.raft.forwarder;
    const w = workers.get(region);
    const pairs = ae ? ae.pairs.filter((p) => p.region === region) : [];
    return h('div', {class: 'region card', 'data-region': region},
      h('h2', {}, region),
      nodeTable(topo.inRegion(region)),
      h('h4', {}, 'Forwarder to the global ledger'),
      fw ? h('div', {class: 'kv'},
        kv('breaker', badge(fw.breaker)), kv('queue', num(fw.queue_depth)),
        fw.oldest_queued_hlc ? kv('oldest queued', short(fw.oldest_queued_hlc, 24)) : null,
        fw.last_error ? kv('last error', h('span', {class: 'error'}, fw.last_error)) : null)
        : h('p', {class: 'muted'}, leader ? 'no forwarder status' : 'no regional leader'),
      h('h4', {}, 'Data plane and workers'),
      !w ? h('p', {class: 'muted'}, '…') : w.error ? h('p', {class: 'error'}, w.error) : h('div', {class: 'kv'},
        kv('backpressure', badge(w.backpressure)),
        kv('commit queue', pct(w.commit_queue_fill)), kv('progress queue', pct(w.progress_queue_fill)),
        kv('workers active', num(w.workers.filter((x) => x.active).length)),
        kv('leases', num(w.workers.reduce((s, x) => s + x.leases.length, 0)))),
      h('h4', {}, 'Anti-entropy'),
      pairs.length ? h('div', {class: 'kv'}, pairs.map(aePair), ae.divergent_replicas.length ? kv('divergent', ae.divergent_replicas.join(', ')) : null) : h('p', {class: 'muted'}, ae ? 'no rounds' : '…'));
  }

  function aePair(p) {
    if (!p.rounds && p.kind === 'regional-global') return kv(p.kind, h('span', {}, badge('pending'), ' no round yet'));
    const when = p.rounds ? ago(Date.now() - Date.parse(p.last_round)) + ' ago' : 'no round yet';
    return kv(p.kind, h('span', {}, badge(p.error ? 'error' : p.roots_equal ? 'equal' : 'differ'),
      ' ' + when + ', ' + num(p.rounds) + ' rounds, ' + num(p.differences) + ' diff, ' + num(p.repaired) + ' repaired',
      p.error ? h('span', {class: 'error'}, ' ' + p.error) : null));
  }

  function nodeTable(nodes) {
    const rows = nodes.map((n) => {
      const r = n.raft;
      const state = r ? r.state : (n.status && n.status !== 'alive' ? n.status : 'unreachable');
      const wm = (r && r.watermarks) || {};
      const lag = r ? r.commit_index - r.applied_index : null;
      return h('tr', {'data-node': n.id, 'data-state': state, class: r ? '' : 'down', title: n.error || ''},
        h('td', {}, n.id, h('div', {class: 'muted small'}, n.role + (n.api_addr ? ' · ' + n.api_addr : '')),
          r ? h('div', {class: 'mono small', title: 'NodeWAL watermarks (LSN): last appended, and up to which every record reached REGIONAL, GLOBAL, its tier; compacted below'},
            'WAL last ' + num(wm.last) + ' · reg ' + num(wm.regional) + ' · glob ' + num(wm.global) + ' · tier ' + num(wm.tier) + ' · comp ' + num(wm.compacted)) : null,
          r && r.data_plane ? dataPlaneLine(n.id, r.data_plane) : null),
        h('td', {}, badge(state)),
        h('td', {class: 'num'}, r ? num(r.term) : '–'),
        h('td', {class: 'num'}, r ? num(r.commit_index) : '–'),
        h('td', {class: 'num'}, r ? num(r.applied_index) : '–'),
        h('td', {class: 'num' + (lag > 100 ? ' warn' : '')}, r ? num(lag) : '–'),
        h('td', {class: 'num'}, r ? (r.state === 'Leader' ? 'leader' : ago(r.last_contact_ms)) : '–'));
    });
    return table(['node', 'raft', 'term', 'commit', 'applied', 'lag', 'contact'], rows, 'grid nodes');
  }

  // dataPlaneLine is a manager's progress receiver: updates folded per
  // second since the last reading, drops, queue fill and level.
  function dataPlaneLine(id, dp) {
    const now = performance.now(), prev = dpSeen.get(id);
    dpSeen.set(id, {updates: dp.updates, dropped: dp.dropped, at: now});
    let rate = '…', drops = '…';
    if (prev && now > prev.at && dp.updates >= prev.updates) {
      const secs = (now - prev.at) / 1000;
      rate = num(Math.round((dp.updates - prev.updates) / secs));
      drops = num(Math.round(Math.max(0, dp.dropped - prev.dropped) / secs));
    }
    return h('div', {class: 'mono small', 'data-dataplane': id, title: 'progress data plane: updates folded per second, frames dropped per second, receive queue fill, backpressure level'},
      'data plane ' + rate + ' upd/s · ' + drops + ' drop/s · queue ' + pct(dp.queue_fill) + ' · ', badge(dp.backpressure));
  }

  return {
    el,
    start() { ctx.status('reading the cluster …'); tick(); },
    stop() { stopped = true; clearTimeout(timer); },
  };
}

export function kv(k, v) {
  return h('div', {class: 'row'}, h('span', {class: 'k'}, k), h('span', {class: 'v'}, v));
}

function pct(x) { return (x === undefined || x === null) ? '–' : (x * 100).toFixed(1) + ' %'; }
