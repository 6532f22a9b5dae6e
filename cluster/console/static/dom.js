// Small DOM helpers. Text always goes in as text (textContent), never as
// HTML, so nothing an API answer holds can become markup or script.

// h builds an element: h('td', {class: 'num', title: 't'}, 'text', child).
// Attributes starting with "on" take a function (addEventListener); a
// false, null or undefined attribute is left out.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

// replace puts children in el in place of what it held.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export function table(headers, rows, cls) {
  return h('table', {class: cls || 'grid'},
    h('thead', {}, h('tr', {}, headers.map((x) => h('th', {}, x)))),
    h('tbody', {}, rows));
}

// badge is a status word coloured by its class.
export function badge(text, kind) {
  return h('span', {class: 'badge ' + (kind || String(text).toLowerCase().replace(/[^a-z]+/g, '-'))}, text);
}

export function num(n) {
  if (n === undefined || n === null || Number.isNaN(n)) return '–';
  return Number(n).toLocaleString('en-US');
}

export function fixed(n, digits) {
  if (n === undefined || n === null || !Number.isFinite(n)) return '–';
  return n.toFixed(digits);
}

// hlcText shows an HLC "wall:logical:node" as UTC time with its logical
// counter; the full value stays in the title.
export function hlc(ts) {
  if (!ts) return h('span', {}, '–');
  const [wall, logical] = String(ts).split(':');
  const d = new Date(Number(wall));
  const t = Number.isFinite(d.getTime()) ? d.toISOString().replace('T', ' ').replace('Z', '') : ts;
  return h('span', {class: 'mono', title: 'HLC ' + ts}, t + (logical && logical !== '0' ? ' +' + logical : ''));
}

export function short(s, n) {
  s = String(s || '');
  return s.length > n ? s.slice(0, n) + '…' : s;
}

export function ago(ms) {
  if (ms === undefined || ms === null || ms < 0) return 'never';
  if (ms < 1000) return ms + ' ms';
  if (ms < 120000) return (ms / 1000).toFixed(1) + ' s';
  return Math.round(ms / 60000) + ' min';
}
