/** MCP servers from Node: a real server written with the `mcp` Python package (installed by
 * tests/mcp-servers/setup.sh) given in `mcpServers`, connecting in the background (pending
 * right after the constructor, `waitForMcpServers`), listed with its status and tools, its tool
 * called by the model with the result reaching the model; a server that cannot start is
 * reported as failed while the session goes on. */

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { InteractiveSession, ScriptedProvider, type RobotaEventOf } from '@robota/native';

import { hermetic, repoDir, within } from './helpers.mjs';

const servers = path.join(repoDir, 'tests', 'mcp-servers');

test('mcp: a server from mcpServers is listed and its tool results reach the model', async () => {
  const python = path.join(servers, '.venv', 'bin', 'python');
  assert.ok(existsSync(python), 'the MCP test servers are not installed: run tests/mcp-servers/setup.sh');
  const session = new InteractiveSession({
    ...hermetic(),
    provider: new ScriptedProvider([
      { tool_calls: [{ id: 'm1', name: 'mcp__py__add', input: { a: 40, b: 2 } }] },
      { text: 'Done.' },
    ]),
    settings: { permissions: { allow: ['mcp__py'] } },
    mcpServers: {
      py: { command: python, args: [path.join(servers, 'python_server.py')] },
      gone: { command: '/nonexistent/mcp-server' },
    },
  });
  // The servers connect in the background: right after the constructor they are pending (the
  // Python server takes far longer than this to start), and a short wait runs out.
  assert.deepEqual(
    session.listMcpServers().find((s) => s.name === 'py')?.status,
    { state: 'pending' },
  );
  assert.equal(await session.waitForMcpServers(1), false);
  assert.equal(await within(30_000, session.waitForMcpServers(), 'the MCP start-up'), true);
  const byName = Object.fromEntries(session.listMcpServers().map((s) => [s.name, s]));
  const py = byName.py;
  const gone = byName.gone;
  assert.ok(py !== undefined && gone !== undefined, JSON.stringify(byName));
  assert.deepEqual(py.status, { state: 'connected' });
  assert.deepEqual(py.origin, { kind: 'host' });
  assert.ok(py.tools.includes('mcp__py__add'), JSON.stringify(py));
  assert.deepEqual(py.prompts, ['review']);
  assert.equal(gone.status.state, 'failed');
  await within(20_000, session.submit('add'), 'submit');
  await within(20_000, session.waitIdle(), 'idle');
  // A status change after start-up arrives as a typed event.
  const statuses: Array<RobotaEventOf<'mcp_server_status'>> = [];
  session.on('mcp_server_status', (event) => statuses.push(event));
  const disabled = await session.executeCommand('mcp', 'disable py');
  assert.equal(disabled.success, true, disabled.message);
  await within(20_000, session.waitIdle(), 'idle');
  assert.deepEqual(
    statuses.map((e) => [e.server, e.status.state]),
    [['py', 'disabled']],
  );
  await session.shutdown();
  const results = session
    .getMessages()
    .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
    .filter((b: { type?: string }) => b.type === 'tool_result');
  assert.equal(results.length, 1, JSON.stringify(session.getMessages()));
  assert.match(JSON.stringify(results[0]), /42/);
});
