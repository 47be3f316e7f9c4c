// The admin listener's operator page in headless Chromium (docs/admin.md, "The operator's
// page"): the browser is challenged for the admin token, the page lists the records made
// uncertain by this test (a key and scope full of characters that HTML would read as
// markup) page by page, and its Resolve button, once the dialog is accepted, removes a
// record — not one that changed since it was listed, nor when the dialog is cancelled;
// opened with the credentials in its address, the page still reads and lists; then the same
// without a token, from http://localhost.
//   node operator_page.test.mjs IDEM_BIN TEST_UPSTREAM [ARTIFACTS_DIR]
// Starts tests/testutil/test_upstream and `idem serve` (memory store, admin token set; then
// a second one without a token) on free loopback ports, drives Debian's /usr/bin/chromium
// through playwright-core (npm ci in this directory), and saves a screenshot of the page
// to $IDEM_ARTIFACTS_DIR/operator-page.png (default: ARTIFACTS_DIR, which ctest sets to
// build/<preset>/artifacts). Exits non-zero on any failed expectation; stops every process
// either way.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, openSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { freePort } from '../../testutil/ports.mjs';

const [idemBin, upstreamBin] = process.argv.slice(2, 4).map(p => p && resolve(p));
const artifacts = resolve(process.env.IDEM_ARTIFACTS_DIR || process.argv[4] || 'artifacts');
if (!upstreamBin) {
  console.error('usage: node operator_page.test.mjs IDEM_BIN TEST_UPSTREAM [ARTIFACTS_DIR]');
  process.exit(2);
}
let chromium;
try {
  ({ chromium } = await import('playwright-core'));
} catch {
  console.error(`FAIL: playwright-core is not installed: run npm ci in ${new URL(".", import.meta.url).pathname}`);
  process.exit(1);
}

function expect(ok, what) {
  if (!ok) throw new Error(`expectation failed: ${what}`);
}

async function expectEventually(check, what) {
  for (const deadline = Date.now() + 15000; Date.now() < deadline;) {
    if (await check()) return;
    await new Promise(r => setTimeout(r, 50));
  }
  throw new Error(`expectation failed within 15 s: ${what}`);
}

async function waitReady(url, what, child) {
  const deadline = Date.now() + 20000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode} before it was ready`);
    try {
      if ((await fetch(url)).ok) return;
    } catch { /* not listening yet */ }
    await new Promise(r => setTimeout(r, 50));
  }
  throw new Error(`${what} not ready at ${url} within 20 s`);
}

// One request, its head written as UTF-8 bytes on a socket of its own (Node's HTTP
// clients take no UTF-8 in a header value; the gateway reads a subject header's bytes as
// they come). Resolves to { status, body } once the server closes the connection.
function rawRequest(port, method, path, headers, body = '') {
  return new Promise((done, fail) => {
    const fields = { Host: `127.0.0.1:${port}`, Connection: 'close', 'Content-Length': Buffer.byteLength(body),
                     ...headers };
    const head = [`${method} ${path} HTTP/1.1`, ...Object.entries(fields).map(([n, v]) => `${n}: ${v}`)];
    const socket = connect(port, '127.0.0.1', () => socket.end(Buffer.from(`${head.join('\r\n')}\r\n\r\n${body}`)));
    const chunks = [];
    socket.on('data', d => chunks.push(d));
    socket.on('error', fail);
    socket.setTimeout(20000, () => socket.destroy(new Error(`${method} ${path}: no answer within 20 s`)));
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      if (!status) return fail(new Error(`${method} ${path}: not an HTTP answer: ${text.slice(0, 200)}`));
      done({ status: Number(status[1]), body: text.slice(text.indexOf('\r\n\r\n') + 4) });
    });
  });
}

// A record's scope or key as one path segment, as docs/admin.md says (`_`: the empty scope).
const segment = text => (text === '' ? '_' : encodeURIComponent(text).replace(/[!'()*_]/g,
  c => `%${c.charCodeAt(0).toString(16).toUpperCase()}`));

const work = mkdtempSync(join(tmpdir(), 'idem-admin-browser-'));
const children = [];
function start(what, bin, args, env, pipeStdout) {
  const log = openSync(join(work, `${what}.log`), 'w');
  const child = spawn(bin, args, { cwd: work, env: { ...process.env, ...env },
                                   stdio: ['ignore', pipeStdout ? 'pipe' : log, log] });
  children.push(child);
  return child;
}

// Markup, an entity, a quote, a path separator and a percent sign in the key (visible
// ASCII, as keys are); UTF-8 and markup in the scope (a header's value).
const key = `<b>&"k/1%25'${process.pid}`;
const scope = '订单<i>&amp;';
const storedKey = `held:${key}`;
const token = 'page-test-t0ken';

let failed = false;
let browser;
try {
  const upstream = start('upstream', upstreamBin, [], {}, true);
  const upstreamPort = await new Promise((done, fail) => {
    createInterface({ input: upstream.stdout }).once('line', line => done(Number(line)));
    upstream.once('exit', code => fail(new Error(`test_upstream exited with ${code}`)));
  });
  const [gatewayPort, adminPort] = [await freePort(), await freePort()];
  const admin = `http://127.0.0.1:${adminPort}`;
  const config = (listen, adminListen, withToken) => `listen: 127.0.0.1:${listen}
upstream: http://127.0.0.1:${upstreamPort}
store: "memory:"
admin:
  listen: 127.0.0.1:${adminListen}
${withToken ? '  token_env: IDEM_PAGE_TEST_TOKEN\n' : ''}routes:
  - name: held
    match: { method: POST, path: /held }
    subject: header:X-User-Id
    on_uncertain: hold
  - name: orders
    match: { method: POST, path: /orders }
`;
  writeFileSync(join(work, 'idem.yaml'), config(gatewayPort, adminPort, true));
  const gateway = start('idem', idemBin, ['serve', '--config', join(work, 'idem.yaml')],
                        { IDEM_PAGE_TEST_TOKEN: token });
  await waitReady(`${admin}/readyz`, 'the gateway', gateway);
  const bearer = { Authorization: `Bearer ${token}` };
  const urlOf = (sc, k) => `${admin}/v1/records/${segment(sc)}/${segment(`held:${k}`)}`;
  const recordUrl = urlOf(scope, key);

  // The upstream runs the request and drops the connection without answering: the
  // gateway cannot know whether it took effect, and holds the key as uncertain.
  const fields = (sc, k) => ({ 'Idempotency-Key': k, 'X-User-Id': sc, 'Content-Type': 'application/json' });
  async function makeUncertain(sc, k) {
    const lost = await rawRequest(gatewayPort, 'POST', '/held', { ...fields(sc, k), 'X-Test-Drop': 'after' }, '{}');
    expect(lost.status >= 500, `the dropped request fails (got ${lost.status}: ${lost.body})`);
    const r = await fetch(urlOf(sc, k), { headers: bearer });
    expect(r.status === 200, `the record is there (GET ${urlOf(sc, k)}: ${r.status})`);
    const rec = await r.json();
    expect(rec.result === 'uncertain' && rec.scope === sc && rec.key === `held:${k}`,
           `the record is uncertain, with the scope and key sent (${JSON.stringify(rec)})`);
    return rec;
  }
  const recordJson = await makeUncertain(scope, key);
  const again = await rawRequest(gatewayPort, 'POST', '/held', fields(scope, key), '{}');
  expect(again.status === 409 && again.body.includes('outcome-uncertain'),
         `its key is held as uncertain (got ${again.status}: ${again.body})`);
  // A scope that is really "_" (written %5F, as "_" is the empty scope), and a record that
  // will change behind the page's back.
  const underscoreKey = `plain-${process.pid}`;
  await makeUncertain('_', underscoreKey);
  const changingKey = `changing-${process.pid}`;
  const changing = await makeUncertain('s', changingKey);
  // A scope a client chose to read as a dot segment with a parameter ("..;x", sent
  // "..%3Bx"): the admin listener takes it as data (issue 29: it could be neither read
  // nor resolved).
  const dotScope = '..;x';
  const dotKey = `dots-${process.pid}`;
  await makeUncertain(dotScope, dotKey);
  expect((await rawRequest(gatewayPort, 'POST', '/orders', { 'Idempotency-Key': `o-${process.pid}`,
                                                            'Content-Type': 'application/json' }, '{}'))
    .status === 201, 'an ordinary request goes through');
  const heldKeys = [storedKey, `held:${underscoreKey}`, `held:${changingKey}`, `held:${dotKey}`];

  // Without credentials the page is a challenge the browser can answer.
  const challenge = await fetch(`${admin}/`);
  expect(challenge.status === 401, `GET / without credentials is 401 (got ${challenge.status})`);
  expect(/Basic realm="idem admin"/.test(challenge.headers.get('www-authenticate') || ''),
         `the 401 challenges Basic (WWW-Authenticate: ${challenge.headers.get('www-authenticate')})`);

  // The scope above, and the page's Chinese, must render as glyphs in the screenshot, not
  // boxes: Chromium takes them from fontconfig (scripts/bootstrap installs fonts-noto-cjk).
  const cjk = execFileSync('fc-list', [':lang=zh-cn', 'family'], { encoding: 'utf8' }).trim();
  expect(cjk !== '', 'a font covers Chinese (fc-list :lang=zh-cn lists none: install fonts-noto-cjk)');
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox'],  // CI runs as root, where Chromium's sandbox refuses to start
  });
  // The operator's answer to the browser's prompt: any user name, the token as the password.
  const context = await browser.newContext({ httpCredentials: { username: 'operator', password: token },
                                             viewport: { width: 1200, height: 800 } });
  const page = await context.newPage();
  // The page's timers run only when the test says: a refresh never comes between what the
  // test does behind the page's back and its next click.
  await page.clock.install();
  const problems = [];
  page.on('pageerror', e => problems.push(`page error: ${e.message}`));
  // Errors but the browser's own note of the lookup of a key without a record (a 404 the
  // page expects) and of the favicon it asks for.
  page.on('console', m => {
    if (m.type() === 'error' && !/favicon|\/v1\/records\/[^?]*absent-/.test(m.location().url || ''))
      problems.push(`console: ${m.text()} (${m.location().url})`);
  });
  const deletes = [];
  page.on('request', r => { if (r.method() === 'DELETE') deletes.push(r.url()); });
  const dialogs = [];
  let answer = 'accept';
  page.on('dialog', d => {
    dialogs.push(d.message());
    (answer === 'accept' ? d.accept() : d.dismiss()).catch(() => {});
  });
  const rows = page.locator('#uncertain tbody tr.record');
  const exactly = text => new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
  const rowOf = k => rows.filter({ has: page.locator('td.key', { hasText: exactly(k) }) });

  // Pages of one record: Next page until it is disabled visits each uncertain record once.
  const paged = await page.goto(`${admin}/?limit=1`, { waitUntil: 'load' });
  expect(paged.status() === 200, `the page loads (status ${paged.status()})`);
  const seen = [];
  for (let n = 0; n < 20; ++n) {
    await page.locator('#updated').filter({ hasNotText: '…' }).waitFor({ timeout: 15000 });
    const keys = await page.locator('#uncertain tbody td.key').allTextContents();
    expect(keys.length <= 1, `a page of limit=1 holds at most one record (${JSON.stringify(keys)})`);
    seen.push(...keys);
    if (await page.locator('#next-page').isDisabled()) break;
    await page.locator('#next-page').click();
    await page.locator('#page-number', { hasText: `page ${n + 2}` }).waitFor({ timeout: 15000 });
  }
  expect(JSON.stringify([...seen].sort()) === JSON.stringify([...heldKeys].sort()),
         `the pages show each uncertain record once (${JSON.stringify(seen)})`);
  expect(!(await page.locator('#first-page').isDisabled()), 'past the first page, First page is enabled');

  const loaded = await page.goto(`${admin}/`, { waitUntil: 'load' });
  expect(loaded.status() === 200, `the page loads (status ${loaded.status()})`);
  expect(loaded.headers()['content-security-policy'] === "default-src 'self'; frame-ancestors 'none'",
         `the page has its Content-Security-Policy (${loaded.headers()['content-security-policy']})`);
  const row = rowOf(storedKey);
  await row.waitFor({ timeout: 15000 });
  expect(await rows.count() === 4, `the four uncertain records show (${await rows.count()})`);
  expect(await row.locator('td.key').textContent() === storedKey,
         `the key shows as text (${await row.locator('td.key').textContent()})`);
  expect(await row.locator('td.scope').textContent() === scope,
         `the scope shows as text (${await row.locator('td.scope').textContent()})`);
  expect(await page.locator('#uncertain b, #uncertain i').count() === 0, 'no markup of the key or scope ran');
  expect(await row.locator('td.num').textContent() === String(recordJson.fence), 'the fence shows');
  expect(await row.locator('td').nth(3).textContent() === recordJson.expires_at, 'expires_at shows');
  // The attempt the service may have received: the request's own fence here (its connection
  // broke after it was sent), the gateway that marked it and when.
  expect(recordJson.uncertain && recordJson.uncertain.fence === recordJson.fence,
         `the record names the fence the service received (${JSON.stringify(recordJson.uncertain)})`);
  const attempt = await row.locator('td.attempt').textContent();
  expect(attempt.startsWith(`fence ${recordJson.uncertain.fence}, marked by ${recordJson.uncertain.instance} at `),
         `the attempt shows (${attempt})`);
  await page.locator('#store.ready').waitFor({ timeout: 15000 });
  expect(/^\d+$/.test(await page.locator('#inflight').textContent()), 'requests in flight show as a number');
  const outcomes = await page.locator('#outcomes tbody tr').allInnerTexts();
  expect(outcomes.some(r => /held\s+outcome_uncertain\s+1/.test(r)) &&
         outcomes.some(r => /held\s+upstream_unavailable\s+4/.test(r)) &&
         outcomes.some(r => /orders\s+forwarded\s+1/.test(r)),
         `outcome counts per route show (${JSON.stringify(outcomes)})`);

  // Rates: none until the page has two samples; then requests per second between them.
  const outcomeCell = async (route, outcome, column) => {
    for (const r of await page.locator('#outcomes tbody tr').all())
      if (await r.locator('td.route').textContent() === route && await r.locator('td.outcome').textContent() === outcome)
        return r.locator(`td.${column}`).textContent();
    return null;
  };
  const rateOf = (route, outcome) => outcomeCell(route, outcome, 'rate');
  expect(await rateOf('orders', 'forwarded') === '…', `no rate from one sample (${await rateOf('orders', 'forwarded')})`);
  for (let i = 0; i < 3; ++i)
    expect((await rawRequest(gatewayPort, 'POST', '/orders', { 'Idempotency-Key': `rate-${i}-${process.pid}`,
                                                              'Content-Type': 'application/json' }, '{}')).status === 201,
           'an ordinary request goes through');
  await page.clock.runFor(4000);
  await expectEventually(async () => await outcomeCell('orders', 'forwarded', 'count') === '4',
                         'the next refresh counts the three requests');
  const rate = Number(await rateOf('orders', 'forwarded'));
  expect(rate > 0.3 && rate <= 1.5, `three requests in about three seconds show as a rate (${rate}/s)`);
  expect(await rateOf('held', 'outcome_uncertain') === '0.00', `an outcome without new requests is 0.00/s (${await rateOf('held', 'outcome_uncertain')})`);

  // A route chosen: its outcomes only, and the uncertain records of its key space.
  const routeOptions = await page.locator('#route-filter option').allTextContents();
  expect(JSON.stringify(routeOptions.slice(1)) === JSON.stringify(['held', 'orders']),
         `the routes of the config are the choices (${JSON.stringify(routeOptions)})`);
  await page.locator('#route-filter').selectOption('orders');
  await page.locator('#uncertain-filter', { hasText: 'Key space orders (route orders) only.' }).waitFor({ timeout: 15000 });
  await rows.first().waitFor({ state: 'detached', timeout: 15000 });
  const ordersOnly = await page.locator('#outcomes tbody td.route').allTextContents();
  expect(ordersOnly.length > 0 && ordersOnly.every(r => r === 'orders'), `only the route's outcomes show (${ordersOnly})`);
  expect(await page.locator('#search-key-space').inputValue() === 'orders', 'a lookup takes the route\'s key space');
  await page.locator('#route-filter').selectOption('held');
  await page.locator('#uncertain-filter', { hasText: 'Key space held (route held) only.' }).waitFor({ timeout: 15000 });
  await expectEventually(async () => (await rows.count()) === 4, 'the held route\'s four uncertain records show');
  await page.locator('#route-filter').selectOption('');
  await page.locator('#uncertain-filter', { hasText: 'All key spaces.' }).waitFor({ timeout: 15000 });

  // A record found by its key, as the route rendered it, in its key space and scope.
  await page.locator('#search-key-space').fill('held');
  await page.locator('#search-scope').fill(scope);
  await page.locator('#search-key').fill(key);
  await page.locator('#search button[type=submit]').click();
  await page.locator('#found').waitFor({ state: 'visible', timeout: 15000 });
  const field = name => page.locator(`#found-facts dd[data-field="${name}"]`).textContent();
  expect(await field('key') === storedKey && await field('scope') === scope && await field('result') === 'uncertain' &&
         await field('fence') === String(recordJson.fence),
         `the record found shows its key, scope, result and fence (${await page.locator('#found-facts').innerText()})`);
  expect(await page.locator('#found-resolve').isVisible(), 'an uncertain record found can be resolved');
  expect(await page.locator('#found b, #found i').count() === 0, 'no markup of the key or scope ran');
  await page.locator('#search-key').fill(`absent-${process.pid}`);
  await page.locator('#search button[type=submit]').click();
  await page.locator('#found-none', { hasText: `absent-${process.pid}` }).waitFor({ timeout: 15000 });
  expect(await page.locator('#found').isHidden(), 'a key without a record shows no record');

  mkdirSync(artifacts, { recursive: true });
  const shot = join(artifacts, 'operator-page.png');
  await page.screenshot({ path: shot, fullPage: true });
  console.log(`screenshot: ${shot}`);

  // In Chinese, chosen in the address (or by a browser that prefers it): every text of the
  // page, the records' own text untouched; a link back to English.
  const zh = await context.newPage();
  zh.on('pageerror', e => problems.push(`page error (zh): ${e.message}`));
  const zhLoad = await zh.goto(`${admin}/?lang=zh`, { waitUntil: 'load' });
  expect(zhLoad.status() === 200, `the Chinese page loads (status ${zhLoad.status()})`);
  await zh.locator('#status', { hasText: '实时' }).waitFor({ timeout: 15000 });
  expect(await zh.locator('h1').textContent() === 'idem 管理页', `the title is Chinese (${await zh.locator('h1').textContent()})`);
  expect(await zh.locator('html').getAttribute('lang') === 'zh', 'the page says it is Chinese');
  const zhHeads = await zh.locator('#uncertain th, #outcomes th').allTextContents();
  expect(zhHeads.includes('作用域') && zhHeads.includes('幂等键') && zhHeads.includes('每秒'),
         `the tables' heads are Chinese (${zhHeads})`);
  await zh.locator('#uncertain tbody td.key', { hasText: exactly(storedKey) }).waitFor({ timeout: 15000 });
  expect(await zh.locator('#uncertain button.resolve').first().textContent() === '处理', 'Resolve is 处理');
  expect((await zh.locator('#lang-switch').getAttribute('href')).includes('lang=en'), 'a link leads back to English');
  const zhShot = join(artifacts, 'operator-page.zh.png');
  await zh.screenshot({ path: zhShot, fullPage: true });
  console.log(`screenshot: ${zhShot}`);
  await zh.close();

  // Cancelling the dialog changes nothing.
  answer = 'dismiss';
  await rowOf(`held:${underscoreKey}`).locator('button.resolve').click();
  expect(dialogs.length === 1 && dialogs[0].includes(`held:${underscoreKey}`), `the dialog names the key (${dialogs})`);
  expect((await fetch(urlOf('_', underscoreKey), { headers: bearer })).status === 200, 'a cancelled Resolve keeps the record');
  answer = 'accept';

  // Resolved meanwhile and held again by a new request (another fence): the page reads the
  // record before removing it, and leaves the new one alone.
  expect((await fetch(urlOf('s', changingKey), { method: 'DELETE', headers: bearer })).status === 204, 'removed behind the page');
  const renewed = await makeUncertain('s', changingKey);
  expect(renewed.fence !== changing.fence, 'the new claim has another fence');
  await rowOf(`held:${changingKey}`).locator('button.resolve').click();
  await page.locator('#status.error', { hasText: 'changed since it was listed' }).waitFor({ timeout: 15000 });
  const still = await fetch(urlOf('s', changingKey), { headers: bearer });
  expect(still.status === 200 && (await still.json()).fence === renewed.fence, 'the newer record was not removed');

  // Resolve: a confirmation naming the key, then the record is gone from the page and the store.
  for (const [sc, k] of [[scope, key], ['_', underscoreKey], [dotScope, dotKey]]) {
    const deleted = page.waitForResponse(r => r.request().method() === 'DELETE');
    const before = dialogs.length;
    await rowOf(`held:${k}`).locator('button.resolve').click();
    const del = await deleted;
    expect(dialogs.length === before + 1 && dialogs[before].includes(`held:${k}`), `the dialog names the key (${dialogs[before]})`);
    expect(del.status() === 204, `the page's DELETE is 204 (got ${del.status()} for ${del.url()})`);
    await rowOf(`held:${k}`).waitFor({ state: 'detached', timeout: 15000 });
    const gone = await fetch(urlOf(sc, k), { headers: bearer });
    expect(gone.status === 404, `GET ${urlOf(sc, k)} answers 404 once resolved (got ${gone.status})`);
  }
  expect(deletes.length === 3 && deletes[1].includes('/v1/records/%5F/') && deletes[2].includes('/v1/records/..%3Bx/'),
         `three DELETEs were sent, the "_" scope as %5F, "..;x" as ..%3Bx (${JSON.stringify(deletes)})`);
  const rerun = await rawRequest(gatewayPort, 'POST', '/held', fields(scope, key), '{}');
  expect(rerun.status === 201, `the key runs again once resolved (got ${rerun.status}: ${rerun.body})`);
  expect(await rows.count() === 1, `one uncertain record is left (${await rows.count()})`);
  // Every few seconds the page refreshes: a record made uncertain now shows up.
  const lateKey = `late-${process.pid}`;
  await makeUncertain('s', lateKey);
  await page.clock.runFor(4000);
  await expectEventually(async () => (await rowOf(`held:${lateKey}`).count()) === 1,
                         'a record made uncertain later shows after the next refresh');

  // Opened with the credentials in its address (http://operator:TOKEN@host:port/, as a
  // bookmark or a runbook link has it), the browser answers the challenge with them; the
  // page's own requests must not carry them in their URL, which fetch refuses ("Request
  // cannot be constructed from a URL that includes credentials").
  const inUrl = await browser.newContext();
  const linked = await inUrl.newPage();
  const linkedProblems = [];
  linked.on('pageerror', e => linkedProblems.push(`page error: ${e.message}`));
  linked.on('console', m => {
    if (m.type() === 'error' && !/favicon/.test(m.location().url || '')) linkedProblems.push(`console: ${m.text()}`);
  });
  const withUserinfo = `http://operator:${token}@127.0.0.1:${adminPort}/`;
  const linkedLoad = await linked.goto(withUserinfo, { waitUntil: 'load' });
  expect(linkedLoad.status() === 200, `the page opened as ${withUserinfo} loads (status ${linkedLoad.status()})`);
  await linked.locator('#status').filter({ hasNotText: 'Loading…' }).waitFor({ timeout: 15000 });
  const linkedStatus = await linked.locator('#status').textContent();
  expect(linkedStatus === 'Live', `opened with credentials in its address, the page refreshes (status: ${linkedStatus})`);
  await linked.locator('#store.ready').waitFor({ timeout: 15000 });
  expect(await linked.locator('#uncertain tbody tr.record').count() === await rows.count(),
         'opened with credentials in its address, the page lists the uncertain records');
  expect(linkedProblems.length === 0, `the page opened with credentials ran without errors:\n  ${linkedProblems.join('\n  ')}`);
  await inUrl.close();

  // Without a token (the default), the page is this machine's: opened as localhost, with no
  // credentials, its DELETE carries Origin http://localhost:PORT, which the listener takes
  // as its own.
  const [openPort, openAdminPort] = [await freePort(), await freePort()];
  writeFileSync(join(work, 'open.yaml'), config(openPort, openAdminPort, false));
  const open = start('idem-open', idemBin, ['serve', '--config', join(work, 'open.yaml')], {});
  await waitReady(`http://127.0.0.1:${openAdminPort}/readyz`, 'the gateway without a token', open);
  const openKey = `open-${process.pid}`;
  const openLost = await rawRequest(openPort, 'POST', '/held', { ...fields('s', openKey), 'X-Test-Drop': 'after' }, '{}');
  expect(openLost.status >= 500, `the dropped request fails (got ${openLost.status}: ${openLost.body})`);
  const openUrl = `http://127.0.0.1:${openAdminPort}/v1/records/s/${segment(`held:${openKey}`)}`;
  expect((await fetch(openUrl)).status === 200, `the record is there (GET ${openUrl})`);
  const plain = await browser.newPage();
  plain.on('pageerror', e => problems.push(`page error (no token): ${e.message}`));
  plain.on('dialog', d => d.accept().catch(() => {}));
  const opened = await plain.goto(`http://localhost:${openAdminPort}/`, { waitUntil: 'load' });
  expect(opened.status() === 200, `the page without a token loads (status ${opened.status()})`);
  const openRow = plain.locator('#uncertain tbody tr.record').filter({ hasText: `held:${openKey}` });
  await openRow.waitFor({ timeout: 15000 });
  const openDeleted = plain.waitForResponse(r => r.request().method() === 'DELETE');
  await openRow.locator('button.resolve').click();
  const openDel = await openDeleted;
  expect(openDel.status() === 204, `without a token the page's DELETE is 204 (got ${openDel.status()})`);
  await openRow.waitFor({ state: 'detached', timeout: 15000 });
  expect((await fetch(openUrl)).status === 404, `GET ${openUrl} answers 404 once resolved`);
  expect(problems.length === 0, `the page ran without errors:\n  ${problems.join('\n  ')}`);
  console.log(`PASS: ${storedKey} shown as text, resolved from the page, gone from the store; paging, cancel, a changed record and credentials in the address too`);
} catch (e) {
  failed = true;
  console.error(`FAIL: ${e.message}\n(logs in ${work})`);
} finally {
  if (browser) await browser.close();
  for (const c of children) {
    if (c.exitCode === null) {
      const exited = new Promise(r => c.once('exit', r));
      c.kill('SIGTERM');
      await exited;
    }
  }
  if (!failed) rmSync(work, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
