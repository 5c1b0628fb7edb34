// Browser tests of the review page (docs/security.md T25): Debian's Chromium driven by playwright-core, against a
// `strata serve` with bearer tokens, while an agent works over MCP with the official TypeScript SDK.
//
// Run by `go test ./cmd/strata -run TestE2EReviewPage`, which builds the binary and passes STRATA_BIN, CHROMIUM and
// STRATA_ARTIFACTS (where the screenshots go). By hand:
//   go build -o /tmp/strata ./cmd/strata && STRATA_BIN=/tmp/strata node --test e2e/test/review.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const bin = process.env.STRATA_BIN;
if (!bin) {
  throw new Error('set STRATA_BIN to the path of a strata binary (go test ./cmd/strata -run TestE2EReviewPage does)');
}
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
const here = dirname(fileURLToPath(import.meta.url));
const artifacts = process.env.STRATA_ARTIFACTS || join(here, '..', 'artifacts', 'review');
mkdirSync(artifacts, { recursive: true });

const reviewerToken = 'rita-' + 'a1b2c3d4e5f60718'.repeat(3);
const agentToken = 'bot-' + '0f1e2d3c4b5a6978'.repeat(3);

function text(result) {
  return result.content.map((c) => c.text ?? '').join('\n');
}

// serve starts strata serve with tokens on a random loopback port; it resolves to the MCP and review addresses.
function serve(t, data, config, tokens) {
  const child = spawn(bin, ['serve', '--data', data, '--config', config, '--token-file', tokens, '--listen', '127.0.0.1:0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  t.after(async () => {
    child.kill('SIGINT');
    assert.equal(await exited, 0, 'strata serve stops cleanly on interrupt');
  });
  return new Promise((resolve, reject) => {
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      const mcp = stderr.match(/(http:\/\/[^\s]+)\/mcp/);
      const ui = stderr.match(/review page: (http:\/\/[^\s"]+\/ui\/)["\n]/);
      if (mcp && ui) resolve({ mcp: new URL(mcp[0]), base: mcp[1], ui: ui[1] });
    });
    child.on('exit', (code) => reject(new Error(`strata serve exited ${code}: ${stderr}`)));
    setTimeout(() => reject(new Error(`strata serve did not start: ${stderr}`)), 20000).unref();
  });
}

async function agent(url) {
  const client = new Client({ name: 'review-e2e-agent', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${agentToken}` } } });
  await client.connect(transport);
  return { client, transport };
}

async function planOf(client, args) {
  const r = await client.callTool({ name: 'update', arguments: args });
  assert.ok(!r.isError, text(r));
  assert.equal(r.structuredContent.confirmation_required, true, text(r));
  return r.structuredContent.plan_id;
}

// shot saves a screenshot of the page as a test artefact.
async function shot(page, name) {
  const path = join(artifacts, `${name}.png`);
  await page.screenshot({ path, fullPage: false });
  return path;
}

test('review page in Chromium: sign in, read a plan\'s diff, reject, approve; agents and other sites cannot decide', async (t) => {
  const data = mkdtempSync(join(tmpdir(), 'strata-review-e2e-'));
  t.after(() => rmSync(data, { recursive: true, force: true }));
  const tokens = join(data, 'tokens');
  writeFileSync(tokens, `rita ${reviewerToken}\nbot ${agentToken}\n`);
  chmodSync(tokens, 0o600);
  const config = join(data, 'config.json');
  writeFileSync(config, JSON.stringify({ writes: 'branches', principals: { rita: { review: true }, bot: {} } }));
  const dir = join(data, 'data');
  // The operator's data, before the server starts: orders, and two revisions of a 100,000-element document.
  const cli = (...args) => execFileSync(bin, ['--data', dir, ...args], { encoding: 'utf8' });
  cli('db', 'create', 'shop');
  writeFileSync(join(data, 'orders.json'), JSON.stringify([{ id: 1, price: 10, note: 'first' }, { id: 2, price: 20 }]));
  cli('import', 'shop', 'orders', join(data, 'orders.json'), '--message', 'the first orders');
  const big = Array.from({ length: 100000 }, (_, i) => ({ id: i, qty: i % 7 }));
  writeFileSync(join(data, 'big1.json'), JSON.stringify(big));
  cli('import', 'shop', 'stock', join(data, 'big1.json'), '--message', 'stock, 100,000 items');
  big[54321].qty = 999;
  writeFileSync(join(data, 'big2.json'), JSON.stringify(big));
  cli('import', 'shop', 'stock', join(data, 'big2.json'), '--message', 'one item recounted');
  const log = JSON.parse(cli('log', 'shop', '--json'));
  const revs = (log.revisions ?? log).map((r) => r.revision).sort((a, b) => a - b);
  const [bigFrom, bigTo] = revs.slice(-2);

  const srv = await serve(t, dir, config, tokens);
  const { client, transport } = await agent(srv.mcp);
  t.after(async () => {
    await transport.terminateSession().catch(() => {});
    await client.close();
  });

  // The agent asks for changes to protected main: each becomes a plan; without a person's decision it cannot apply.
  const planA = await planOf(client, { database: 'shop', resource: 'orders', path: '/0/price', value: 99, message: 'raise the price' });
  const waiting = await client.callTool({ name: 'apply_plan', arguments: { plan_id: planA } });
  assert.equal(waiting.isError, true);
  assert.match(text(waiting), /^CONFIRMATION_REQUIRED/);

  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    // playwright-core gives each launch a fresh --user-data-dir of its own; it refuses one passed here.
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  t.after(() => browser.close());
  const shots = [];

  // ---- the reviewer signs in
  const reviewer = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await reviewer.newPage();
  const cspErrors = [];
  page.on('console', (m) => { if (m.type() === 'error') cspErrors.push(m.text()); });
  await page.goto(srv.ui);
  assert.match(page.url(), /\/ui\/login\?next=/);
  shots.push(await shot(page, '01-sign-in'));
  await page.getByLabel('Token').fill(reviewerToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${srv.base}/ui/`);
  await page.getByText('Signed in as').waitFor();
  shots.push(await shot(page, '02-databases'));

  // ---- the plan queue; a new plan appears without reloading
  await page.getByRole('link', { name: /^Plans/ }).click();
  await page.waitForURL(`${srv.base}/ui/plans`);
  await page.getByRole('link', { name: planA }).waitFor();
  const planB = await planOf(client, { database: 'shop', resource: 'orders', path: '/1/price', value: 25, message: 'a fair price' });
  const navigations = [];
  page.on('framenavigated', (f) => { if (f === page.mainFrame()) navigations.push(f.url()); });
  await page.getByRole('link', { name: planB }).waitFor({ timeout: 15000 });
  assert.deepEqual(navigations, [], 'the new plan appeared without reloading the page');
  await page.getByText('Waiting for a decision (2)').waitFor();
  shots.push(await shot(page, '03-plans'));

  // ---- the plan's diff: the changed path, old and new side by side
  await page.getByRole('link', { name: planA }).click();
  await page.waitForURL(/\/ui\/plans\/shop\/plan-/);
  const row = page.locator('tr.op').filter({ hasText: '/0/price' });
  await row.waitFor();
  assert.equal((await row.locator('td.old').innerText()).trim(), '10');
  assert.equal((await row.locator('td.new').innerText()).trim(), '99');
  assert.match(await row.locator('td.sign').innerText(), /~/);
  await page.getByText('/orders/0/price').first().waitFor(); // overwrites
  shots.push(await shot(page, '04-plan'));

  // ---- reject A with a reason: the agent's apply_plan answers DENIED with it
  const reason = 'Too steep: keep the price under 50.';
  await page.getByLabel(/^Reason/).fill(reason);
  await page.getByRole('button', { name: 'Reject' }).click();
  await page.getByText('rejected by rita').waitFor();
  const denied = await client.callTool({ name: 'apply_plan', arguments: { plan_id: planA } });
  assert.equal(denied.isError, true);
  assert.match(text(denied), /^DENIED/);
  assert.ok(text(denied).includes(reason), `the reason does not reach the agent:\n${text(denied)}`);

  // ---- approve B: the agent's apply_plan commits it
  await page.goto(`${srv.base}/ui/plans/shop/${planB}`);
  await page.getByRole('button', { name: 'Approve' }).click();
  await page.getByText('approved by rita').waitFor();
  const applied = await client.callTool({ name: 'apply_plan', arguments: { plan_id: planB } });
  assert.ok(!applied.isError, text(applied));
  const appliedRev = applied.structuredContent.revision;
  assert.ok(appliedRev > bigTo, text(applied));
  await page.goto(`${srv.base}/ui/plans`);
  await page.getByRole('link', { name: `revision ${appliedRev}` }).waitFor();

  // ---- history and one revision
  await page.goto(`${srv.base}/ui/db/shop`);
  shots.push(await shot(page, '05-database'));
  await page.getByRole('link', { name: 'History of main' }).click();
  await page.getByRole('cell', { name: 'one item recounted' }).waitFor();
  shots.push(await shot(page, '06-history'));
  await page.getByRole('link', { name: String(appliedRev), exact: true }).click();
  await page.getByText('a fair price').waitFor();
  shots.push(await shot(page, '07-revision'));

  // ---- a diff of two revisions of a 100,000-element document renders in under a second
  await page.goto(`${srv.base}/ui/db/shop/diff?from=${bigFrom}&to=${bigTo}`);
  const nav = await page.evaluate(() => {
    const e = performance.getEntriesByType('navigation')[0];
    return { total: e.loadEventEnd - e.startTime, response: e.responseEnd - e.startTime };
  });
  const bigRow = page.locator('tr.op').filter({ hasText: '/54321/qty' });
  assert.equal((await bigRow.locator('td.old').innerText()).trim(), String(54321 % 7));
  assert.equal((await bigRow.locator('td.new').innerText()).trim(), '999');
  await page.getByText('1 changed').waitFor();
  t.diagnostic(`diff of two revisions of a 100,000-element document: page loaded in ${nav.total.toFixed(0)} ms (answer complete at ${nav.response.toFixed(0)} ms)`);
  assert.ok(nav.total < 1000, `the diff page took ${nav.total} ms`);
  shots.push(await shot(page, '08-diff'));

  // ---- the audit log, filtered by principal, linked to the plans
  await page.goto(`${srv.base}/ui/audit`);
  await page.getByLabel('Principal').fill('bot');
  await page.getByLabel('Tool').fill('apply_plan');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.getByRole('cell', { name: 'DENIED' }).first().waitFor();
  await page.getByRole('link', { name: planA }).first().waitFor();
  shots.push(await shot(page, '09-audit'));

  // ---- an agent's token: no Approve or Reject, and its POST is refused with 403
  const planC = await planOf(client, { database: 'shop', resource: 'orders', path: '/0/note', value: 'second', message: 'a note' });
  const agentCtx = await browser.newContext();
  const agentPage = await agentCtx.newPage();
  await agentPage.goto(`${srv.base}/ui/login`);
  await agentPage.getByLabel('Token').fill(agentToken);
  await agentPage.getByRole('button', { name: 'Sign in' }).click();
  await agentPage.waitForURL(`${srv.base}/ui/`);
  await agentPage.goto(`${srv.base}/ui/plans/shop/${planC}`);
  await agentPage.getByText('Only a reviewer can approve or reject this plan').waitFor();
  assert.equal(await agentPage.getByRole('button', { name: 'Approve' }).count(), 0);
  assert.equal(await agentPage.getByRole('button', { name: 'Reject' }).count(), 0);
  const agentPost = await agentPage.evaluate(async (id) => {
    const csrf = document.querySelector('input[name=csrf]').value;
    const r = await fetch(`/ui/plans/shop/${id}/approve`, { method: 'POST', body: new URLSearchParams({ csrf }) });
    return r.status;
  }, planC);
  assert.equal(agentPost, 403, 'an agent\'s approval is refused');
  shots.push(await shot(agentPage, '10-agent-plan'));

  // ---- a cross-site POST with the reviewer's cookie is refused before anything happens: a page on another port
  // of 127.0.0.1 (same site, so the SameSite=Strict cookie goes along) submits the approval form, with the right
  // CSRF token even.
  const csrf = await page.evaluate(() => document.querySelector('input[name=csrf]').value);
  const evil = createServer((req, res) => {
    res.setHeader('Content-Type', 'text/html');
    res.end(`<!doctype html><form id="f" method="post" action="${srv.base}/ui/plans/shop/${planC}/approve">
      <input name="csrf" value="${csrf}"></form><script>document.getElementById('f').submit()</script>`);
  });
  await new Promise((resolve) => evil.listen(0, '127.0.0.1', resolve));
  t.after(() => evil.close());
  const refused = page.waitForResponse((r) => r.url().endsWith('/approve'));
  await page.goto(`http://127.0.0.1:${evil.address().port}/`);
  const res = await refused;
  assert.equal(res.status(), 403, 'a cross-site POST is refused');
  const sent = await res.request().allHeaders();
  assert.match(sent.cookie ?? '', /strata_review=/, 'the reviewer\'s cookie went along with the cross-site POST');
  assert.match(sent.origin ?? '', /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.notEqual(sent.origin, srv.base);
  await page.goto(`${srv.base}/ui/plans/shop/${planC}`);
  await page.locator('dd.state-pending').waitFor();

  // The page ran without a Content-Security-Policy violation.
  assert.deepEqual(cspErrors.filter((e) => /Content Security Policy/i.test(e)), []);
  t.diagnostic(`screenshots: ${artifacts}`);
  for (const s of shots) t.diagnostic(s);
});
