// DOM helpers. Every value from the gateway is untrusted text: it only
// ever reaches the page through textContent (el's string children) and
// attribute values, never through innerHTML.

export const $ = (sel, root = document) => root.querySelector(sel);

// el builds an element: attrs are properties (className, type, title,
// hidden, ...), "data-*"/"aria-*" attributes, or on* listeners; children
// are nodes or strings (text nodes), null and false are skipped.
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else if (k.startsWith('data-') || k.startsWith('aria-') || k === 'role' || k === 'for' || k === 'colspan') e.setAttribute(k, String(v));
    else e[k] = v;
  }
  append(e, children);
  return e;
}

function append(e, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// withCode turns the `code` spans of a contract description into <code>
// elements and the rest into text (never markup).
export function withCode(text) {
  return String(text).split('`').map((part, i) => (i % 2 === 1 ? el('code', {}, part) : part));
}

// fill replaces a node's children.
export function fill(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

export function json(v) {
  return JSON.stringify(v, null, 2);
}

export function pre(v, className = 'json') {
  return el('pre', { className }, typeof v === 'string' ? v : json(v));
}

// ago and until render times relative to now, coarse and short.
export function span(ms) {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.round(m / 60);
  if (h < 48) return `${h} h`;
  return `${Math.round(h / 24)} d`;
}

export function ago(iso, now = Date.now()) {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? String(iso) : `${span(now - t)} ago`;
}

export function until(iso, now = Date.now()) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return String(iso);
  return t <= now ? 'expired' : `in ${span(t - now)}`;
}

export function time(iso, text) {
  return el('time', { dateTime: String(iso), title: String(iso) }, text);
}

// relTime is a time shown relative to now ("3 s ago" for rel 'ago',
// "in 5 min" for rel 'until'); tickTimes re-renders every such element
// from its stored timestamp, so it never goes stale between data changes.
export function relTime(iso, rel, now = Date.now()) {
  const e = time(iso, rel === 'until' ? until(iso, now) : ago(iso, now));
  e.setAttribute('data-rel', rel);
  return e;
}

export function tickTimes(root = document, now = Date.now()) {
  for (const e of root.querySelectorAll('time[data-rel]')) {
    const iso = e.getAttribute('datetime');
    const text = e.getAttribute('data-rel') === 'until' ? until(iso, now) : ago(iso, now);
    if (e.textContent !== text) e.textContent = text;
  }
}

// keyedRows keeps a table body's rows across refreshes: update(items)
// takes [{key, sig, build}] in display order, keeps the row of a key whose
// sig is unchanged (the same node, so focus and scroll stay), builds the
// others, and moves no kept row unless the order changed (moving a node
// would drop its focus). A rebuilt row that held the focus gives it to the
// element of the new row with the same data-focus.
export function keyedRows(tbody) {
  const rows = new Map(); // key -> {sig, node}
  return {
    get: (key) => rows.get(key)?.node,
    update(items) {
      const active = document.activeElement;
      let refocus = null;
      const wanted = new Set(items.map((i) => i.key));
      for (const [key, r] of rows) {
        if (!wanted.has(key)) {
          r.node.remove();
          rows.delete(key);
        }
      }
      const nodes = items.map(({ key, sig, build }) => {
        const old = rows.get(key);
        if (old && old.sig === sig) return old.node;
        const node = build();
        if (old && active && old.node.contains(active) && active.getAttribute('data-focus')) {
          refocus = [node, active.getAttribute('data-focus')];
        }
        if (old) old.node.replaceWith(node);
        rows.set(key, { sig, node });
        return node;
      });
      let cur = tbody.firstChild;
      for (const n of nodes) {
        if (n === cur) {
          cur = cur.nextSibling;
          continue;
        }
        tbody.insertBefore(n, cur);
      }
      while (cur) {
        const next = cur.nextSibling;
        cur.remove();
        cur = next;
      }
      if (refocus) {
        const f = [...refocus[0].querySelectorAll('[data-focus]')].find((e) => e.getAttribute('data-focus') === refocus[1]);
        if (f) f.focus();
      }
    },
    clear() {
      rows.clear();
      tbody.replaceChildren();
    },
  };
}

// keepFocus runs rebuild (which replaces the children of root) and gives
// the focus back to the equivalent element: the one with the same
// data-focus inside the element with the same data-key.
export function keepFocus(root, rebuild) {
  const a = document.activeElement;
  const f = a && root.contains(a) ? a.getAttribute('data-focus') : null;
  const holder = f ? a.closest('[data-key]') : null;
  const key = holder ? holder.getAttribute('data-key') : null;
  rebuild();
  if (!f) return;
  for (const e of root.querySelectorAll('[data-focus]')) {
    if (e.getAttribute('data-focus') !== f) continue;
    const h = e.closest('[data-key]');
    if ((h ? h.getAttribute('data-key') : null) === key) {
      e.focus();
      return;
    }
  }
}

export function yesno(b) {
  return el('span', { className: b ? 'yes' : 'no' }, b ? 'yes' : 'no');
}

export function badge(text, kind) {
  return el('span', { className: `badge ${kind || text}` }, text);
}

// --- labels -----------------------------------------------------------

// atomText is an atom as text: a string as is, an object atom as its
// type followed by its other members.
export function atomText(a) {
  if (typeof a === 'string') return a;
  if (a && typeof a === 'object' && typeof a.type === 'string') {
    const rest = { ...a };
    delete rest.type;
    return Object.keys(rest).length ? `${a.type} ${JSON.stringify(rest)}` : a.type;
  }
  return JSON.stringify(a);
}

// atomType is what a disclosed label shows of an atom: a string atom is
// its own type; an object atom's type is its type member.
export function atomType(a) {
  if (typeof a === 'string') return a;
  if (a && typeof a === 'object' && typeof a.type === 'string') return a.type;
  return JSON.stringify(a);
}

function atomNode(text) {
  return el('code', { className: 'atom', title: text }, text);
}

// alternatives lists a clause's atoms: "A or B".
function alternatives(atoms) {
  const out = [];
  atoms.forEach((a, i) => {
    if (i > 0) out.push(el('span', { className: 'or' }, ' or '));
    out.push(atomNode(a));
  });
  return out;
}

// clauseAtoms turns a clause (a bare atom, {"anyOf": [atoms]}, or a list
// of atom types as in a disclosed label) into the texts of its
// alternatives.
export function clauseAtoms(c) {
  if (Array.isArray(c)) return c.map(atomText);
  if (c && typeof c === 'object' && Array.isArray(c.anyOf)) return c.anyOf.map(atomText);
  return [atomText(c)];
}

// clauses renders a confidentiality (a conjunction of clauses) as a list
// whose items must all hold; an anyOf clause shows its alternatives.
// none is the text for null (no ceiling).
export function clauses(list, none = 'none') {
  if (list === null || list === undefined) return el('p', { className: 'label-none' }, none);
  if (!Array.isArray(list)) return pre(list);
  if (list.length === 0) return el('p', { className: 'label-none' }, 'no clauses (public: anything may flow here)');
  return el('div', { className: 'clauses' },
    list.length > 1 ? el('p', { className: 'muted' }, `all of these ${list.length} clauses:`) : null,
    el('ul', {}, list.map((c) => el('li', {}, alternatives(clauseAtoms(c))))));
}

// inlineClauses is a compact one-line form: "A · (B or C)".
export function inlineClauses(list) {
  if (!Array.isArray(list) || list.length === 0) return el('span', { className: 'muted' }, 'none');
  const out = [];
  list.forEach((c, i) => {
    if (i > 0) out.push(el('span', { className: 'and' }, ' and '));
    const atoms = clauseAtoms(c);
    if (atoms.length > 1) out.push('(', alternatives(atoms), ')');
    else out.push(alternatives(atoms));
  });
  return el('span', { className: 'inline-clauses' }, out);
}

function clauseTypes(c) {
  if (Array.isArray(c)) return c.map(atomType);
  if (c && typeof c === 'object' && Array.isArray(c.anyOf)) return c.anyOf.map(atomType);
  return [atomType(c)];
}

// labelTypes renders a label's atom types: its confidentiality clauses
// (alternatives joined by "or") and its integrity atoms.
export function labelTypes(label) {
  if (!label) return el('span', { className: 'muted' }, '—');
  const conf = (label.confidentiality || []).map(clauseTypes);
  const integ = (label.integrity || []).map(atomType);
  const integNodes = [];
  integ.forEach((t, i) => {
    if (i > 0) integNodes.push(', ');
    integNodes.push(atomNode(t));
  });
  return el('div', { className: 'types' },
    el('div', {}, el('span', { className: 'k' }, 'confidentiality: '), inlineClauses(conf)),
    integ.length ? el('div', {}, el('span', { className: 'k' }, 'integrity: '), integNodes) : null);
}

// labelFull renders a full label (handles, documents, the result):
// confidentiality clauses with their atoms and the integrity atoms.
export function labelFull(label) {
  if (!label) return el('span', { className: 'muted' }, '—');
  const integ = (label.integrity || []).map(atomText);
  const integNodes = [];
  integ.forEach((t, i) => {
    if (i > 0) integNodes.push(', ');
    integNodes.push(atomNode(t));
  });
  return el('div', { className: 'types' },
    el('div', {}, el('span', { className: 'k' }, 'confidentiality: '), inlineClauses(label.confidentiality || [])),
    el('div', {}, el('span', { className: 'k' }, 'integrity: '), integ.length ? integNodes : el('span', { className: 'muted' }, 'none')));
}
