#!/usr/bin/env node
/* Browser tests of the viewer: `memtrace view` and `memtrace report` driven through
 * chromium by playwright-core.
 *
 *   node tests/viewer/e2e/run.mjs --memtrace BIN --preload LIBmemtrace_preload.so \
 *        --live-prog BIN --traces DIR --out DIR
 *
 * Exit 77 (skip) without playwright-core or /usr/bin/chromium, 0 when every check
 * passes, 1 otherwise (each failure printed with what was expected and what was seen).
 * Screenshots of every step go to --out. The page may request nothing outside the
 * server's origin (a report: nothing but its own file): any other request fails.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CHROMIUM = '/usr/bin/chromium';
const TIMEOUT = 20000;

/* Screenshots are evidence for a reader, not checks: one that does not come
 * (a long full-page capture on a loaded machine: 30 s once, in the
 * sanitizers' run, after every check of that page had passed) is reported
 * and the test goes on. */
async function snap(page, file) {
  try {
    await page.screenshot({ path: file, fullPage: true, timeout: TIMEOUT });
  } catch (e) {
    console.log('  note: no screenshot ' + path.basename(file) + ': ' + String(e.message).split('\n')[0]);
  }
}

/* ------------------------------------------------------------------ arguments */

function parseArgs(argv) {
  const a = {};
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (!k.startsWith('--') || i + 1 >= argv.length) usage('bad argument ' + k);
    a[k.slice(2)] = argv[++i];
  }
  for (const k of ['memtrace', 'traces', 'out']) if (!a[k]) usage('missing --' + k);
  return a;
}
function usage(msg) {
  console.error('run.mjs: ' + msg + '\nusage: node run.mjs --memtrace BIN --preload LIB.so --live-prog BIN --traces DIR --out DIR');
  process.exit(2);
}
const args = parseArgs(process.argv.slice(2));

let chromium;
try {
  const require = createRequire(path.join(HERE, 'package.json'));
  ({ chromium } = require('playwright-core'));
} catch (e) {
  console.log('SKIP: playwright-core is not installed in ' + HERE + ' (npm install there)');
  process.exit(77);
}
if (!fs.existsSync(CHROMIUM)) { console.log('SKIP: ' + CHROMIUM + ' is missing'); process.exit(77); }
if (!fs.existsSync(args.memtrace)) { console.error('run.mjs: no memtrace binary at ' + args.memtrace); process.exit(1); }
fs.mkdirSync(args.out, { recursive: true });

/* ------------------------------------------------------------------ helpers */

const failures = [];
let checks = 0;
function check(cond, what, detail) {
  checks++;
  if (cond) { console.log('  ok   ' + what); return true; }
  failures.push(what + (detail ? ': ' + detail : ''));
  console.log('  FAIL ' + what + (detail ? ': ' + detail : ''));
  return false;
}

/* The page's number formats (app.js fmtBytes), to compare what it shows with the API. */
function fmtBytes(b) {
  b = +b;
  if (Math.abs(b) < 1024) return Math.round(b) + ' B';
  const u = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = -1;
  do { b /= 1024; i++; } while (Math.abs(b) >= 1024 && i < u.length - 1);
  return (b >= 100 ? b.toFixed(0) : b >= 10 ? b.toFixed(1) : b.toFixed(2)) + ' ' + u[i];
}
const val = e => (e && typeof e === 'object') ? +e.value : +e;

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

const children = new Set();
/* Start `memtrace view ARGS`; resolve with {proc, url, token} once it prints its URL
 * line (token: the access token the URL carries, or null). */
function startView(viewArgs, label) {
  return new Promise((resolve, reject) => {
    const proc = spawn(args.memtrace, ['view', ...viewArgs], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(proc);
    let out = '', err = '';
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(label + ': no "serving … at URL" line within ' + TIMEOUT / 1000 + ' s; stdout: ' + out + ' stderr: ' + err)); }, TIMEOUT);
    proc.stdout.on('data', d => {
      out += d;
      const m = out.match(/memtrace view: serving .* at (http:\/\/[^\s/]+)\/(?:\?token=([0-9a-f]+))?\s*$/m);
      if (m) { clearTimeout(timer); resolve({ proc, url: m[1], token: m[2] || null, stderr: () => err }); }
    });
    proc.stderr.on('data', d => { err += d; });
    proc.on('exit', (code, sig) => { children.delete(proc); clearTimeout(timer); reject(new Error(label + ': memtrace view exited (' + (code ?? sig) + ') before serving; stderr: ' + err.trim())); });
    proc.on('error', e => { clearTimeout(timer); reject(e); });
  });
}

function stopProc(proc) {
  return new Promise(resolve => {
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return resolve(proc ? proc.exitCode : null);
    const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
    proc.once('exit', code => { clearTimeout(t); resolve(code); });
    proc.kill('SIGINT');
  });
}

function run(cmd, argv, env) {
  return new Promise(resolve => {
    const p = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...(env || {}) } });
    children.add(p);
    let out = '', err = '';
    p.stdout.on('data', d => { out += d; });
    p.stderr.on('data', d => { err += d; });
    p.on('exit', code => { children.delete(p); resolve({ code, out, err }); });
    p.on('error', e => resolve({ code: -1, out, err: String(e) }));
  });
}

async function getJSON(url) {
  const r = await fetch(url);
  const body = await r.json().catch(() => null);
  return { status: r.status, body };
}

let browser;
/* A page that fails the test on any request outside `allowed` and on script errors. */
async function newPage(name, allowed) {
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const page = await ctx.newPage();
  page.foreign = [];
  page.errors = [];
  page.on('request', r => { const u = r.url(); if (!allowed(u)) page.foreign.push(u); });
  page.on('pageerror', e => page.errors.push(e.message));
  page.on('console', m => { if (m.type() === 'error' && !/status of (400|404|503)/.test(m.text())) page.errors.push('console: ' + m.text()); });
  page.testName = name;
  return page;
}

async function finishPage(page, shot) {
  if (shot) await page.screenshot({ path: path.join(args.out, shot + '.png'), fullPage: true }).catch(() => {});
  check(page.foreign.length === 0, page.testName + ': no request outside the origin', page.foreign.slice(0, 5).join(', '));
  check(page.errors.length === 0, page.testName + ': no script error', page.errors.slice(0, 5).join(' | '));
  await page.context().close();
}

/* Every request of the page answered (#loading shows while one is pending). */
const idle = page => page.waitForSelector('#loading', { state: 'hidden', timeout: TIMEOUT });

const text = (page, sel) => page.locator(sel).first().textContent({ timeout: TIMEOUT }).then(s => (s || '').trim());

async function waitText(page, sel, pred, what) {
  try {
    await page.waitForFunction(([sel, src]) => {
      const e = document.querySelector(sel);
      return e && (new Function('t', 'return ' + src))(e.textContent.trim());
    }, [sel, pred], { timeout: TIMEOUT });
    return check(true, what);
  } catch (e) {
    const seen = await text(page, sel).catch(() => '(none)');
    return check(false, what, 'timed out; ' + sel + ' shows "' + seen + '"');
  }
}

/* What the page's sites table shows in its first column for a row of /api/sites. */
const siteName = s => s.function != null ? s.function : s.site;

/* Top-level frames of a golden folded-stacks file, largest first. */
function foldedTopFrames(file) {
  const by = new Map();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const m = line.match(/^(.*) (\d+)$/);
    if (!m) continue;
    const first = m[1].split(';')[0];
    by.set(first, (by.get(first) || 0) + +m[2]);
  }
  return [...by.entries()].sort((a, b) => b[1] - a[1]).map(e => e[0]);
}

/* ------------------------------------------------------------------ tests */

async function testTrace(name, full) {
  console.log('trace ' + name);
  const trace = path.join(args.traces, name + '.ctf');
  if (!fs.existsSync(trace)) { check(false, name + ': trace exists', trace + ' missing'); return; }
  const port = await freePort();
  const srv = await startView(['--port', String(port), trace], name);
  const origin = srv.url;
  try {
    const page = await newPage(name, u => u.startsWith(origin + '/') || u.startsWith('data:'));
    await page.goto(origin + '/');
    await waitText(page, '#status', 't === "ready"', name + ': #status becomes ready');
    const info = (await getJSON(origin + '/api/info')).body;
    const infoText = await text(page, '#info');
    check(info && infoText.includes(path.basename(info.executable || '')), name + ': #info shows the executable', infoText.slice(0, 120));
    check(info && infoText.includes(String(info.pid)), name + ': #info shows the pid');
    check(/1 sample per [\d,]+ bytes/.test(infoText), name + ': #info shows the sample rate as "1 sample per N bytes"');
    /* an OCaml trace keeps OCaml's words: the source filter, objects "collected" */
    check(await page.locator('fieldset.sources').isVisible(), name + ': the source filter is offered');
    check(await page.locator('fieldset.kinds').isHidden(), name + ': no heap/mapping filter without mappings');
    check((await text(page, '#leaks-title')) === 'Never collected', name + ': leaks are "Never collected"');

    /* flame graph: the outermost frames of the golden folded file and of /api/flame */
    await page.waitForSelector('#flame .frame', { timeout: TIMEOUT });
    const flame = (await getJSON(origin + '/api/flame')).body;
    const fnName = new Map(flame.functions.map(f => [f.id, f.name]));
    const fnFile = new Map(flame.functions.map(f => [f.id, f.file]));
    /* memtrace's flamegraph leaves out frames without a location; so do we here: the
       outermost located frames are those below a chain of location-less ones */
    let top = flame.callees;
    while (top.children.length && !fnFile.get(top.children[0].fn)) top = top.children[0];
    const apiTop = top.children.slice(0, 3).map(c => fnName.get(c.fn));
    const names = new Set(await page.$$eval('#flame .frame', es => es.map(e => e.dataset.name)));
    for (const n of apiTop) check(names.has(n), name + ': flame graph shows top frame ' + n);
    const goldenTop = foldedTopFrames(path.join(args.traces, name + '.folded.txt'))[0];
    check(apiTop[0] === goldenTop, name + ': largest outermost frame is the golden flamegraph\'s', 'golden ' + goldenTop + ', api ' + apiTop[0]);
    check(names.has(goldenTop), name + ': page shows ' + goldenTop);
    const sum0 = (await getJSON(origin + '/api/summary')).body;
    check((await text(page, '#summary-bytes')) === fmtBytes(val(sum0.bytes)), name + ': #summary-bytes is /api/summary\'s bytes', fmtBytes(val(sum0.bytes)));
    await snap(page, path.join(args.out, name + '-flame.png'));

    if (!full) { await finishPage(page); return; }

    /* a filter typed into the form changes #summary-bytes as the API says */
    const dur = info.duration || 1;
    const range = (dur * 0.25).toFixed(3) + '..' + (dur * 0.6).toFixed(3);
    await page.fill('#filters [name="alloc"]', range);
    await page.fill('#filters [name="size"]', '..0.0625k');
    await page.click('#apply');
    const want = (await getJSON(origin + '/api/summary?alloc=' + range + '&size=..0.0625k')).body;
    const wantText = fmtBytes(val(want.bytes));
    await waitText(page, '#summary-bytes', 't === ' + JSON.stringify(wantText), name + ': filter alloc=' + range + ' size=..0.0625k sets #summary-bytes to ' + wantText);
    check(want.filter && want.filter.size_max === 64, name + ': size=..0.0625k is 64 bytes at most', JSON.stringify(want.filter));
    await waitText(page, '#summary-filter', 't === ' + JSON.stringify(want.filter_text), name + ': the summary says the filter: ' + want.filter_text);
    check(val(want.bytes) < val(sum0.bytes), name + ': the filter keeps fewer bytes (' + wantText + ' < ' + fmtBytes(val(sum0.bytes)) + ')');
    check(page.url().includes('alloc=') && page.url().includes('size='), name + ': the URL holds the filter', page.url());
    await snap(page, path.join(args.out, name + '-filtered.png'));
    /* a name no function has is pointed out beside the filter, and goes with it */
    check(await page.locator('#summary-unmatched').isHidden(), name + ': no note of unmatched names while each name matches');
    await page.fill('#filters [name="hide"]', 'Nowhere_zz');
    await page.click('#apply');
    await waitText(page, '#summary-unmatched', 't.includes(\'"Nowhere_zz"\')', name + ': hide=Nowhere_zz is noted as in no function\'s name');
    check(await page.locator('#summary-unmatched').isVisible(), name + ': the note is shown');
    await snap(page, path.join(args.out, name + '-unmatched.png'));
    await page.fill('#filters [name="hide"]', '');
    await page.click('#apply');
    await waitText(page, '#summary-filter', 't === ' + JSON.stringify(want.filter_text), name + ': the filter is back to ' + want.filter_text);
    check(await page.locator('#summary-unmatched').isHidden(), name + ': the note goes with the name');

    /* focus: click a frame that has a caller; callers and callees show */
    await page.waitForSelector('#flame .frame', { timeout: TIMEOUT });
    const fl = (await getJSON(origin + '/api/flame?alloc=' + range + '&size=..0.0625k')).body;
    const fmap = new Map(fl.functions.map(f => [f.id, f.name]));
    let target = fl.callees.children[0];
    if (target && target.children && target.children.length) target = target.children[0];
    const tname = target ? fmap.get(target.fn) : null;
    if (check(!!tname, name + ': the filtered flame graph has a second-level frame')) {
      await page.locator('#flame .frame[data-name="' + cssq(tname) + '"]').first().click();
      try {
        await page.waitForSelector('#flame .frame.focus[data-name="' + cssq(tname) + '"]', { timeout: TIMEOUT });
        check(true, name + ': clicking ' + tname + ' focuses it');
      } catch (e) { check(false, name + ': clicking ' + tname + ' focuses it', 'no .frame.focus'); }
      const foc = (await getJSON(origin + '/api/flame?alloc=' + range + '&size=..0.0625k&focus=' + target.fn)).body;
      const fm = new Map(foc.functions.map(f => [f.id, f.name]));
      const caller = foc.callers && foc.callers.children[0] ? fm.get(foc.callers.children[0].fn) : null;
      const callersText = await text(page, '#callers-table');
      check(caller && callersText.includes(caller), name + ': callers table lists ' + caller, callersText.slice(0, 200));
      const callee = foc.callees.children[0] ? fm.get(foc.callees.children[0].fn) : null;
      if (callee) check((await text(page, '#callees-table')).includes(callee), name + ': callees table lists ' + callee);
      check(page.url().includes('focus_name='), name + ': the URL holds the focus', page.url());
      await snap(page, path.join(args.out, name + '-focus.png'));

      /* URL state: a reload shows the same view */
      const before = await text(page, '#summary-bytes');
      await page.reload();
      await waitText(page, '#summary-bytes', 't === ' + JSON.stringify(before), name + ': after reload #summary-bytes is still ' + before);
      try {
        await page.waitForSelector('#flame .frame.focus[data-name="' + cssq(tname) + '"]', { timeout: TIMEOUT });
        check(true, name + ': after reload the focus is still ' + tname);
      } catch (e) { check(false, name + ': after reload the focus is still ' + tname); }
      check(await page.inputValue('#filters [name="alloc"]') === range, name + ': after reload the form holds alloc=' + range);

      /* Escape unfocuses */
      await page.focus('#flame');
      await page.keyboard.press('Escape');
      try {
        await page.waitForFunction(() => !document.querySelector('#flame .frame.focus') && document.querySelector('#flame .frame.root'), null, { timeout: TIMEOUT });
        check(true, name + ': Escape unfocuses');
      } catch (e) { check(false, name + ': Escape unfocuses'); }
    }

    /* keyboard: arrows move a selection, Enter focuses it, Escape unfocuses */
    await page.focus('#flame');
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('ArrowUp');
    const selName = await page.$eval('#flame .frame.sel', e => e.dataset.name).catch(() => null);
    if (check(selName && selName !== 'all', name + ': arrow keys select a frame', String(selName))) {
      await page.keyboard.press('Enter');
      try {
        await page.waitForSelector('#flame .frame.focus[data-name="' + cssq(selName) + '"]', { timeout: TIMEOUT });
        check(true, name + ': Enter focuses the selected frame ' + selName);
      } catch (e) { check(false, name + ': Enter focuses the selected frame ' + selName); }
      await page.focus('#flame');
      await page.keyboard.press('Escape');
      await page.waitForFunction(() => !document.querySelector('#flame .frame.focus'), null, { timeout: TIMEOUT }).catch(() => check(false, name + ': Escape after Enter unfocuses'));
    }

    /* search highlights matching frames only */
    await page.click('#reset');
    await waitText(page, '#summary-bytes', 't === ' + JSON.stringify(fmtBytes(val(sum0.bytes))), name + ': Clear restores the unfiltered bytes');
    const q = searchTerm(flame);
    await page.keyboard.press('Escape');
    await page.locator('body').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('/');
    await page.keyboard.type(q);
    try {
      await page.waitForSelector('#flame .frame.match', { timeout: TIMEOUT });
      const res = await page.$$eval('#flame .frame', es => es.map(e => [e.dataset.name, e.classList.contains('match')]));
      const bad = res.filter(([n, m]) => m !== (n !== 'all' && n.toLowerCase().includes(q.toLowerCase())) && !(n === 'all' && !m));
      check(bad.length === 0, name + ': search "' + q + '" highlights exactly the matching frames', bad.slice(0, 3).join(' | '));
      check(/\d+ match/.test(await text(page, '#search-result')), name + ': search shows the match count');
    } catch (e) { check(false, name + ': search "' + q + '" highlights frames', 'no .frame.match'); }
    await snap(page, path.join(args.out, name + '-search.png'));

    /* a bad filter value shows the server's message */
    await page.fill('#filters [name="size"]', '1k..x');
    await page.click('#apply');
    const bad = await getJSON(origin + '/api/summary?size=1k..x');
    check(bad.status === 400 && bad.body && /'size'/.test(bad.body.error) && bad.body.error.includes("'x' in '1k..x'"), name + ': /api/summary?size=1k..x is a 400 naming the parameter and the bad part', JSON.stringify(bad.body));
    try {
      await page.waitForSelector('#error:not([hidden])', { timeout: TIMEOUT });
      const msg = await text(page, '#error');
      check(bad.body && msg.includes(bad.body.error), name + ': #error shows the server\'s message', msg);
      const marked = await page.$$eval('#filters input.bad', es => es.map(e => e.name));
      check(JSON.stringify(marked) === '["size"]', name + ': the size input, and only it, is marked bad', JSON.stringify(marked));
    } catch (e) { check(false, name + ': a bad filter value shows #error'); }
    await snap(page, path.join(args.out, name + '-bad-filter.png'));
    await page.fill('#filters [name="size"]', '');
    await page.click('#apply');
    await page.waitForSelector('#error[hidden]', { state: 'attached', timeout: TIMEOUT }).catch(() => check(false, name + ': a good filter clears #error'));
    await idle(page);

    /* dragging on the live-heap graph sets the allocation range */
    await page.waitForSelector('#timeline svg', { timeout: TIMEOUT }).catch(async () => {
      check(false, name + ': the live-heap graph is drawn', 'no #timeline svg; #timeline shows "' + await text(page, '#timeline') + '"');
    });
    const box = await page.locator('#timeline svg').boundingBox();
    await page.mouse.move(box.x + box.width * 0.3, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.45, box.y + box.height / 2, { steps: 5 });
    await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2, { steps: 5 });
    await page.mouse.up();
    try {
      await page.waitForFunction(() => /alloc=/.test(location.search), null, { timeout: TIMEOUT });
      const dragged = await page.inputValue('#filters [name="alloc"]');
      const m = dragged.match(/^([\d.]+)\.\.([\d.]+)$/);
      check(m && +m[1] > dur * 0.2 && +m[2] < dur * 0.7 && +m[1] < +m[2], name + ': a drag over 30%..60% of the graph sets alloc', dragged);
      const wantDrag = (await getJSON(origin + '/api/summary?alloc=' + dragged)).body;
      await waitText(page, '#summary-bytes', 't === ' + JSON.stringify(fmtBytes(val(wantDrag.bytes))), name + ': after the drag #summary-bytes is /api/summary?alloc=' + dragged + '\'s');
    } catch (e) { check(false, name + ': a drag on the live-heap graph sets alloc in the URL', e.message); }
    await snap(page, path.join(args.out, name + '-drag.png'));
    await page.click('#reset');

    /* other views: sites and leaks tables as the API says, tabs, histograms */
    const sites = (await getJSON(origin + '/api/sites?n=100')).body;
    await page.click('#view-tabs button[data-view="sites"]');
    await page.waitForSelector('#sites tbody tr', { timeout: TIMEOUT });
    const siteNames = await page.$$eval('#sites tbody tr td:first-child', es => es.map(e => e.textContent.trim()));
    const apiSites = sites.sites.slice(0, 5).map(siteName);
    check(JSON.stringify(siteNames.slice(0, 5)) === JSON.stringify(apiSites), name + ': #sites lists /api/sites in order', 'page ' + siteNames.slice(0, 5).join(', ') + ' api ' + apiSites.join(', '));
    check(page.url().includes('view=sites'), name + ': the URL holds the view');
    await snap(page, path.join(args.out, name + '-sites.png'));
    /* grouped by function: /api/sites?by=function's rows, the URL says so */
    const byFn = (await getJSON(origin + '/api/sites?n=100&by=function')).body;
    const wantFn = byFn.sites.slice(0, 5).map(siteName);
    await page.selectOption('#sites-by', 'function');
    try {
      await page.waitForFunction(w => JSON.stringify([...document.querySelectorAll('#sites tbody tr td:first-child')].slice(0, 5).map(e => e.textContent.trim())) === w, JSON.stringify(wantFn), { timeout: TIMEOUT });
      check(true, name + ': #sites by function lists /api/sites?by=function in order');
    } catch (e) {
      const seen = await page.$$eval('#sites tbody tr td:first-child', es => es.slice(0, 5).map(e => e.textContent.trim()));
      check(false, name + ': #sites by function lists /api/sites?by=function in order', 'page ' + seen.join(', ') + ' api ' + wantFn.join(', '));
    }
    check(page.url().includes('by=function'), name + ': the URL holds the grouping', page.url());
    const byLoc = await page.$$eval('#sites tbody tr td:nth-child(2)', es => es.slice(0, 5).map(e => e.textContent.trim()));
    check(byLoc.every((l, i) => l === (byFn.sites[i].file || '')), name + ': by function, the location is the file alone', byLoc.join(', '));
    await page.selectOption('#sites-by', 'line');
    const leaks = (await getJSON(origin + '/api/leaks?n=100')).body;
    await page.click('#view-tabs button[data-view="leaks"]');
    await page.waitForSelector('#leaks tbody tr', { timeout: TIMEOUT });
    const leakRows = await page.$$eval('#leaks tbody tr:not(.empty)', es => es.length);
    check(leakRows === Math.min(100, leaks.stacks.length) && leaks.stacks.length > 0, name + ': #leaks has a row per /api/leaks stack', leakRows + ' vs ' + leaks.stacks.length);
    const oldest = await page.$$eval('#leaks tbody tr td:nth-child(4)', es => es.slice(0, 3).map(e => e.textContent.trim()));
    check(oldest[0] && oldest[0] !== '–', name + ': #leaks shows the oldest allocation', oldest.join(', '));
    for (const v of ['functions', 'paths', 'histograms', 'stats']) {
      await page.click('#view-tabs button[data-view="' + v + '"]');
      const sel = v === 'histograms' ? '#hist-size svg' : v === 'stats' ? '#stats-sizes tbody tr' : '#' + v + ' tbody tr';
      try { await page.waitForSelector(sel, { timeout: TIMEOUT }); check(true, name + ': view ' + v + ' renders'); } catch (e) { check(false, name + ': view ' + v + ' renders', 'no ' + sel); }
      await snap(page, path.join(args.out, name + '-' + v + '.png'));
    }
    /* the statistics: a row per size bin and one over 256 words, the sources */
    const st = (await getJSON(origin + '/api/stats')).body;
    const sizeRows = await page.$$eval('#stats-sizes tbody tr', es => es.length);
    check(sizeRows === st.all.size_histogram.length + 1, name + ': #stats-sizes has a row per size bin and one over 256 words', sizeRows + ' rows');
    const srcText = await text(page, '#stats-sources');
    check(['minor', 'major', 'external'].every(k => srcText.includes(k)), name + ': #stats-sources lists the three sources', srcText.slice(0, 120));
    /* hovering an estimate gives its interval */
    const tip = await page.locator('#summary-bytes').getAttribute('data-tip');
    check(tip && /95% interval/.test(tip), name + ': #summary-bytes carries its 95% interval', tip);

    /* a path outside the API and the assets is a 404 */
    const r404 = await page.goto(origin + '/no/such/page');
    check(r404 && r404.status() === 404, name + ': an unknown path is a 404', r404 && String(r404.status()));
    await finishPage(page);
  } catch (e) {
    check(false, name + ': test ran to the end', e.stack || String(e));
  } finally {
    const code = await stopProc(srv.proc);
    check(code === 0, name + ': SIGINT stops memtrace view with exit 0', 'exit ' + code + ' ' + srv.stderr().trim().slice(0, 300));
  }
}

function cssq(s) { return String(s).replace(/["\\]/g, '\\$&'); }

/* A search term: a word of the second largest outermost function's name. */
function searchTerm(flame) {
  const fm = new Map(flame.functions.map(f => [f.id, f.name]));
  let n = flame.callees;
  while (n.children && n.children.length === 1) n = n.children[0];
  const pick = (n.children && n.children[1]) || (n.children && n.children[0]) || n;
  const name = fm.get(pick.fn) || 'a';
  const words = name.split(/[^A-Za-z0-9_]+/).filter(w => w.length >= 3);
  return words.length ? words[words.length - 1] : name;
}

async function testReport(name) {
  console.log('report ' + name);
  const trace = path.join(args.traces, name + '.ctf');
  const out = path.join(path.resolve(args.out), 'report.html');
  fs.rmSync(out, { force: true });
  const r = await run(args.memtrace, ['report', trace, '-o', out]);
  if (!check(r.code === 0 && fs.existsSync(out), 'report: memtrace report exits 0 and writes ' + out, 'exit ' + r.code + ' ' + r.err.trim())) return;
  const html = fs.readFileSync(out, 'utf8');
  check(!/<script[^>]*\bsrc=/.test(html) && !/<link[^>]*stylesheet/.test(html), 'report: self-contained (no script src, no stylesheet link)');
  const port = await freePort();
  const srv = await startView(['--port', String(port), trace], 'report');
  try {
    const sites = (await getJSON(srv.url + '/api/sites')).body;
    const fileUrl = pathToFileURL(out).href;
    const page = await newPage('report', u => u === fileUrl || u.startsWith(fileUrl + '?') || u.startsWith(fileUrl + '#') || u.startsWith('data:'));
    await page.goto(fileUrl);
    await waitText(page, '#status', 't === "report"', 'report: #status says report');
    await page.waitForSelector('#flame .frame', { timeout: TIMEOUT });
    check(await page.locator('#filters').isHidden(), 'report: the filter form is hidden');
    await snap(page, path.join(args.out, 'report-flame.png'));
    /* zooming still works without a server */
    const frames = await page.$$eval('#flame .frame:not(.root)', es => es.map(e => [e.dataset.name, e.getBoundingClientRect().width]));
    const narrow = frames.find(([, w]) => w > 30 && w < 600);
    if (narrow) {
      await page.locator('#flame .frame[data-name="' + cssq(narrow[0]) + '"]').first().click();
      const w2 = await page.locator('#flame .frame[data-name="' + cssq(narrow[0]) + '"]').first().evaluate(e => e.getBoundingClientRect().width);
      check(w2 > narrow[1] * 1.5, 'report: clicking ' + narrow[0] + ' zooms it (' + narrow[1].toFixed(0) + ' px -> ' + w2.toFixed(0) + ' px)');
    }
    await page.click('#view-tabs button[data-view="sites"]');
    await page.waitForSelector('#sites tbody tr', { timeout: TIMEOUT });
    const names = await page.$$eval('#sites tbody tr td:first-child', es => es.map(e => e.textContent.trim()));
    const want = sites.sites.map(siteName);
    check(JSON.stringify(names.slice(0, want.length)) === JSON.stringify(want), 'report: the top sites are /api/sites\'s', 'report ' + names.slice(0, 5).join(', ') + ' api ' + want.slice(0, 5).join(', '));
    await snap(page, path.join(args.out, 'report-sites.png'));
    check(await page.locator('#sites-by').isHidden(), 'report: the sites\' grouping (a server request) is hidden');
    for (const v of ['leaks', 'histograms', 'stats']) {
      await page.click('#view-tabs button[data-view="' + v + '"]');
      const sel = v === 'histograms' ? '#hist-size svg' : v === 'stats' ? '#stats-sizes tbody tr' : '#leaks tbody tr';
      try { await page.waitForSelector(sel, { timeout: TIMEOUT }); check(true, 'report: view ' + v + ' renders'); } catch (e) { check(false, 'report: view ' + v + ' renders'); }
    }
    await snap(page, path.join(args.out, 'report-histograms.png'));
    await finishPage(page);
  } catch (e) {
    check(false, 'report: test ran to the end', e.stack || String(e));
  } finally {
    await stopProc(srv.proc);
  }
}

/* The differential view: a trace against one where site 0 (Bar.alloc, bar.ml:5)
 * allocates twice as often (mt_tools_synth --double 0): in the report and the live
 * page, its frames are coloured grown and the Changes view lists it first, marked. */
async function testDiff() {
  console.log('differential view');
  if (!args.synth) { check(false, 'diff: run.mjs needs --synth'); return; }
  const dir = path.resolve(args.out);
  const oldT = path.join(dir, 'diff-old.ctf'), newT = path.join(dir, 'diff-new.ctf');
  let r = await run(args.synth, [oldT, oldT + '.json', '--rate', '1e-2', '--seed', '41']);
  r = r.code === 0 ? await run(args.synth, [newT, newT + '.json', '--rate', '1e-2', '--seed', '41', '--double', '0']) : r;
  if (!check(r.code === 0, 'diff: the two traces are written', r.err)) return;
  const out = path.join(dir, 'diff.html');
  fs.rmSync(out, { force: true });
  r = await run(args.memtrace, ['report', '--base', oldT, newT, '-o', out]);
  if (!check(r.code === 0 && fs.existsSync(out), 'diff: memtrace report --base writes ' + out, 'exit ' + r.code + ' ' + r.err.trim())) return;
  const grownFirst = async (page, where) => {
    await page.waitForSelector('#flame .frame', { timeout: TIMEOUT });
    const grown = await page.$$eval('#flame .frame.grown', es => es.map(e => e.dataset.name));
    check(grown.includes('Bar.alloc'), where + ': Bar.alloc\'s frame is coloured grown', 'grown: ' + grown.join(', '));
    await snap(page, path.join(args.out, where + '-flame.png'));
    check(await page.locator('#view-tabs button[data-view="changes"]').isVisible(), where + ': the Changes tab shows');
    await page.click('#view-tabs button[data-view="changes"]');
    await page.waitForSelector('#changes tbody tr', { timeout: TIMEOUT });
    const first = await page.$eval('#changes tbody tr', e => e.textContent);
    check(/Bar\.alloc/.test(first) && /▲/.test(first), where + ': the Changes view lists Bar.alloc first, grown', first.slice(0, 160));
    await snap(page, path.join(args.out, where + '-changes.png'));
  };
  const fileUrl = pathToFileURL(out).href;
  const page = await newPage('diff-report', u => u === fileUrl || u.startsWith(fileUrl + '?') || u.startsWith(fileUrl + '#') || u.startsWith('data:'));
  try {
    await page.goto(fileUrl);
    await waitText(page, '#trace-name', 't.includes("against")', 'diff report: the title names the base');
    await grownFirst(page, 'diff-report');
    await finishPage(page);
  } catch (e) {
    check(false, 'diff report: test ran to the end', e.stack || String(e));
  }
  const port = await freePort();
  const srv = await startView(['--port', String(port), '--base', oldT, newT], 'diff');
  try {
    const d = (await getJSON(srv.url + '/api/diff')).body;
    check(d.sites && d.sites[0].significant && /Bar\.alloc/.test(d.sites[0].site), 'diff: /api/diff puts Bar.alloc first, significant');
    const page2 = await newPage('diff-view', u => u.startsWith(srv.url));
    await page2.goto(srv.url + '/');
    await grownFirst(page2, 'diff-view');
    await finishPage(page2);
  } catch (e) {
    check(false, 'diff view: test ran to the end', e.stack || String(e));
  } finally {
    await stopProc(srv.proc);
  }
}

async function testCorrupt() {
  console.log('corrupt trace');
  const bad = path.join(path.resolve(args.out), 'corrupt.ctf');
  fs.writeFileSync(bad, Buffer.from('this is not a CTF trace, only some text\n'.repeat(20)));
  const once = await run(args.memtrace, ['view', '--port', String(await freePort()), bad]);
  check(once.code === 1 && once.err.trim().length > 0, 'corrupt: memtrace view on a corrupt file prints a message and exits 1', 'exit ' + once.code + ' stderr ' + once.err.trim().slice(0, 200));
  const srv = await startView(['--follow', '--port', String(await freePort()), bad], 'corrupt --follow');
  try {
    const page = await newPage('corrupt', u => u.startsWith(srv.url + '/') || u.startsWith('data:'));
    await page.goto(srv.url + '/');
    await waitText(page, '#status', 't.startsWith("error: ")', 'corrupt: #status shows "error: …"');
    const [fg, bg] = await page.$eval('#status', e => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]);
    check(fg !== bg, 'corrupt: the status badge is legible (text ' + fg + ' on ' + bg + ')');
    try {
      await page.waitForSelector('#fatal:not([hidden])', { timeout: TIMEOUT });
      const msg = await text(page, '#fatal-message');
      const st = (await getJSON(srv.url + '/api/status')).body;
      check(st && st.state === 'error' && msg.includes(st.error), 'corrupt: the page shows /api/status\'s error', msg);
    } catch (e) { check(false, 'corrupt: an error panel replaces the views'); }
    await snap(page, path.join(args.out, 'corrupt.png'));
    await finishPage(page);
  } catch (e) {
    check(false, 'corrupt: test ran to the end', e.stack || String(e));
  } finally {
    await stopProc(srv.proc);
  }
}

async function testLive() {
  console.log('live');
  if (!args['live-prog'] || !args.preload || !fs.existsSync(args['live-prog']) || !fs.existsSync(args.preload)) {
    check(false, 'live: --live-prog and --preload exist', args['live-prog'] + ' ' + args.preload);
    return;
  }
  const lport = await freePort();
  const srv = await startView(['--listen', '127.0.0.1:' + lport, '--port', String(await freePort())], 'live');
  let prog = null;
  try {
    const page = await newPage('live', u => u.startsWith(srv.url + '/') || u.startsWith('data:'));
    await page.goto(srv.url + '/');
    await waitText(page, '#status', 't === "waiting"', 'live: #status is waiting before the program connects');
    await snap(page, path.join(args.out, 'live-waiting.png'));
    prog = run(args['live-prog'], ['6'], { LD_PRELOAD: path.resolve(args.preload), MEMTRACE: 'tcp:127.0.0.1:' + lport, MEMTRACE_RATE: '1e-3' });
    await waitText(page, '#status', 't === "live"', 'live: #status becomes live');
    await page.waitForSelector('#flame .frame', { timeout: TIMEOUT }).catch(() => check(false, 'live: the flame graph appears'));
    /* the view and the summary load side by side: a flame graph on screen
     * says nothing of the summary (CI once read "–" there) */
    await page.waitForFunction(() => (document.querySelector('#summary-bytes').dataset.tip || '') !== '',
                               null, { timeout: TIMEOUT }).catch(() => check(false, 'live: the summary appears'));
    const bytesOf = async () => page.$eval('#summary-bytes', e => e.dataset.tip || '');
    const first = await text(page, '#summary-bytes');
    const tip1 = await bytesOf();
    const gen1 = (await getJSON(srv.url + '/api/status')).body.generation;
    await page.waitForTimeout(3000);
    const second = await text(page, '#summary-bytes');
    const gen2 = (await getJSON(srv.url + '/api/status')).body.generation;
    check(gen2 > gen1, 'live: the server\'s generation grows (' + gen1 + ' -> ' + gen2 + ')');
    const num = t => { const m = t.match(/estimate ([\d.]+) (B|KiB|MiB|GiB)/); return m ? +m[1] * { B: 1, KiB: 1024, MiB: 1048576, GiB: 1073741824 }[m[2]] : NaN; };
    const tip2 = await bytesOf();
    check(num(tip2) > num(tip1), 'live: #summary-bytes grows without a reload (' + first + ' -> ' + second + ')');
    /* a native program's trace in its words: freed, no runtime heaps to filter on */
    check(await page.evaluate(() => document.body.classList.contains('native')), 'live: a native trace is told as one');
    check(await page.locator('fieldset.sources').isHidden(), 'live: no source filter for a native program');
    check((await text(page, '#leaks-title')) === 'Never freed', 'live: leaks are "Never freed"', await text(page, '#leaks-title'));
    const dur = await text(page, '#live-duration');
    check(/s\b/.test(dur), 'live: the header shows the trace duration', dur);
    await snap(page, path.join(args.out, 'live.png'));
    const res = await prog;
    prog = null;
    check(res.code === 0, 'live: the traced program exits 0', res.err.trim().slice(0, 200));
    await finishPage(page);
  } catch (e) {
    check(false, 'live: test ran to the end', e.stack || String(e));
  } finally {
    if (prog) await prog;
    const code = await stopProc(srv.proc);
    check(code === 0, 'live: SIGINT stops memtrace view --listen with exit 0', 'exit ' + code);
  }
}

/* Bound beyond loopback: the page opened from the printed URL works (its token set a
 * cookie that its own requests carry); without the token, 403. */
async function testToken(name) {
  console.log('token');
  const srv = await startView(['--host', '0.0.0.0', '--port', String(await freePort()),
                               path.join(args.traces, name + '.ctf')], 'token');
  try {
    check(srv.token && srv.token.length >= 32, 'token: the URL carries a token', srv.url);
    const base = srv.url.replace('0.0.0.0', '127.0.0.1');
    const port = base.split(':').pop();
    const bare = await fetch(base + '/api/status');
    check(bare.status === 403, 'token: /api/status without the token is 403', String(bare.status));
    const page = await newPage('token', u => u.startsWith(base + '/') || u.startsWith('data:'));
    const r = await page.goto(base + '/?token=' + srv.token);
    check(r && r.status() === 200, 'token: the page with its token loads', String(r && r.status()));
    await waitText(page, '#status', 't === "ready"', 'token: #status is ready (the API answers the page)');
    await page.waitForSelector('#flame .frame', { timeout: TIMEOUT }).catch(() => check(false, 'token: the flame graph appears'));
    const c = (await page.context().cookies()).find(k => k.name === 'memtrace_token_' + port);
    check(c && c.value === srv.token && c.httpOnly && c.sameSite === 'Strict',
          'token: the cookie is set, HttpOnly and SameSite=Strict', JSON.stringify(c));
    await page.goto(base + '/');
    await waitText(page, '#status', 't === "ready"', 'token: reloaded without the token in the URL, the cookie serves');
    await snap(page, path.join(args.out, 'token.png'));
    await finishPage(page);
    const other = await newPage('token (another browser)', u => u.startsWith(base + '/'));
    const r2 = await other.goto(base + '/');
    check(r2 && r2.status() === 403, 'token: another browser without the token gets 403', String(r2 && r2.status()));
    await other.context().close();
  } catch (e) {
    check(false, 'token: test ran to the end', e.stack || String(e));
  } finally {
    await stopProc(srv.proc);
  }
}

/* A native program's anonymous mappings (tests/profiler/prog_maps.c at rate 1,
 * which prints each mapping site's objects and bytes): the page offers the
 * heap and mapping filter, and ticking "mapping" (then Apply) shows the
 * mappings alone. */
async function testMappings() {
  console.log('mappings');
  const prog = path.join(path.dirname(args.memtrace), 'prog_maps');
  if (!args.preload || !fs.existsSync(prog)) return console.log('  skipped: no prog_maps or preload library');
  const trace = path.join(path.resolve(args.out), 'maps.ctf');
  const r = await run(prog, [], { LD_PRELOAD: args.preload, MEMTRACE: trace, MEMTRACE_RATE: '1' });
  if (!check(r.code === 0, 'mappings: prog_maps ran traced', r.err)) return;
  const want = r.out.trim().split('\n').reduce((s, l) => s + Number(l.split(' ')[2]), 0);
  const srv = await startView(['--port', String(await freePort()), trace], 'mappings');
  const origin = srv.url;
  try {
    const page = await newPage('mappings', u => u.startsWith(origin + '/') || u.startsWith('data:'));
    await page.goto(origin + '/');
    await waitText(page, '#status', 't === "ready"', 'mappings: #status becomes ready');
    check(await page.locator('fieldset.kinds').isVisible(), 'mappings: the heap/mapping filter is offered');
    check(await page.locator('fieldset.sources').isHidden(), 'mappings: no minor/major filter for a native program');
    await page.locator('fieldset.kinds [data-source="mapping"]').check();
    await page.click('#apply');
    const ticked = await page.waitForFunction(() => /source=mapping/.test(location.search + location.hash), null,
                                              { timeout: TIMEOUT }).then(() => true, () => false);
    check(ticked, 'mappings: ticking "mapping" puts source=mapping in the address', page.url());
    await idle(page);
    const sum = (await getJSON(origin + '/api/summary?source=mapping')).body;
    check(sum && Math.round(sum.bytes.value) === want, 'mappings: the mappings\' bytes are the program\'s', JSON.stringify(sum && sum.bytes) + ' want ' + want);
    await waitText(page, '#summary-bytes', 't === ' + JSON.stringify(fmtBytes(want)), 'mappings: the page shows the mappings\' bytes, ' + fmtBytes(want));
    await snap(page, path.join(args.out, 'mappings.png'));
    await finishPage(page);
  } catch (e) {
    check(false, 'mappings: test ran to the end', e.stack || String(e));
  } finally {
    await stopProc(srv.proc);
  }
}

/* ------------------------------------------------------------------ main */

const only = process.env.MT_E2E_ONLY ? process.env.MT_E2E_ONLY.split(',') : null;
const want = t => !only || only.includes(t);
let code = 0;
try {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
  });
  if (want('ocamlopt')) await testTrace('ocamlopt', true);
  if (want('workload')) await testTrace('workload-1e-4', false);
  if (want('report')) await testReport('ocamlopt');
  if (want('diff')) await testDiff();
  if (want('corrupt')) await testCorrupt();
  if (want('live')) await testLive();
  if (want('mappings')) await testMappings();
  if (want('token')) await testToken('ocamlopt');
} catch (e) {
  failures.push('driver: ' + (e.stack || e));
  console.log('  FAIL driver: ' + (e.stack || e));
} finally {
  if (browser) await browser.close().catch(() => {});
  for (const c of children) c.kill('SIGKILL');
}
console.log('\n' + (checks - failures.length) + '/' + checks + ' checks passed; screenshots in ' + args.out);
if (failures.length) {
  console.log('failures:\n' + failures.map(f => '  - ' + f).join('\n'));
  code = 1;
}
process.exit(code);
