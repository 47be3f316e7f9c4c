// The checkout page in headless Chromium: a double click on the pay button must create one
// order, and both clicks must show the same order number (one executed, one replayed by
// the gateway's one-time token route).
//   node checkout.test.mjs SHOP_BIN IDEM_BIN IDEM_YAML [AMQP_URL]   (default: $IDEM_TEST_AMQP_URL)
// Starts the shop (SQLite in a temporary directory) and `idem serve` in front of it on
// free loopback ports, drives Debian's /usr/bin/chromium through playwright-core, then
// counts the user's orders in the shop's database. Exits non-zero on any failed
// expectation; stops both processes either way.
import { chromium } from 'playwright-core';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../../testutil/ports.mjs';

const [shopBin, idemBin, config] = process.argv.slice(2).map(p => p && resolve(p));  // the children run elsewhere
const amqp = process.argv[5] || process.env.IDEM_TEST_AMQP_URL;
if (!config) {
  console.error('usage: node checkout.test.mjs SHOP_BIN IDEM_BIN IDEM_YAML [AMQP_URL]');
  process.exit(2);
}

function expect(ok, what) {
  if (!ok) throw new Error(`expectation failed: ${what}`);
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

const work = mkdtempSync(join(tmpdir(), 'idem-browser-'));
const children = [];
function start(what, bin, args) {
  const log = openSync(join(work, `${what}.log`), 'w');
  const child = spawn(bin, args, { cwd: work, stdio: ['ignore', log, log] });
  children.push(child);
  return child;
}

let failed = false;
let browser;
try {
  const [shopPort, gatewayPort, adminPort] = [await freePort(), await freePort(), await freePort()];
  const shopDb = join(work, 'shop.db');
  const shop = start('shop', shopBin, ['--listen', `127.0.0.1:${shopPort}`, '--db', `sqlite:${shopDb}`,
    '--store', `sqlite:${join(work, 'shop-idem.db')}`, '--amqp', amqp || 'amqp://guest:guest@127.0.0.1:1/',
    '--queue', `order.paid.browser.${process.pid}`, '--seed', 'sku-1=100']);
  await waitReady(`http://127.0.0.1:${shopPort}/healthz`, 'the shop', shop);
  const gateway = start('idem', idemBin, ['serve', '--config', config, '--listen', `127.0.0.1:${gatewayPort}`,
    '--upstream', `http://127.0.0.1:${shopPort}`, '--store', `sqlite:${join(work, 'gateway.db')}`,
    '--admin', `127.0.0.1:${adminPort}`]);
  await waitReady(`http://127.0.0.1:${adminPort}/readyz`, 'the gateway', gateway);

  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox'],  // CI runs as root, where Chromium's sandbox refuses to start
  });
  const page = await browser.newPage();
  const tokenFetched = page.waitForResponse(r => r.url().endsWith('/_idem/tokens') && r.status() === 201);
  await page.goto(`http://127.0.0.1:${gatewayPort}/`, { waitUntil: 'load' });
  await tokenFetched;  // the page fetches its one-time token on load; the button needs it
  const user = await page.inputValue('#user');  // a random user of the page's own; the token is bound to it
  await page.fill('#sku', 'sku-1');
  await page.dblclick('#pay');

  const results = page.locator('#results li');
  await results.nth(1).waitFor({ timeout: 15000 });
  const lines = await results.allInnerTexts();
  const numbers = await page.locator('#results li .order-no').allInnerTexts();
  console.log(`${lines.length} results:\n  ${lines.join('\n  ')}`);
  expect(lines.length === 2, `two clicks give two result lines (got ${lines.length})`);
  expect(numbers.length === 2 && numbers[0].length > 0, 'each line names an order number');
  expect(numbers[0] === numbers[1], `both clicks show the same order number (${numbers[0]} vs ${numbers[1]})`);
  expect(lines.some(l => /replayed/i.test(l)), "one of the two answers is the gateway's replay");

  const orders = execFileSync('sqlite3', [shopDb, `SELECT count(*) FROM t_order WHERE user_id = '${user}'`])
    .toString().trim();
  expect(orders === '1', `the double click created one order (the database has ${orders})`);
  console.log(`PASS: one order, ${numbers[0]}, shown by both clicks`);
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
