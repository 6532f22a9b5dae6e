// Jobs: the list with tenant / status / region filters and pages, and a
// job's page: per-region progress from the watch stream, live rate and
// latency (the watch's live events, not durable), workflows, the event
// history with HLC and chain links, and cancel for tokens that may.

import {call, query, watch, can, ApiError} from './api.js';
import {h, replace, table, badge, num, fixed, hlc, short} from './dom.js';
import {kv} from './cluster.js';

const STATUSES = ['', 'PENDING', 'RUNNING', 'CANCELLING', 'COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT'];
const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT']);
const LIST_REFRESH_MS = 3000;
const WORKFLOWS_REFRESH_MS = 3000;
const EVENTS_PAGE = 200;
const NOT_FOUND_RETRIES = 8; // about 10 s of backoff

// The list's filters and page survive leaving the view.
const listState = {tenant: '', status: '', region: '', limit: '25', cursors: ['']};

export function jobsView(ctx) {
  const el = h('section', {class: 'jobs'});
  const body = h('div', {});
  let timer = 0, stopped = false;
  const f = listState;
  const tenant = h('input', {name: 'tenant', placeholder: 'any tenant', value: f.tenant, size: 12});
  const status = h('select', {name: 'status'}, STATUSES.map((s) => h('option', {value: s, selected: s === f.status}, s || 'any status')));
  const region = h('input', {name: 'region', placeholder: 'any region', value: f.region, size: 8});
  const limit = h('select', {name: 'limit'}, ['10', '25', '100'].map((s) => h('option', {value: s, selected: s === f.limit}, s + ' a page')));
  const form = h('form', {class: 'filters', onsubmit: (e) => {
    e.preventDefault();
    Object.assign(f, {tenant: tenant.value.trim(), status: status.value, region: region.value.trim(), limit: limit.value, cursors: ['']});
    load();
  }}, tenant, status, region, limit, h('button', {type: 'submit'}, 'Filter'));

  async function load() {
    clearTimeout(timer);
    const cursor = f.cursors[f.cursors.length - 1];
    try {
      const list = await call('/v1/jobs' + query({tenant: f.tenant, status: f.status, region: f.region, limit: f.limit, cursor, consistency: 'eventual'}));
      if (stopped) return;
      render(list);
      ctx.status(list.jobs.length + ' jobs');
    } catch (e) {
      replace(body, h('p', {class: 'error'}, e.message));
    }
    if (!stopped) timer = setTimeout(load, LIST_REFRESH_MS);
  }

  function render(list) {
    const rows = list.jobs.map((j) => h('tr', {'data-job': j.job_id},
      h('td', {}, h('a', {href: '#/jobs/' + encodeURIComponent(j.job_id), class: 'mono'}, j.job_id)),
      h('td', {}, j.tenant),
      h('td', {}, badge(j.status)),
      h('td', {}, Object.entries(j.regions || {}).map(([r, s]) => regionMini(r, s, j.spec))),
      h('td', {class: 'num'}, num(j.events)),
      h('td', {}, hlc(j.created && j.created.hlc))));
    const prev = h('button', {type: 'button', disabled: f.cursors.length <= 1, onclick: () => { f.cursors.pop(); load(); }}, '← Newer');
    const next = h('button', {type: 'button', disabled: !list.next_cursor, onclick: () => { f.cursors.push(list.next_cursor); load(); }}, 'Older →');
    replace(body, table(['job', 'tenant', 'status', 'regions', 'events', 'created'], rows),
      list.jobs.length ? null : h('p', {class: 'muted'}, 'No job matches.'),
      h('div', {class: 'pager'}, prev, h('span', {class: 'muted'}, 'page ' + f.cursors.length), next));
  }

  replace(el, h('h1', {}, 'Jobs'), form, body);
  return {el, start: load, stop() { stopped = true; clearTimeout(timer); }};
}

function regionMini(region, s, spec) {
  const want = expected(spec);
  return h('div', {class: 'mini'}, h('span', {class: 'rname'}, region), ' ',
    h('progress', {max: want || 1, value: Math.min(want || 1, (s.completed || 0) + (s.failed || 0)), title: region + ': ' + num(s.completed) + ' completed, ' + num(s.failed) + ' failed'}));
}

// parseDuration reads Go's time.Duration text ("1h2m3.5s", "500ms").
export function parseDuration(s) {
  const re = /([0-9.]+)(h|ms|m|s|us|µs|ns)/g;
  const unit = {h: 3600, m: 60, s: 1, ms: 1e-3, us: 1e-6, 'µs': 1e-6, ns: 1e-9};
  let total = 0, m;
  while ((m = re.exec(String(s || ''))) !== null) total += parseFloat(m[1]) * unit[m[2]];
  return total;
}

// expected is the simulated requests one region's workflows should send:
// Σ count × rate × duration (the CLI's estimate too).
export function expected(spec) {
  if (!spec || !spec.workflows) return 0;
  return spec.workflows.reduce((sum, w) => sum + (w.count || 0) * (w.rate || 0) * parseDuration(w.duration), 0);
}

export function jobView(ctx, id) {
  const el = h('section', {class: 'job'});
  const head = h('div', {}), regions = h('div', {}), cancelBox = h('div', {}), wfBox = h('div', {}), evBox = h('div', {});
  const ctl = new AbortController();
  let job = null, live = {}, stopped = false, wfTimer = 0, eventsSeen = -1, reconnects = 0, notFound = 0;
  const wf = new Map(); // region -> WorkflowList or {error}

  replace(el, h('p', {}, h('a', {href: '#/jobs'}, '← Jobs')), head, regions, cancelBox,
    h('h2', {}, 'Workflows'), wfBox, h('h2', {}, 'Events'), evBox);

  function renderHead() {
    replace(head,
      h('h1', {class: 'mono'}, id),
      h('div', {class: 'kv'},
        kv('status', h('span', {'data-job-status': job.status}, badge(job.status))),
        kv('tenant', job.tenant), kv('fence', num(job.fence)), kv('created', hlc(job.created && job.created.hlc)),
        kv('last event', hlc(job.hlc)), kv('events', num(job.events)), kv('timeout', job.spec && job.spec.timeout),
        job.decision ? kv('decision', JSON.stringify(job.decision)) : null));
  }

  function renderRegions() {
    const want = expected(job.spec);
    const rows = Object.entries(job.regions || {}).sort().map(([r, s]) => {
      const done = (s.completed || 0) + (s.failed || 0);
      const l = live[r];
      return h('tr', {'data-region': r},
        h('td', {}, r), h('td', {}, badge(s.status)),
        h('td', {class: 'bar'}, h('progress', {'data-region': r, max: want || 1, value: Math.min(want || 1, done)}),
          h('span', {class: 'small'}, ' ' + num(done) + (want ? ' / ' + num(want) + ' (' + fixed(100 * done / want, 1) + ' %)' : ''))),
        h('td', {class: 'num'}, num(s.completed)), h('td', {class: 'num'}, num(s.failed)),
        h('td', {class: 'num', 'data-live-region': l ? r : null}, l ? fixed(l.requests_per_s, 1) : '–'),
        h('td', {class: 'num'}, l ? fixed(l.p50_ms, 1) : '–'), h('td', {class: 'num'}, l ? fixed(l.p99_ms, 1) : '–'),
        h('td', {}, s.accepted ? 'accepted' : 'not yet', s.done ? ', done' : '', s.cancel_acked ? ', cancel acked' : ''));
    });
    replace(regions, h('h2', {}, 'Regions'),
      table(['region', 'status', 'progress (completed + failed of expected)', 'completed', 'failed', 'req/s', 'p50 ms', 'p99 ms', 'acceptance'], rows),
      h('p', {class: 'muted small'}, 'req/s and latency: live figures over the last seconds, not durable; counters are the ledger\'s.'));
  }

  function renderCancel() {
    if (!can(ctx.me, 'jobs:write', job.tenant) || TERMINAL.has(job.status)) { replace(cancelBox); return; }
    if (cancelBox.querySelector('form')) return; // keep what the user typed
    const reason = h('input', {id: 'cancel-reason', placeholder: 'reason', required: true, maxlength: 200, size: 30});
    const msg = h('span', {class: 'small'});
    replace(cancelBox, h('form', {class: 'cancel', onsubmit: async (e) => {
      e.preventDefault();
      try {
        const r = await call('/v1/jobs/' + encodeURIComponent(id) + '/cancel', {method: 'POST', body: {reason: reason.value, requestor: 'console:' + ctx.me.name}});
        replace(msg, 'cancel ' + r.outcome + ' at ' + r.durability);
      } catch (err) { replace(msg, h('span', {class: 'error'}, err.message)); }
    }}, reason, h('button', {id: 'cancel-button', type: 'submit', class: 'danger'}, 'Cancel job'), ' ', msg));
  }

  function onState(s) {
    job = s;
    if (s.live) live = s.live;
    ctx.status('watching ' + id + ': ' + s.status);
    renderHead(); renderRegions(); renderCancel();
    if (s.events !== eventsSeen) { eventsSeen = s.events; loadEvents(); }
  }

  async function follow() {
    while (!stopped) {
      try {
        await watch('/v1/jobs/' + encodeURIComponent(id) + '/watch', (ev) => {
          reconnects = 0;
          if (ev.event === 'state') onState(JSON.parse(ev.data));
          else if (ev.event === 'live' && job) { live = JSON.parse(ev.data); renderRegions(); }
        }, ctl.signal);
        if (job && TERMINAL.has(job.status)) {
          live = {};
          // One last read: a terminal state can still turn (docs/API.md).
          onState(await call('/v1/jobs/' + encodeURIComponent(id)));
          loadWorkflows();
          ctx.status('job ended: ' + job.status);
          return;
        }
      } catch (e) {
        if (stopped) return;
        // A job submitted through another node may not be applied here
        // yet (watches read eventually): a 404 is retried for a while.
        if (e instanceof ApiError && (e.status === 401 || e.status === 403 || (e.status === 404 && ++notFound > NOT_FOUND_RETRIES))) {
          replace(head, h('h1', {class: 'mono'}, id), h('p', {class: 'error'}, e.message));
          return;
        }
        ctx.status('watch: ' + e.message + '; reconnecting');
      }
      reconnects++;
      await new Promise((r) => setTimeout(r, Math.min(5000, 250 * 2 ** Math.min(reconnects, 5))));
    }
  }

  async function loadWorkflows() {
    clearTimeout(wfTimer);
    if (!job) { wfTimer = setTimeout(loadWorkflows, 500); return; }
    await Promise.all((job.spec.regions || []).map(async (r) => {
      const path = workflowsPath(ctx, id, r);
      if (!path) { wf.set(r, {error: 'to read another region\'s workflows the console needs the operator scope (it finds that region\'s nodes in the members list)'}); return; }
      try { wf.set(r, await call(path, {timeoutMs: 3000})); } catch (e) { wf.set(r, {error: e.message}); }
    }));
    if (stopped) return;
    replace(wfBox, [...wf.entries()].sort().map(([r, l]) => h('div', {class: 'wf'}, h('h3', {}, r),
      l.error ? h('p', {class: 'muted'}, l.error) : table(['instance', 'status', 'worker', 'lease fence', 'lease until', 'completed', 'failed', 'reschedules', 'error'],
        l.workflows.map((w) => h('tr', {},
          h('td', {}, w.name + '/' + w.instance), h('td', {}, badge(w.status)), h('td', {}, w.worker || '–'),
          h('td', {class: 'num'}, num(w.lease_fence)),
          h('td', {}, w.lease_until ? new Date(w.lease_until).toISOString().slice(11, 23) : '–'),
          h('td', {class: 'num'}, num(w.completed)), h('td', {class: 'num'}, num(w.failed)),
          h('td', {class: 'num'}, num(w.reschedules)), h('td', {class: 'error'}, w.error || '')))))));
    if (!TERMINAL.has(job.status)) wfTimer = setTimeout(loadWorkflows, WORKFLOWS_REFRESH_MS);
  }

  let evCursor = '', evRows = [], evLoading = false;
  async function loadEvents(more) {
    if (evLoading) return;
    evLoading = true;
    try {
      const page = await call('/v1/jobs/' + encodeURIComponent(id) + '/events' + query({limit: EVENTS_PAGE, cursor: more ? evCursor : '', consistency: 'eventual'}));
      evRows = more ? evRows.concat(page.events) : page.events;
      evCursor = page.next_cursor || '';
      renderEvents();
    } catch (e) {
      replace(evBox, h('p', {class: 'error'}, e.message));
    } finally { evLoading = false; }
  }

  function renderEvents() {
    replace(evBox, table(['seq', 'type', 'region', 'node', 'HLC', 'fence', 'chain link', 'body'], evRows.map((e) => h('tr', {},
      h('td', {class: 'num'}, e.seq ? num(e.seq) : '–'), h('td', {}, e.type), h('td', {}, e.region || ''), h('td', {}, e.node || ''),
      h('td', {}, hlc(e.hlc)), h('td', {class: 'num'}, num(e.fence)),
      h('td', {class: 'mono small', title: e.link ? 'link ' + e.link + ' (seq ' + e.seq + ' of tenant ' + e.tenant + '\'s chain)' : 'not yet in the audit chain'},
        e.link ? h('a', {href: '#/audit/' + encodeURIComponent(e.tenant)}, short(e.link, 12)) : '–'),
      h('td', {class: 'mono small'}, short(JSON.stringify(e.body || {}), 80))))),
    evCursor ? h('button', {type: 'button', onclick: () => loadEvents(true)}, 'More events') : null);
  }

  return {
    el,
    start() { ctx.status('watching ' + id); follow(); loadWorkflows(); },
    stop() { stopped = true; ctl.abort(); clearTimeout(wfTimer); },
  };
}

// workflowsPath is where region r's workflows of job id are read: the
// serving node's own region answers itself (a gate forwards to its
// managers); another region's gate through the relay, when the topology
// (operator scope) knows one.
function workflowsPath(ctx, id, r) {
  const p = '/v1/jobs/' + encodeURIComponent(id) + '/workflows' + query({consistency: 'eventual'});
  if (r === ctx.me.region) return p;
  if (!ctx.topo) return '';
  const n = ctx.topo.anyIn(r, 'manager') || ctx.topo.anyIn(r, 'gate');
  if (!n) return '';
  return ctx.topo.path(n.id, p);
}

