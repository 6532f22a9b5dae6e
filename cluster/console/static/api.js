// The public API v1 of the node that served the page, with the bearer
// token from session storage. Nothing here puts the token in a URL.

const TOKEN_KEY = 'strata.token';
const CALL_TIMEOUT_MS = 4000;

export function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }
export function setToken(t) { sessionStorage.setItem(TOKEN_KEY, t); }
export function clearToken() { sessionStorage.removeItem(TOKEN_KEY); }

// ApiError is a failed call: the HTTP status and the API's error envelope.
export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message || code || ('HTTP ' + status));
    this.status = status;
    this.code = code || '';
    this.details = details || {};
  }
}

function headers(extra) {
  return Object.assign({Authorization: 'Bearer ' + token(), Accept: 'application/json'}, extra || {});
}

// query builds "?a=1&b=2" from an object, leaving out empty values.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '') q.set(k, v);
  }
  const s = q.toString();
  return s ? '?' + s : '';
}

// call does one request and returns the decoded JSON answer; a non-2xx
// answer throws an ApiError. opts: {method, body, timeoutMs, signal}.
export async function call(path, opts) {
  opts = opts || {};
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), opts.timeoutMs || CALL_TIMEOUT_MS);
  if (opts.signal) opts.signal.addEventListener('abort', () => ctl.abort(), {once: true});
  let resp;
  try {
    resp = await fetch(path, {
      method: opts.method || 'GET',
      headers: headers(opts.body !== undefined ? {'Content-Type': 'application/json'} : null),
      body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
      signal: ctl.signal, cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer',
    });
  } catch (e) {
    throw new ApiError(0, 'unreachable', ctl.signal.aborted ? 'timed out' : String(e.message || e));
  } finally {
    clearTimeout(timer);
  }
  const text = await resp.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (_) { body = null; }
  if (!resp.ok) {
    const e = (body && body.error) || {};
    throw new ApiError(resp.status, e.code, e.message || text.slice(0, 200), e.details);
  }
  return body;
}

// relayed is path served by node id (the relay of docs/API.md), through
// via when the answering node may not know id.
export function relayed(path, node, via) {
  if (!node) return path;
  const sep = path.includes('?') ? '&' : '?';
  return path + sep + query({node, via}).slice(1);
}

// whoami is the token's principal: {name, tenant, scopes, node, role, region}.
export function whoami() { return call('/v1/auth/whoami'); }

// can reports whether principal p may use scope on tenant ('*': on every
// tenant). Operator implies jobs:read and jobs:write (docs/API.md, Auth).
export function can(p, scope, tenant) {
  if (!p) return false;
  if (p.tenant !== '*' && p.tenant !== tenant) return false;
  return p.scopes.includes(scope) || (scope !== 'operator' && p.scopes.includes('operator'));
}

// watch follows a server-sent-events stream with fetch (EventSource cannot
// send the Authorization header) and calls onEvent({event, id, data}) for
// each event; it resolves when the stream ends and rejects on an error.
export async function watch(path, onEvent, signal) {
  const resp = await fetch(path, {headers: headers({Accept: 'text/event-stream'}), signal,
    cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer'});
  if (!resp.ok) {
    let e = {};
    try { e = (await resp.json()).error || {}; } catch (_) { /* not JSON */ }
    throw new ApiError(resp.status, e.code, e.message);
  }
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const {value, done} = await reader.read();
    if (done) return;
    buf += dec.decode(value, {stream: true}).replace(/\r\n?/g, '\n');
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      const ev = parseEvent(block);
      if (ev) onEvent(ev);
    }
    if (buf.length > 1 << 22) throw new ApiError(0, 'bad_stream', 'event larger than 4 MiB');
  }
}

// parseEvent reads one SSE block; null for a comment-only block.
export function parseEvent(block) {
  let event = 'message', id = '', data = [], seen = false;
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    let val = i < 0 ? '' : line.slice(i + 1);
    if (val.startsWith(' ')) val = val.slice(1);
    seen = true;
    if (field === 'event') event = val;
    else if (field === 'id') id = val;
    else if (field === 'data') data.push(val);
  }
  return seen ? {event, id, data: data.join('\n')} : null;
}
