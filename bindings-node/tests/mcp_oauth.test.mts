/** The OAuth browser step of a remote MCP server from Node: the real OAuth-protected Python
 * server (`tests/mcp-servers/python_server.py --http PORT --oauth`, which approves every
 * authorization at once) asks for authorization while the session's servers connect in the
 * background; `onMcpAuthorization` runs on the JavaScript thread and "opens the browser" by
 * fetching the URL, following the redirect to the session's listener on 127.0.0.1. The tool
 * then works, the tokens are kept in the user's robota folder and the next session reuses them.
 * A callback that throws is a `RobotaWarning` and leaves the server `needs_auth` at once;
 * `/mcp auth <server>` asks again. */

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';

import { InteractiveSession, ScriptedProvider, type McpAuthorizationRequest } from '@robota/native';

import { hermetic, repoDir, tempDir, within } from './helpers.mjs';

const servers = path.join(repoDir, 'tests', 'mcp-servers');
const python = path.join(servers, '.venv', 'bin', 'python');

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

async function waitForPort(port: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    assert.ok(Date.now() < deadline, 'the OAuth MCP server did not start');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Starts the OAuth-protected server; returns it with its MCP URL. */
async function oauthServer(): Promise<{ child: ChildProcess; url: string }> {
  assert.ok(existsSync(python), 'the MCP test servers are not installed: run tests/mcp-servers/setup.sh');
  const port = await freePort();
  const child = spawn(python, [path.join(servers, 'python_server.py'), '--http', String(port), '--oauth'], {
    stdio: 'ignore',
  });
  await waitForPort(port);
  return { child, url: `http://127.0.0.1:${port}/mcp` };
}

/** The browser: fetches the authorization URL (approved at once) and follows its redirect to
 * the session's loopback listener. */
async function follow(url: string): Promise<void> {
  const answer = await fetch(url, { redirect: 'follow' });
  await answer.text();
}

function addingProvider(id: string): ScriptedProvider {
  return new ScriptedProvider([
    { tool_calls: [{ id, name: 'mcp__secure__add', input: { a: 40, b: 2 } }] },
    { text: 'Done.' },
  ]);
}

function toolResults(session: InteractiveSession): unknown[] {
  return session
    .getMessages()
    .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
    .filter((b: { type?: string }) => b.type === 'tool_result');
}

test('mcp oauth: onMcpAuthorization opens the URL on the JS thread; tokens are reused', async () => {
  const { child, url } = await oauthServer();
  try {
    const home = tempDir();
    const opened: McpAuthorizationRequest[] = [];
    for (const run of [0, 1]) {
      const session = new InteractiveSession({
        ...hermetic(),
        home,
        provider: addingProvider(`o${run}`),
        settings: { permissions: { allow: ['mcp__secure'] } },
        mcpServers: { secure: { type: 'http', url } },
        onMcpAuthorization: async (request) => {
          opened.push(request);
          await follow(request.url);
        },
      });
      assert.equal(await within(30_000, session.waitForMcpServers(), 'the MCP start-up'), true);
      const [secure] = session.listMcpServers();
      assert.deepEqual(secure?.status, { state: 'connected' }, JSON.stringify(secure));
      await within(20_000, session.submit('add'), 'submit');
      const results = toolResults(session);
      assert.equal(results.length, 1, JSON.stringify(session.getMessages()));
      assert.match(JSON.stringify(results[0]), /42/);
      await session.shutdown();
    }
    // Asked once, with a PKCE URL; the second session used the stored tokens.
    assert.equal(opened.length, 1, JSON.stringify(opened));
    assert.equal(opened[0]?.server, 'secure');
    assert.match(opened[0]?.url ?? '', /code_challenge=/);
    const folder = path.join(home, '.robota', 'mcp-oauth');
    const tokens = readdirSync(folder).filter((name) => name.startsWith('secure-') && name.endsWith('.json'));
    assert.equal(tokens.length, 1, JSON.stringify(tokens));
    assert.equal(statSync(path.join(folder, tokens[0] ?? '')).mode & 0o777, 0o600);
  } finally {
    child.kill();
  }
});

test('mcp oauth: a throwing onMcpAuthorization is a warning, needs_auth at once; /mcp auth asks again', async () => {
  const { child, url } = await oauthServer();
  const warnings: Array<{ code: string | undefined; message: string }> = [];
  const onWarning = (warning: Error & { code?: string }): void => {
    warnings.push({ code: warning.code, message: warning.message });
  };
  process.on('warning', onWarning);
  try {
    let browserWorks = false;
    let asked = 0;
    const session = new InteractiveSession({
      ...hermetic(),
      provider: addingProvider('t1'),
      settings: { permissions: { allow: ['mcp__secure'] } },
      mcpServers: { secure: { type: 'http', url } },
      onMcpAuthorization: async ({ url: authorizationUrl }) => {
        asked += 1;
        if (!browserWorks) throw new Error('no browser here');
        await follow(authorizationUrl);
      },
    });
    const started = Date.now();
    assert.equal(await within(30_000, session.waitForMcpServers(), 'the MCP start-up'), true);
    // The failure ends the wait at once, not when the 30 s start-up timeout runs out.
    assert.ok(Date.now() - started < 15_000, `waited ${Date.now() - started} ms`);
    const [secure] = session.listMcpServers();
    assert.equal(secure?.status.state, 'needs_auth', JSON.stringify(secure));
    assert.match(JSON.stringify(secure?.status), /no browser here/);
    assert.equal(asked, 1);
    // Process warnings are emitted on a later tick.
    await new Promise((resolve) => setImmediate(resolve));
    const thrown = warnings.filter((w) => w.code === 'ROBOTA_MCP_AUTHORIZATION_HANDLER_THREW');
    assert.equal(thrown.length, 1, JSON.stringify(warnings));
    assert.match(thrown[0]?.message ?? '', /no browser here/);

    browserWorks = true;
    const authorized = await within(60_000, session.executeCommand('mcp', 'auth secure'), '/mcp auth');
    assert.equal(authorized.success, true, authorized.message);
    assert.equal(asked, 2);
    assert.deepEqual(session.listMcpServers()[0]?.status, { state: 'connected' });
    await within(20_000, session.submit('add'), 'submit');
    assert.match(JSON.stringify(toolResults(session)), /42/);
    await session.shutdown();
  } finally {
    process.off('warning', onWarning);
    child.kill();
  }
});
