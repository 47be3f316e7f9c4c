// The operator's page (docs/admin.md, "The operator's page"): outcome counts, requests in
// flight, store health and the uncertain records, refreshed every few seconds, each
// uncertain record with a button that removes it (DELETE /v1/records/{scope}/{key}), a
// bulk release (POST /v1/records/resolve) and the audit trail (GET /v1/records/audit).
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

// The uncertain list's page shown: the cursor it was fetched with ('' is the first page),
// and the cursor of the page after it ('' when it is the last).
const view = { cursor: '', next: '', number: 1 };
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

async function refreshMetrics() {
  const res = await fetch(api('/metrics'), { cache: 'no-store' });
  if (!res.ok) throw new Error(`/metrics: ${await failure(res)}`);
  const rows = [];
  let inflight = null;
  for (const line of (await res.text()).split('\n')) {
    const s = parseSample(line);
    if (!s) continue;
    if (s.name === 'idem_requests_total') rows.push(s);
    else if (s.name === 'idem_inflight') inflight = s.value;
  }
  rows.sort((a, b) => (a.labels.route || '').localeCompare(b.labels.route || '') ||
                      (a.labels.outcome || '').localeCompare(b.labels.outcome || ''));
  const body = $('outcomes').tBodies[0];
  body.replaceChildren(...rows.map(s => {
    const tr = document.createElement('tr');
    tr.append(cell(s.labels.route ?? ''), cell(s.labels.outcome ?? ''), cell(String(s.value), 'num'));
    return tr;
  }));
  $('outcomes-empty').hidden = rows.length > 0;
  $('inflight').textContent = inflight === null ? 'unknown' : String(inflight);
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
      text = ready ? 'ready' : `unavailable (${body.detail || 'the gateway stays ready'})`;
    } else {
      text = `unavailable (${await failure(res)})`;
    }
  } catch (e) {
    text = `unknown (${e.message})`;
  }
  store.textContent = text;
  store.className = ready ? 'ready' : 'unavailable';
}

// A record's scope or key as one path segment of /v1/records/{scope}/{key}: percent-encoded,
// the empty scope written `_` and a scope that is really `_` written `%5F`. A segment that
// is `.` or `..` cannot be sent: a browser resolves it (written %2E too) before sending.
function segment(text, isScope) {
  if (isScope && text === '') return '_';
  if (text === '.' || text === '..')
    throw new Error(`"${text}" cannot be sent in a URL path by a browser; use idem record delete`);
  return encodeURIComponent(text).replace(/[!'()*_]/g, c => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

async function resolveRecord(rec, button) {
  const scopeText = rec.scope === '' ? '(empty scope)' : `scope ${rec.scope}`;
  const asked = rec.uncertain ? ` Ask the service first whether it acted on this key (the attempt with ` +
                                `Idempotency-Fence ${rec.uncertain.fence}).` : '';
  if (!window.confirm(`Resolve the uncertain record ${rec.key} (${scopeText})?\n\n` +
                      'The record is removed: the next request with this key runs again upstream.' + asked))
    return;
  button.disabled = true;
  try {
    const url = api(`/v1/records/${segment(rec.scope, true)}/${segment(rec.key, false)}`);
    // The list may be seconds old: if the key was resolved meanwhile and a new request
    // holds it (or has completed), removing that record would let the key run twice.
    // DELETE takes no condition, so the record is read again first.
    const now = await fetch(url, { cache: 'no-store' });
    if (now.status === 404) {
      setStatus(`${rec.key} was already gone.`);
    } else if (!now.ok) {
      throw new Error(await failure(now));
    } else {
      const current = await now.json();
      if (current.result !== 'uncertain' || current.fence !== rec.fence) {
        setStatus(`${rec.key} changed since it was listed (now ${current.state}, fence ${current.fence}): not removed.`,
                  true);
      } else {
        const res = await fetch(url, { method: 'DELETE', cache: 'no-store' });
        if (res.status === 204) setStatus(`Resolved ${rec.key}.`);
        else if (res.status === 404) setStatus(`${rec.key} was already gone.`);
        else throw new Error(await failure(res));
      }
    }
  } catch (e) {
    setStatus(`Could not resolve ${rec.key}: ${e.message}`, true);
    button.disabled = false;
    return;
  }
  await refresh();
}

async function refreshUncertain() {
  const seq = ++uncertainSeq;
  const query = new URLSearchParams({ uncertain: 'true', limit: String(PAGE_SIZE) });
  if (view.cursor) query.set('cursor', view.cursor);
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
    button.textContent = 'Resolve';
    button.addEventListener('click', () => resolveRecord(rec, button));
    const action = document.createElement('td');
    action.append(button);
    // The attempt the service may have received (records of earlier releases do not say).
    const attempt = rec.uncertain
      ? `fence ${rec.uncertain.fence}, marked by ${rec.uncertain.instance} at ${rec.uncertain.at}` : '';
    tr.append(scope, cell(rec.key, 'key'), cell(String(rec.fence), 'num'), cell(rec.expires_at ?? ''),
              cell(attempt, 'attempt'), action);
    return tr;
  }));
  $('uncertain-empty').hidden = records.length > 0;
  view.next = typeof list.next_cursor === 'string' ? list.next_cursor : '';
  $('next-page').disabled = view.next === '';
  $('first-page').disabled = view.cursor === '';
  $('page-number').textContent = view.cursor === '' && view.next === '' ? '' : `page ${view.number}`;
}

// The audit trail (GET /v1/records/audit), newest first.
async function refreshAudit() {
  const res = await fetch(api('/v1/records/audit'), { cache: 'no-store' });
  if (!res.ok) throw new Error(`/v1/records/audit: ${await failure(res)}`);
  const lines = (await res.json()).audit ?? [];
  $('audit').tBodies[0].replaceChildren(...lines.slice().reverse().map(a => {
    const tr = document.createElement('tr');
    tr.className = 'audit';
    const record = a.scope ? `${a.scope} / ${a.key}` : a.key;
    tr.append(cell(a.time ?? ''), cell(a.token ?? ''), cell(a.peer ?? ''), cell(record ?? '', 'key'),
              cell(a.fence == null ? '' : String(a.fence), 'num'), cell(a.audit ?? ''), cell(a.decision ?? ''));
    return tr;
  }));
  $('audit-empty').hidden = lines.length > 0;
}

// Bulk resolve: a dry run counts, a release (after a confirmation) acts.
async function bulkResolve(dryRun) {
  const plan = { decision: 'release', dry_run: dryRun };
  const keySpace = $('bulk-key-space').value.trim();
  const olderThan = $('bulk-older-than').value.trim();
  if (keySpace) plan.key_space = keySpace;
  if (olderThan) plan.older_than = olderThan;
  const what = `the uncertain records${keySpace ? ` of ${keySpace}` : ''}${olderThan ? ` older than ${olderThan}` : ''}`;
  if (!dryRun && !window.confirm(`Release ${what}?\n\nEach key's next request runs again upstream.`)) return;
  try {
    const res = await fetch(api('/v1/records/resolve'), {
      method: 'POST', cache: 'no-store', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(plan),
    });
    if (!res.ok) throw new Error(await failure(res));
    const out = await res.json();
    $('bulk-result').textContent = dryRun ? `${out.matched} record(s) would be released.`
                                          : `Released ${out.applied} of ${out.matched} record(s).`;
  } catch (e) {
    $('bulk-result').textContent = `Could not resolve: ${e.message}`;
  }
  await refresh();
}
$('bulk-count').addEventListener('click', () => bulkResolve(true));
$('bulk-release').addEventListener('click', () => bulkResolve(false));

// Everything, once; then again in REFRESH_MS (one refresh at a time).
async function refresh() {
  clearTimeout(timer);
  try {
    await Promise.all([refreshMetrics(), refreshReadiness(), refreshUncertain(), refreshAudit()]);
    $('updated').textContent = new Date().toLocaleTimeString();
    // The status line keeps what Resolve said; a failed refresh is cleared by the next one.
    if (refreshFailed || $('status').textContent === 'Loading…') setStatus('Live');
    refreshFailed = false;
  } catch (e) {
    setStatus(`Refresh failed: ${e.message}`, true);
    refreshFailed = true;
  }
  timer = setTimeout(refresh, REFRESH_MS);
}

$('next-page').addEventListener('click', () => {
  Object.assign(view, { cursor: view.next, number: view.number + 1 });
  refresh();
});
$('first-page').addEventListener('click', () => {
  Object.assign(view, { cursor: '', number: 1 });
  refresh();
});
refresh();
