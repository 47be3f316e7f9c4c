// The operator's page (docs/admin.md, "The operator's page"): outcome counts and rates per
// route, requests in flight, store health, a record looked up by its key, and the uncertain
// records, refreshed every few seconds, each uncertain record with a button that removes it
// (DELETE /v1/records/{scope}/{key}); a route chosen narrows the outcomes and the uncertain
// records to it. In English or Chinese (?lang=en|zh; else the browser's language).
// Every value shown is set as text (textContent), never parsed as HTML: keys and scopes
// come from clients. Requests go to this page's own origin; the browser adds the
// credentials it was asked for when it loaded the page.
'use strict';

// An address on this page's origin. Not a relative URL: one resolved against a page opened
// as http://operator:TOKEN@host:9901/ carries the credentials, and fetch refuses those
// ("Request cannot be constructed from a URL that includes credentials"). The origin has
// none; the browser still authenticates with what it used to load the page.
const api = path => new URL(path, window.location.origin).href;

const REFRESH_MS = 3000;
// Uncertain records per page: 50, or ?limit=N (1 to 1000) in the page's address.
const PAGE_SIZE = (() => {
  const n = Number(new URLSearchParams(window.location.search).get('limit'));
  return Number.isInteger(n) && n >= 1 && n <= 1000 ? n : 50;
})();

const $ = id => document.getElementById(id);

// The page's texts. `code` between backquotes and **strong** are shown as such (made as
// elements, never parsed as HTML); {name} is filled in by t().
const STRINGS = {
  en: {
    'title': 'idem admin',
    'loading': 'Loading…',
    'live': 'Live',
    'now': 'Now',
    'store': 'Store',
    'inflight': 'Requests in flight',
    'updated': 'Updated',
    'outcomes': 'Outcomes per route',
    'outcomes-hint': 'Protected requests since the gateway started (`idem_requests_total`), and per second over the last minute this page watched.',
    'route': 'Route',
    'all-routes': 'All routes',
    'outcome': 'Outcome',
    'requests': 'Requests',
    'rate': 'Per second',
    'outcomes-empty': 'No protected request yet.',
    'search': 'Find a record',
    'search-hint': 'The key as the route rendered it and the route\'s key space (its name, unless the route sets `key_space`), or the stored key `<key_space>:<key>` with no key space. The scope is the route\'s `subject` value; empty when it has none.',
    'key-space': 'Key space',
    'scope': 'Scope',
    'key': 'Key',
    'find': 'Find',
    'state': 'State',
    'result': 'Result',
    'status-code': 'Stored status',
    'fence': 'Fence',
    'expires': 'Expires',
    'not-found': 'No record of {key} in {where}.',
    'the-empty-scope': 'the empty scope',
    'scope-named': 'scope {scope}',
    'uncertain': 'Uncertain records',
    'uncertain-hint': 'The upstream may or may not have run these requests; with `on_uncertain: hold` their keys answer `409 outcome-uncertain` until someone decides. **Resolve** removes the record, so the next request with its key runs again: do it once you know the first one did not take effect, or that running it twice is harmless.',
    'uncertain-all': 'All key spaces.',
    'uncertain-of': 'Key space {key_space} (route {route}) only.',
    'attempt': 'Attempt the service may have received',
    'attempt-text': 'fence {fence}, marked by {instance} at {at}',
    'uncertain-empty': 'No uncertain record on this page.',
    'first-page': 'First page',
    'next-page': 'Next page',
    'page': 'page {n}',
    'resolve': 'Resolve',
    'ready': 'ready',
    'unavailable': 'unavailable ({why})',
    'stays-ready': 'the gateway stays ready',
    'unknown': 'unknown ({why})',
    'confirm': 'Resolve the uncertain record {key} ({where})?\n\nThe record is removed: the next request with this key runs again upstream.',
    'confirm-ask': ' Ask the service first whether it acted on this key (the attempt with Idempotency-Fence {fence}).',
    'already-gone': '{key} was already gone.',
    'changed': '{key} changed since it was listed (now {state}, fence {fence}): not removed.',
    'resolved': 'Resolved {key}.',
    'cannot-resolve': 'Could not resolve {key}: {why}',
    'cannot-find': 'Could not look up {key}: {why}',
    'refresh-failed': 'Refresh failed: {why}',
    'dot-segment': '"{text}" cannot be sent in a URL path by a browser; use idem record delete',
    'other-language': '中文',
  },
  zh: {
    'title': 'idem 管理页',
    'loading': '加载中…',
    'live': '实时',
    'now': '当前',
    'store': '存储',
    'inflight': '处理中的请求',
    'updated': '更新于',
    'outcomes': '各路由的处理结果',
    'outcomes-hint': '网关启动以来受保护的请求数（`idem_requests_total`），以及本页最近一分钟观察到的每秒速率。',
    'route': '路由',
    'all-routes': '全部路由',
    'outcome': '结果',
    'requests': '请求数',
    'rate': '每秒',
    'outcomes-empty': '还没有受保护的请求。',
    'search': '按键查记录',
    'search-hint': '填路由渲染出来的幂等键和路由的键空间（默认是路由名，路由配了 `key_space` 就用它）；或者键空间留空，直接填存储里的完整键 `<key_space>:<key>`。作用域是路由 `subject` 取到的值，没配 `subject` 就留空。',
    'key-space': '键空间',
    'scope': '作用域',
    'key': '幂等键',
    'find': '查询',
    'state': '状态',
    'result': '结果',
    'status-code': '保存的状态码',
    'fence': 'Fence',
    'expires': '过期时间',
    'not-found': '{where}里没有 {key} 的记录。',
    'the-empty-scope': '空作用域',
    'scope-named': '作用域 {scope}',
    'uncertain': '结果不确定的记录',
    'uncertain-hint': '这些请求上游可能执行了，也可能没执行。路由配的是 `on_uncertain: hold` 时，这些键在有人处理之前一律返回 `409 outcome-uncertain`。点 **处理** 会删除记录，之后带这个键的请求会重新打到上游：先确认第一次没有生效，或者重复执行也没关系，再点。',
    'uncertain-all': '全部键空间。',
    'uncertain-of': '只看键空间 {key_space}（路由 {route}）。',
    'attempt': '上游可能收到的那次请求',
    'attempt-text': 'fence {fence}，由 {instance} 于 {at} 标记',
    'uncertain-empty': '这一页没有结果不确定的记录。',
    'first-page': '第一页',
    'next-page': '下一页',
    'page': '第 {n} 页',
    'resolve': '处理',
    'ready': '正常',
    'unavailable': '不可用（{why}）',
    'stays-ready': '网关仍然就绪',
    'unknown': '未知（{why}）',
    'confirm': '确定处理结果不确定的记录 {key}（{where}）吗？\n\n记录会被删除，之后带这个键的请求会重新打到上游。',
    'confirm-ask': '请先向业务方确认它有没有处理过这个键（带 Idempotency-Fence {fence} 的那次请求）。',
    'already-gone': '{key} 已经不在了。',
    'changed': '{key} 在列出之后变了（现在是 {state}，fence {fence}），没有删除。',
    'resolved': '已处理 {key}。',
    'cannot-resolve': '处理 {key} 失败：{why}',
    'cannot-find': '查询 {key} 失败：{why}',
    'refresh-failed': '刷新失败：{why}',
    'dot-segment': '浏览器无法在 URL 路径里发送 "{text}"，请用 idem record delete',
    'other-language': 'English',
  },
};
const LANG = (() => {
  const asked = new URLSearchParams(window.location.search).get('lang');
  if (asked === 'en' || asked === 'zh') return asked;
  return /^zh\b/i.test(navigator.language || '') ? 'zh' : 'en';
})();
const t = (name, values = {}) =>
  (STRINGS[LANG][name] ?? STRINGS.en[name]).replace(/\{(\w+)\}/g, (m, v) => (v in values ? String(values[v]) : m));

// `text` into `element`: `code` and **strong** as elements, the rest as text.
function setRich(element, text) {
  element.replaceChildren(...text.split(/(`[^`]*`|\*\*[^*]*\*\*)/).filter(Boolean).map(part => {
    if (part.startsWith('`')) {
      const code = document.createElement('code');
      code.textContent = part.slice(1, -1);
      return code;
    }
    if (part.startsWith('**')) {
      const strong = document.createElement('strong');
      strong.textContent = part.slice(2, -2);
      return strong;
    }
    return document.createTextNode(part);
  }));
}

// The static texts in the page's language, and a link to the other one (the page's other
// parameters kept).
function translatePage() {
  document.documentElement.lang = LANG;
  document.title = t('title');
  for (const e of document.querySelectorAll('[data-i18n]')) setRich(e, t(e.dataset.i18n));
  $('status').textContent = t('loading');
  const other = LANG === 'zh' ? 'en' : 'zh';
  const query = new URLSearchParams(window.location.search);
  query.set('lang', other);
  const link = $('lang-switch');
  link.href = `?${query}`;
  link.lang = other;
  link.textContent = t('other-language');
}
translatePage();

// The uncertain list's page shown: the cursor it was fetched with ('' is the first page),
// and the cursor of the page after it ('' when it is the last).
const view = { cursor: '', next: '', number: 1 };
// The route chosen ('' for all), and each route's key space (idem_route_info).
const filter = { route: '' };
let keySpaces = new Map();
// Samples of idem_requests_total: { at (ms), values: Map of "route\noutcome" to count }, the
// last minute's, for the rates.
const RATE_WINDOW_MS = 60000;
const samples = [];
let timer = null;
let refreshFailed = false;
let uncertainSeq = 0;  // so that an older listing answered late never replaces a newer one

function setStatus(text, isError) {
  const s = $('status');
  s.textContent = text;
  s.classList.toggle('error', Boolean(isError));
}

// The detail of an application/problem+json answer, or its status line.
async function failure(res) {
  let detail = '';
  try {
    const body = await res.json();
    if (body && typeof body.detail === 'string') detail = body.detail;
  } catch { /* not JSON */ }
  return `${res.status} ${res.statusText}${detail ? `: ${detail}` : ''}`;
}

// One sample line of the Prometheus text format: name, labels, value; null for comments
// and anything this page cannot read.
function parseSample(line) {
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
  if (!m) return null;
  const labels = Object.create(null);
  if (m[3] !== undefined) {
    const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/y;
    let l;
    while ((l = re.exec(m[3])) !== null)
      labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
  }
  return { name: m[1], labels, value: Number(m[4]) };
}

function cell(text, className) {
  const td = document.createElement('td');
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

// Requests per second of each series over the samples of the last minute (the oldest one in
// it against this one); null until there are two, or when the count went down (a restart).
function rates(now, values) {
  samples.push({ at: now, values });
  while (samples.length > 2 && now - samples[1].at >= RATE_WINDOW_MS) samples.shift();
  const first = samples[0];
  const seconds = (now - first.at) / 1000;
  const out = new Map();
  for (const [series, v] of values) {
    const before = first.values.get(series) ?? 0;
    out.set(series, samples.length < 2 || seconds <= 0 || v < before ? null : (v - before) / seconds);
  }
  return out;
}

// The route choices: every route of the config and every route counted, the choice kept.
function fillRoutes(routes) {
  const select = $('route-filter');
  const have = [...select.options].slice(1).map(o => o.value);
  if (JSON.stringify(have) === JSON.stringify(routes)) return;
  select.replaceChildren(select.options[0], ...routes.map(r => {
    const option = document.createElement('option');
    option.value = r;
    option.textContent = r;
    return option;
  }));
  select.value = routes.includes(filter.route) ? filter.route : '';
}

async function refreshMetrics() {
  const res = await fetch(api('/metrics'), { cache: 'no-store' });
  if (!res.ok) throw new Error(`/metrics: ${await failure(res)}`);
  const rows = [];
  const spaces = new Map();
  let inflight = null;
  for (const line of (await res.text()).split('\n')) {
    const s = parseSample(line);
    if (!s) continue;
    if (s.name === 'idem_requests_total') rows.push(s);
    else if (s.name === 'idem_route_info' && s.labels.route !== undefined) spaces.set(s.labels.route, s.labels.key_space ?? '');
    else if (s.name === 'idem_inflight') inflight = s.value;
  }
  keySpaces = spaces;
  const series = s => `${s.labels.route ?? ''}\n${s.labels.outcome ?? ''}`;
  const perSecond = rates(Date.now(), new Map(rows.map(s => [series(s), s.value])));
  fillRoutes([...new Set([...spaces.keys(), ...rows.map(s => s.labels.route ?? '')])].sort());
  const shown = rows.filter(s => filter.route === '' || s.labels.route === filter.route);
  shown.sort((a, b) => (a.labels.route || '').localeCompare(b.labels.route || '') ||
                       (a.labels.outcome || '').localeCompare(b.labels.outcome || ''));
  const body = $('outcomes').tBodies[0];
  body.replaceChildren(...shown.map(s => {
    const tr = document.createElement('tr');
    const rate = perSecond.get(series(s));
    tr.append(cell(s.labels.route ?? '', 'route'), cell(s.labels.outcome ?? '', 'outcome'),
              cell(String(s.value), 'num count'), cell(rate === null ? '…' : rate.toFixed(2), 'num rate'));
    return tr;
  }));
  $('outcomes-empty').hidden = shown.length > 0;
  $('inflight').textContent = inflight === null ? t('unknown', { why: 'idem_inflight' }) : String(inflight);
}

async function refreshReadiness() {
  const store = $('store');
  let ready = false;
  let text;
  try {
    const res = await fetch(api('/readyz'), { cache: 'no-store' });
    if (res.ok) {
      // Ready without the store when every route passes (docs/admin.md, "Readiness").
      const body = await res.json().catch(() => ({}));
      ready = body.store !== 'unavailable';
      text = ready ? t('ready') : t('unavailable', { why: body.detail || t('stays-ready') });
    } else {
      text = t('unavailable', { why: await failure(res) });
    }
  } catch (e) {
    text = t('unknown', { why: e.message });
  }
  store.textContent = text;
  store.className = ready ? 'ready' : 'unavailable';
}

// A record's scope or key as one path segment of /v1/records/{scope}/{key}: percent-encoded,
// the empty scope written `_` and a scope that is really `_` written `%5F`. A segment that
// is `.` or `..` cannot be sent: a browser resolves it (written %2E too) before sending.
function segment(text, isScope) {
  if (isScope && text === '') return '_';
  if (text === '.' || text === '..') throw new Error(t('dot-segment', { text }));
  return encodeURIComponent(text).replace(/[!'()*_]/g, c => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

const scopeText = scope => (scope === '' ? t('the-empty-scope') : t('scope-named', { scope }));

async function resolveRecord(rec, button) {
  const asked = rec.uncertain ? t('confirm-ask', { fence: rec.uncertain.fence }) : '';
  if (!window.confirm(t('confirm', { key: rec.key, where: scopeText(rec.scope) }) + asked)) return;
  button.disabled = true;
  try {
    const url = api(`/v1/records/${segment(rec.scope, true)}/${segment(rec.key, false)}`);
    // The list may be seconds old: if the key was resolved meanwhile and a new request
    // holds it (or has completed), removing that record would let the key run twice.
    // DELETE takes no condition, so the record is read again first.
    const now = await fetch(url, { cache: 'no-store' });
    if (now.status === 404) {
      setStatus(t('already-gone', { key: rec.key }));
    } else if (!now.ok) {
      throw new Error(await failure(now));
    } else {
      const current = await now.json();
      if (current.result !== 'uncertain' || current.fence !== rec.fence) {
        setStatus(t('changed', { key: rec.key, state: current.state, fence: current.fence }), true);
      } else {
        const res = await fetch(url, { method: 'DELETE', cache: 'no-store' });
        if (res.status === 204) setStatus(t('resolved', { key: rec.key }));
        else if (res.status === 404) setStatus(t('already-gone', { key: rec.key }));
        else throw new Error(await failure(res));
      }
    }
  } catch (e) {
    setStatus(t('cannot-resolve', { key: rec.key, why: e.message }), true);
    button.disabled = false;
    return;
  }
  await refresh();
}

async function refreshUncertain() {
  const seq = ++uncertainSeq;
  const query = new URLSearchParams({ uncertain: 'true', limit: String(PAGE_SIZE) });
  if (view.cursor) query.set('cursor', view.cursor);
  // A route chosen: its key space's records (routes sharing a key space share them).
  const keySpace = filter.route === '' ? undefined : keySpaces.get(filter.route);
  if (keySpace !== undefined) query.set('key_space', keySpace);
  $('uncertain-filter').textContent =
    keySpace === undefined ? t('uncertain-all') : t('uncertain-of', { key_space: keySpace, route: filter.route });
  const res = await fetch(api(`/v1/records?${query}`), { cache: 'no-store' });
  if (res.status === 400 && view.cursor) {  // the store no longer knows the cursor: start over
    Object.assign(view, { cursor: '', number: 1 });
    return refreshUncertain();
  }
  if (!res.ok) throw new Error(`/v1/records: ${await failure(res)}`);
  const list = await res.json();
  if (seq !== uncertainSeq) return;
  const records = Array.isArray(list.records) ? list.records : [];
  const body = $('uncertain').tBodies[0];
  body.replaceChildren(...records.map(rec => {
    const tr = document.createElement('tr');
    tr.className = 'record';
    const scope = cell(rec.scope, 'scope');
    if (rec.scope === '') scope.classList.add('empty');
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'resolve';
    button.textContent = t('resolve');
    button.addEventListener('click', () => resolveRecord(rec, button));
    const action = document.createElement('td');
    action.append(button);
    // The attempt the service may have received (records of earlier releases do not say).
    const attempt = rec.uncertain
      ? t('attempt-text', { fence: rec.uncertain.fence, instance: rec.uncertain.instance, at: rec.uncertain.at }) : '';
    tr.append(scope, cell(rec.key, 'key'), cell(String(rec.fence), 'num'), cell(rec.expires_at ?? ''),
              cell(attempt, 'attempt'), action);
    return tr;
  }));
  $('uncertain-empty').hidden = records.length > 0;
  view.next = typeof list.next_cursor === 'string' ? list.next_cursor : '';
  $('next-page').disabled = view.next === '';
  $('first-page').disabled = view.cursor === '';
  $('page-number').textContent = view.cursor === '' && view.next === '' ? '' : t('page', { n: view.number });
}

// Everything, once; then again in REFRESH_MS (one refresh at a time).
async function refresh() {
  clearTimeout(timer);
  try {
    // The metrics first: they say which key space a chosen route's records are in.
    await Promise.all([refreshMetrics(), refreshReadiness()]);
    await refreshUncertain();
    $('updated').textContent = new Date().toLocaleTimeString(LANG === 'zh' ? 'zh-CN' : 'en');
    // The status line keeps what Resolve said; a failed refresh is cleared by the next one.
    if (refreshFailed || $('status').textContent === t('loading')) setStatus(t('live'));
    refreshFailed = false;
  } catch (e) {
    setStatus(t('refresh-failed', { why: e.message }), true);
    refreshFailed = true;
  }
  timer = setTimeout(refresh, REFRESH_MS);
}

// One record, by its key (docs/admin.md, "Records"): its facts, and Resolve when uncertain.
async function findRecord(event) {
  event.preventDefault();
  const keySpace = $('search-key-space').value.trim();
  const scope = $('search-scope').value;
  const key = $('search-key').value;
  const found = $('found');
  const none = $('found-none');
  found.hidden = true;
  none.hidden = true;
  try {
    const query = keySpace === '' ? '' : `?${new URLSearchParams({ key_space: keySpace })}`;
    const res = await fetch(api(`/v1/records/${segment(scope, true)}/${segment(key, false)}${query}`),
                            { cache: 'no-store' });
    if (res.status === 404) {
      none.textContent = t('not-found', { key, where: keySpace === '' ? scopeText(scope)
                                                                      : `${keySpace} · ${scopeText(scope)}` });
      none.hidden = false;
      return;
    }
    if (!res.ok) throw new Error(await failure(res));
    const rec = await res.json();
    const facts = [['key', rec.key], ['scope', rec.scope === '' ? t('the-empty-scope') : rec.scope],
                   ['state', rec.state], ['result', rec.result ?? ''], ['status-code', rec.response_status ?? ''],
                   ['fence', rec.fence], ['expires', rec.expires_at ?? '']];
    if (rec.uncertain)
      facts.push(['attempt', t('attempt-text', { fence: rec.uncertain.fence, instance: rec.uncertain.instance,
                                                 at: rec.uncertain.at })]);
    $('found-facts').replaceChildren(...facts.flatMap(([name, value]) => {
      const dt = document.createElement('dt');
      dt.textContent = t(name);
      const dd = document.createElement('dd');
      dd.textContent = String(value);
      dd.dataset.field = name;
      return [dt, dd];
    }));
    const button = $('found-resolve');
    button.hidden = rec.result !== 'uncertain';
    button.disabled = false;
    button.onclick = async () => {
      await resolveRecord(rec, button);
      $('search').requestSubmit();
    };
    found.hidden = false;
  } catch (e) {
    setStatus(t('cannot-find', { key, why: e.message }), true);
  }
}

$('search').addEventListener('submit', findRecord);
$('route-filter').addEventListener('change', () => {
  filter.route = $('route-filter').value;
  // The route's key space for a lookup too, unless one was typed.
  if (filter.route !== '' && $('search-key-space').value.trim() === '')
    $('search-key-space').value = keySpaces.get(filter.route) ?? '';
  Object.assign(view, { cursor: '', number: 1 });
  refresh();
});
$('next-page').addEventListener('click', () => {
  Object.assign(view, { cursor: view.next, number: view.number + 1 });
  refresh();
});
$('first-page').addEventListener('click', () => {
  Object.assign(view, { cursor: '', number: 1 });
  refresh();
});
refresh();
