// Step definitions for the idempot-dev compliance suite (idempot-dev/idempotency.feature,
// used as it is), against a real `idem serve` with tests/conformance/idem.yaml in front of
// a real HTTP upstream that creates orders. Each scenario gets a gateway of its own on a
// fresh SQLite store. The words of the suite are mapped to idem's where only the spelling
// differs (a record "complete" is idem's "done"); everything else is asked as written, and
// docs/conformance.md lists what idem answers otherwise by design.
import { Given, When, Then, Before, After, setDefaultTimeout } from '@cucumber/cucumber';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../testutil/ports.mjs';

setDefaultTimeout(20_000);

const idemBin = process.env.IDEM_BIN;
const configPath = new URL('./idem.yaml', import.meta.url).pathname;
const token = 'conformance-admin-token';

function fail(message) {
  throw new Error(message);
}

// The upstream: POST/PATCH /api creates an order (200 {"success":true,...}); a request
// carrying X-Conformance-Hold is held unanswered until the scenario ends; other methods
// answer 200 without creating anything.
class Upstream {
  constructor() {
    this.orders = 0;
    this.held = [];
    this.arrivals = [];
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', c => (body += c));
      req.on('end', () => {
        const creates = req.method === 'POST' || req.method === 'PATCH';
        if (creates) ++this.orders;
        const answer = () => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ success: true, method: req.method, order: creates ? this.orders : null }));
        };
        for (const a of this.arrivals.splice(0)) a();
        if (req.headers['x-conformance-hold']) this.held.push(answer);
        else answer();
      });
    });
  }
  async start() {
    await new Promise(done => this.server.listen(0, '127.0.0.1', done));
    return this.server.address().port;
  }
  // Resolves when the next request has arrived whole.
  arrival() {
    return new Promise(done => this.arrivals.push(done));
  }
  releaseAll() {
    for (const a of this.held.splice(0)) a();
  }
}

const upstream = new Upstream();
const upstreamPort = await upstream.start();

// A gateway on `store`; resolves once its admin listener answers /healthz (with a store that
// is down /readyz never does).
async function startGateway(world, store) {
  await stopGateway(world);
  const [port, adminPort] = [await freePort(), await freePort()];
  const log = join(world.dir, `idem-${port}.log`);
  const child = spawn(idemBin, ['serve', '--config', configPath], {
    cwd: world.dir,
    stdio: ['ignore', openSync(log, 'w'), openSync(log, 'a')],
    env: {
      ...process.env,
      IDEM_CONFORMANCE_PORT: String(port),
      IDEM_CONFORMANCE_ADMIN_PORT: String(adminPort),
      IDEM_CONFORMANCE_UPSTREAM_PORT: String(upstreamPort),
      IDEM_CONFORMANCE_STORE: store,
      IDEM_CONFORMANCE_ADMIN_TOKEN: token,
    },
  });
  world.gateway = { child, base: `http://127.0.0.1:${port}`, admin: `http://127.0.0.1:${adminPort}` };
  for (let i = 0; ; ++i) {
    if (child.exitCode !== null) fail('idem serve exited: ' + readFileSync(log, 'utf8'));
    const ok = await fetch(`${world.gateway.admin}/healthz`).then(r => r.status === 200, () => false);
    if (ok) return;
    if (i >= 500) fail('idem serve not ready within 10 s: ' + readFileSync(log, 'utf8'));
    await new Promise(r => setTimeout(r, 20));
  }
}

async function stopGateway(world) {
  if (!world.gateway) return;
  const { child } = world.gateway;
  world.gateway = null;
  if (child.exitCode !== null) return;
  const exited = new Promise(done => child.once('exit', done));
  child.kill('SIGKILL');
  await exited;
}

Before(function () {
  this.dir = mkdtempSync(join(tmpdir(), 'idem-conformance-'));
  this.key = undefined;
  this.response = null;
  this.pending = [];
  upstream.orders = 0;
});

After(async function () {
  upstream.releaseAll();
  await Promise.allSettled(this.pending);
  await stopGateway(this);
  rmSync(this.dir, { recursive: true, force: true });
});

async function send(world, method, path, body, { key = world.key, headers = {} } = {}) {
  const h = { ...headers };
  if (key !== undefined) h['idempotency-key'] = key;
  if (body !== undefined) h['content-type'] = 'application/json';
  const res = await fetch(world.gateway.base + path, { method, headers: h, body });
  const text = await res.text();
  world.response = { status: res.status, headers: res.headers, text };
  return world.response;
}

function json(world) {
  try {
    return JSON.parse(world.response.text);
  } catch {
    return fail(`the response body is not JSON: ${world.response.text}`);
  }
}

async function adminGet(world, path) {
  const res = await fetch(world.gateway.admin + path, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: await res.json().catch(() => null) };
}

// The record of `key` on the suite's route (its key space is the route's name, "api").
async function record(world, key) {
  const r = await adminGet(world, `/v1/records/_/${encodeURIComponent(key)}?key_space=api`);
  return r.status === 200 ? r.body : null;
}

// Background
Given('a POST endpoint at {string} that creates an order', function (path) {
  if (path !== '/api') fail(`idem.yaml routes /api, not ${path}`);
});
Given('a PATCH endpoint at {string} that creates an order', function (path) {
  if (path !== '/api') fail(`idem.yaml routes /api, not ${path}`);
});
Given('the SQLite store is clean', async function () {
  await startGateway(this, `sqlite:${join(this.dir, 'idem.db')}`);
});
Given('the idempotency store is unavailable', async function () {
  // A Redis store at a port nothing listens on: every store call fails at once.
  await startGateway(this, `redis://127.0.0.1:${await freePort()}`);
});

// Keys
Given('an empty Idempotency-Key header', function () {
  this.key = '';
});
Given('an Idempotency-Key of {int} characters', function (n) {
  this.key = 'k'.repeat(n);
});
Given('an Idempotency-Key {string}', function (key) {
  this.key = key;
});
Given('the key {string} is currently being processed', async function (key) {
  const arrived = upstream.arrival();
  this.pending.push(
    send({ ...this }, 'POST', '/api', '{"foo":"bar"}', { key, headers: { 'x-conformance-hold': '1' } }).catch(() => {}),
  );
  await arrived;
});

// Requests
When('I send a POST request to {string} without an Idempotency-Key header', async function (path) {
  await send(this, 'POST', path, '{}', { key: undefined });
});
async function sendWithBody(method, path, body) {
  await send(this, method, path, body);
}
When('I send a POST request to {string} with body {string}', function (path, body) {
  return sendWithBody.call(this, 'POST', path, body);
});
Given('I previously sent a POST request to {string} with body {string}', function (path, body) {
  return sendWithBody.call(this, 'POST', path, body);
});
When('I send a PUT request to {string} with body {string}', function (path, body) {
  return sendWithBody.call(this, 'PUT', path, body);
});
When('I send a PATCH request to {string} with body {string}', function (path, body) {
  return sendWithBody.call(this, 'PATCH', path, body);
});
When('I send a GET request to {string}', async function (path) {
  await send(this, 'GET', path);
});
When('I send a DELETE request to {string}', async function (path) {
  await send(this, 'DELETE', path);
});
When('I send a POST request to {string} with empty body', async function (path) {
  await send(this, 'POST', path, '');
});

// The response
Then('the response status should be {int}', function (status) {
  if (this.response.status !== status) fail(`status ${this.response.status}, not ${status}: ${this.response.text}`);
});
Then('the response content-type should be {string}', function (type) {
  const got = (this.response.headers.get('content-type') ?? '').split(';')[0].trim();
  if (got !== type) fail(`content-type ${got}, not ${type}`);
});
Then('the response body should contain {string}', function (text) {
  if (!this.response.text.includes(text)) fail(`the body has no "${text}": ${this.response.text}`);
});
Then('the response body instance field should match pattern {string}', function (pattern) {
  const instance = json(this).instance;
  if (typeof instance !== 'string' || !new RegExp(pattern).test(instance))
    fail(`instance ${JSON.stringify(instance)} does not match ${pattern}`);
});
Then('the response retryable field should be {word}', function (value) {
  const retryable = json(this).retryable;
  if (retryable !== (value === 'true')) fail(`retryable is ${JSON.stringify(retryable)}, not ${value}`);
});
Then('the response idempotency_key field should be {string}', function (key) {
  const got = json(this).idempotency_key;
  if (got !== key) fail(`idempotency_key is ${JSON.stringify(got)}, not ${key}`);
});
Then('the response should have header {string} with value {string}', function (name, value) {
  const got = this.response.headers.get(name);
  if (got !== value) fail(`${name} is ${JSON.stringify(got)}, not ${value}`);
});

// Records (the admin API) and orders (the upstream)
Then('an idempotency record should exist with key {string}', async function (key) {
  this.record = await record(this, key);
  if (!this.record) fail(`no record of key ${key}`);
});
Then('the idempotency record status should be {string}', function (status) {
  const states = { complete: 'done', processing: 'pending' };
  if (this.record.state !== (states[status] ?? status)) fail(`record state ${this.record.state}, not ${status}`);
});
Then('the idempotency record response status should be {int}', async function (status) {
  const r = (await record(this, this.key)) ?? fail(`no record of key ${this.key}`);
  const got = r.response_status;
  if (got !== status) fail(`the record's response status is ${got}, not ${status}: ${JSON.stringify(r)}`);
});
Then('the idempotency record response body should contain {string}', async function (text) {
  // The admin API renders a record's state, fence and response status, never the stored
  // body: a body found there is the only way this passes.
  const r = (await record(this, this.key)) ?? fail(`no record of key ${this.key}`);
  if (typeof r.body !== 'string' || !r.body.includes(text))
    fail(`the record as the admin API shows it has no response body with "${text}": ${JSON.stringify(r)}`);
});
Then('{int} orders should exist in the database', function (n) {
  if (upstream.orders !== n) fail(`${upstream.orders} orders, not ${n}`);
});
Then('{int} idempotency records should exist with key {string}', async function (n, key) {
  const r = await adminGet(this, '/v1/records?key_space=api&limit=1000');
  const count = (r.body?.records ?? []).filter(x => x.key === `api:${key}`).length;
  if (count !== n) fail(`${count} records of key ${key}, not ${n}`);
});
