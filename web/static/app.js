// The loom-gateway operator console. Plain ES modules, no build step.
// Reads the host API with the host token the operator enters once (kept in
// sessionStorage for this tab), polls every 2 s, and calls the agent API
// through the console's same-origin proxy for "Try a tool".

import {
  $, el, fill, pre, json, relTime, tickTimes, keyedRows, keepFocus, yesno, badge,
  clauses, labelTypes, labelFull, withCode,
} from './dom.js';
import * as toolform from './toolform.js';

const HOST_KEY = 'loomGateway.hostToken';
const RUN_TOKENS_KEY = 'loomGateway.runTokens';
const POLL_MS = 2000;

const state = {
  token: sessionStorage.getItem(HOST_KEY) || '',
  contract: null,
  codes: {},
  runId: null,
  runsCursor: null, // the run list's page (null: the first)
  runsNext: null,
  run: null, // the selected run's last summary
  last: {}, // the last JSON text of each run section, to re-render on change only
  openCalls: new Set(),
  openHandles: new Set(),
  openDocs: new Set(),
  calls: [], // the selected run's call log, as far as read
  callsOf: null, // the createdAt of the run those calls belong to
  handles: [], // and handle table
  collect: null,
  busy: null, // the poll in flight
  again: false,
  paused: false,
  timer: null,
};

const enc = encodeURIComponent;

// --- run tokens known to this tab -------------------------------------

function runTokens() {
  try {
    const v = JSON.parse(sessionStorage.getItem(RUN_TOKENS_KEY) || '{}');
    return v && typeof v === 'object' ? v : {};
  } catch {
    return {};
  }
}

function setRunToken(id, token) {
  const t = runTokens();
  if (token) t[id] = token;
  else delete t[id];
  sessionStorage.setItem(RUN_TOKENS_KEY, JSON.stringify(t));
}

// --- host API -----------------------------------------------------------

class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }
}

async function readBody(res) {
  const text = await res.text();
  if (!text) return { text, data: null };
  try {
    return { text, data: JSON.parse(text) };
  } catch {
    return { text, data: text };
  }
}

// api calls the host API. A poll (the 2 s refresh's reads) says so in
// X-Loom-Console: poll, and the gateway logs its successful GETs at debug
// level instead of info.
async function api(method, path, body, poll = false) {
  const headers = { Accept: 'application/json' };
  if (state.token) headers.Authorization = `Bearer ${state.token}`;
  if (poll) headers['X-Loom-Console'] = 'poll';
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, {
      method, headers, cache: 'no-store', credentials: 'omit',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, { code: 'network_error', title: 'Gateway unreachable', detail: 'The console could not reach the gateway.' });
  }
  const { data } = await readBody(res);
  if (!res.ok) {
    const problem = data && typeof data === 'object' ? data : { title: res.statusText, detail: data ? String(data) : '' };
    const err = new ApiError(res.status, problem);
    if (res.status === 401) {
      logout('The gateway refused the host token (unauthorized). Enter it again.');
    }
    throw err;
  }
  return data;
}

// --- problems, shown plainly -------------------------------------------

// problemBox shows a problem's code, HTTP status, title and fixed detail,
// and the members that locate it (pointer, choices, outputId, hostCode,
// requestId).
function problemBox(status, p, lead) {
  const fixed = state.codes[p.code] || {};
  return el('div', { className: 'problem-box' },
    lead ? el('p', { className: 'lead' }, lead) : null,
    el('p', {},
      el('code', { className: 'code' }, p.code || 'error'),
      status ? el('span', { className: 'muted' }, ` HTTP ${status}`) : null,
      p.title || fixed.title ? el('strong', {}, ` ${p.title || fixed.title}`) : null),
    p.detail || fixed.detail ? el('p', { className: 'detail' }, p.detail || fixed.detail) : null,
    p.pointer !== undefined ? el('p', {}, 'at ', el('code', {}, p.pointer || '(the whole body)')) : null,
    Array.isArray(p.choices) && p.choices.length ? el('p', {}, 'choices: ', p.choices.join(', ')) : null,
    p.hostCode ? el('p', {}, 'host code: ', el('code', {}, p.hostCode)) : null,
    p.outputId ? el('p', {}, 'output: ', el('code', {}, p.outputId)) : null,
    p.requestId ? el('p', { className: 'muted' }, `request ${p.requestId}`) : null);
}

function showBanner(err) {
  const b = $('#banner');
  fill(b, problemBox(err.status, err.problem), el('button', { type: 'button', className: 'link', onclick: () => { b.hidden = true; } }, 'Dismiss'));
  b.hidden = false;
}

function clearBanner() {
  $('#banner').hidden = true;
}

// labelCells gives each data cell its column's header as data-label, which
// the narrow layout shows beside the value.
function labelCells(table) {
  for (const t of [table, ...table.querySelectorAll('table.stack')]) {
    const heads = [...t.querySelectorAll(':scope > thead th')].map((th) => th.textContent.trim());
    for (const tr of t.querySelectorAll(':scope > tbody > tr')) {
      const cells = tr.querySelectorAll(':scope > td');
      if (cells.length !== heads.length) continue;
      cells.forEach((td, i) => td.setAttribute('data-label', heads[i]));
    }
  }
}

// --- session ------------------------------------------------------------

function showLogin(message) {
  $('#app').hidden = true;
  $('#forget').hidden = true;
  $('#login').hidden = false;
  const e = $('#login-error');
  e.hidden = !message;
  e.textContent = message || '';
  $('#host-token').focus();
}

function logout(message) {
  state.token = '';
  sessionStorage.removeItem(HOST_KEY);
  clearInterval(state.timer);
  state.timer = null;
  showLogin(message);
}

async function start() {
  try {
    state.contract = await api('GET', '/console/contract.json');
  } catch (e) {
    if (e.status !== 401) showLogin(`${e.problem.code || 'error'}: ${e.message}`);
    return;
  }
  $('#login').hidden = true;
  $('#app').hidden = false;
  $('#forget').hidden = false;
  buildCreateTools();
  route();
  clearInterval(state.timer);
  state.timer = setInterval(() => { if (!document.hidden) refresh(); }, POLL_MS);
}

$('#login-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const tok = $('#host-token').value.trim();
  if (!tok) return;
  state.token = tok;
  sessionStorage.setItem(HOST_KEY, tok);
  $('#host-token').value = '';
  $('#login-error').hidden = true;
  await start();
});

$('#forget').addEventListener('click', () => logout(''));
$('#runs-next').addEventListener('click', () => {
  state.runsCursor = state.runsNext;
  refresh();
});
$('#runs-first').addEventListener('click', () => {
  state.runsCursor = null;
  refresh();
});

// poll reads the host API for the 2 s refresh.
const poll = (path) => api('GET', path, undefined, true);

// The tables keep their rows across polls (keyed by runId, outputId and
// handle token), so focus, open rows and scroll stay where they were.
const runRows = keyedRows($('#runs-table tbody'));
const callRows = keyedRows($('#calls-table tbody'));
const handleRows = keyedRows($('#handles-table tbody'));

// --- runs list ------------------------------------------------------------

// The run list is read a page at a time (the gateway's default of 100):
// state.runsCursor is the page shown (null: the first), state.runsNext
// the one after it (null: none).
function renderRuns(runs, next) {
  state.runsNext = next || null;
  $('#runs-count').textContent = `(${runs.length}${next ? '+' : ''})`;
  $('#runs-empty').hidden = runs.length > 0;
  $('#runs-pages').hidden = !state.runsCursor && !state.runsNext;
  $('#runs-first').disabled = !state.runsCursor;
  $('#runs-next').disabled = !state.runsNext;
  runRows.update(runs.map((r) => {
    const selected = r.runId === state.runId;
    return {
      key: r.runId,
      sig: `${selected}${JSON.stringify(r)}`,
      build: () => el('tr', {
        className: selected ? 'selected' : '',
        'aria-current': selected ? 'true' : null,
        'data-run': r.runId,
      },
      el('td', {}, el('a', { href: `#/runs/${enc(r.runId)}`, className: 'run-link', 'data-focus': 'run-link' }, r.runId)),
      el('td', {}, relTime(r.createdAt, 'ago')),
      el('td', {}, relTime(r.expiresAt, 'until')),
      el('td', { className: 'num' }, String(r.calls)),
      el('td', { className: 'num' }, String(r.handles)),
      el('td', {}, yesno(r.hasResult))),
    };
  }));
  labelCells($('#runs-table'));
}

function buildCreateTools() {
  const fs = $('#c-tools');
  const ids = toolform.toolIds(state.contract);
  fill(fs, el('legend', {}, 'Tools offered'), ids.map((t) => el('label', { className: 'check' },
    el('input', { type: 'checkbox', name: 'tool', value: t, checked: true }), ` ${t}`)));
}

// parseClauses reads the create form's clause syntax: a JSON clause list,
// or one clause per line with alternatives separated by "|".
function parseClauses(text, what) {
  const t = text.trim();
  if (!t) return undefined;
  if (t.startsWith('[')) {
    let v;
    try {
      v = JSON.parse(t);
    } catch {
      throw new Error(`${what}: not valid JSON`);
    }
    if (!Array.isArray(v)) throw new Error(`${what}: a JSON clause list is an array`);
    return v;
  }
  return t.split('\n').map((l) => l.trim()).filter(Boolean).map((l) => {
    const alts = l.split('|').map((a) => a.trim()).filter(Boolean);
    return alts.length === 1 ? alts[0] : { anyOf: alts };
  });
}

function createError(node) {
  let e = $('#create-error');
  if (!e) {
    e = el('div', { id: 'create-error', role: 'alert' });
    $('#create-form').append(e);
  }
  fill(e, node);
  e.hidden = !node;
}

$('#create-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  createError(null);
  const f = ev.currentTarget;
  const body = {};
  try {
    const id = f.runId.value.trim();
    if (id) body.runId = id;
    const ceiling = parseClauses(f.ceiling.value, 'Ceiling');
    if (ceiling !== undefined) body.maxConfidentiality = ceiling;
    const label = parseClauses(f.label.value, 'Starting label');
    if (label !== undefined) body.modelContextLabel = { confidentiality: label };
  } catch (e) {
    createError(el('p', { className: 'error' }, e.message));
    return;
  }
  const ttl = f.ttl.value.trim();
  if (ttl) body.ttlSeconds = /^\d+$/.test(ttl) ? Number(ttl) : ttl;
  const boxes = [...f.querySelectorAll('input[name=tool]')];
  const picked = boxes.filter((b) => b.checked).map((b) => b.value);
  if (picked.length !== boxes.length) body.tools = picked;
  let created;
  try {
    created = await api('POST', '/host/v1/runs', body);
  } catch (e) {
    createError(problemBox(e.status, e.problem, 'The run was not created.'));
    return;
  }
  setRunToken(created.runId, created.token);
  const n = $('#created');
  fill(n,
    el('p', {}, 'Run ', el('code', {}, created.runId), ' created; it expires ', relTime(created.expiresAt, 'until'), '.'),
    el('p', {}, 'Its run token, shown this once (this tab keeps it for Try a tool):'),
    el('code', { className: 'token', id: 'created-token' }, created.token),
    el('button', { type: 'button', className: 'link', onclick: () => { n.hidden = true; } }, 'Hide'));
  n.hidden = false;
  f.runId.value = '';
  $('#create').open = false;
  location.hash = `#/runs/${enc(created.runId)}`;
});

// --- one run --------------------------------------------------------------

function route() {
  const m = /^#\/runs\/(.+)$/.exec(location.hash);
  const id = m ? decodeURIComponent(m[1]) : null;
  if (id !== state.runId) {
    state.runId = id;
    state.run = null;
    state.last = {};
    state.openCalls.clear();
    state.openHandles.clear();
    state.openDocs.clear();
    forgetCalls();
    state.handles = [];
    handleRows.clear();
    $('#try-response').hidden = true;
    $('#try-error').hidden = true;
  }
  $('#run').hidden = !id;
  $('#run-empty').hidden = !!id;
  if (!id) fill($('#run-empty'), 'Pick a run on the left, or create one.');
  if (id) $('#run-id').textContent = id;
  refresh();
}

window.addEventListener('hashchange', route);

function refresh() {
  if (!state.token && !$('#login').hidden) return Promise.resolve();
  if (state.paused) return Promise.resolve();
  if (state.busy) {
    state.again = true;
    return state.busy;
  }
  state.busy = pollOnce();
  return state.busy;
}

async function pollOnce() {
  try {
    const cursor = state.runsCursor ? `?cursor=${encodeURIComponent(state.runsCursor)}` : '';
    const list = await poll(`/host/v1/runs${cursor}`);
    renderRuns(list.runs || [], list.nextCursor);
    if (state.runId) await refreshRun(state.runId);
    clearBanner();
    $('#live').textContent = `updated ${new Date().toISOString().slice(11, 19)} UTC`;
  } catch (e) {
    if (e.status !== 401) showBanner(e);
  } finally {
    // Relative times ("3 s ago", "in 5 min") are re-rendered every tick
    // from their timestamps, whether or not the data changed.
    tickTimes();
    state.busy = null;
    if (state.again) {
      state.again = false;
      refresh();
    }
  }
}

async function refreshRun(id) {
  let run;
  try {
    run = await poll(`/host/v1/runs/${enc(id)}`);
  } catch (e) {
    if (e.status === 404 && state.runId === id) {
      forgetCalls();
      fill($('#run-summary'));
      $('#run').hidden = true;
      fill($('#run-empty'), el('span', { className: 'error' }, 'Run '), el('code', {}, id), el('span', { className: 'error' }, ' is gone (deleted or expired).'));
      $('#run-empty').hidden = false;
      return;
    }
    throw e;
  }
  const base = `/host/v1/runs/${enc(id)}`;
  const [calls, handles, result] = await Promise.all([
    readCalls(base, run),
    poll(`${base}/handles`),
    run.hasResult ? poll(`${base}/result`) : Promise.resolve(null),
  ]);
  if (state.runId !== id) return;
  if (calls.reset) forgetCalls();
  state.callsOf = run.createdAt;
  const first = !state.run;
  state.run = run;
  $('#run').hidden = false;
  $('#run-empty').hidden = true;
  renderSummary(run);
  if (first) buildTry(run);
  section('labels', [run.ceiling, run.modelContextLabel], renderLabels);
  // A record is never changed once logged, so the run and the log's
  // length name its content: no need to compare the whole log each poll.
  section('calls', calls.calls, renderCalls, `${run.createdAt} ${calls.calls.length}`);
  section('handles', handles.handles || [], renderHandles);
  section('result', result, renderResult);
}

// readCalls reads the run's call log. A log only grows while its run
// lives, so it asks only for the records after those already held
// (?after=n) and appends them; it starts over (reset) when the run is not
// the one they came from (deleted and created again under the id) or the
// log is shorter than what is held.
async function readCalls(base, run) {
  const held = state.callsOf === run.createdAt ? state.calls.length : 0;
  const page = await poll(`${base}/calls?after=${held}`);
  const fresh = page.calls || [];
  if (held > 0 && typeof page.total === 'number' && page.total < held) {
    const all = await poll(`${base}/calls?after=0`);
    return { calls: all.calls || [], reset: true };
  }
  if (held === 0) return { calls: fresh, reset: state.calls.length > 0 };
  return { calls: fresh.length ? state.calls.concat(fresh) : state.calls, reset: false };
}

// forgetCalls drops the call log held for the shown run.
function forgetCalls() {
  state.calls = [];
  state.callsOf = null;
  state.openCalls.clear();
  delete state.last.calls;
  callRows.clear();
}

// section re-renders a part of the run view only when its data changed
// (its text, or the key given), so open rows and shown values stay as the
// operator left them.
function section(name, data, render, text = JSON.stringify(data)) {
  if (state.last[name] === text) return;
  state.last[name] = text;
  render(data);
}

function renderSummary(run) {
  const dd = (k, ...v) => [el('dt', {}, k), el('dd', {}, ...v)];
  fill($('#run-summary'),
    dd('Created', relTime(run.createdAt, 'ago')),
    dd('Expires', relTime(run.expiresAt, 'until')),
    dd('Calls', String(run.calls)),
    dd('Handles', String(run.handles)),
    dd('Result', yesno(run.hasResult)),
    dd('Tools', (run.tools || []).length ? (run.tools || []).join(', ') : el('span', { className: 'muted' }, 'none')));
}

function renderLabels([ceiling, mcl]) {
  fill($('#run-ceiling'),
    clauses(ceiling, 'No ceiling: admits every readable label.'),
    el('p', { className: 'hint' }, 'The gateway\'s --max-confidentiality flag met with the ceiling the host gave this run (maxConfidentiality), before the loom read-ceiling record. A row is admitted when its label fits every clause.'));
  fill($('#run-mcl'),
    clauses(mcl ? mcl.confidentiality : [], 'none'),
    el('p', { className: 'hint' }, 'The join of what this run has observed; unlabeled rows take it as their query label.'));
}

function codeDetail(code) {
  const c = state.codes[code];
  return c ? c.detail : '';
}

// setToggle shows a toggle button open or closed, in place.
function setToggle(button, open, openText, closedText) {
  if (!button) return;
  const expanded = String(open);
  if (button.getAttribute('aria-expanded') !== expanded) button.setAttribute('aria-expanded', expanded);
  const text = open ? openText : closedText;
  if (button.textContent !== text) button.textContent = text;
}

function renderCalls(calls) {
  state.calls = calls;
  $('#calls-count').textContent = `(${calls.length})`;
  $('#calls-empty').hidden = calls.length > 0;
  const items = [];
  calls.map((c, i) => [c, i + 1]).reverse().forEach(([c, n]) => {
    const sig = JSON.stringify(c);
    items.push({ key: `call:${c.outputId}`, sig: `${n}${sig}`, build: () => callRow(c, n) });
    if (state.openCalls.has(c.outputId)) {
      items.push({
        key: `detail:${c.outputId}`,
        sig,
        build: () => el('tr', { className: 'detail-row', 'data-output-detail': c.outputId }, el('td', { colspan: 11 }, callDetail(c))),
      });
    }
  });
  callRows.update(items);
  for (const c of calls) {
    const row = callRows.get(`call:${c.outputId}`);
    setToggle(row && row.querySelector('button.toggle'), state.openCalls.has(c.outputId), '▾', '▸');
  }
  labelCells($('#calls-table'));
}

function callRow(c, n) {
  const toggle = el('button', {
    type: 'button', className: 'toggle', 'aria-expanded': 'false', 'data-focus': 'toggle',
    'aria-label': `entries of ${c.outputId}`, title: 'Show entries',
    onclick: () => {
      if (state.openCalls.has(c.outputId)) state.openCalls.delete(c.outputId);
      else state.openCalls.add(c.outputId);
      renderCalls(state.calls);
    },
  }, '▸');
  const status = c.status === 'ok'
    ? badge('ok')
    : el('span', {}, badge('error'), ' ', el('code', { className: 'code' }, c.code || ''), c.hostCode ? el('span', { className: 'muted' }, ` host ${c.hostCode}`) : null,
      c.failure ? el('span', { className: 'muted failure-reason', 'data-failure-reason': c.failure.reason, title: 'why it failed (host only)' }, ` ${c.failure.reason}`) : null);
  return el('tr', { className: `call ${c.status}`, 'data-output': c.outputId },
    el('td', {}, toggle),
    el('td', { className: 'num' }, String(n)),
    el('td', {}, c.tool),
    el('td', {}, el('code', {}, c.outputId),
      c.traceId ? el('div', { className: 'muted trace', title: 'trace id (OpenTelemetry)' }, 'trace ', el('code', { 'data-trace-id': c.traceId }, c.traceId)) : null),
    el('td', {}, status),
    el('td', { className: 'num adm' }, String(c.admitted)),
    el('td', { className: 'num wh' }, String(c.withheld)),
    el('td', { className: 'num' }, String(c.omitted)),
    el('td', {}, yesno(c.truncated)),
    el('td', { className: 'num' }, String(c.durationMs)),
    el('td', { className: 'num' }, c.exitCode === undefined || c.exitCode === null ? '—' : String(c.exitCode)));
}

function callDetail(c) {
  const entries = c.entries || [];
  return el('div', { className: 'call-detail' },
    el('p', { className: 'muted' }, 'started ', relTime(c.startedAt, 'ago'), ` · cfc version ${c.cfc ? c.cfc.version : '?'}`),
    c.status !== 'ok' ? el('div', { className: 'problem-box' },
      el('p', {}, el('code', { className: 'code' }, c.code || 'error'), state.codes[c.code] ? el('strong', {}, ` ${state.codes[c.code].title}`) : null),
      codeDetail(c.code) ? el('p', { className: 'detail' }, codeDetail(c.code)) : null,
      c.hostCode ? el('p', {}, 'host code: ', el('code', {}, c.hostCode)) : null,
      c.failure ? failureDetail(c.failure) : null) : null,
    el('div', {}, el('h4', {}, 'Observed label (cfc join)'),
      clauses(c.cfc && c.cfc.observedLabel ? c.cfc.observedLabel.confidentiality : null, 'none recorded')),
    entries.length === 0 ? el('p', { className: 'muted' }, 'No entries.') : el('div', { className: 'table-wrap' },
      el('table', { className: 'entries stack' },
        el('thead', {}, el('tr', {}, ['#', 'Status', 'Reason code', 'Label source', 'Atom types', 'Handle'].map((h) => el('th', {}, h)))),
        el('tbody', {}, entries.map((e, i) => el('tr', { className: `entry ${e.status}` },
          el('td', { className: 'num' }, String(i + 1)),
          el('td', {}, badge(e.status), e.truncated ? el('span', { className: 'muted' }, ' truncated') : null),
          el('td', {}, e.reasonCode ? el('code', {}, e.reasonCode) : '—'),
          el('td', {}, e.labelSource || '—'),
          el('td', {}, e.label ? labelTypes(e.label) : '—'),
          el('td', {}, e.handle ? el('code', {}, e.handle) : '—')))))));
}

// failureDetail shows why a call failed, for the host only: the reason,
// the gateway's detail, loom's argv and the tail of its stderr, all as
// text (never markup).
function failureDetail(f) {
  return el('div', { className: 'failure', 'data-failure': f.reason },
    el('p', {}, 'reason: ', el('code', {}, f.reason), f.detail ? el('span', {}, ` — ${f.detail}`) : null),
    f.argv ? el('div', {}, el('h4', {}, 'argv'), pre(f.argv.map(shellWord).join(' '), 'argv')) : null,
    f.stderrTail ? el('div', {}, el('h4', {}, 'stderr (tail)'), pre(f.stderrTail, 'stderr')) : el('p', { className: 'muted' }, 'loom wrote nothing to stderr.'));
}

// shellWord quotes an argv element as a POSIX shell word, for reading
// (and pasting) the command line.
function shellWord(a) {
  return /^[A-Za-z0-9_@%+=:,.\/-]+$/.test(a) ? a : `'${a.replaceAll("'", "'\\''")}'`;
}

function renderHandles(handles) {
  state.handles = handles;
  $('#handles-count').textContent = `(${handles.length})`;
  $('#handles-empty').hidden = handles.length > 0;
  const items = [];
  for (const h of handles) {
    const sig = JSON.stringify(h);
    items.push({ key: `handle:${h.token}`, sig, build: () => handleRow(h) });
    if (state.openHandles.has(h.token)) {
      items.push({
        key: `detail:${h.token}`,
        sig,
        build: () => el('tr', { className: 'detail-row', 'data-token-detail': h.token }, el('td', { colspan: 6 },
          el('div', { className: 'handle-detail' },
            el('h4', {}, 'Value'), pre(h.value, 'json value'),
            el('h4', {}, 'Full label'), labelFull(h.label)))),
      });
    }
  }
  handleRows.update(items);
  for (const h of handles) {
    const row = handleRows.get(`handle:${h.token}`);
    setToggle(row && row.querySelector('button.show-value'), state.openHandles.has(h.token), 'Hide value', 'Show value');
  }
  labelCells($('#handles-table'));
}

function handleRow(h) {
  return el('tr', { className: 'handle', 'data-token': h.token },
    el('td', {}, el('code', {}, h.token)),
    el('td', {}, h.kind),
    el('td', {}, h.source),
    el('td', {}, h.labelSource),
    el('td', {}, labelTypes(h.label)),
    el('td', {}, el('button', {
      type: 'button', className: 'show-value', 'aria-expanded': 'false', 'data-focus': 'show-value',
      onclick: () => {
        if (state.openHandles.has(h.token)) state.openHandles.delete(h.token);
        else state.openHandles.add(h.token);
        renderHandles(state.handles);
      },
    }, 'Show value')));
}

function renderResult(res) {
  const box = $('#result');
  if (!res) {
    fill(box, el('p', { className: 'muted' }, 'No result written yet.'));
    return;
  }
  const docs = res.documents || [];
  const docRows = [];
  for (const d of docs) {
    const open = state.openDocs.has(d.id);
    docRows.push(el('tr', { 'data-key': d.id },
      el('td', {}, el('code', {}, d.id)),
      el('td', {}, d.source),
      el('td', {}, labelFull(d.label)),
      el('td', {}, el('button', {
        type: 'button', 'aria-expanded': String(open), 'data-focus': 'doc-value',
        onclick: () => {
          if (state.openDocs.has(d.id)) state.openDocs.delete(d.id);
          else state.openDocs.add(d.id);
          renderResult(res);
        },
      }, open ? 'Hide value' : 'Show value'))));
    if (open) docRows.push(el('tr', { className: 'detail-row' }, el('td', { colspan: 4 }, pre(d.value, 'json value'))));
  }
  keepFocus(box, () => fill(box,
    el('div', { className: 'labels' },
      el('div', {}, el('h4', {}, 'Result label'), labelFull(res.label)),
      el('div', {}, el('h4', {}, 'Receipt'), labelFull(res.receipt))),
    el('h4', {}, 'Value'), pre(res.value, 'json value'),
    el('h4', {}, `Documents (${docs.length})`),
    docs.length ? el('div', { className: 'table-wrap' }, el('table', { className: 'stack' },
      el('thead', {}, el('tr', {}, ['Id', 'Source', 'Label', ''].map((h) => el('th', {}, h)))),
      el('tbody', {}, docRows))) : el('p', { className: 'muted' }, 'No documents.')));
  const docTable = box.querySelector('table.stack');
  if (docTable) labelCells(docTable);
}

// --- delete ---------------------------------------------------------------

$('#delete-run').addEventListener('click', async () => {
  const id = state.runId;
  if (!id) return;
  if (!window.confirm(`Delete run ${id} and all its state? Calls in flight answer cancelled.`)) return;
  // No poll may read the run while it goes away.
  state.paused = true;
  try {
    await state.busy;
    await api('DELETE', `/host/v1/runs/${enc(id)}`);
  } catch (e) {
    if (e.status !== 401) showBanner(e);
    return;
  } finally {
    state.paused = false;
  }
  state.runId = null;
  setRunToken(id, '');
  const n = $('#created');
  fill(n, el('p', {}, 'Run ', el('code', {}, id), ' deleted.'));
  n.hidden = false;
  location.hash = '#/';
});

// --- try a tool -----------------------------------------------------------

function buildTry(run) {
  const offered = new Set(run.tools || []);
  const tools = toolform.AGENT_ROUTES.filter((t) => offered.has(t) || !toolform.toolIds(state.contract).includes(t))
    .filter((t) => toolform.operation(state.contract, t));
  const sel = $('#try-tool');
  const keep = sel.value;
  fill(sel, tools.map((t) => el('option', { value: t }, t)));
  if (tools.includes(keep)) sel.value = keep;
  $('#try-token').value = runTokens()[run.runId] || '';
  $('#try-token').placeholder = runTokens()[run.runId] ? '' : (run.runId === 'demo'
    ? 'not known in this tab: paste the run token that gateway --demo printed'
    : 'not known in this tab: paste the run token');
  buildToolFields();
}

function buildToolFields() {
  const tool = $('#try-tool').value;
  fill($('#try-desc'), withCode(toolform.describe(state.contract, tool)));
  state.collect = toolform.build(state.contract, tool, $('#try-fields'));
}

$('#try-tool').addEventListener('change', buildToolFields);

$('#try-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const err = $('#try-error');
  err.hidden = true;
  const id = state.runId;
  const tool = $('#try-tool').value;
  let body;
  try {
    body = state.collect();
  } catch (e) {
    err.textContent = e.message;
    err.hidden = false;
    return;
  }
  const token = $('#try-token').value.trim();
  if (!token) {
    err.textContent = 'A run token is needed: the gateway keeps only its hash, so it is known here only for runs created in this tab. Paste it above.';
    err.hidden = false;
    return;
  }
  const send = $('#try-send');
  send.disabled = true;
  const t0 = performance.now();
  let res;
  let bodyRead;
  try {
    res = await fetch(`/console/agent/v1/runs/${enc(id)}/${enc(tool)}`, {
      method: 'POST',
      cache: 'no-store',
      credentials: 'omit',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json',
        Authorization: `Bearer ${token}`,
        'X-Host-Token': state.token,
      },
      body: JSON.stringify(body),
    });
    bodyRead = await readBody(res);
  } catch {
    err.textContent = 'The console could not reach the gateway.';
    err.hidden = false;
    return;
  } finally {
    send.disabled = false;
  }
  const ms = Math.round(performance.now() - t0);
  if (res.status !== 401) setRunToken(id, token);
  renderTryResponse(tool, body, res, bodyRead, ms);
  refresh();
});

function renderTryResponse(tool, sent, res, { text, data }, ms) {
  const box = $('#try-response');
  const ctype = res.headers.get('Content-Type') || '';
  const isProblem = ctype.startsWith('application/problem+json') || (!res.ok && data && typeof data === 'object');
  const parts = [
    el('p', { className: 'status-line' },
      el('strong', {}, `HTTP ${res.status}`), ` ${res.statusText || ''} · `, el('code', {}, ctype || 'no content type'), ` · ${ms} ms · `,
      el('code', {}, `POST /v1/runs/${state.runId}/${tool}`)),
  ];
  if (isProblem) {
    parts.push(problemBox(res.status, data && typeof data === 'object' ? data : { detail: text }, 'The agent got an error:'));
  } else if (data && typeof data === 'object' && Array.isArray(data.entries)) {
    parts.push(toolResultView(data));
  }
  parts.push(el('details', { className: 'raw', open: !Array.isArray(data && data.entries) && !isProblem },
    el('summary', {}, 'Response body as the agent sees it'), pre(data && typeof data === 'object' ? json(data) : text)));
  parts.push(el('details', { className: 'raw' }, el('summary', {}, 'Request body'), pre(sent)));
  fill(box, parts);
  box.hidden = false;
}

function toolResultView(r) {
  return el('div', { className: 'tool-result' },
    el('p', {},
      el('code', {}, r.outputId), ' ', badge(r.status || 'ok'), ` kind ${r.kind} · `,
      el('span', { className: 'adm' }, `${r.admitted} admitted`), ' · ',
      el('span', { className: 'wh' }, `${r.withheld} withheld`), ` · ${r.omitted} omitted · truncated ${r.truncated ? 'yes' : 'no'}`),
    r.notice ? el('p', { className: 'notice-text' }, r.notice) : null,
    el('ol', { className: 'entry-list' }, r.entries.map((e) => el('li', { className: `entry ${e.status}` },
      el('div', { className: 'entry-head' },
        badge(e.status),
        e.reasonCode ? el('code', {}, e.reasonCode) : null,
        e.labelSource ? el('span', { className: 'muted' }, `label from ${e.labelSource}`) : null,
        e.handle ? el('code', { className: 'handle-token' }, e.handle) : null,
        e.truncated ? el('span', { className: 'muted' }, 'truncated') : null),
      e.label ? labelTypes(e.label) : null,
      e.value !== undefined ? pre(e.value, 'json value') : null))));
}

// --- boot -----------------------------------------------------------------

async function boot() {
  try {
    const res = await fetch('codes.json', { cache: 'no-store' });
    if (res.ok) state.codes = await res.json();
  } catch {
    // The page works without the fixed texts; problems carry their own.
  }
  if (state.token) await start();
  else showLogin('');
}

document.addEventListener('visibilitychange', () => { if (!document.hidden && state.timer) refresh(); });
boot();
