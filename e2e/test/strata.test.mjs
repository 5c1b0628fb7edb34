// End-to-end tests of strata's MCP server with the official TypeScript SDK, over stdio and Streamable HTTP.
//
// Run by `go test ./cmd/strata -run TestE2E`, which builds the binary and passes its path in STRATA_BIN. To run by
// hand: go build -o /tmp/strata ./cmd/strata && STRATA_BIN=/tmp/strata npm test --prefix e2e
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const bin = process.env.STRATA_BIN;
if (!bin) {
  throw new Error('set STRATA_BIN to the path of a strata binary (go test ./cmd/strata -run TestE2E does)');
}

// The exact bytes a payload must keep: a 20-digit integer and a float written with a fraction.
const exact = '{"n":12345678901234567891,"f":1.0}';

function tempData(t) {
  const dir = mkdtempSync(join(tmpdir(), 'strata-e2e-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function text(result) {
  assert.equal(result.content.length, 1, 'one content block');
  assert.equal(result.content[0].type, 'text');
  return result.content[0].text;
}

// call calls a tool through the SDK, which validates structured content against the tool's output schema.
async function call(client, name, args) {
  return client.callTool({ name, arguments: args });
}

async function ok(client, name, args) {
  const r = await call(client, name, args);
  assert.ok(!r.isError, `${name} ${JSON.stringify(args)} failed: ${r.isError && text(r)}`);
  return r;
}

// story is what an agent does, the same over both transports.
async function story(client) {
  // listTools: the SDK validates every tool's schemas and rejects the whole list on a bad one.
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const want of ['read', 'diff', 'history', 'create_database', 'put', 'update', 'create_branch']) {
    assert.ok(names.includes(want), `tools/list lacks ${want}: ${names}`);
  }
  for (const t of tools) {
    assert.equal(t.inputSchema.type, 'object', `${t.name}: input schema`);
    assert.equal(t.outputSchema?.type, 'object', `${t.name}: output schema`);
  }

  await ok(client, 'create_database', { database: 'e2e' });
  await ok(client, 'create_branch', { database: 'e2e', name: 'work' });

  // A payload keeps its exact text. JSON.rawJSON makes the SDK's JSON.stringify send 12345678901234567891 and 1.0
  // as written (a plain JS number would round the one and drop the ".0" of the other); the text block gives them back.
  assert.equal(typeof JSON.rawJSON, 'function', 'run the tests through test/run.mjs');
  const value = { n: JSON.rawJSON('12345678901234567891'), f: JSON.rawJSON('1.0') };
  assert.equal(JSON.stringify(value), exact);
  const put = await ok(client, 'put', { database: 'e2e', resource: 'doc', branch: 'work', value });
  assert.equal(put.structuredContent.branch, 'work');
  assert.ok(put.structuredContent.revision > 0);

  const read = await ok(client, 'read', { database: 'e2e', resource: 'doc', branch: 'work' });
  assert.equal(read.structuredContent.branch, 'work');
  assert.match(text(read), /<data-[a-z2-7]{13}>/);
  // Numbers come back with their exact text; object members come back in the store's canonical (sorted) order.
  assert.ok(text(read).includes('"value":{"f":1.0,"n":12345678901234567891}'), `read lost the exact text:\n${text(read)}`);

  await ok(client, 'update', { database: 'e2e', resource: 'doc', path: '/f', value: 2.5, branch: 'work' });
  const after = await ok(client, 'read', { database: 'e2e', resource: 'doc', path: '/f', branch: 'work' });
  assert.equal(after.structuredContent.value, 2.5);

  const diff = await ok(client, 'diff', { database: 'e2e', from_branch: 'main', to_branch: 'work' });
  assert.deepEqual(diff.structuredContent.counts, { added: 1, removed: 0, replaced: 0, moved: 0 });
  assert.equal(diff.structuredContent.operations[0].op, 'add');
  assert.ok(text(diff).includes('"f":2.5'), text(diff));

  // Errors are tool results whose text begins with a stable code.
  const missing = await call(client, 'read', { database: 'nope', resource: 'doc' });
  assert.equal(missing.isError, true);
  assert.match(text(missing), /^NOT_FOUND: /);
  // An error result has no structured content (the output schema describes answers); its fields are in _meta.
  assert.equal(missing.structuredContent, undefined);
  assert.equal(missing._meta['strata/error'].code, 'NOT_FOUND');
  const typo = await call(client, 'read', { database: 'e2e', resource: 'doc', pth: '/f' });
  assert.equal(typo.isError, true);
  assert.match(text(typo), /^INVALID_ARGUMENT: /);
  const guarded = await call(client, 'update', { database: 'e2e', resource: 'doc', path: '/f', value: 1 });
  assert.equal(guarded.isError, true, 'a write to main needs confirmation under --writes branches');

  // Resources: listed, read inside the untrusted-data boundary, and a subscription notified of a commit.
  const { resources } = await client.listResources();
  assert.deepEqual(resources.map((r) => r.uri), ['strata://databases']);
  const { resourceTemplates } = await client.listResourceTemplates();
  assert.ok(resourceTemplates.some((r) => r.uriTemplate === 'strata://{database}/{resource}'));
  const branches = await client.readResource({ uri: 'strata://e2e/branches' });
  assert.match(branches.contents[0].text, /<data-[a-z2-7]{13}>\n.*"name":"work"/s);
  const updated = new Promise((resolve) => {
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri));
  });
  await client.subscribeResource({ uri: 'strata://e2e/log' });
  await ok(client, 'update', { database: 'e2e', resource: 'doc', path: '/f', value: 3.5, branch: 'work' });
  assert.equal(await updated, 'strata://e2e/log');
  await client.unsubscribeResource({ uri: 'strata://e2e/log' });
}

test('stdio: strata mcp', async (t) => {
  const data = tempData(t);
  const transport = new StdioClientTransport({
    command: bin,
    args: ['mcp', '--data', data, '--writes', 'branches'],
    stderr: 'pipe',
  });
  const client = new Client({ name: 'strata-e2e', version: '1.0.0' });
  await client.connect(transport);
  try {
    assert.equal(client.getServerVersion().name, 'strata');
    await story(client);
  } finally {
    await client.close();
  }
});

// serve starts `strata serve` on a random loopback port and resolves to its endpoint once it listens.
function serve(t, data) {
  const child = spawn(bin, ['serve', '--data', data, '--writes', 'branches', '--listen', '127.0.0.1:0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  t.after(async () => {
    child.kill('SIGINT');
    const { code } = await exited;
    assert.equal(code, 0, 'strata serve stops cleanly on interrupt');
  });
  return new Promise((resolve, reject) => {
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      const m = stderr.match(/http:\/\/[^\s]+\/mcp/);
      if (m) resolve(new URL(m[0]));
    });
    child.on('exit', (code) => reject(new Error(`strata serve exited ${code}: ${stderr}`)));
    setTimeout(() => reject(new Error(`strata serve did not start: ${stderr}`)), 20000).unref();
  });
}

test('http: strata serve', async (t) => {
  const data = tempData(t);
  const url = await serve(t, data);
  const client = new Client({ name: 'strata-e2e', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(url);
  await client.connect(transport);
  try {
    assert.ok(transport.sessionId, 'the server gives the session an id');
    await story(client);
  } finally {
    await transport.terminateSession();
    await client.close();
  }
});

// Every tool the server lists, a prompt, progress and cancellation, over stdio with --writes on.
test('stdio: every tool, a prompt, progress and cancellation (--writes on)', async (t) => {
  const data = tempData(t);
  const transport = new StdioClientTransport({
    command: bin,
    args: ['mcp', '--data', data, '--writes', 'on'],
    stderr: 'pipe',
  });
  // The client can ask its user: confirmation of a plan comes as an elicitation, which the "user" here accepts.
  const client = new Client({ name: 'strata-e2e', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params.message);
    return { action: 'accept', content: { confirm: true } };
  });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    const schemas = new Map(tools.map((tool) => [tool.name, tool.inputSchema]));
    const called = new Set();
    // Every call goes through here: its arguments must be ones the tool's input schema names.
    const use = async (name, args = {}, options) => {
      const schema = schemas.get(name);
      assert.ok(schema, `tools/list lacks ${name}`);
      for (const k of Object.keys(args)) {
        assert.ok(k in (schema.properties ?? {}), `${name}: argument ${k} is not in its input schema`);
      }
      for (const k of schema.required ?? []) {
        assert.ok(k in args, `${name}: required argument ${k} missing`);
      }
      called.add(name);
      return client.callTool({ name, arguments: args }, undefined, options);
    };
    const good = async (name, args, options) => {
      const r = await use(name, args, options);
      assert.ok(!r.isError, `${name} ${JSON.stringify(args)} failed: ${r.isError && text(r)}`);
      return r;
    };
    const db = 'allt';

    const status = await good('status', {});
    assert.ok(status.structuredContent, 'status has structured content');
    await good('create_database', { database: db });
    const dbs = await good('list_databases', {});
    assert.ok(text(dbs).includes(db), text(dbs));

    // Writes to main that do not need confirmation: creating resources.
    const p1 = await good('put', { database: db, resource: 'cfg', value: { price: 1, tags: ['a'], note: 'x' } });
    const rev1 = p1.structuredContent.revision;
    assert.ok(rev1 > 0);
    await good('put', { database: db, resource: 'gone', value: { v: 1 } });
    // A destructive write to main becomes a plan under --writes on: nothing is written until the user confirms.
    const planned = await good('update', { database: db, resource: 'cfg', path: '/price', value: 2 });
    const plan = planned.structuredContent;
    assert.ok(plan.plan_id && plan.confirmation_required === true, text(planned));
    assert.deepEqual(plan.overwrites, ['/cfg/price']);
    const waiting = await good('list_plans', { database: db });
    assert.ok(text(waiting).includes(plan.plan_id), text(waiting));
    const applied = await good('apply_plan', { plan_id: plan.plan_id });
    assert.equal(applied.structuredContent.plan_id, plan.plan_id);
    assert.equal(asked.length, 1, 'the user was asked once');
    assert.match(asked[0], /overwrites: \/cfg\/price/);
    const again = await use('apply_plan', { plan_id: plan.plan_id });
    assert.equal(again.isError, true, 'a plan applies once');

    await good('create_snapshot', { database: db, name: 'base', note: 'before the work' });
    const snaps = await good('list_snapshots', { database: db });
    assert.ok(text(snaps).includes('base'), text(snaps));
    await good('create_branch', { database: db, name: 'work' });
    await good('create_branch', { database: db, name: 'tmp', from_snapshot: 'base' });
    const brs = await good('list_branches', { database: db });
    assert.ok(text(brs).includes('"work"') && text(brs).includes('"tmp"'), text(brs));

    // The write tools, on the branch.
    await good('update', { database: db, resource: 'cfg', path: '/price', value: 2, branch: 'work' });
    await good('insert', { database: db, resource: 'cfg', path: '/tags/-', value: 'b', branch: 'work' });
    await good('patch', {
      database: db, resource: 'cfg', branch: 'work',
      operations: [{ op: 'test', path: '/price', value: 2 }, { op: 'replace', path: '/price', value: 3 }],
    });
    await good('transform', { database: db, resource: 'cfg', branch: 'work', query: '.price += $d', params: { d: 10 } });
    await good('delete', { database: db, resource: 'cfg', path: '/note', branch: 'work' });
    await good('delete', { database: db, resource: 'gone', branch: 'work' });
    await good('restore', { database: db, resource: 'gone', branch: 'work', from_snapshot: 'base' });
    const cfg = await good('read', { database: db, resource: 'cfg', branch: 'work' });
    assert.ok(text(cfg).includes('"price":13'), text(cfg));
    assert.ok(!text(cfg).includes('"note"'), text(cfg));

    // The read tools.
    const res = await good('list_resources', { database: db, branch: 'work' });
    assert.ok(text(res).includes('cfg') && text(res).includes('gone'), text(res));
    const info = await good('resource_info', { database: db, resource: 'cfg', branch: 'work' });
    assert.ok(info.structuredContent);
    const q = await good('query', { database: db, resource: 'cfg', branch: 'work', query: '.tags | length' });
    assert.ok(text(q).includes('2'), text(q));
    const hist = await good('history', { database: db, branch: 'work', limit: 50 });
    assert.ok(hist.structuredContent);
    const ph = await good('path_history', { database: db, resource: 'cfg', path: '/price', branch: 'work' });
    assert.ok(text(ph).includes('13'), text(ph));
    const bis = await good('bisect', { database: db, resource: 'cfg', branch: 'work', predicate: '.price > 5' });
    assert.ok(bis.structuredContent);
    const show = await good('show_revision', { database: db, revision: rev1 });
    assert.ok(text(show).includes('put'), text(show));
    const d = await good('diff', { database: db, from_branch: 'main', to_branch: 'work' });
    assert.ok(d.structuredContent.operations.length > 0, text(d));

    // revert on the scratch branch, then promote the work branch into main and drop the named states.
    await good('put', { database: db, resource: 'scratch', value: 1, branch: 'tmp' });
    await good('revert', { database: db, branch: 'tmp', snapshot: 'base' });
    const tmpRes = await good('list_resources', { database: db, branch: 'tmp' });
    assert.ok(!text(tmpRes).includes('scratch'), text(tmpRes));
    await good('promote', { database: db, branch: 'work', into: 'tmp' });
    const promoted = await good('read', { database: db, resource: 'cfg', path: '/price', branch: 'tmp' });
    assert.equal(promoted.structuredContent.value, 13);
    await good('delete_branch', { database: db, name: 'tmp' });
    await good('delete_snapshot', { database: db, name: 'base' });

    // A prompt: the arguments the user gave appear only inside the untrusted-data boundary.
    const { prompts } = await client.listPrompts();
    assert.ok(prompts.some((p) => p.name === 'safe_change'), prompts.map((p) => p.name).join());
    const dbName = 'promptdbq7';
    const prompt = await client.getPrompt({ name: 'safe_change', arguments: { database: dbName, change: 'raise the price' } });
    assert.equal(prompt.messages.length, 1);
    const ptext = prompt.messages[0].content.text;
    const m = ptext.match(/<(data-[a-z2-7]{13})>([\s\S]*?)<\/\1>/);
    assert.ok(m, `no data block:\n${ptext}`);
    assert.ok(m[2].includes(dbName), `the database name is not inside the block:\n${ptext}`);
    assert.ok(!ptext.replace(m[0], '').includes(dbName), `the database name appears outside the block:\n${ptext}`);

    // Progress: a slowish query with a progress token gets at least one notification before its result.
    // (The SDK drops a call's progress handler when its response arrives, so every one counted came before it.)
    const progress = [];
    let resolved = false;
    const slowCall = good('query', { database: db, resource: 'cfg', query: 'reduce range(3000000) as $i (0; . + 1)' }, {
      onprogress: (p) => progress.push({ ...p, afterResult: resolved }),
      timeout: 60000,
    });
    const slow = await slowCall.then((r) => {
      resolved = true;
      return r;
    });
    assert.ok(text(slow).includes('3000000'), text(slow));
    assert.ok(progress.length >= 1, 'no progress notification arrived');
    assert.ok(progress.every((p) => !p.afterResult), 'a progress notification arrived after the result');
    t.diagnostic(`progress notifications before the result: ${progress.length}`);

    // Cancellation: an unbounded query rejects promptly when aborted, and the server still answers.
    const ac = new AbortController();
    const started = Date.now();
    const long = use('query', { database: db, resource: 'cfg', query: 'reduce range(1e12) as $i (0; . + 1)' }, {
      signal: ac.signal,
      timeout: 60000,
    });
    setTimeout(() => ac.abort('e2e cancel'), 300);
    await assert.rejects(long);
    const elapsed = Date.now() - started;
    assert.ok(elapsed < 5000, `the cancelled call took ${elapsed} ms`);
    t.diagnostic(`the cancelled call rejected after ${elapsed} ms`);
    const after = await good('status', {});
    assert.ok(after.structuredContent);

    // Every listed tool was called.
    const missed = tools.map((tool) => tool.name).filter((n) => !called.has(n));
    assert.deepEqual(missed, [], `tools not exercised: ${missed.join(', ')}`);
    t.diagnostic(`tools exercised: ${called.size} of ${tools.length}`);
  } finally {
    await client.close();
  }
});
