// Workers: per region, the regional ledger's registry as its leader holds
// it (GET /v1/workers, relayed to the leader): liveness (active until the
// worker leaves or stays silent for the ack window), capacity, the
// workflows leased to it, and the backpressure the leader tells workers.

import {call} from './api.js';
import {h, replace, table, badge, num, hlc} from './dom.js';
import {kv} from './cluster.js';

const REFRESH_MS = 2000;

export function workersView(ctx) {
  const el = h('section', {class: 'workers'});
  const body = h('div', {class: 'regions'});
  let timer = 0, stopped = false;
  replace(el, h('h1', {}, 'Workers'), body);

  async function tick() {
    await ctx.topo.refresh();
    const regions = ctx.topo.regions();
    const lists = await Promise.all(regions.map(async (r) => {
      const leader = ctx.topo.leaderOf(r);
      if (!leader) return {region: r, error: 'no regional leader answers'};
      try { return await call(ctx.topo.path(leader.id, '/v1/workers'), {timeoutMs: 2000}); } catch (e) { return {region: r, error: e.message}; }
    }));
    if (stopped) return;
    replace(body, lists.map(column));
    ctx.status('workers refreshed');
    timer = setTimeout(tick, REFRESH_MS);
  }

  function column(l) {
    if (l.error) return h('div', {class: 'region card', 'data-region': l.region}, h('h2', {}, l.region), h('p', {class: 'error'}, l.error));
    const rows = l.workers.map((w) => h('tr', {'data-worker': w.worker, class: w.active ? '' : 'down'},
      h('td', {}, w.worker), h('td', {}, badge(w.active ? 'live' : 'gone')),
      h('td', {class: 'num'}, num(w.capacity)), h('td', {class: 'num'}, num(w.leases.length)),
      h('td', {class: 'small mono'}, w.leases.map((id) => h('div', {}, h('a', {href: '#/jobs/' + encodeURIComponent(id.split('/')[0])}, id)))),
      h('td', {}, hlc(w.hlc)), h('td', {class: 'muted'}, w.reason || '')));
    return h('div', {class: 'region card', 'data-region': l.region},
      h('h2', {}, l.region),
      h('div', {class: 'kv'}, kv('leader', l.node), kv('backpressure', badge(l.backpressure)),
        kv('commit queue', (100 * l.commit_queue_fill).toFixed(1) + ' %'),
        kv('progress queue', (100 * l.progress_queue_fill).toFixed(1) + ' %')),
      table(['worker', 'liveness', 'capacity', 'leases', 'workflows', 'since', 'left because'], rows),
      l.truncated ? h('p', {class: 'muted'}, 'only the first 1,000 workers are listed') : null);
  }

  return {el, start: tick, stop() { stopped = true; clearTimeout(timer); }};
}
