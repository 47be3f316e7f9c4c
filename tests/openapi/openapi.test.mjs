// docs/openapi.yaml against the real admin listener:
//   node openapi.test.mjs IDEM_BIN TEST_UPSTREAM_BIN OPENAPI_YAML
// Validates the file as OpenAPI 3.1 (@apidevtools/swagger-parser), then starts `idem serve`
// (SQLite in a temporary directory, an admin token) in front of test_upstream and calls
// every operation the file lists, each in the answers it can give (acquired, replay,
// in_progress, mismatch, fenced, busy, not_owner, 404, 401, 415, 400 ...; and, on a second
// gateway without a token whose store is down, 403 and 503). Each answer's
// status must be one the file declares for that operation, its Content-Type one declared
// for that status, and its body must validate against the declared schema (ajv, JSON
// Schema 2020-12). An operation of the file without a call fails the test, so a new
// endpoint in the file cannot go untested. Exits non-zero on the first failure.
import SwaggerParser from '@apidevtools/swagger-parser';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../testutil/ports.mjs';

const [idemBin, upstreamBin, specFile] = process.argv.slice(2).map(p => p && resolve(p));
if (!specFile) {
  console.error('usage: node openapi.test.mjs IDEM_BIN TEST_UPSTREAM_BIN OPENAPI_YAML');
  process.exit(2);
}
const TOKEN = 'openapi-test-token';

function expect(ok, what) {
  if (!ok) throw new Error(`expectation failed: ${what}`);
}

// --- the file -------------------------------------------------------------------------
await SwaggerParser.validate(specFile);
const api = await SwaggerParser.dereference(specFile);
expect(api.openapi.startsWith('3.1'), `OpenAPI 3.1, got ${api.openapi}`);
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);

const operations = new Map();  // operationId -> {method, path, op}
for (const [path, item] of Object.entries(api.paths)) {
  for (const method of ['get', 'put', 'post', 'delete', 'patch']) {
    if (item[method]) operations.set(item[method].operationId, { method, path, op: item[method] });
  }
}
const called = new Map();  // operationId -> set of statuses seen

// --- the gateway ----------------------------------------------------------------------
const dir = mkdtempSync(join(tmpdir(), 'idem-openapi-'));
const children = [];
function stopAll() {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
process.on('exit', stopAll);  // also when an expectation fails before the checks begin

const upstream = spawn(upstreamBin, [], { stdio: ['ignore', 'pipe', 'ignore'] });
children.push(upstream);
const upstreamPort = await new Promise((done, fail) => {
  upstream.stdout.once('data', d => done(String(d).trim()));
  upstream.once('exit', () => fail(new Error('test_upstream exited')));
});
const [port, adminPort] = [await freePort(), await freePort()];
// Starts idem serve with this config; resolves once `probe` answers 200.
async function serve(name, config, adminPort, probe, env = {}) {
  writeFileSync(join(dir, `${name}.yaml`), config);
  const log = openSync(join(dir, `${name}.log`), 'w');
  const child = spawn(idemBin, ['serve', '--config', join(dir, `${name}.yaml`)],
                      { cwd: dir, env: { ...process.env, ...env }, stdio: ['ignore', log, log] });
  children.push(child);
  for (let i = 0;; ++i) {
    expect(child.exitCode === null, `idem serve (${name}) exited: ` + readFileSync(join(dir, `${name}.log`), 'utf8'));
    const ok = await fetch(`http://127.0.0.1:${adminPort}/${probe}`).then(r => r.status === 200, () => false);
    if (ok) return child;
    expect(i < 500, `idem serve (${name}) ready within 10 s`);
    await new Promise(r => setTimeout(r, 20));
  }
}
const admin = `http://127.0.0.1:${adminPort}`;
await serve('idem', `
listen: 127.0.0.1:${port}
upstream: http://127.0.0.1:${upstreamPort}
store: sqlite:${join(dir, 'idem.db')}
admin:
  listen: 127.0.0.1:${adminPort}
  token_env: IDEM_ADMIN_TOKEN
routes:
  - name: orders
    match: { method: POST, path: /orders }
`, adminPort, 'readyz', { IDEM_ADMIN_TOKEN: TOKEN });

// call(operationId, {path params, query, body, headers}) -> {status, body}: checks the
// answer against the file.
async function call(id, { params = {}, query = '', body, headers = {}, auth = true, raw, base = admin } = {}) {
  const entry = operations.get(id);
  expect(entry, `operation ${id} is in the file`);
  let path = entry.path.replace(/\{(\w+)\}/g, (_, n) => encodeURIComponent(params[n]));
  const h = { ...headers };
  if (auth) h.authorization = `Bearer ${TOKEN}`;
  if (body !== undefined && !h['content-type']) h['content-type'] = 'application/json';
  const res = await fetch(`${base}${path}${query}`, {
    method: entry.method.toUpperCase(), headers: h,
    body: raw !== undefined ? raw : body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const what = `${entry.method.toUpperCase()} ${path}${query} answered ${res.status} ${text}`;
  const declared = entry.op.responses[String(res.status)] || entry.op.responses.default;
  expect(declared, `${what}: status declared in the file (${Object.keys(entry.op.responses)})`);
  let parsed;
  if (declared.content) {
    const type = (res.headers.get('content-type') || '').split(';')[0].trim();
    const media = declared.content[type];
    expect(media, `${what}: Content-Type ${type} declared (${Object.keys(declared.content)})`);
    parsed = type.endsWith('json') ? JSON.parse(text) : text;
    const validate = ajv.compile(media.schema);
    expect(validate(parsed), `${what}: body matches the schema: ${ajv.errorsText(validate.errors)}`);
  } else {
    expect(text === '', `${what}: no body declared, none sent`);
  }
  if (!called.has(id)) called.set(id, new Set());
  called.get(id).add(res.status);
  return { status: res.status, body: parsed, headers: res.headers };
}

try {
  // health
  expect((await call('healthz', { auth: false })).status === 200, 'healthz 200');
  expect((await call('readyz', { auth: false })).status === 200, 'readyz 200');
  const m = await call('metrics', { auth: false });
  expect(m.status === 200 && m.body.includes('idem_requests_total'), 'metrics holds idem_requests_total');

  // claims: acquired, in_progress, mismatch, extend, commit, replay, fenced
  const scope = 'user-1';
  const b1 = await call('begin', { body: { scope, key: 'job-1', fingerprint: 'f1', lease_ms: 30000 } });
  expect(b1.status === 200 && b1.body.outcome === 'acquired' && b1.body.recovered === false, 'begin acquired');
  const fence = b1.body.fence;
  const b2 = await call('begin', { body: { scope, key: 'job-1', fingerprint: 'f1' } });
  expect(b2.body.outcome === 'in_progress' && b2.body.retry_after_ms > 0, 'begin in_progress');
  const b3 = await call('begin', { body: { scope, key: 'job-1', fingerprint: 'other' } });
  expect(b3.body.outcome === 'mismatch', 'begin mismatch');
  expect((await call('extend', { body: { scope, key: 'job-1', fence, lease_ms: 60000 } })).body.outcome === 'extended', 'extend');
  expect((await call('extend', { body: { scope, key: 'job-1', fence: fence + 1, lease_ms: 60000 } })).status === 409, 'extend fenced');
  expect((await call('commit', { body: { scope, key: 'job-1', fence: fence + 1, result: {} } })).status === 409, 'commit fenced');
  const c = await call('commit', { body: { scope, key: 'job-1', fence, result: { order: 1790000000000000001n.toString() } } });
  expect(c.body.outcome === 'committed', 'commit');
  const b4 = await call('begin', { body: { scope, key: 'job-1', fingerprint: 'f1' } });
  expect(b4.body.outcome === 'replay' && b4.body.result.order === '1790000000000000001', 'begin replay');
  const r1 = await call('begin', { body: { scope, key: 'job-2' } });
  expect((await call('release', { body: { scope, key: 'job-2', fence: r1.body.fence } })).body.outcome === 'released', 'release');
  expect((await call('release', { body: { scope, key: 'job-2', fence: r1.body.fence } })).status === 409, 'release fenced');
  // a takeover names the fence of the claim it took over
  const t1 = await call('begin', { body: { scope, key: 'job-4', lease_ms: 1 } });
  await new Promise((resolve) => setTimeout(resolve, 20));
  const t2 = await call('begin', { body: { scope, key: 'job-4' } });
  expect(t2.body.outcome === 'acquired' && t2.body.recovered === true && t2.body.previous_fence === t1.body.fence,
         'begin recovered names previous_fence');
  const a1 = await call('begin', { body: { scope, key: 'job-3', owner: 'worker-1' } });
  expect(a1.body.outcome === 'acquired', 'begin with an owner');
  expect((await call('abandon', { body: { scope, key: 'job-3', owner: 'worker-2' } })).status === 409, 'abandon fenced');
  expect((await call('abandon', { body: { scope, key: 'job-3', owner: 'worker-1' } })).body.outcome === 'released', 'abandon');

  // records: get, list, delete
  const g = await call('getRecord', { params: { scope, key: 'job-1' } });
  expect(g.status === 200 && g.body.state === 'done' && g.body.result === 'json', 'getRecord done json');
  const gp = await call('getRecord', { params: { scope: '_', key: 'missing' } });
  expect(gp.status === 404, 'getRecord 404');
  await call('begin', { body: { scope: '', key: 'held' } });
  const gh = await call('getRecord', { params: { scope: '_', key: 'held' } });
  expect(gh.body.state === 'pending' && gh.body.lease_until, 'getRecord pending has lease_until');
  const order = await fetch(`http://127.0.0.1:${port}/orders`, { method: 'POST', headers: { 'idempotency-key': 'o-1' }, body: '{}' });
  expect(order.status === 201, 'an order through the gateway');
  const go = await call('getRecord', { params: { scope: '_', key: 'o-1' }, query: '?key_space=orders' });
  expect(go.body.result === 'response' && go.body.response_status === 201, 'getRecord of a gateway response');
  const l = await call('listRecords', { query: '?limit=2' });
  expect(l.status === 200 && l.body.records.length === 2 && l.body.next_cursor !== '', 'listRecords page');
  const l2 = await call('listRecords', { query: `?limit=1000&cursor=${encodeURIComponent(l.body.next_cursor)}` });
  expect(l2.body.next_cursor === '', 'listRecords last page');
  expect((await call('listRecords', { query: '?key_space=orders&state=done' })).body.records.length === 1, 'listRecords key_space');
  expect((await call('listRecords', { query: '?limit=0' })).status === 400, 'listRecords 400');
  expect((await call('listRecords', { query: '?uncertain=true&scope=' })).status === 200, 'listRecords uncertain');
  expect((await call('deleteRecord', { params: { scope: '_', key: 'o-1' }, query: '?key_space=orders' })).status === 204, 'deleteRecord 204');
  expect((await call('deleteRecord', { params: { scope: '_', key: 'o-1' }, query: '?key_space=orders' })).status === 404, 'deleteRecord 404');
  expect((await call('getRecord', { params: { scope: '_', key: 'x' }, query: '?key_space=no%20spaces' })).status === 400, 'getRecord bad key_space');
  // bulk resolve (nothing uncertain here: a dry run and a release select none), then the
  // audit trail holding the deletion above
  const dry = await call('resolveRecords', { body: { key_space: 'orders', decision: 'release', dry_run: true } });
  expect(dry.status === 200 && dry.body.matched === 0, 'resolveRecords dry run');
  expect((await call('resolveRecords', { body: { decision: 'complete' } })).status === 400, 'resolveRecords 400');
  expect((await call('resolveRecords', { body: { decision: 'release' }, auth: false })).status === 401, 'resolveRecords 401');
  const trail = await call('auditTrail', {});
  expect(trail.status === 200 && trail.body.audit.some(a => a.audit === 'record.delete' && a.decision === 'deleted'),
         'auditTrail holds the deletion');
  expect((await call('auditTrail', { auth: false })).status === 401, 'auditTrail 401');

  // tokens: issue, consume, consume again, restore, restore of a stranger
  const t = await call('issueToken', { body: { scope, ttl_ms: 60000 } });
  expect(t.status === 200 && t.body.token, 'issueToken');
  expect((await call('consumeToken', { body: { scope, token: t.body.token } })).body.outcome === 'consumed', 'consume');
  expect((await call('consumeToken', { body: { scope, token: t.body.token } })).body.outcome === 'invalid', 'consume twice');
  expect((await call('consumeToken', { body: { scope: 'user-2', token: t.body.token } })).body.outcome === 'invalid', 'consume of another scope');
  expect((await call('restoreToken', { body: { scope, token: t.body.token } })).body.outcome === 'restored', 'restore');
  expect((await call('restoreToken', { body: { scope, token: 'never-issued' } })).body.outcome === 'invalid', 'restore of a stranger');

  // locks: locked, busy, extend, not_owner, release
  const k = await call('acquireLock', { body: { name: 'sku-1', owner: 'a', ttl_ms: 30000 } });
  expect(k.body.outcome === 'locked' && k.body.fence > 0, 'acquireLock');
  const busy = await call('acquireLock', { body: { name: 'sku-1', owner: 'b', ttl_ms: 30000 } });
  expect(busy.body.outcome === 'busy' && busy.body.retry_after_ms > 0, 'acquireLock busy');
  expect((await call('extendLock', { body: { name: 'sku-1', owner: 'a', ttl_ms: 30000 } })).body.outcome === 'extended', 'extendLock');
  expect((await call('extendLock', { body: { name: 'sku-1', owner: 'b', ttl_ms: 30000 } })).status === 409, 'extendLock not_owner');
  expect((await call('releaseLock', { body: { name: 'sku-1', owner: 'b' } })).status === 409, 'releaseLock not_owner');
  expect((await call('releaseLock', { body: { name: 'sku-1', owner: 'a' } })).body.outcome === 'released', 'releaseLock');

  // refusals every control call shares: 401, 415, 400
  for (const id of ['begin', 'commit', 'release', 'abandon', 'extend', 'issueToken', 'consumeToken', 'restoreToken',
                    'acquireLock', 'releaseLock', 'extendLock']) {
    const u = await call(id, { body: { scope }, auth: false });
    expect(u.status === 401 && u.body.type === 'urn:idem:problem:unauthorized', `${id} 401`);
    const w = await call(id, { raw: 'scope=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(w.status === 415 && w.body.type === 'urn:idem:problem:unsupported-media-type', `${id} 415`);
    const bad = await call(id, { raw: '{"scope": ', headers: { 'content-type': 'application/json' } });
    expect(bad.status === 400 && bad.body.type === 'urn:idem:problem:request-invalid', `${id} 400 malformed`);
    const missing = await call(id, { body: {} });
    expect(missing.status === 400, `${id} 400 missing fields`);
  }
  expect((await call('begin', { body: { scope, key: 'k', lease_ms: 0 } })).status === 400, 'begin lease_ms 0');
  expect((await call('getRecord', { params: { scope, key: 'job-1' }, auth: false })).status === 401, 'getRecord 401');
  expect((await call('listRecords', { auth: false })).status === 401, 'listRecords 401');
  expect((await call('deleteRecord', { params: { scope, key: 'job-1' }, auth: false })).status === 401, 'deleteRecord 401');

  // A second gateway without a token, on a store nobody runs: 403 for a browser's
  // request, 503 store-unavailable (with Retry-After) from readiness, records and claims.
  const [port2, adminPort2] = [await freePort(), await freePort()];
  await serve('down', `
listen: 127.0.0.1:${port2}
upstream: http://127.0.0.1:${upstreamPort}
store: postgres://idem:secret@127.0.0.1:1/idem
admin:
  listen: 127.0.0.1:${adminPort2}
`, adminPort2, 'healthz');
  const down = { base: `http://127.0.0.1:${adminPort2}`, auth: false };
  const f = await call('healthz', { ...down, headers: { origin: 'https://evil.example' } });
  expect(f.status === 403 && f.body.type === 'urn:idem:problem:forbidden', 'healthz with Origin: 403');
  expect((await call('listRecords', { ...down, headers: { origin: 'https://evil.example' } })).status === 403, 'listRecords with Origin: 403');
  for (const [id, opts] of [['readyz', {}], ['getRecord', { params: { scope: '_', key: 'k' } }],
                            ['deleteRecord', { params: { scope: '_', key: 'k' } }], ['listRecords', {}],
                            ['begin', { body: { scope: '', key: 'k' } }]]) {
    const r = await call(id, { ...down, ...opts });
    expect(r.status === 503 && r.body.type === 'urn:idem:problem:store-unavailable' &&
           Number(r.headers.get('retry-after')) >= 1, `${id} 503 store-unavailable with Retry-After`);
  }

  for (const id of operations.keys()) expect(called.has(id), `operation ${id} was called`);
  const n = [...called.values()].reduce((a, s) => a + s.size, 0);
  console.log(`openapi: ${operations.size} operations, ${n} (operation, status) pairs checked against ${specFile}`);
} finally {
  stopAll();
}
