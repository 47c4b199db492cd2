// Browser test of the operator console (issue 10). scripts/console-test.sh
// builds the gateway, starts it with --demo and runs this file with
// CONSOLE_URL (the console's URL) and HOST_TOKEN (parsed from the demo
// output). It drives Debian's chromium through playwright-core, and fails
// on any failed step or any console error of the page.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const CONSOLE_URL = process.env.CONSOLE_URL;
const HOST_TOKEN = process.env.HOST_TOKEN;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const OUT = fileURLToPath(new URL('./out/', import.meta.url));
const RUN = `console-e2e-${process.pid}`;
const STEP_TIMEOUT = 15_000;
const GATEWAY_LOG = process.env.GATEWAY_LOG; // the gateway's text log, info level

// gatewayLog returns the gateway's log lines (none when GATEWAY_LOG is unset).
function gatewayLog() {
  return GATEWAY_LOG ? readFileSync(GATEWAY_LOG, 'utf8').split('\n') : [];
}

// schemaOrder returns the property names of a components schema in the
// order api/openapi.yaml declares them (a plain reading of its indentation).
function schemaOrder(name) {
  const lines = readFileSync(new URL('../../api/openapi.yaml', import.meta.url), 'utf8').split('\n');
  let i = lines.indexOf(`    ${name}:`);
  assert.ok(i >= 0, `schema ${name} in api/openapi.yaml`);
  for (i++; i < lines.length && !/^ {6}properties:\s*$/.test(lines[i]); i++) {
    assert.ok(/^ {6,}/.test(lines[i]), `schema ${name} has properties`);
  }
  const names = [];
  for (i++; i < lines.length && (/^ {8,}/.test(lines[i]) || lines[i].trim() === ''); i++) {
    const m = /^ {8}([A-Za-z_][A-Za-z0-9_]*):/.exec(lines[i]);
    if (m) names.push(m[1]);
  }
  return names;
}

mkdirSync(OUT, { recursive: true });

// get fetches url and reads the whole body, so no socket stays busy.
async function get(url, init) {
  const res = await fetch(url, init);
  await res.arrayBuffer();
  return res;
}

test('operator console on a --demo gateway', { timeout: 180_000 }, async (t) => {
  assert.ok(CONSOLE_URL, 'CONSOLE_URL is set (run scripts/console-test.sh)');
  assert.ok(HOST_TOKEN, 'HOST_TOKEN is set (run scripts/console-test.sh)');
  const origin = new URL(CONSOLE_URL).origin;

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  t.after(() => browser.close());
  // Console errors fail the test, except ones a step announces it expects
  // (the browser logs every 4xx fetch as "Failed to load resource").
  const consoleErrors = [];
  const expected = [];
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  // The page must reach nothing but the gateway.
  await context.route('**/*', (route) => {
    const u = new URL(route.request().url());
    if (u.origin === origin || u.protocol === 'data:') return route.continue();
    consoleErrors.push(`request to another origin: ${u.href}`);
    return route.abort();
  });
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_TIMEOUT);

  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const i = expected.findIndex((re) => re.test(msg.text()));
    if (i >= 0) expected.splice(i, 1);
    else consoleErrors.push(msg.text());
  });
  page.on('pageerror', (err) => consoleErrors.push(`page error: ${err.message}`));
  // The console's reads of the host API, with their X-Loom-Console header
  // and query string.
  const hostReads = [];
  page.on('request', (req) => {
    const u = new URL(req.url());
    if (req.method() === 'GET' && u.pathname.startsWith('/host/v1/')) hostReads.push([u.pathname, req.headers()['x-loom-console'], u.search]);
  });
  page.on('requestfailed', (req) => consoleErrors.push(`request failed: ${req.method()} ${req.url()} ${req.failure()?.errorText}`));

  let failed = false;
  const step = (name, fn) => t.test(name, async (st) => {
    if (failed) {
      st.skip('an earlier step failed');
      return;
    }
    try {
      await fn();
      assert.deepEqual(consoleErrors, [], 'no console errors');
    } catch (e) {
      failed = true;
      await page.screenshot({ path: `${OUT}failure.png`, fullPage: true }).catch(() => {});
      throw e;
    }
  });

  await step('static assets are public, data needs the host token', async () => {
    for (const p of ['', 'app.js', 'style.css', 'dom.js', 'toolform.js', 'codes.json']) {
      const res = await get(new URL(p, CONSOLE_URL));
      assert.equal(res.status, 200, `GET /console/${p}`);
      assert.match(res.headers.get('content-security-policy') || '', /default-src 'none'/);
    }
    for (const p of ['/host/v1/runs', '/console/contract.json']) {
      const res = await get(origin + p);
      assert.equal(res.status, 401, `GET ${p} without the host token`);
    }
    const res = await get(`${origin}/console/agent/v1/runs/demo/loom_search`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"query":"atlas"}',
    });
    assert.equal(res.status, 401, 'the agent proxy without the host token');
  });

  await step('enter the host token', async () => {
    await page.goto(CONSOLE_URL);
    await page.locator('#login').waitFor({ state: 'visible' });
    await page.screenshot({ path: `${OUT}login-1280x800.png` });
    await page.fill('#host-token', HOST_TOKEN);
    await page.click('#login-form button[type=submit]');
    await page.locator('#app').waitFor({ state: 'visible' });
    await page.locator('#runs-table tr[data-run="demo"]').waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('loomGateway.hostToken')), HOST_TOKEN);
  });

  await step('create a run', async () => {
    await page.click('#create summary');
    await page.fill('#c-runid', RUN);
    await page.fill('#c-ceiling', 'https://loom.example/facet/work');
    await page.fill('#c-label', 'https://loom.example/facet/work | https://loom.example/facet/home');
    await page.fill('#c-ttl', '900');
    await page.click('#create-form button[type=submit]');
    await page.locator('#created-token').waitFor();
    assert.ok((await page.textContent('#created-token')).trim().length >= 40, 'the run token is shown once');
    await page.waitForFunction((id) => document.querySelector('#run-id')?.textContent === id, RUN);
    await page.locator(`#runs-table tr[data-run="${RUN}"]`).waitFor();
    await page.locator('#run-ceiling li').first().waitFor();
    assert.match(await page.textContent('#run-ceiling'), /https:\/\/loom\.example\/facet\/work/);
    // anyOf shown as alternatives.
    await page.locator('#run-mcl li').first().waitFor();
    assert.match(await page.textContent('#run-mcl li'), /facet\/work or https:\/\/loom\.example\/facet\/home/);
    assert.notEqual(await page.inputValue('#try-token'), '', 'the run token is known to this tab');
  });

  await step('the try-a-tool fields are in the contract\'s schema order', async () => {
    await page.selectOption('#try-tool', 'loom_search');
    const want = schemaOrder('SearchInput');
    assert.ok(want.length >= 5, `SearchInput properties from api/openapi.yaml: ${want}`);
    const got = await page.$$eval('#try-fields .field :is(input, select, textarea)', (es) => es.map((e) => e.name));
    assert.deepEqual(got, want, 'the loom_search fields in the order of SearchInput\'s properties (not sorted)');
    assert.notDeepEqual(got, [...want].sort(), 'the order is not alphabetical');
    const desc = await page.textContent('#try-desc');
    assert.ok(!desc.includes('`') && await page.locator('#try-desc code').count() >= 1, `the tool's description shows its code spans as code, without backticks: ${desc}`);
    const hints = await page.$$eval('#try-fields .hint', (es) => es.map((e) => e.textContent).join('\n'));
    assert.ok(!hints.includes('`'), `the field hints show no backticks: ${hints}`);
  });

  await step('run loom_search "atlas" through the form', async () => {
    await page.selectOption('#try-tool', 'loom_search');
    await page.fill('#f-loom_search-query', 'atlas');
    await page.click('#try-send');
    await page.locator('#try-response .tool-result').waitFor();
    assert.match(await page.textContent('#try-response .status-line'), /HTTP 200/);
    assert.ok(await page.locator('#try-response li.entry.admitted').count() >= 1, 'admitted entries in the response');
    assert.ok(await page.locator('#try-response li.entry.withheld').count() >= 1, 'withheld entries in the response');
  });

  await step('the call and its admitted and withheld entries are in the log', async () => {
    const row = page.locator(`#calls-table tr.call[data-output="${RUN}:loom_search:1"]`);
    await row.waitFor();
    assert.match(await row.textContent(), /loom_search/);
    if (process.env.TRACED === '1') {
      assert.match(await row.locator('[data-trace-id]').textContent(), /^[0-9a-f]{32}$/, 'the call shows its trace id');
    }
    await row.locator('button.toggle').click();
    const detail = page.locator(`#calls-table tr[data-output-detail="${RUN}:loom_search:1"]`);
    await detail.waitFor();
    assert.ok(await detail.locator('tr.entry.admitted').count() >= 1, 'admitted entries in the log');
    assert.ok(await detail.locator('tr.entry.withheld').count() >= 1, 'withheld entries in the log');
    assert.match(await detail.locator('tr.entry.withheld').first().textContent(), /cfc_(ceiling_exceeded|label_read_failed)/);
    // The expanded row survives the 2 s poll.
    await page.waitForTimeout(2500);
    assert.equal(await detail.count(), 1, 'the open call stays open across refreshes');
  });

  await step('keyboard focus stays on a call\'s toggle across refreshes', async () => {
    const id = `${RUN}:loom_search:1`;
    const toggle = page.locator(`#calls-table tr.call[data-output="${id}"] button.toggle`);
    const detail = page.locator(`#calls-table tr[data-output-detail="${id}"]`);
    const focused = () => page.evaluate(() => {
      const a = document.activeElement;
      return a && a.matches('button.toggle') ? `${a.closest('tr').getAttribute('data-output')} ${a.getAttribute('aria-expanded')}` : `${a && a.tagName}`;
    });
    // Close with the keyboard, then open again: focus stays on the button.
    await toggle.focus();
    await page.keyboard.press('Enter');
    await detail.waitFor({ state: 'detached' });
    assert.equal(await focused(), `${id} false`, 'focus on the toggle after closing');
    await page.keyboard.press('Enter');
    await detail.waitFor();
    assert.equal(await focused(), `${id} true`, 'focus on the toggle after opening');
    // Polls with no new data: still focused, still open.
    await page.waitForTimeout(2500);
    assert.equal(await focused(), `${id} true`, 'focus kept across polls');
    // A new call changes the call log: the table updates, focus stays.
    const runToken = await page.inputValue('#try-token');
    const res = await get(`${origin}/console/agent/v1/runs/${RUN}/loom_profile`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Host-Token': HOST_TOKEN, Authorization: `Bearer ${runToken}` },
      body: '{}',
    });
    assert.notEqual(res.status, 401, 'loom_profile through the proxy');
    await page.locator(`#calls-table tr.call[data-output="${RUN}:loom_profile:2"]`).waitFor();
    assert.equal(await focused(), `${id} true`, 'focus kept when the call log changed');
    assert.equal(await detail.count(), 1, 'the open call stays open when the call log changed');
    await page.keyboard.press('Enter');
    await detail.waitFor({ state: 'detached' });
    await page.keyboard.press('Enter');
    await detail.waitFor();
  });

  await step('relative times are re-rendered each poll', async () => {
    const id = `${RUN}:loom_search:1`;
    const detail = page.locator(`#calls-table tr[data-output-detail="${id}"]`);
    if (await detail.count() === 0) {
      await page.locator(`#calls-table tr.call[data-output="${id}"] button.toggle`).click();
      await detail.waitFor();
    }
    const started = detail.locator('time').first();
    const before = await started.textContent();
    assert.match(before, /ago$/);
    // No data changes now: the text still moves on with the clock.
    await page.waitForFunction(([sel, text]) => document.querySelector(sel)?.textContent !== text,
      [`#calls-table tr[data-output-detail="${id}"] time`, before], { timeout: 6000 });
    const after = await started.textContent();
    assert.notEqual(after, before, `"started ${before}" re-rendered`);
    assert.equal(await started.getAttribute('datetime'), await started.getAttribute('title'));
  });

  await step('console polls are marked and logged at debug, not info', async () => {
    const polls = hostReads.filter(([p]) => p === '/host/v1/runs');
    assert.ok(polls.length >= 3, `the console polled (${polls.length} reads of /host/v1/runs)`);
    assert.deepEqual(polls.filter(([, h]) => h !== 'poll'), [], 'every poll read carries X-Loom-Console: poll');
    if (!GATEWAY_LOG) return;
    // (An error, like the first step's 401s, stays at info.)
    const info = gatewayLog().filter((l) => /msg=request /.test(l) && / method=GET /.test(l) && / route=\/host\/v1\/runs[ /]/.test(l) && / status=(2\d\d|304) /.test(l));
    assert.deepEqual(info, [], 'no info request records of the console\'s polls');
    const created = gatewayLog().filter((l) => /level=INFO msg=request /.test(l) && / method=POST route=\/host\/v1\/runs /.test(l));
    assert.ok(created.length >= 1, 'the run creation (a POST) is logged at info');
  });

  await step('the call log is read incrementally: a poll asks only for the calls after those held', async () => {
    const path = `/host/v1/runs/${RUN}/calls`;
    const reads = () => hostReads.filter(([p]) => p === path);
    const afters = reads().map(([, , q]) => new URLSearchParams(q).get('after'));
    assert.ok(afters.length >= 3, `the console read the call log (${afters.length} reads)`);
    assert.deepEqual(afters.filter((a) => !/^\d+$/.test(a || '')), [], 'every read of the call log carries after=<count held>');
    assert.ok(afters.includes('1'), `after=1 once the first call was shown: ${afters}`);
    assert.ok(afters.includes('2'), `after=2 once both calls were shown: ${afters}`);
    assert.deepEqual(reads().filter(([, h]) => h !== 'poll'), [], 'every read of the call log carries X-Loom-Console: poll');
    // The next poll asks for what follows the rows shown.
    const shown = await page.locator('#calls-table tr.call').count();
    assert.ok(shown >= 2, `calls shown (${shown})`);
    const seen = reads().length;
    for (let i = 0; i < 60 && reads().length === seen; i++) await page.waitForTimeout(100);
    const next = reads().slice(seen);
    assert.ok(next.length >= 1, 'the console polled the call log again');
    assert.equal(new URLSearchParams(next[0][2]).get('after'), String(shown), 'the poll asks for the calls after those shown');
    assert.equal(await page.locator('#calls-table tr.call').count(), shown, 'no call shown twice');
    assert.equal(await page.textContent('#calls-count'), `(${shown})`);
  });

  await step('open a handle\'s value', async () => {
    const handle = page.locator('#handles-table tr.handle').first();
    await handle.waitFor();
    const token = await handle.getAttribute('data-token');
    assert.match(token, /^cfh:v:/);
    await handle.locator('button.show-value').click();
    const value = page.locator(`#handles-table tr[data-token-detail="${token}"] pre.value`);
    await value.waitFor();
    assert.match(await value.textContent(), /atlas/i);
  });

  await step('screenshots at 1280x800', async () => {
    await page.screenshot({ path: `${OUT}run-1280x800.png` });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: `${OUT}run-1280x800-full.png`, fullPage: true });
  });

  await step('an error is shown plainly with its code and detail', async () => {
    expected.push(/status of 400/);
    await page.fill('#f-loom_search-query', '');
    await page.click('#try-send');
    const box = page.locator('#try-response .problem-box');
    await box.waitFor();
    const text = await box.textContent();
    assert.match(text, /invalid_input/);
    assert.match(text, /HTTP 400/);
    // The detail names the fault, and its pointer is shown.
    assert.match(text, /The member \/query is required/);
    assert.match(text, /at \/query/);
    // One request id for the console's request and the agent's.
    const rid = /request ([0-9a-f]{16,})/.exec(text);
    assert.ok(rid, `the problem shows its request id: ${text}`);
    if (GATEWAY_LOG) {
      const recs = gatewayLog().filter((l) => /msg=request /.test(l) && l.includes(` requestId=${rid[1]} `));
      assert.ok(recs.some((l) => / listener=host /.test(l) && /route=\/console\/agent\//.test(l)), `the console's request record has the id: ${recs.join('\n')}`);
      assert.ok(recs.some((l) => / listener=agent /.test(l) && /route=\/v1\/runs\//.test(l)), `the agent's request record has the same id: ${recs.join('\n')}`);
    }
    for (let i = 0; i < 20 && expected.length; i++) await page.waitForTimeout(100);
    assert.deepEqual(expected, [], 'the expected 400 was logged once');
  });

  await step('readable at 390 px', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(300);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(overflow <= 390, `no page-wide horizontal scroll at 390 px (scrollWidth ${overflow})`);
    await page.screenshot({ path: `${OUT}run-390x844.png` });
    await page.locator('#calls-table').scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${OUT}calls-390x844.png` });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: `${OUT}run-390x844-full.png`, fullPage: true });
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  await step('a run deleted and created again under its id is read from the start', async () => {
    const shown = await page.locator('#calls-table tr.call').count();
    assert.ok(shown >= 2, `calls shown (${shown})`);
    // A poll between the two requests may meet the run gone (404).
    expected.push(/status of 404/, /status of 404/, /status of 404/);
    const auth = { Authorization: `Bearer ${HOST_TOKEN}` };
    assert.equal((await get(`${origin}/host/v1/runs/${RUN}`, { method: 'DELETE', headers: auth })).status, 204);
    const res = await get(`${origin}/host/v1/runs`, {
      method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify({ runId: RUN, ttlSeconds: 900 }),
    });
    assert.equal(res.status, 201, 'the run created again');
    await page.waitForFunction(() => document.querySelector('#calls-count')?.textContent === '(0)' && !document.querySelector('#run').hidden);
    assert.equal(await page.locator('#calls-table tr.call').count(), 0, 'no call of the old run shown');
    const seen = hostReads.length;
    for (let i = 0; i < 60 && !hostReads.slice(seen).some(([p]) => p === `/host/v1/runs/${RUN}/calls`); i++) await page.waitForTimeout(100);
    const next = hostReads.slice(seen).filter(([p]) => p === `/host/v1/runs/${RUN}/calls`);
    assert.ok(next.length >= 1, 'the console polled the call log again');
    assert.equal(new URLSearchParams(next[0][2]).get('after'), '0', 'the new run\'s log is read from its start');
    expected.length = 0;
  });

  await step('a failed call shows why, as text', async () => {
    // A failure the host's call log would hold, served to the page for
    // this step: the reason beside the code, and once opened the detail,
    // argv and stderr tail, each as text (markup in loom's stderr or in
    // an argument stays text).
    const stderrTail = '…loom: index locked\n<img src=x onerror="window.__pwned=1"><b>bold</b>\n';
    const argv = ['/opt/loom/bin/loom', 'search', "it's <b>atlas</b>", '--json'];
    const rec = {
      outputId: `${RUN}:loom_search:1`, tool: 'loom_search', status: 'error', code: 'command_failed',
      admitted: 0, withheld: 0, omitted: 0, truncated: false, cfc: { version: 1 }, exitCode: 3, durationMs: 12,
      startedAt: new Date().toISOString(),
      failure: { reason: 'exit_status', detail: 'exit status 3', stderrTail, argv },
    };
    await page.route(`**/host/v1/runs/${RUN}/calls*`, (route) => route.fulfill({
      status: 200, contentType: 'application/json', body: JSON.stringify({ calls: [rec], total: 1 }),
    }));
    try {
      const row = page.locator(`#calls-table tr.call[data-output="${rec.outputId}"]`);
      await row.waitFor();
      assert.equal((await row.locator('[data-failure-reason]').textContent()).trim(), 'exit_status', 'the reason beside the code');
      await row.locator('button.toggle').click();
      const detail = page.locator(`#calls-table tr[data-output-detail="${rec.outputId}"] .failure`);
      await detail.waitFor();
      assert.match(await detail.textContent(), /reason: exit_status — exit status 3/);
      assert.equal(await detail.locator('pre.stderr').textContent(), stderrTail, 'the stderr tail, as text');
      assert.equal(await detail.locator('pre.argv').textContent(), "/opt/loom/bin/loom search 'it'\\''s <b>atlas</b>' --json", 'argv as shell words');
      assert.equal(await detail.locator('img, b').count(), 0, 'no markup from the record');
      assert.equal(await page.evaluate(() => window.__pwned), undefined);
      await page.screenshot({ path: `${OUT}failure-1280x800.png` });
    } finally {
      await page.unroute(`**/host/v1/runs/${RUN}/calls*`);
    }
  });

  await step('delete the run', async () => {
    page.once('dialog', (d) => d.accept());
    await page.click('#delete-run');
    await page.locator(`#runs-table tr[data-run="${RUN}"]`).waitFor({ state: 'detached' });
    assert.match(await page.textContent('#created'), /deleted/);
    const res = await get(`${origin}/host/v1/runs/${RUN}`, { headers: { Authorization: `Bearer ${HOST_TOKEN}` } });
    assert.equal(res.status, 404, 'the run is gone');
    await page.screenshot({ path: `${OUT}deleted-1280x800.png` });
  });

  assert.equal(failed, false, 'every step passed');
  assert.deepEqual(consoleErrors, [], 'no console errors');
});
