// The console's entry: sign-in with a token (session storage), the
// principal's scopes deciding which views and buttons exist, and a hash
// router (#/cluster, #/jobs, #/jobs/ID, #/workers, #/audit[/TENANT]).

import {token, setToken, clearToken, whoami, can} from './api.js';
import {h, replace} from './dom.js';
import {Topology} from './topology.js';
import {clusterView} from './cluster.js';
import {jobsView, jobView} from './jobs.js';
import {workersView} from './workers.js';
import {auditView} from './audit.js';

const $ = (id) => document.getElementById(id);
const ctx = {me: null, topo: null, status: (s) => { $('status').textContent = s; }};
let current = null;

async function signIn(t) {
  setToken(t);
  try {
    ctx.me = await whoami();
  } catch (e) {
    clearToken();
    ctx.me = null;
    throw e;
  }
  ctx.operator = can(ctx.me, 'operator', '*');
  ctx.topo = ctx.operator ? new Topology(ctx.me) : null;
  if (ctx.topo) ctx.topo.discover(); // the job page finds other regions' nodes there
  for (const a of document.querySelectorAll('#nav a')) {
    a.hidden = (a.dataset.view === 'cluster' || a.dataset.view === 'workers') && !ctx.operator;
  }
  replace($('who'), h('span', {title: 'token ' + ctx.me.name}, 'tenant ', h('b', {}, ctx.me.tenant === '*' ? 'all' : ctx.me.tenant),
    ' · ', ctx.me.scopes.join(', ')), ' ', h('button', {type: 'button', id: 'sign-out', onclick: signOut}, 'Sign out'));
  replace($('node-info'), 'served by ' + ctx.me.node + ' (' + ctx.me.role + ', ' + ctx.me.region + ')');
}

function signOut() {
  clearToken();
  location.hash = '';
  location.reload();
}

function showLogin(msg) {
  if (current) { current.stop(); current = null; }
  replace($('view'));
  $('login').hidden = false;
  $('nav').hidden = true;
  $('login-error').textContent = msg || '';
  $('token').focus();
}

function route() {
  if (!ctx.me) return;
  $('login').hidden = true;
  $('nav').hidden = false;
  if (current) current.stop();
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  let name = parts[0] || (ctx.operator ? 'cluster' : 'jobs');
  if ((name === 'cluster' || name === 'workers') && !ctx.operator) name = 'jobs';
  if (name === 'jobs' && parts[1]) current = jobView(ctx, parts.slice(1).join('/'));
  else if (name === 'cluster') current = clusterView(ctx);
  else if (name === 'workers') current = workersView(ctx);
  else if (name === 'audit') current = auditView(ctx, parts[1]);
  else current = jobsView(ctx);
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.view === name);
  replace($('view'), current.el);
  current.start();
}

$('login-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  try {
    await signIn($('token').value.trim());
    $('token').value = '';
    route();
  } catch (err) {
    showLogin(err.status === 401 ? 'The node does not know this token.' : err.message);
  }
});
window.addEventListener('hashchange', route);

if (token()) {
  signIn(token()).then(route, (e) => showLogin(e.message));
} else {
  showLogin();
}
