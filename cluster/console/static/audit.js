// Audit: verify a tenant's hash-chained audit log, page by page (GET
// /v1/chain/verify), as `strata chain verify` does.

import {call, query, can, ApiError} from './api.js';
import {h, replace, num, short} from './dom.js';
import {kv} from './cluster.js';

const PAGE = 100000; // the server's maximum (MaxVerifyEvents)

export function auditView(ctx, tenantArg) {
  const el = h('section', {class: 'audit'});
  const out = h('div', {});
  const tenant = h('input', {id: 'audit-tenant', placeholder: 'tenant', required: true, size: 16,
    value: tenantArg || (ctx.me.tenant !== '*' ? ctx.me.tenant : '')});
  let stopped = false;
  const form = h('form', {class: 'filters', onsubmit: (e) => { e.preventDefault(); verify(tenant.value.trim()); }},
    tenant, h('button', {type: 'submit'}, 'Verify chain'));

  async function verify(t) {
    if (!t) return;
    if (!can(ctx.me, 'jobs:read', t)) { replace(out, h('p', {class: 'error'}, 'this token may not read tenant ' + t)); return; }
    const t0 = performance.now();
    let after = 0, link = '', events = 0, pages = 0, last = null;
    replace(out, h('p', {}, 'verifying …'));
    try {
      for (;;) {
        const v = await call('/v1/chain/verify' + query({tenant: t, after: after || '', link: after ? link : '', limit: PAGE, consistency: 'strong'}), {timeoutMs: 30000});
        if (stopped) return;
        pages++; events += v.events; last = v;
        if (v.complete || !v.next) break;
        after = v.next; link = v.link;
        replace(out, h('p', {}, 'verified ' + num(events) + ' events …'));
      }
      replace(out, h('div', {class: 'card ok', 'data-chain': 'verified'},
        h('h3', {}, 'Chain of ' + t + ' verifies'),
        h('div', {class: 'kv'}, kv('events verified', num(events)), kv('head seq', num(last.seq)),
          kv('head link', h('span', {class: 'mono', title: last.link}, short(last.link, 24))), kv('pages', num(pages)),
          kv('took', Math.round(performance.now() - t0) + ' ms'))));
    } catch (e) {
      if (e instanceof ApiError && e.status === 409) {
        replace(out, h('div', {class: 'card bad', 'data-chain': 'broken'}, h('h3', {}, 'Chain of ' + t + ' is broken'),
          h('p', {}, e.message), h('div', {class: 'kv'}, Object.entries(e.details).map(([k, v]) => kv(k, String(v))))));
      } else {
        replace(out, h('p', {class: 'error'}, e.message));
      }
    }
  }

  replace(el, h('h1', {}, 'Audit'), h('p', {class: 'muted'}, 'Recomputes every link of a tenant\'s audit chain on a gate (strong reads).'), form, out);
  return {el, start() { if (tenant.value) verify(tenant.value); }, stop() { stopped = true; }};
}
