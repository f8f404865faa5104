/* memtrace viewer: the page of `memtrace view` and `memtrace report`.
 *
 * One classic script (no modules, no framework, nothing fetched from another origin):
 * `memtrace report` inlines it into index.html, so it must stay a single file that
 * never contains the closing-script-tag sequence. The JSON API it talks to is described
 * in docs/viewer.md; in a report the unfiltered answers are inlined in the element
 * #memtrace-data and the page runs without a server.
 *
 * Sections: utilities and formatting · state and URL · API · info and summary ·
 * timeline · flame graph · tables · histograms · statistics · views and refresh ·
 * live mode · boot.
 */
(function () {
  'use strict';

  /* ================================================================ utilities */

  const $ = (sel, root) => (root || document).querySelector(sel);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));

  /* el('td', {class: 'num', 'data-tip': '…'}, child, 'text', …) */
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    if (attrs) {
      for (const k in attrs) {
        const v = attrs[k];
        if (v == null || v === false) continue;
        if (k === 'onclick') e.addEventListener('click', v);
        else if (k === 'text') e.textContent = v;
        else e.setAttribute(k, v === true ? '' : String(v));
      }
    }
    for (const k of kids) if (k != null) e.append(k instanceof Node ? k : String(k));
    return e;
  }

  function esc(s) {
    return String(s).replace(/[&<>"']/g, c => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c]));
  }

  function debounce(fn, ms) {
    let t = 0;
    return function (...a) { clearTimeout(t); t = setTimeout(() => fn.apply(this, a), ms); };
  }

  /* An estimate is {value, lo, hi} (docs/json.md); a plain number stands for itself. */
  const val = e => (e && typeof e === 'object') ? +e.value : (+e || 0);

  function sig3(x) {
    if (x >= 100) return x.toFixed(0);
    if (x >= 10) return x.toFixed(1);
    return x.toFixed(2);
  }

  function fmtBytes(b) {
    b = +b;
    if (!isFinite(b)) return '–';
    if (Math.abs(b) < 1024) return Math.round(b) + ' B';
    const u = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    let i = -1;
    do { b /= 1024; i++; } while (Math.abs(b) >= 1024 && i < u.length - 1);
    return sig3(b) + ' ' + u[i];
  }

  function fmtCount(n) {
    n = +n;
    if (!isFinite(n)) return '–';
    if (Math.abs(n) < 1000) return String(Math.round(n));
    const u = [['k', 1e3], ['M', 1e6], ['G', 1e9], ['T', 1e12]];
    let i = 0;
    while (i < u.length - 1 && Math.abs(n) >= u[i + 1][1]) i++;
    return sig3(n / u[i][1]) + ' ' + u[i][0];
  }

  const fmtObjects = n => fmtCount(n) + ' objects';
  const fmtInt = n => Math.round(+n).toLocaleString('en-US');

  function fmtSeconds(s) {
    s = +s;
    if (!isFinite(s)) return '–';
    const a = Math.abs(s);
    if (a === 0) return '0 s';
    if (a < 1e-3) return sig3(s * 1e6) + ' µs';
    if (a < 1) return sig3(s * 1e3) + ' ms';
    if (a < 120) return sig3(s) + ' s';
    if (a < 7200) return Math.floor(s / 60) + ' min ' + Math.round(s % 60) + ' s';
    return Math.floor(s / 3600) + ' h ' + Math.round((s % 3600) / 60) + ' min';
  }

  function fmtPct(f) {
    f = +f;
    if (!isFinite(f)) return '–';
    const p = f * 100;
    if (p > 0 && p < 0.1) return '<0.1%';
    return (p >= 10 ? p.toFixed(1) : p.toFixed(2)).replace(/\.?0+$/, '') + '%';
  }

  /* A span showing an estimate, its 95% interval on hover. */
  function estSpan(e, fmt, extra) {
    const s = el('span', {class: 'est'}, fmt(val(e)));
    s.dataset.tip = intervalText(e, fmt) + (extra ? '\n' + extra : '');
    return s;
  }

  function intervalText(e, fmt) {
    if (e && typeof e === 'object' && e.lo != null && e.hi != null)
      return 'estimate ' + fmt(e.value) + '\n95% interval: ' + fmt(e.lo) + ' – ' + fmt(e.hi);
    return 'estimate ' + fmt(val(e)) + ' (no interval given)';
  }

  function basename(p) { return String(p || '').split('/').pop(); }

  /* Stable pastel colour per file or module so related frames share a hue. */
  function colorKey(name, file) {
    if (file) return file;
    const n = String(name || '');
    const cc = n.indexOf('::');
    if (cc > 0) return n.slice(0, cc);
    const dot = n.indexOf('.');
    if (dot > 0) return n.slice(0, dot);
    return n;
  }
  const colorCache = new Map();
  function frameColor(name, file) {
    const key = colorKey(name, file);
    let c = colorCache.get(key);
    if (!c) {
      let h = 2166136261;
      for (let i = 0; i < key.length; i++) { h ^= key.charCodeAt(i); h = Math.imul(h, 16777619); }
      h >>>= 0;
      /* warm-biased hues (flame graphs read as warm), with enough spread to tell modules apart */
      const hue = (h % 200 + 340) % 360;
      const sat = 55 + (h >>> 8) % 25;
      const light = 68 + (h >>> 16) % 12;
      c = 'hsl(' + hue + ',' + sat + '%,' + light + '%)';
      colorCache.set(key, c);
    }
    return c;
  }

  /* The differential view's colours: red for grown, blue for shrunk (deeper as the
   * change grows, up to doubling), grey where the intervals overlap. */
  function changeColor(n) {
    if (n.change === 'same') return 'hsl(0,0%,82%)';
    const was = val(n.base.bytes), now = val(n.bytes);
    const ratio = was > 0 && now > 0 ? Math.abs(Math.log2(now / was)) : 1;
    const light = 80 - 30 * Math.min(1, ratio);
    return n.change === 'grown' ? 'hsl(2,75%,' + light + '%)' : 'hsl(214,70%,' + light + '%)';
  }

  /* "Nice" axis ticks: about n steps of 1, 2 or 5 times a power of `base` units. */
  function niceTicks(max, n) {
    if (!(max > 0)) return [0];
    const raw = max / n, p = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 2.5, 5, 10].map(m => m * p).find(s => s >= raw) || 10 * p;
    const out = [];
    for (let v = 0; v <= max * 1.0001; v += step) out.push(v);
    return out;
  }
  function niceByteTicks(max, n) {
    if (!(max > 0)) return [0];
    let unit = 1;
    while (max / unit >= 1024 && unit < Math.pow(1024, 4)) unit *= 1024;
    return niceTicks(max / unit, n).map(v => v * unit);
  }

  /* ================================================================ state and URL */

  const FILTER_KEYS = ['alloc', 'live', 'collected', 'size', 'lifetime', 'source', 'inside', 'not_inside', 'hide'];
  const VIEWS = ['flame', 'functions', 'paths', 'sites', 'leaks', 'histograms', 'stats', 'changes'];

  const state = {
    report: null,          /* the inlined data of `memtrace report`, or null with a server */
    filter: {},            /* filter parameters, as in the URL and the API */
    view: 'flame',
    focusName: null,       /* focused function (the URL keeps the name: ids change per generation) */
    crumbs: [],            /* focus history for the breadcrumbs */
    weight: 'bytes',
    search: '',
    wall: false,
    histWeight: 'bytes',
    sitesBy: 'line',       /* /api/sites?by= : 'line' or 'function' */
    info: null,
    status: null,
    generation: null,
    live: false,
    fnIds: new Map(),      /* function name -> id for the current generation */
    cache: new Map(),      /* view data by request key */
    summary: null,
  };

  function readURL() {
    const q = new URLSearchParams(location.search);
    state.filter = {};
    for (const k of FILTER_KEYS) { const v = q.get(k); if (v) state.filter[k] = v; }
    const view = q.get('view');
    state.view = VIEWS.includes(view) ? view : 'flame';
    const f = q.get('focus_name');
    if (f !== state.focusName) state.crumbs = f ? [f] : [];
    state.focusName = f || null;
    state.weight = q.get('weight') === 'objects' ? 'objects' : 'bytes';
    state.search = q.get('search') || '';
    state.wall = q.get('clock') === 'wall';
    state.sitesBy = q.get('by') === 'function' ? 'function' : 'line';
  }

  function urlQuery() {
    const q = new URLSearchParams();
    for (const k of FILTER_KEYS) if (state.filter[k]) q.set(k, state.filter[k]);
    if (state.view !== 'flame') q.set('view', state.view);
    if (state.focusName) q.set('focus_name', state.focusName);
    if (state.weight !== 'bytes') q.set('weight', state.weight);
    if (state.search) q.set('search', state.search);
    if (state.wall) q.set('clock', 'wall');
    if (state.sitesBy !== 'line') q.set('by', state.sitesBy);
    return q.toString();
  }

  function writeURL(push) {
    if (state.report) return; /* a report is a file: keep its URL as it is */
    const s = urlQuery();
    const url = location.pathname + (s ? '?' + s : '') + location.hash;
    if (url === location.pathname + location.search + location.hash) return;
    if (push) history.pushState(null, '', url); else history.replaceState(null, '', url);
  }

  function filterQuery() {
    const q = new URLSearchParams();
    for (const k of FILTER_KEYS) if (state.filter[k]) q.set(k, state.filter[k]);
    return q;
  }

  /* ================================================================ API */

  class ApiError extends Error {
    constructor(status, message, path) { super(message); this.status = status; this.path = path; }
  }

  let pending = 0;
  function setPending(d) {
    pending += d;
    $('#loading').hidden = pending <= 0;
  }

  const REPORT_KEYS = {
    '/api/info': 'info', '/api/summary': 'summary', '/api/timeline': 'timeline', '/api/flame': 'flame',
    '/api/functions': 'functions', '/api/paths': 'paths', '/api/sites': 'sites', '/api/leaks': 'leaks',
    '/api/histograms': 'histograms', '/api/stats': 'stats', '/api/diff': 'diff',
  };

  /* GET path?params (+ the filter when withFilter); resolves to the parsed JSON. */
  async function api(path, params, withFilter) {
    if (state.report) {
      const d = state.report[REPORT_KEYS[path]];
      if (d == null) throw new ApiError(404, 'this report has no ' + path.slice(5) + ' data', path);
      return d;
    }
    const q = withFilter ? filterQuery() : new URLSearchParams();
    if (params) for (const k in params) if (params[k] != null && params[k] !== '') q.set(k, params[k]);
    const qs = q.toString();
    setPending(1);
    try {
      let r;
      try {
        r = await fetch(path + (qs ? '?' + qs : ''), {cache: 'no-store'});
      } catch (e) {
        throw new ApiError(0, 'cannot reach the memtrace server (' + (e && e.message || e) + ')', path);
      }
      let body = null;
      const text = await r.text();
      try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
      if (!r.ok) {
        const msg = body && body.error ? body.error : (r.status + ' ' + r.statusText + (text ? ': ' + text.slice(0, 200) : ''));
        throw new ApiError(r.status, msg, path);
      }
      if (body == null) throw new ApiError(r.status, 'the server sent no JSON for ' + path, path);
      return body;
    } finally {
      setPending(-1);
    }
  }

  /* Learn function names -> ids from any answer that carries functions. */
  function learnFunctions(list) {
    if (!Array.isArray(list)) return;
    for (const f of list) if (f && f.name != null && f.id != null && !state.fnIds.has(f.name)) state.fnIds.set(f.name, f.id);
  }

  /* ================================================================ errors and notices */

  function showError(msg) {
    const e = $('#error');
    e.textContent = msg;
    e.hidden = !msg;
  }

  function markBadInput(msg) {
    $$('#filters input').forEach(i => i.classList.remove('bad'));
    if (!msg) return;
    /* the server's 400 message names the parameter ("bad value for 'size': …"); mark that input */
    const m = String(msg).match(/^bad value for '([a-z_]+)'/);
    if (m && FILTER_KEYS.includes(m[1])) { const i = $('#filters [name="' + m[1] + '"]'); if (i && i.type !== 'hidden') i.classList.add('bad'); }
  }

  function showFatal(msg) {
    $('#fatal-message').textContent = msg;
    $('#fatal').hidden = false;
    $('#app').hidden = true;
    $('#waiting').hidden = true;
  }

  function showWaiting(msg) {
    $('#waiting-message').textContent = msg;
    $('#waiting').hidden = false;
    $('#app').hidden = true;
    $('#fatal').hidden = true;
  }

  function showApp() {
    $('#app').hidden = false;
    $('#fatal').hidden = true;
    $('#waiting').hidden = true;
  }

  function setStatus(text, cls, tip) {
    const s = $('#status');
    s.textContent = text;
    s.className = 'status' + (cls ? ' st-' + cls : '');
    if (tip) s.title = tip;
  }

  /* ================================================================ tooltip */

  const tooltip = {
    show(x, y, content) {
      const t = $('#tooltip');
      if (typeof content === 'string') { t.textContent = ''; t.style.whiteSpace = 'pre-line'; t.textContent = content; } else { t.style.whiteSpace = ''; t.replaceChildren(content); }
      t.hidden = false;
      const r = t.getBoundingClientRect();
      let left = x + 14, top = y + 16;
      if (left + r.width > innerWidth - 4) left = Math.max(4, x - r.width - 10);
      if (top + r.height > innerHeight - 4) top = Math.max(4, y - r.height - 10);
      t.style.left = left + 'px';
      t.style.top = top + 'px';
    },
    hide() { $('#tooltip').hidden = true; },
  };

  /* Any element with data-tip gets the tooltip (intervals of every estimate, etc.). */
  document.addEventListener('mouseover', ev => {
    const t = ev.target.closest && ev.target.closest('[data-tip]');
    if (t && !t.closest('#flame')) tooltip.show(ev.clientX, ev.clientY, t.dataset.tip);
  });
  document.addEventListener('mouseout', ev => {
    const t = ev.target.closest && ev.target.closest('[data-tip]');
    if (t && !t.contains(ev.relatedTarget)) tooltip.hide();
  });

  /* ================================================================ info and summary */

  function kv(k, v, tip, wide) {
    const d = el('div', {class: 'kv' + (wide ? ' wide' : '')}, el('span', {class: 'k'}, k));
    const vv = el('span', {class: 'v'});
    if (v instanceof Node) vv.append(v); else vv.textContent = v == null || v === '' ? '–' : String(v);
    if (tip) vv.dataset.tip = tip;
    d.append(vv);
    return d;
  }

  function fmtWall(us, withDate) {
    const d = new Date(us / 1000);
    if (isNaN(d)) return '–';
    const p = n => String(n).padStart(2, '0');
    const t = p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds());
    return withDate ? d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + ' ' + t : t;
  }

  /* A native program's trace (every block external) in its own words:
   * freed, no runtime heaps to filter on, no promotion. */
  function nativeWords() {
    const native = !!(state.info && state.info.runtime_heaps === false);
    document.body.classList.toggle('native', native);
    document.body.classList.toggle('mappings', !!(state.info && state.info.mappings));
    $('#leaks-title').textContent = native ? 'Never freed' : 'Never collected';
    return native;
  }
  const neverWord = () => document.body.classList.contains('native') ? 'never freed' : 'never collected';

  function renderInfo() {
    const i = state.info, box = $('#info');
    if (!i) return;
    nativeWords();
    $('#trace-name').textContent = i.base ? i.trace + ' against ' + i.base.trace : (i.trace || '');
    document.body.classList.toggle('diff', !!i.base);
    document.title = 'memtrace · ' + (basename(i.trace) || basename(i.executable) || 'trace');
    const total = i.total || {}, peak = i.peak || {};
    const share = state.summary ? state.summary.share : null;
    const kids = [
      kv('executable', basename(i.executable) || '–', i.executable, true),
      kv('pid', i.pid),
      kv('host', i.host),
      kv('started', i.start_time ? fmtWall(i.start_time, true) : '–', i.start_time ? new Date(i.start_time / 1000).toString() : null),
      kv('duration', fmtSeconds(i.duration)),
      kv('word size', i.word_size ? i.word_size + '-bit' : '–'),
      kv('context', i.context || '–', i.runtime_params ? 'runtime parameters: ' + i.runtime_params : i.context),
      kv('sample rate', i.bytes_per_sample ? '1 sample per ' + fmtInt(i.bytes_per_sample) + ' bytes' : '–',
         'rate ' + i.sample_rate + ' per word (' + fmtBytes(i.bytes_per_sample) + ' per sample on average)', true),
      kv('allocated', estSpan(total.bytes, fmtBytes, (total.samples != null ? fmtInt(total.samples) + ' samples' : ''))),
      kv('allocations', estSpan(total.objects, fmtObjects, i.sampled_objects != null ? fmtInt(i.sampled_objects) + ' sampled objects' : '')),
      kv('peak live memory', estSpan(peak.bytes, fmtBytes, 'at ' + fmtSeconds(peak.time))),
      kv('filtered share', share == null ? '–' : fmtPct(share), 'share of all allocated bytes that passes the filter'),
    ];
    if (i.base) {
      /* the differential view: what this trace is compared with */
      const bt = i.base.total || {};
      kids.push(kv('compared with', i.base.trace || '–', 'the base trace of the differential view', true));
      kids.push(kv('base allocated', estSpan(bt.bytes, fmtBytes, bt.samples != null ? fmtInt(bt.samples) + ' samples' : '')));
    }
    if (i.runtime_params) kids.push(kv('runtime params', i.runtime_params, i.runtime_params, true));
    if (i.version) kids.push(kv('viewer', i.version));
    if (i.warning) kids.push(el('div', {class: 'warning'}, '⚠ ' + i.warning));
    box.replaceChildren(...kids);
  }

  function renderSummary() {
    const s = state.summary;
    if (!s) return;
    const set = (id, e, fmt) => { const n = $(id); n.textContent = fmt(val(e)); n.className = (n.id === 'summary-bytes' ? 'big ' : '') + 'est'; n.dataset.tip = intervalText(e, fmt); };
    set('#summary-bytes', s.bytes, fmtBytes);
    set('#summary-objects', s.objects, fmtCount);
    const sh = $('#summary-share');
    sh.textContent = fmtPct(s.share);
    $('#summary-samples').textContent = fmtInt(s.samples) + (s.sampled_objects != null ? ' (' + fmtInt(s.sampled_objects) + ' objects)' : '');
    $('#summary-filter').textContent = s.filter_text || 'none';
    /* a name no function has: the condition selects or hides nothing */
    const unmatched = (s.unmatched || []).map(u => '"' + u.name + '"');
    const um = $('#summary-unmatched');
    um.hidden = unmatched.length === 0;
    um.textContent = unmatched.length
      ? '⚠ no function has ' + unmatched.join(', ') + ' in its name' : '';
    renderInfo();
  }

  /* ================================================================ timeline */

  const TL = {data: null, geom: null, drag: null};

  function renderTimeline() {
    const box = $('#timeline');
    const d = TL.data;
    box.replaceChildren();
    if (!d || !Array.isArray(d.time) || !d.time.length) {
      box.append(el('div', {class: 'sub', style: 'padding:70px;text-align:center'}, 'no samples in this trace'));
      return;
    }
    const W = Math.max(200, box.clientWidth), H = box.clientHeight || 190;
    const m = {l: 64, r: 14, t: 14, b: 22};
    const from = +d.from || 0, to = Math.max(+d.to || 0, d.time[d.time.length - 1], from + 1e-9);
    const all = d.all || {}, amax = all.max || all.end || [], amin = all.min || all.end || [], aend = all.end || amax;
    const filt = d.filtered || [];
    const rss = d.rss ? d.rss.total || [] : []; /* resident memory, recorded by memtrace run */
    let ymax = 0;
    for (const a of [amax, aend, filt, rss]) for (const v of a) if (v > ymax) ymax = v;
    if (d.peak && val(d.peak.bytes) > ymax) ymax = val(d.peak.bytes);
    if (!(ymax > 0)) ymax = 1;
    const yt = niceByteTicks(ymax * 1.08, 4);
    const ytop = Math.max(yt[yt.length - 1], ymax);
    const X = t => m.l + (t - from) / (to - from) * (W - m.l - m.r);
    const Y = b => H - m.b - b / ytop * (H - m.t - m.b);
    TL.geom = {W, H, m, from, to, X, T: x => from + (x - m.l) / (W - m.l - m.r) * (to - from)};

    const parts = [];
    for (const v of yt) {
      parts.push('<line class="grid" x1="' + m.l + '" x2="' + (W - m.r) + '" y1="' + Y(v) + '" y2="' + Y(v) + '"/>');
      parts.push('<text class="tick" x="' + (m.l - 6) + '" y="' + (Y(v) + 3.5) + '" text-anchor="end">' + esc(fmtBytes(v)) + '</text>');
    }
    const nx = Math.max(2, Math.floor((W - m.l - m.r) / 90));
    for (const t of niceTicks(to - from, nx)) {
      const x = X(from + t);
      if (x > W - m.r + 0.5) continue;
      const lab = state.wall && state.info && state.info.start_time ? fmtWall(state.info.start_time + (from + t) * 1e6) : fmtSeconds(from + t);
      parts.push('<line class="axis" x1="' + x + '" x2="' + x + '" y1="' + (H - m.b) + '" y2="' + (H - m.b + 4) + '"/>');
      parts.push('<text class="tick" x="' + x + '" y="' + (H - m.b + 15) + '" text-anchor="middle">' + esc(lab) + '</text>');
    }
    /* current filter: allocated range as a band, live time as a line */
    const ar = parseRange(state.filter.alloc);
    if (ar) {
      const x0 = X(ar[0] == null ? from : ar[0]), x1 = X(ar[1] == null ? to : ar[1]);
      parts.push('<rect class="cur-sel" x="' + Math.min(x0, x1) + '" y="' + m.t + '" width="' + Math.abs(x1 - x0) + '" height="' + (H - m.t - m.b) + '"/>');
    }
    const n = d.time.length;
    const pts = (arr) => { let s = 'M' + X(from) + ',' + Y(0); for (let i = 0; i < n; i++) s += 'L' + X(d.time[i]).toFixed(1) + ',' + Y(arr[i] || 0).toFixed(1); return s; };
    /* min..max band of all objects, then its end-of-bin line, then the filtered area */
    let band = 'M' + X(d.time[0]) + ',' + Y(amax[0] || 0);
    for (let i = 1; i < n; i++) band += 'L' + X(d.time[i]).toFixed(1) + ',' + Y(amax[i] || 0).toFixed(1);
    for (let i = n - 1; i >= 0; i--) band += 'L' + X(d.time[i]).toFixed(1) + ',' + Y(amin[i] || 0).toFixed(1);
    parts.push('<path class="band" d="' + band + 'Z"/>');
    parts.push('<path class="line-all" d="' + pts(aend) + '"/>');
    if (filt.length) parts.push('<path class="line-filt" d="' + pts(filt) + 'L' + X(d.time[n - 1]) + ',' + Y(0) + 'Z"/>');
    if (rss.length) parts.push('<path class="line-rss" d="' + pts(rss) + '"><title>resident memory (RssAnon + RssFile + RssShmem)</title></path>');
    $('#legend-rss').hidden = !rss.length;
    parts.push('<line class="axis" x1="' + m.l + '" x2="' + (W - m.r) + '" y1="' + (H - m.b) + '" y2="' + (H - m.b) + '"/>');
    parts.push('<line class="axis" x1="' + m.l + '" x2="' + m.l + '" y1="' + m.t + '" y2="' + (H - m.b) + '"/>');
    const lt = state.filter.live;
    if (lt && /^[0-9.]+$/.test(lt)) parts.push('<line class="live-mark" x1="' + X(+lt) + '" x2="' + X(+lt) + '" y1="' + m.t + '" y2="' + (H - m.b) + '"/>');
    if (d.peak && val(d.peak.bytes) > 0) {
      const px = X(d.peak.time), py = Y(val(d.peak.bytes));
      const label = 'peak ' + fmtBytes(val(d.peak.bytes)) + ' at ' + fmtSeconds(d.peak.time);
      const right = px > W * 0.7;
      parts.push('<circle class="peak" cx="' + px + '" cy="' + py + '" r="4"><title>' + esc(label + '\n' + intervalText(d.peak.bytes, fmtBytes)) + '</title></circle>');
      parts.push('<text class="peak-label" x="' + (px + (right ? -8 : 8)) + '" y="' + Math.max(py + 4, m.t + 10) + '" text-anchor="' + (right ? 'end' : 'start') + '">' + esc(label) + '</text>');
    }
    parts.push('<line class="cursor" id="tl-cursor" y1="' + m.t + '" y2="' + (H - m.b) + '" x1="-10" x2="-10"/>');
    parts.push('<rect class="sel" id="tl-sel" y="' + m.t + '" height="' + (H - m.t - m.b) + '" x="0" width="0" visibility="hidden"/>');
    box.innerHTML = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ' + W + ' ' + H + '" preserveAspectRatio="none">' + parts.join('') + '</svg><div class="readout" id="tl-readout" hidden></div>';
  }

  function timelineIndexAt(t) {
    const tm = TL.data.time;
    let lo = 0, hi = tm.length - 1;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (tm[mid] < t) lo = mid + 1; else hi = mid; }
    return lo;
  }

  function roundTime(t) {
    const span = TL.geom.to - TL.geom.from;
    const digits = Math.max(0, Math.min(6, 3 - Math.floor(Math.log10(span || 1))));
    return Math.max(0, t).toFixed(digits).replace(/\.?0+$/, '') || '0';
  }

  function setupTimelineEvents() {
    const box = $('#timeline');
    const localX = ev => { const r = box.getBoundingClientRect(); return (ev.clientX - r.left) * (TL.geom ? TL.geom.W / r.width : 1); };
    box.addEventListener('mousemove', ev => {
      if (!TL.geom || !TL.data) return;
      const g = TL.geom, x = Math.min(Math.max(localX(ev), g.m.l), g.W - g.m.r), t = g.T(x);
      const cur = $('#tl-cursor');
      if (cur) { cur.setAttribute('x1', x); cur.setAttribute('x2', x); }
      const i = timelineIndexAt(t), d = TL.data, all = d.all || {};
      const ro = $('#tl-readout');
      if (ro) {
        const when = state.wall && state.info && state.info.start_time ? fmtWall(state.info.start_time + t * 1e6) : fmtSeconds(t);
        let s = when + ' · all ' + fmtBytes((all.end || all.max || [])[i] || 0);
        if (all.max && all.min && all.max[i] !== all.min[i]) s += ' (' + fmtBytes(all.min[i]) + '–' + fmtBytes(all.max[i]) + ')';
        if (d.filtered) s += ' · filtered ' + fmtBytes(d.filtered[i] || 0);
        ro.textContent = s;
        ro.hidden = false;
        const r = box.getBoundingClientRect(), px = ev.clientX - r.left;
        ro.style.left = (px > r.width / 2 ? Math.max(0, px - ro.offsetWidth - 12) : px + 12) + 'px';
      }
      if (TL.drag) {
        TL.drag.x1 = x;
        const sel = $('#tl-sel');
        sel.setAttribute('x', Math.min(TL.drag.x0, x));
        sel.setAttribute('width', Math.abs(x - TL.drag.x0));
        sel.setAttribute('visibility', 'visible');
      }
    });
    box.addEventListener('mouseleave', () => {
      const ro = $('#tl-readout'); if (ro) ro.hidden = true;
      const cur = $('#tl-cursor'); if (cur) { cur.setAttribute('x1', -10); cur.setAttribute('x2', -10); }
    });
    box.addEventListener('mousedown', ev => {
      if (!TL.geom || ev.button !== 0 || state.report) return;
      const g = TL.geom, x = Math.min(Math.max(localX(ev), g.m.l), g.W - g.m.r);
      TL.drag = {x0: x, x1: x};
      ev.preventDefault();
    });
    window.addEventListener('mouseup', () => {
      const dr = TL.drag;
      TL.drag = null;
      if (!dr || !TL.geom) return;
      const g = TL.geom;
      const r = $('#timeline').getBoundingClientRect();
      if (Math.abs(dr.x1 - dr.x0) * r.width / g.W < 4) {
        /* a click: objects live at that time */
        setFilterField('live', roundTime(g.T(dr.x0)));
      } else {
        const a = g.T(Math.min(dr.x0, dr.x1)), b = g.T(Math.max(dr.x0, dr.x1));
        setFilterField('alloc', roundTime(a) + '..' + roundTime(b));
      }
      applyForm();
    });
  }

  /* ================================================================ flame graph */

  const ROW = 18;
  const MIN_PX = 1.5;      /* narrower frames are not drawn (their weight stays in the parent) */
  const FL = {
    data: null,       /* last /api/flame answer */
    fns: new Map(),   /* id -> {name, file} */
    nodes: [],        /* drawn frames: {node, tree, depth, x0, x1 (fractions), parent, kids, key, name, file} */
    sel: -1,          /* index into nodes of the keyboard selection */
    selKey: null,
    zoom: null,       /* {tree, x0, x1}: the part of that tree shown across the full width */
  };

  const weightOf = n => state.weight === 'objects' ? val(n.objects) : val(n.bytes);

  function fnInfo(id) {
    if (id === -1 || id == null) return {name: 'all', file: ''};
    return FL.fns.get(id) || {name: '#' + id, file: ''};
  }

  /* Lay a tree out in fractions of its root's weight; flat list in drawing order.
   * Subtrees narrower than minFrac of the root, or outside the window [win.x0, win.x1],
   * are not visited: the cost follows the frames drawn, not the size of the answer. */
  function layoutTree(root, tree, out, minFrac, win) {
    const rootW = weightOf(root) || 1;
    const byWeight = state.weight === 'objects'; /* the server sorts by bytes */
    const walk = (node, x0, depth, parent, key) => {
      const w = weightOf(node) / rootW;
      const f = fnInfo(node.fn);
      const rec = {node, tree, depth, x0, x1: x0 + w, parent, kids: [], key, name: f.name, file: f.file, idx: out.length};
      out.push(rec);
      if (parent) parent.kids.push(rec);
      let kids = node.children || [];
      if (byWeight) kids = kids.slice().sort((a, b) => weightOf(b) - weightOf(a));
      let x = x0;
      for (const c of kids) {
        const cw = weightOf(c) / rootW;
        if (cw >= minFrac && x + cw > win.x0 && x < win.x1) walk(c, x, depth + 1, rec, key + '/' + c.fn);
        x += cw;
      }
    };
    walk(root, 0, 0, null, tree + ':' + root.fn);
  }

  function renderFlame() {
    const box = $('#flame');
    const d = FL.data;
    FL.nodes = [];
    if (!d || !d.callees) { box.innerHTML = '<div class="empty">no data</div>'; return; }
    if (!(weightOf(d.callees) > 0)) { box.innerHTML = '<div class="empty">no allocations match the filter</div>'; renderCallerCallee(); return; }
    const W = box.clientWidth || 800;
    /* visible part of each tree */
    const win = tree => (FL.zoom && FL.zoom.tree === tree) ? FL.zoom : {x0: 0, x1: 1};
    const all = [];
    const minFrac = t => MIN_PX / W * (win(t).x1 - win(t).x0);
    layoutTree(d.callees, 'callees', all, minFrac('callees'), win('callees'));
    if (d.callers) layoutTree(d.callers, 'callers', all, minFrac('callers'), win('callers'));
    const visible = [];
    let maxUp = 0, maxDown = 0;
    for (const r of all) {
      if (r.tree === 'callers' && r.depth === 0) continue; /* the focus bar is drawn once, from the callees tree */
      const w = win(r.tree);
      const a = Math.max(r.x0, w.x0), b = Math.min(r.x1, w.x1);
      if (b <= a) continue;
      const px0 = (a - w.x0) / (w.x1 - w.x0) * W, px1 = (b - w.x0) / (w.x1 - w.x0) * W;
      if (px1 - px0 < MIN_PX) continue;
      r.px0 = px0; r.px1 = px1;
      visible.push(r);
      if (r.tree === 'callees') maxUp = Math.max(maxUp, r.depth); else maxDown = Math.max(maxDown, r.depth);
    }
    const focused = !!d.callers;
    const gap = focused ? 6 : 0;
    const baseY = maxUp * ROW;                  /* top of the callees root row */
    const height = baseY + ROW + (focused ? gap + maxDown * ROW : 0) + 2;
    const q = state.search.toLowerCase();
    FL.nodes = visible;
    let matchBytes = 0, matches = 0;
    const rootW = weightOf(d.callees) || 1;
    const hasQ = x => x.name.toLowerCase().includes(q);
    visible.forEach((r, i) => {
      r.vi = i;
      r.top = r.tree === 'callees' ? baseY - r.depth * ROW : baseY + ROW + gap + (r.depth - 1) * ROW;
      r.match = !!q && r.node.fn !== -1 && hasQ(r);
      if (r.match) {
        matches++;
        /* count bytes once: skip a match below another match of the same tree */
        let p = r.parent, nested = false;
        while (p) { if (p.node.fn !== -1 && hasQ(p)) { nested = true; break; } p = p.parent; }
        if (!nested && r.tree === 'callees') matchBytes += weightOf(r.node);
      }
    });
    FL.labels = focused ? [[Math.max(0, baseY - 14), 'callees ↑'], [baseY + ROW + gap, 'callers ↓']] : [];
    FL.rootLabel = 'all (' + (state.weight === 'objects' ? fmtObjects(rootW) : fmtBytes(rootW)) + ')';
    FL.focused = focused;
    /* the frames sit over a spacer of the graph's height; #flame scrolls when that is
       taller than the window allows, starting with the root / focus row in view */
    const keepScroll = FL.lastKey === (d.callers ? 'f' : 'u') + ':' + state.focusName && FL.lastHeight === height;
    const oldTop = box.scrollTop;
    box.innerHTML = '<div class="spacer-h" style="height:' + height + 'px"></div><div class="frames"></div>';
    if (keepScroll) box.scrollTop = oldTop;
    else box.scrollTop = Math.max(0, baseY + ROW - box.clientHeight * (focused ? 0.55 : 1) + (focused ? 0 : 4));
    FL.lastKey = (d.callers ? 'f' : 'u') + ':' + state.focusName;
    FL.lastHeight = height;
    FL.painted = null;
    paintRows();
    box.classList.toggle('searching', !!q && matches > 0);
    tooltip.hide(); /* its frame may be gone */
    $('#search-result').textContent = q ? matches + ' match' + (matches === 1 ? '' : 'es') + (matches ? ' · ' + fmtPct(matchBytes / rootW) : '') : '';
    /* keep the keyboard selection on the same path */
    FL.sel = FL.selKey ? visible.findIndex(r => r.key === FL.selKey) : -1;
    paintSelection();
    renderCrumbs();
    renderCallerCallee();
  }

  /* Only the rows near the scrolled window are in the DOM (a deep graph has thousands
   * of frames; laying them all out costs more than drawing them): those within
   * PAINT_MARGIN px of it, repainted when a scroll leaves that band. */
  const PAINT_MARGIN = 900;
  function paintRows() {
    const box = $('#flame'), layer = $('#flame .frames');
    if (!layer) return;
    const top = box.scrollTop, h = box.clientHeight || 600;
    if (FL.painted && top - 200 >= FL.painted[0] && top + h + 200 <= FL.painted[1]) return;
    const lo = top - PAINT_MARGIN, hi = top + h + PAINT_MARGIN;
    const html = [];
    const charW = 6.9;
    for (const r of FL.nodes) {
      if (r.top + ROW < lo || r.top > hi) continue;
      const w = r.px1 - r.px0;
      let cls = 'frame';
      if (r.node.fn === -1) cls += ' root';
      if (FL.focused && r.tree === 'callees' && r.depth === 0) cls += ' focus';
      if (r.match) cls += ' match';
      if (r.vi === FL.sel) cls += ' sel';
      const change = r.node.change; /* the differential view */
      if (change) cls += ' ' + change;
      const label = w > 22 ? truncate(r.node.fn === -1 ? FL.rootLabel : r.name, Math.floor((w - 6) / charW)) : '';
      const bg = change ? changeColor(r.node) : frameColor(r.name, r.file);
      html.push('<div class="' + cls + '" data-i="' + r.vi + '" data-name="' + esc(r.name) + '" style="left:' + r.px0.toFixed(1) + 'px;width:' + w.toFixed(1) + 'px;top:' + r.top + 'px;background:' + bg + '">' + esc(label) + '</div>');
    }
    for (const [y, t] of FL.labels) html.push('<div class="section-label" style="top:' + y + 'px">' + t + '</div>');
    layer.innerHTML = html.join('');
    FL.painted = [lo, hi];
  }

  function truncate(s, n) {
    if (n <= 1) return '';
    if (s.length <= n) return s;
    return s.slice(0, n - 1) + '…';
  }

  function paintSelection() {
    $$('#flame .frame.sel').forEach(e => e.classList.remove('sel'));
    if (FL.sel >= 0) {
      const e = $('#flame .frame[data-i="' + FL.sel + '"]');
      if (e) e.classList.add('sel');
    }
  }

  function frameTip(r) {
    const rootW = FL.data ? (weightOf(FL.data.callees) || 1) : 1;
    const n = r.node;
    const t = el('div', null,
      el('div', {class: 't-name'}, r.name),
      r.file ? el('div', {class: 't-file'}, r.file) : null);
    const tb = el('table');
    const row = (k, e, fmt) => tb.append(el('tr', null, el('td', null, k), el('td', null, fmt(val(e))),
      el('td', {class: 'i'}, e && e.lo != null ? '95%: ' + fmt(e.lo) + ' – ' + fmt(e.hi) : '')));
    row('bytes', n.bytes, fmtBytes);
    if (n.base) {
      row('base bytes', n.base.bytes, fmtBytes);
      const was = val(n.base.bytes), now = val(n.bytes);
      tb.append(el('tr', null, el('td', null, 'change'),
        el('td', null, (now >= was ? '+' : '−') + fmtBytes(Math.abs(now - was))),
        el('td', {class: 'i'}, n.change === 'same' ? 'not significant' : n.change + ' (the 95% intervals do not overlap)')));
    }
    row('objects', n.objects, fmtCount);
    if (n.self) { row('self bytes', n.self.bytes, fmtBytes); row('self objects', n.self.objects, fmtCount); }
    tb.append(el('tr', null, el('td', null, 'share'), el('td', null, fmtPct(weightOf(n) / rootW)), el('td', {class: 'i'}, r.tree === 'callers' && r.depth ? 'via this caller' : 'of the ' + (FL.data.callers ? 'focused function' : 'total'))));
    t.append(tb);
    t.append(el('div', {class: 't-file'}, state.report ? 'click: zoom' : 'click: focus · shift+click: zoom'));
    return t;
  }

  function setupFlameEvents() {
    const box = $('#flame');
    box.addEventListener('mousemove', ev => {
      const f = ev.target.closest('.frame');
      if (!f) { tooltip.hide(); return; }
      const r = FL.nodes[+f.dataset.i];
      if (r) tooltip.show(ev.clientX, ev.clientY, frameTip(r));
    });
    box.addEventListener('mouseleave', () => tooltip.hide());
    let scrollQueued = false;
    box.addEventListener('scroll', () => {
      if (scrollQueued) return;
      scrollQueued = true;
      requestAnimationFrame(() => { scrollQueued = false; paintRows(); });
    });
    box.addEventListener('click', ev => {
      const f = ev.target.closest('.frame');
      if (!f) return;
      const r = FL.nodes[+f.dataset.i];
      if (!r) return;
      FL.sel = r.vi; FL.selKey = r.key;
      if (ev.shiftKey || state.report || r.node.fn === -1) { zoomTo(r); return; }
      if (FL.data.callers && r.tree === 'callees' && r.depth === 0) { zoomTo(null); return; }
      focusOn(r.name);
    });
    box.addEventListener('wheel', ev => {
      if (!ev.ctrlKey && !ev.metaKey) return; /* plain wheel scrolls the page */
      ev.preventDefault();
      const rect = box.getBoundingClientRect();
      const fx = (ev.clientX - rect.left) / rect.width;
      const fy = ev.clientY - rect.top + box.scrollTop;
      const fr = FL.focused ? FL.nodes.find(r => r.tree === 'callees' && r.depth === 0) : null;
      const tree = fr && fy > fr.top + ROW ? 'callers' : 'callees';
      const z = FL.zoom && FL.zoom.tree === tree ? FL.zoom : {tree, x0: 0, x1: 1};
      const at = z.x0 + fx * (z.x1 - z.x0);
      const k = ev.deltaY > 0 ? 1.25 : 0.8;
      let w = Math.min(1, Math.max(1e-6, (z.x1 - z.x0) * k));
      let x0 = at - fx * w;
      x0 = Math.max(0, Math.min(1 - w, x0));
      FL.zoom = w >= 1 ? null : {tree, x0, x1: x0 + w};
      renderFlame();
    }, {passive: false});
    box.addEventListener('keydown', flameKey);
    document.addEventListener('keydown', ev => {
      if (state.view !== 'flame') return;
      const tag = (ev.target.tagName || '').toLowerCase();
      if (ev.key === '/' && tag !== 'input' && tag !== 'select') { ev.preventDefault(); $('#search').focus(); $('#search').select(); }
      else if (ev.key === 'Escape' && ev.target.id === 'search') { $('#search').value = ''; setSearch(''); box.focus(); }
    });
    $('#search').addEventListener('input', debounce(() => setSearch($('#search').value), 150));
    $('#search').addEventListener('keydown', ev => { if (ev.key === 'Enter') { setSearch($('#search').value); } });
    $('#weight').addEventListener('change', () => { state.weight = $('#weight').value; writeURL(false); loadView(true); });
    $('#zoom-reset').addEventListener('click', () => zoomTo(null));
  }

  function setSearch(s) {
    if (s === state.search) return;
    state.search = s;
    writeURL(false);
    renderFlame();
  }

  function zoomTo(r) {
    FL.zoom = r && r.node.fn !== -1 && (r.tree !== 'callees' || r.depth > 0 || !FL.data.callers) && (r.x1 - r.x0) < 0.999999 ? {tree: r.tree, x0: r.x0, x1: r.x1} : null;
    renderFlame();
  }

  function flameKey(ev) {
    const nodes = FL.nodes;
    if (!nodes.length) return;
    let r = nodes[FL.sel] || null;
    const pick = x => { if (x && x.vi != null && nodes[x.vi] === x) { FL.sel = x.vi; FL.selKey = x.key; paintSelection(); showSelTip(x); } };
    const visKids = x => x.kids.filter(k => nodes[k.vi] === k);
    const rootOf = tree => nodes.find(n => n.tree === tree && n.depth === (tree === 'callers' ? 1 : 0));
    switch (ev.key) {
      case 'ArrowUp': case 'ArrowDown': {
        ev.preventDefault();
        const up = ev.key === 'ArrowUp';
        if (!r) { pick(rootOf('callees')); return; }
        /* callees grow upwards, callers downwards */
        const inward = (r.tree === 'callees') === up;
        if (inward) {
          const k = visKids(r);
          if (k.length) pick(k[0]);
          else if (r.tree === 'callees' && r.depth === 0 && !up) pick(visKids(FL.nodes.find(n => n.tree === 'callers' && n.depth === 1) ? {kids: nodes.filter(n => n.tree === 'callers' && n.depth === 1)} : {kids: []})[0]);
        } else if (r.parent) {
          if (r.tree === 'callers' && r.depth === 1) pick(rootOf('callees'));
          else pick(r.parent);
        }
        return;
      }
      case 'ArrowLeft': case 'ArrowRight': {
        ev.preventDefault();
        if (!r) { pick(rootOf('callees')); return; }
        const row = nodes.filter(n => n.tree === r.tree && n.depth === r.depth).sort((a, b) => a.px0 - b.px0);
        const i = row.indexOf(r) + (ev.key === 'ArrowLeft' ? -1 : 1);
        if (i >= 0 && i < row.length) pick(row[i]);
        return;
      }
      case 'Enter':
        ev.preventDefault();
        if (r && r.node.fn !== -1) { if (state.report) zoomTo(r); else focusOn(r.name); }
        return;
      case 'Escape':
        ev.preventDefault();
        if (state.search) { $('#search').value = ''; setSearch(''); }
        else if (FL.zoom) zoomTo(null);
        else if (state.focusName) unfocus(state.crumbs.length - 2);
        return;
      case '+': case '=': if (r) zoomTo(r); return;
      case '-': case '0': zoomTo(null); return;
    }
  }

  function showSelTip(r) {
    const box = $('#flame');
    if (r.top < box.scrollTop) box.scrollTop = r.top;
    else if (r.top + ROW > box.scrollTop + box.clientHeight) box.scrollTop = r.top + ROW - box.clientHeight;
    paintRows();
    paintSelection();
    const e = $('#flame .frame[data-i="' + r.vi + '"]');
    if (!e) return;
    const b = e.getBoundingClientRect();
    tooltip.show(b.left + Math.min(b.width / 2, 60), b.bottom, frameTip(r));
  }

  function focusOn(name) {
    if (state.report || !name || name === state.focusName) return;
    state.focusName = name;
    state.crumbs.push(name);
    FL.zoom = null;
    FL.selKey = null;
    writeURL(true);
    loadView(false);
  }

  /* Back to crumb i (-1: no focus). */
  function unfocus(i) {
    state.crumbs = i < 0 ? [] : state.crumbs.slice(0, i + 1);
    state.focusName = state.crumbs.length ? state.crumbs[state.crumbs.length - 1] : null;
    FL.zoom = null;
    FL.selKey = null;
    writeURL(true);
    loadView(false);
  }

  function renderCrumbs() {
    const c = $('#crumbs');
    const kids = [];
    const link = (text, i, current) => {
      const a = el('a', {class: current ? 'current' : null, title: text}, text);
      if (!current) a.addEventListener('click', () => unfocus(i));
      return a;
    };
    kids.push(link('all', -1, !state.focusName));
    state.crumbs.forEach((n, i) => { kids.push(el('span', {class: 'sep'}, '›')); kids.push(link(n, i, i === state.crumbs.length - 1)); });
    if (FL.zoom) kids.push(el('span', {class: 'sep'}, ' (zoomed)'));
    c.replaceChildren(...kids);
  }

  /* The tables under the flame graph: direct callers and callees of the focus
   * (or of the zoomed/selected frame in a report). */
  function renderCallerCallee() {
    const d = FL.data;
    if (!d || !d.callees) return;
    let base = d.callees;
    if (!d.callers && FL.zoom && FL.zoom.tree === 'callees') {
      const z = FL.nodes.filter(r => r.tree === 'callees' && r.x0 <= FL.zoom.x0 + 1e-12 && r.x1 >= FL.zoom.x1 - 1e-12).pop();
      if (z) base = z.node;
    }
    const baseName = fnInfo(base.fn).name;
    const baseW = weightOf(base) || 1;
    const rows = (nodes) => nodes.map(n => ({name: fnInfo(n.fn).name, file: fnInfo(n.fn).file, bytes: n.bytes, objects: n.objects, share: weightOf(n) / baseW}));
    const calleeRows = rows(base.children || []);
    if (base.self && val(base.self.bytes) > 0) calleeRows.push({name: base.fn === -1 ? '(frames too small to draw)' : '(self: in ' + baseName + ' and its small callees)', file: '', bytes: base.self.bytes, objects: base.self.objects, share: (state.weight === 'objects' ? val(base.self.objects) : val(base.self.bytes)) / baseW, self: true});
    $('#callees-title').textContent = base.fn === -1 ? 'Outermost frames' : 'Callees of ' + baseName;
    renderTable($('#callees-table'), fnColumns(), calleeRows, 'No callees');
    if (d.callers) {
      $('#callers-title').textContent = 'Callers of ' + baseName;
      renderTable($('#callers-table'), fnColumns(), rows(d.callers.children || []), 'No callers: ' + baseName + ' is outermost');
    } else {
      $('#callers-title').textContent = 'Callers';
      renderTable($('#callers-table'), [{label: ''}], [], state.report ? 'Callers need the server (memtrace view)' : 'Click a frame to focus it and see its callers');
    }
  }

  function fnLink(name, file) {
    if (state.report || /^\((self|frames too small)/.test(name)) return el('span', {title: file || ''}, name);
    const a = el('a', {class: 'fn', title: (file ? file + '\n' : '') + 'click: focus in the flame graph'}, name);
    a.addEventListener('click', () => { state.view = 'flame'; focusOn(name); if (state.view !== 'flame') setView('flame'); else showView(); });
    return a;
  }

  function fnColumns() {
    return [
      {label: 'function', cls: 'name', sort: r => r.name, render: r => fnLink(r.name, r.file)},
      {label: 'bytes', num: true, sort: r => val(r.bytes), render: r => estSpan(r.bytes, fmtBytes), def: true},
      {label: 'objects', num: true, sort: r => val(r.objects), render: r => estSpan(r.objects, fmtCount)},
      {label: 'share', num: true, sort: r => r.share, render: r => fmtPct(r.share)},
      {label: '', cls: 'bar', render: r => el('span', {class: 'pct', style: 'width:' + Math.min(100, r.share * 100).toFixed(1) + '%'})},
    ];
  }

  /* ================================================================ tables */

  const sortState = new Map(); /* table id -> {col, dir} */

  /* columns: [{label, num, cls, sort(row) -> value, render(row) -> Node|string, def}] */
  function renderTable(table, columns, rows, emptyText) {
    const id = table.id;
    let st = sortState.get(id);
    if (!st || st.ncols !== columns.length) {
      const di = columns.findIndex(c => c.def);
      st = {col: di, dir: -1, ncols: columns.length, initial: true};
      sortState.set(id, st);
    }
    const sorted = rows.slice();
    if (st.col >= 0 && columns[st.col] && columns[st.col].sort && !st.initial) {
      const f = columns[st.col].sort;
      sorted.sort((a, b) => { const x = f(a), y = f(b); return (x < y ? -1 : x > y ? 1 : 0) * st.dir; });
    }
    const head = el('tr');
    columns.forEach((c, i) => {
      const th = el('th', {class: (c.num ? 'num ' : '') + (c.sort ? 'sortable ' : '') + (i === st.col ? (st.dir < 0 ? 'sorted-desc' : 'sorted-asc') : ''), title: c.sort ? 'sort' : null}, c.label);
      if (c.sort) th.addEventListener('click', () => {
        if (st.col === i) st.dir = -st.dir; else { st.col = i; st.dir = c.num ? -1 : 1; }
        st.initial = false;
        renderTable(table, columns, rows, emptyText);
      });
      head.append(th);
    });
    const body = [];
    for (const r of sorted) {
      const tr = el('tr');
      for (const c of columns) {
        const v = c.render ? c.render(r) : '';
        tr.append(el('td', {class: (c.num ? 'num ' : '') + (c.cls || '')}, v));
      }
      body.push(tr);
    }
    if (!sorted.length) body.push(el('tr', {class: 'empty'}, el('td', {colspan: columns.length}, emptyText || 'nothing matches the filter')));
    table.replaceChildren(el('thead', null, head), el('tbody', null, ...body));
  }

  /* A frame of a stack (docs/json.md FRAME): a location, or a code the trace never described. */
  const frameName = f => f.function != null ? f.function : (f.code != null ? '#' + f.code : '?');

  /* The frames of a stack, innermost first: the first `shown` (6), then a link to the rest;
   * `total` is the stack's length when the answer carries fewer frames. */
  function framesList(frames, total, shown) {
    const ul = el('ul', {class: 'frames'});
    const n = frames.length;
    const lim = shown || 6;
    frames.slice(0, lim).forEach(f => {
      const loc = f.file ? basename(f.file) + (f.line ? ':' + f.line : '') : '';
      const name = frameName(f);
      ul.append(el('li', {class: f.function == null ? 'code' : null, title: name + (f.file ? '\n' + f.file + (f.line ? ':' + f.line : '') : f.function == null ? '\na code the trace has no location for' : '')}, name, loc ? el('span', {class: 'loc'}, loc) : null));
    });
    if (n > lim) {
      const more = el('li', {class: 'more'}, '… ' + (n - lim) + ' more frames (show)');
      more.addEventListener('click', () => ul.replaceWith(framesList(frames, total, n)));
      ul.append(more);
    } else if (total > n) {
      ul.append(el('li', {class: 'loc'}, '… ' + (total - n) + ' more frames'));
    }
    if (!n) ul.append(el('li', {class: 'loc'}, '(no backtrace)'));
    return ul;
  }

  const share = (e, total) => val(e) / (val(total) || 1);
  const barCell = f => el('span', {class: 'pct', style: 'width:' + Math.min(100, Math.max(0, f) * 100).toFixed(1) + '%'});

  /* "showing N of M nouns" beside a view's title (noun: [one, many]) */
  function shownNote(id, shown, total, noun, extra) {
    const e = $(id);
    if (!e) return;
    e.textContent = (total != null ? (shown < total ? 'showing ' + fmtInt(shown) + ' of ' : '') + fmtInt(total) + ' ' + noun[total === 1 ? 0 : 1] : '') + (extra ? ' · ' + extra : '');
  }

  function renderFunctions(d) {
    learnFunctions(d.functions);
    const tot = d.total && d.total.bytes;
    renderTable($('#functions'), [
      {label: 'function', cls: 'name', sort: r => r.name, render: r => fnLink(r.name, r.file)},
      {label: 'file', cls: 'file', sort: r => r.file || '', render: r => r.file || ''},
      {label: 'self bytes', num: true, sort: r => val(r.self && r.self.bytes), render: r => estSpan(r.self && r.self.bytes, fmtBytes)},
      {label: 'self objects', num: true, sort: r => val(r.self && r.self.objects), render: r => estSpan(r.self && r.self.objects, fmtCount)},
      {label: 'total bytes', num: true, sort: r => val(r.total && r.total.bytes), render: r => estSpan(r.total && r.total.bytes, fmtBytes), def: true},
      {label: 'total objects', num: true, sort: r => val(r.total && r.total.objects), render: r => estSpan(r.total && r.total.objects, fmtCount)},
      {label: 'total share', num: true, sort: r => share(r.total && r.total.bytes, tot), render: r => fmtPct(share(r.total && r.total.bytes, tot))},
      {label: '', cls: 'bar', render: r => barCell(share(r.total && r.total.bytes, tot))},
    ], d.functions || []);
  }

  /* The rankings' rows (docs/json.md): a share of the filtered total in percent. */
  const pctOf = r => (+r.bytes_percent || 0) / 100;

  function renderPaths(d) {
    shownNote('#paths-count', d.shown, d.sites_total, ['stack', 'stacks']);
    renderTable($('#paths'), [
      {label: 'stack (innermost first)', render: r => framesList(r.frames || [], r.frames_total)},
      {label: 'bytes', num: true, sort: r => val(r.bytes), render: r => estSpan(r.bytes, fmtBytes, fmtInt(r.samples) + ' samples'), def: true},
      {label: 'objects', num: true, sort: r => val(r.objects), render: r => estSpan(r.objects, fmtCount, fmtInt(r.sampled_objects) + ' sampled objects')},
      {label: 'share', num: true, sort: pctOf, render: r => fmtPct(pctOf(r))},
      {label: '', cls: 'bar', render: r => barCell(pctOf(r))},
    ], d.sites || []);
  }

  /* A site: a function (with its file, and line unless by function), a code the trace
   * has no location for, or no backtrace at all; `site` is its text. */
  function siteCell(r) {
    if (r.function != null) return fnLink(r.function, r.file);
    return el('span', {class: 'code', title: r.code != null ? 'a code the trace has no location for' : 'allocations without a backtrace'}, r.site || '?');
  }

  function renderSites(d) {
    $('#sites-by').value = d.by === 'function' ? 'function' : 'line';
    shownNote('#sites-count', d.shown, d.sites_total, d.by === 'function' ? ['function', 'functions'] : ['site', 'sites']);
    renderTable($('#sites'), [
      {label: 'function', cls: 'name', sort: r => r.function != null ? r.function : r.site || '', render: siteCell},
      {label: 'location', cls: 'file', sort: r => (r.file || '') + ':' + String(r.line || 0).padStart(8, '0'), render: r => r.file ? r.file + (r.line ? ':' + r.line : '') : ''},
      {label: 'bytes', num: true, sort: r => val(r.bytes), render: r => estSpan(r.bytes, fmtBytes, fmtInt(r.samples) + ' samples'), def: true},
      {label: 'objects', num: true, sort: r => val(r.objects), render: r => estSpan(r.objects, fmtCount, fmtInt(r.sampled_objects) + ' sampled objects')},
      {label: 'share', num: true, sort: pctOf, render: r => fmtPct(pctOf(r))},
      {label: '', cls: 'bar', render: r => barCell(pctOf(r))},
    ], d.sites || []);
  }

  /* The differential view's table: memtrace diff's answer, significant changes first. */
  function renderChanges(d) {
    shownNote('#changes-count', d.shown, d.sites_total, ['site', 'sites'],
      d.significant != null ? d.significant + ' significant' : null);
    const change = r => val(r.new.bytes) - val(r.base.bytes);
    renderTable($('#changes'), [
      {label: '', cls: 'sig', sort: r => r.significant ? 1 : 0, render: r => r.significant ? el('span', {class: 'sig ' + (change(r) > 0 ? 'grown' : 'shrunk'), title: 'the 95% intervals of the bytes do not overlap'}, change(r) > 0 ? '▲' : '▼') : ''},
      {label: 'site', cls: 'name', sort: r => r.site || '', render: siteCell},
      {label: 'location', cls: 'file', sort: r => (r.file || '') + ':' + String(r.line || 0).padStart(8, '0'), render: r => r.file ? r.file + (r.line ? ':' + r.line : '') : ''},
      {label: 'change', num: true, sort: r => Math.abs(change(r)), render: r => (change(r) >= 0 ? '+' : '−') + fmtBytes(Math.abs(change(r))), def: true},
      {label: 'base bytes', num: true, sort: r => val(r.base.bytes), render: r => estSpan(r.base.bytes, fmtBytes, '')},
      {label: 'new bytes', num: true, sort: r => val(r.new.bytes), render: r => estSpan(r.new.bytes, fmtBytes, '')},
      {label: 'base objects', num: true, sort: r => val(r.base.objects), render: r => estSpan(r.base.objects, fmtCount, '')},
      {label: 'new objects', num: true, sort: r => val(r.new.objects), render: r => estSpan(r.new.objects, fmtCount, '')},
    ], d.sites || [], 'no site to compare');
  }

  function renderLeaks(d) {
    /* the leaks' own filter: the page's, with "never collected" for any collection condition */
    const filtered = Object.keys(state.filter).length > 0;
    shownNote('#leaks-count', d.shown, d.stacks_total, ['stack', 'stacks'], filtered && d.filter_text ? 'filter: ' + d.filter_text : null);
    renderTable($('#leaks'), [
      {label: 'stack (innermost first)', render: r => framesList(r.frames || [], r.frames_total)},
      {label: 'bytes', num: true, sort: r => val(r.bytes), render: r => estSpan(r.bytes, fmtBytes, fmtInt(r.samples) + ' samples'), def: true},
      {label: 'objects', num: true, sort: r => val(r.objects), render: r => estSpan(r.objects, fmtCount, fmtInt(r.sampled_objects) + ' sampled objects')},
      {label: 'oldest', num: true, sort: r => -r.oldest_alloc_s, render: r => el('span', {title: 'allocated ' + fmtSeconds(r.age_s) + ' before the end'}, fmtSeconds(r.oldest_alloc_s))},
      {label: 'newest', num: true, sort: r => +r.newest_alloc_s, render: r => fmtSeconds(r.newest_alloc_s)},
      {label: 'age', num: true, sort: r => +r.age_s, render: r => fmtSeconds(r.age_s)},
    ], d.stacks || [], 'no object of the filter stays alive to the end');
  }

  /* ================================================================ histograms */

  function renderHistogram(box, bins, fmtRange, extra) {
    const W = Math.max(260, box.clientWidth), H = box.clientHeight || 230;
    const m = {l: 62, r: 8, t: 10, b: 40};
    const key = state.histWeight;
    const all = bins.slice();
    if (extra) all.push(extra);
    if (!all.length || !all.some(b => val(b[key]) > 0)) { box.innerHTML = '<div class="sub" style="padding:60px;text-align:center">no objects</div>'; return; }
    const ymax = Math.max(...all.map(b => val(b[key])));
    const ticks = key === 'bytes' ? niceByteTicks(ymax, 4) : niceTicks(ymax, 4);
    const ytop = Math.max(ticks[ticks.length - 1], ymax);
    const bw = (W - m.l - m.r) / all.length;
    const Y = v => H - m.b - v / ytop * (H - m.t - m.b);
    const fmt = key === 'bytes' ? fmtBytes : fmtCount;
    const p = [];
    for (const t of ticks) p.push('<line class="axis" x1="' + m.l + '" x2="' + (W - m.r) + '" y1="' + Y(t) + '" y2="' + Y(t) + '" stroke-opacity=".25"/><text class="tick" x="' + (m.l - 5) + '" y="' + (Y(t) + 3) + '" text-anchor="end">' + esc(fmt(t)) + '</text>');
    const every = Math.max(1, Math.ceil(all.length / Math.max(1, (W - m.l - m.r) / 58)));
    all.forEach((b, i) => {
      const v = val(b[key]), x = m.l + i * bw;
      const isExtra = extra && i === all.length - 1;
      const label = isExtra ? neverWord() : fmtRange(b.lo) + ' – ' + fmtRange(b.hi);
      const tip = label + '\n' + intervalText(b.objects, fmtObjects) + '\n' + intervalText(b.bytes, fmtBytes);
      p.push('<rect class="bar' + (isExtra ? ' end' : '') + '" x="' + (x + 1) + '" width="' + Math.max(1, bw - 2) + '" y="' + Y(v) + '" height="' + Math.max(0, H - m.b - Y(v)) + '" data-tip="' + esc(tip) + '"/>');
      if (i % every === 0 || isExtra) p.push('<text class="tick" x="' + (x + bw / 2) + '" y="' + (H - m.b + 13) + '" text-anchor="middle">' + esc(isExtra ? 'never' : fmtRange(b.lo)) + '</text>');
    });
    p.push('<line class="axis" x1="' + m.l + '" x2="' + (W - m.r) + '" y1="' + (H - m.b) + '" y2="' + (H - m.b) + '"/>');
    p.push('<text class="tick" x="' + ((W + m.l) / 2) + '" y="' + (H - 6) + '" text-anchor="middle">' + (fmtRange === fmtBytes ? 'object size (bins: powers of two)' : 'lifetime (log scale)') + '</text>');
    box.innerHTML = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ' + W + ' ' + H + '" preserveAspectRatio="none">' + p.join('') + '</svg>';
  }

  function renderHistograms(d) {
    renderHistogram($('#hist-size'), d.size || [], fmtBytes, null);
    const e = d.live_at_end ? {lo: Infinity, hi: Infinity, objects: d.live_at_end.objects, bytes: d.live_at_end.bytes} : null;
    renderHistogram($('#hist-lifetime'), d.lifetime || [], fmtSeconds, e && val(e.objects) > 0 ? e : null);
  }

  /* ================================================================ statistics */

  /* /api/stats (docs/json.md): sizes, lifetimes and sources of the filtered objects,
   * each row with its share of them. */
  function renderStats(d) {
    const g = d.all || {};
    /* sizes in words for OCaml, in bytes for a native program */
    const native = document.body.classList.contains('native');
    const wordBytes = ((state.info && state.info.word_size) || 64) / 8;
    const words = w => w == null ? '–' : native ? fmtBytes(+w * wordBytes) : sig3(+w) + ' words';
    const sz = (g.size_words && g.size_words.estimated) || {};
    const smp = (g.size_words && g.size_words.sampled) || {};
    $('#stats-head').replaceChildren(...[
      kv('objects', estSpan(g.objects, fmtObjects, fmtInt(g.sampled_objects) + ' sampled objects')),
      kv('bytes', estSpan(g.bytes, fmtBytes, fmtInt(g.samples) + ' samples')),
      kv('mean size', el('span', {'data-tip': 'estimated over every allocation (weights 1/P)\nstandard deviation ' + words(sz.stddev) + '\nover the sampled objects: mean ' + words(smp.mean) + ', standard deviation ' + words(smp.stddev)}, words(sz.mean))),
      kv('largest sampled', sz.max == null ? '–' : native ? fmtBytes(sz.max * wordBytes) : fmtInt(sz.max) + ' words'),
      native ? null : kv('promoted', g.promotion && g.promotion.rate != null ? fmtPct(g.promotion.rate) + ' of minor' : '–', g.promotion && g.promotion.rate_bytes != null ? fmtPct(g.promotion.rate_bytes) + ' of the minor bytes' : null),
      kv('time span', fmtSeconds(g.from_s) + ' – ' + fmtSeconds(g.to_s))].filter(Boolean));
    const cols = first => [
      {label: first, cls: 'lab', render: r => r.label},
      {label: 'objects', num: true, sort: r => val(r.objects), render: r => estSpan(r.objects, fmtCount, fmtInt(r.sampled_objects) + ' sampled objects')},
      {label: 'share', num: true, sort: r => +r.objects_share || 0, render: r => fmtPct(r.objects_share)},
      {label: 'bytes', num: true, sort: r => val(r.bytes), render: r => estSpan(r.bytes, fmtBytes, fmtInt(r.samples) + ' samples')},
      {label: 'share', num: true, sort: r => +r.bytes_share || 0, render: r => fmtPct(r.bytes_share)},
      {label: '', cls: 'bar', render: r => barCell(+r.bytes_share || 0)},
    ];
    const rows = (list, label) => (list || []).map(r => Object.assign({label: label(r)}, r));
    renderTable($('#stats-sizes'), cols('size (words)'), rows(g.size_histogram, r => r.bin)
      .concat(g.over_256_words ? [Object.assign({label: 'over 256 (257 and up)'}, g.over_256_words)] : []));
    renderTable($('#stats-lifetimes'), cols('lifetime'), rows(g.lifetime_histogram, r => r.bin)
      .concat(g.never_collected ? [Object.assign({label: neverWord()}, g.never_collected)] : []));
    const src = g.sources || {};
    renderTable($('#stats-sources'), cols('source'), native ? [] : ['minor', 'major', 'external'].filter(k => src[k]).map(k => Object.assign({label: k}, src[k])));
  }

  /* ================================================================ views and refresh */

  const VIEW_LOADERS = {
    flame: async () => {
      const params = {weight: state.weight === 'objects' ? 'objects' : null};
      if (state.focusName && !state.report) {
        let id = state.fnIds.get(state.focusName);
        if (id == null) {
          const d0 = await api('/api/flame', params, true);
          learnFunctions(d0.functions);
          id = state.fnIds.get(state.focusName);
          if (id == null) {
            showError('“' + state.focusName + '” is not in the flame graph of this filter; showing the whole graph.');
            state.focusName = null; state.crumbs = []; writeURL(false);
            return d0;
          }
        }
        params.focus = id;
      }
      return api('/api/flame', params, true);
    },
    functions: () => api('/api/functions', {n: 200, sort: 'total'}, true),
    paths: () => api('/api/paths', {n: 100}, true),
    sites: () => api('/api/sites', {n: 100, by: state.sitesBy === 'function' ? 'function' : null}, true),
    leaks: () => api('/api/leaks', {n: 100}, true),
    histograms: () => api('/api/histograms', null, true),
    stats: () => api('/api/stats', null, true),
    changes: () => api('/api/diff', {n: 200, by: state.sitesBy === 'function' ? 'function' : null}, true),
  };

  const VIEW_RENDER = {
    flame: d => {
      FL.data = d;
      FL.fns = new Map((d.functions || []).map(f => [f.id, f]));
      learnFunctions(d.functions);
      renderFlame();
    },
    functions: renderFunctions,
    paths: renderPaths,
    sites: renderSites,
    leaks: renderLeaks,
    histograms: d => { VIEW_RENDER.histograms.last = d; renderHistograms(d); },
    stats: renderStats,
    changes: renderChanges,
  };

  let viewToken = 0;
  /* Load and draw the current view. A later call supersedes an earlier one. */
  async function loadView(keepError) {
    const tok = ++viewToken, view = state.view;
    try {
      const d = await VIEW_LOADERS[view]();
      if (tok !== viewToken) return;
      if (!keepError) showError('');
      VIEW_RENDER[view](d);
    } catch (e) {
      if (tok !== viewToken) return;
      handleError(e);
    }
  }

  function handleError(e) {
    const msg = e && e.message ? e.message : String(e);
    if (e instanceof ApiError && e.status === 503) { pollSoon(); return; }
    showError(msg);
    if (e instanceof ApiError && e.status === 400) markBadInput(msg);
  }

  let dataToken = 0;
  /* Everything that depends on the filter: summary, timeline, current view. */
  async function refreshData() {
    const tok = ++dataToken;
    const bins = Math.max(10, Math.min(4000, Math.round(($('#timeline').clientWidth || 600) - 70)));
    showError('');
    markBadInput(null);
    /* the view loads alongside; it shows its own errors (the same 400 as below) */
    const view = loadView(true);
    try {
      const [s, t] = await Promise.all([
        api('/api/summary', null, true),
        api('/api/timeline', {bins}, true),
      ]);
      if (tok !== dataToken) return;
      state.summary = s;
      TL.data = t;
      renderSummary();
      renderTimeline();
    } catch (e) {
      if (tok !== dataToken) return;
      handleError(e);
    }
    await view;
  }

  function showView() {
    $$('#view-tabs button').forEach(b => {
      const on = b.dataset.view === state.view;
      b.classList.toggle('active', on);
      b.setAttribute('aria-selected', on ? 'true' : 'false');
    });
    $$('.view').forEach(p => { p.hidden = p.dataset.panel !== state.view; });
  }

  function setView(v) {
    if (!VIEWS.includes(v) || v === state.view) return;
    state.view = v;
    writeURL(true);
    showView();
    loadView(true);
  }

  /* ---- the filter form */

  function fillForm() {
    const f = $('#filters');
    for (const k of FILTER_KEYS) { const i = f.elements[k]; if (i) i.value = state.filter[k] || ''; }
    const src = (state.filter.source || '').split(',');
    $$('#filters [data-source]').forEach(c => { c.checked = src.includes(c.dataset.source); });
    $('#weight').value = state.weight;
    $('#search').value = state.search;
    $('#wallclock').checked = state.wall;
    $('#sites-by').value = state.sitesBy;
  }

  function readForm() {
    const f = $('#filters');
    const src = $$('#filters [data-source]').filter(c => c.checked).map(c => c.dataset.source);
    f.elements.source.value = src.join(',');
    const out = {};
    for (const k of FILTER_KEYS) { const i = f.elements[k]; const v = i ? i.value.trim() : ''; if (v) out[k] = v; }
    return out;
  }

  function setFilterField(k, v) {
    const i = $('#filters').elements[k];
    if (i) i.value = v;
  }

  function applyForm() {
    state.filter = readForm();
    writeURL(true);
    refreshData();
  }

  /* Parse "A..B" (either side empty) into [a|null, b|null]; null when absent/bad. */
  function parseRange(s) {
    if (!s) return null;
    const m = String(s).match(/^\s*([0-9.eE+-]*)\s*\.\.\s*([0-9.eE+-]*)\s*$/);
    if (!m) return null;
    return [m[1] === '' ? null : +m[1], m[2] === '' ? null : +m[2]];
  }

  /* ================================================================ live mode */

  const POLL_MS = 500;
  let pollTimer = 0, polling = false, refreshing = false, refreshAgain = false;

  function pollSoon() {
    if (state.report) return;
    clearTimeout(pollTimer);
    pollTimer = setTimeout(poll, POLL_MS);
  }

  /* Read /api/status; on a new generation reload the info and every view. */
  async function poll() {
    if (polling) return;
    polling = true;
    let s = null;
    try {
      s = await api('/api/status', null, false);
    } catch (e) {
      setStatus('error: ' + e.message, 'error');
      showError(e.message);
      polling = false;
      if (state.live || !state.info) pollSoon();
      return;
    }
    polling = false;
    state.status = s;
    state.live = !!s.live;
    /* the status says "ready" once the page shows the trace: a new
     * generation's info and views are loaded first (said before, #status
     * read "ready" while #info was still empty) */
    const shown = s.state === 'ready' || s.state === 'partial';
    if (shown && s.generation !== state.generation) await reloadAll(s.generation);
    applyStatus(s);
    if (state.live || s.state !== 'ready') pollSoon();
  }

  function applyStatus(s) {
    const dur = $('#live-duration');
    if (s.state === 'error') {
      const msg = s.error || 'the trace could not be loaded';
      setStatus('error: ' + msg, 'error', msg);
      showError(msg);
      if (!state.info) showFatal(msg);
    } else if (s.state === 'waiting') {
      setStatus('waiting', 'waiting');
      if (!state.info) showWaiting(s.message || s.error || 'waiting for a program to connect');
    } else if (s.state === 'loading' && !state.info) {
      setStatus('loading', 'loading');
    } else if (s.state === 'partial') {
      /* a preview of a long trace: its first part, while the whole loads */
      setStatus('loading', 'loading', s.message || 'showing the first part of the trace while the rest loads');
    } else if (s.state === 'ready') {
      setStatus(s.live ? 'live' : 'ready', s.live ? 'live' : 'ready', s.live ? 'the trace is still growing; the page follows it' : 'the trace is loaded');
      if ($('#error').textContent === (state.lastStatusError || '\u0000')) showError('');
    }
    state.lastStatusError = s.state === 'error' ? (s.error || 'the trace could not be loaded') : null;
    if (s.live && s.state === 'ready' && s.duration != null) { dur.hidden = false; dur.textContent = fmtSeconds(s.duration) + ' · ' + fmtCount(s.objects) + ' sampled objects'; }
    else if (s.state === 'partial' && s.message) { dur.hidden = false; dur.textContent = s.message; }
    else dur.hidden = true;
  }

  async function reloadAll(gen) {
    if (refreshing) { refreshAgain = true; return; }
    refreshing = true;
    try {
      const info = await api('/api/info', null, false);
      if (gen != null && state.generation != null && gen !== state.generation) { state.fnIds = new Map(); }
      state.info = info;
      state.generation = gen != null ? gen : info.generation;
      showApp();
      renderInfo();
      await refreshData();
    } catch (e) {
      handleError(e);
      if (!state.info && !(e instanceof ApiError && e.status === 503)) showFatal(e.message);
    } finally {
      refreshing = false;
      if (refreshAgain) { refreshAgain = false; reloadAll(state.status ? state.status.generation : null); }
    }
  }

  /* ================================================================ boot */

  function setupEvents() {
    $('#filters').addEventListener('submit', ev => { ev.preventDefault(); applyForm(); });
    $('#reset').addEventListener('click', () => { state.filter = {}; fillForm(); applyForm(); });
    $$('#filters [data-source]').forEach(c => c.addEventListener('change', () => readForm()));
    $('#view-tabs').addEventListener('click', ev => { const b = ev.target.closest('button[data-view]'); if (b) setView(b.dataset.view); });
    $('#wallclock').addEventListener('change', () => { state.wall = $('#wallclock').checked; writeURL(false); renderTimeline(); });
    $('#sites-by').addEventListener('change', () => { state.sitesBy = $('#sites-by').value === 'function' ? 'function' : 'line'; writeURL(false); loadView(true); });
    $('#hist-weight').addEventListener('change', () => { state.histWeight = $('#hist-weight').value; if (VIEW_RENDER.histograms.last) renderHistograms(VIEW_RENDER.histograms.last); });
    window.addEventListener('popstate', () => {
      readURL(); fillForm(); showView();
      FL.zoom = null;
      refreshData();
    });
    window.addEventListener('resize', debounce(() => {
      renderTimeline();
      if (state.view === 'flame' && FL.data) renderFlame();
      if (state.view === 'histograms' && VIEW_RENDER.histograms.last) renderHistograms(VIEW_RENDER.histograms.last);
    }, 120));
    setupTimelineEvents();
    setupFlameEvents();
  }

  function loadReportData() {
    const e = document.getElementById('memtrace-data');
    if (!e) return null;
    try { return JSON.parse(e.textContent); } catch (err) {
      showFatal('The report\'s inlined data is not valid JSON: ' + err.message);
      return undefined;
    }
  }

  async function boot() {
    const rep = loadReportData();
    if (rep === undefined) { setStatus('error: bad report data', 'error'); return; }
    state.report = rep;
    readURL();
    if (state.report) {
      /* a report: no server, no filters, no focus */
      document.body.classList.add('report');
      state.filter = {}; state.focusName = null; state.crumbs = []; state.sitesBy = 'line';
    }
    fillForm();
    setupEvents();
    showView();
    if (state.report) {
      setStatus('report', 'ready', 'a static report written by memtrace report');
      state.info = state.report.info;
      $('#footer').textContent = 'Report written by ' + ((state.info && state.info.version) || 'memtrace') + '. Filters and focus need the server: memtrace view ' + ((state.info && state.info.trace) || 'TRACE') + '.';
      renderInfo();
      try {
        state.summary = state.report.summary || null;
        if (state.summary) renderSummary();
        TL.data = state.report.timeline || null;
        renderTimeline();
      } catch (e) { showError(String(e && e.message || e)); }
      loadView(false);
      return;
    }
    $('#footer').textContent = '';
    await poll();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot);
  else boot();
})();
