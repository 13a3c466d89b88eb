/** RemoteSession end to end: a real `robota serve` process whose sessions talk to mock-llm. */

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';

import {
  AnthropicProvider,
  InteractiveSession,
  RemoteSession,
  RobotaError,
  type RemoteEvent,
  type RobotaEvent,
} from '@robota/native';

import { repoDir, startMockLlm, tempDir, within, type MockLlm } from './helpers.mjs';

const TOKEN = 'node-remote-test-token-0123456789';

/** The `robota` binary: `ROBOTA_BIN`, else `<target>/debug/robota`. */
function robotaBinary(): string {
  const fromEnv = process.env.ROBOTA_BIN;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  const target = process.env.CARGO_TARGET_DIR ?? path.join(repoDir, 'target');
  const binary = path.join(target, 'debug', process.platform === 'win32' ? 'robota.exe' : 'robota');
  if (!existsSync(binary)) {
    throw new Error(`robota not found at ${binary}; run \`cargo build -p robota-cli\` or set ROBOTA_BIN`);
  }
  return binary;
}

interface Serve {
  url: string;
  project: string;
  stop(): Promise<void>;
}

/** Starts `robota serve` on a free port with `project` as its root, its settings pointing at
 * `mock`. */
async function startServe(mock: MockLlm): Promise<Serve> {
  const project = tempDir('robota-remote-project-');
  const home = tempDir('robota-remote-home-');
  mkdirSync(path.join(project, '.robota'));
  writeFileSync(
    path.join(project, '.robota', 'settings.json'),
    JSON.stringify({
      currentProvider: 'mock',
      providers: {
        mock: {
          type: 'anthropic',
          model: 'claude-sonnet-4-5',
          apiKey: 'test-key',
          baseURL: mock.baseUrl,
          options: { maxRetries: 0 },
        },
      },
    }),
  );
  const env: NodeJS.ProcessEnv = { ...process.env, ROBOTA_NODE_TEST_TOKEN: TOKEN, HOME: home, USERPROFILE: home };
  for (const name of ['ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', 'OPENAI_API_KEY', 'OPENAI_BASE_URL']) delete env[name];
  const child: ChildProcess = spawn(
    robotaBinary(),
    ['serve', '--port', '0', '--token-env', 'ROBOTA_NODE_TEST_TOKEN', '--root', project],
    { cwd: project, env, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const stderr = child.stderr;
  if (stderr === null) throw new Error('robota serve has no stderr');
  let seen = '';
  const url = await within(
    60_000,
    new Promise<string>((resolve, reject) => {
      const lines = createInterface({ input: stderr });
      lines.on('line', (line) => {
        seen += `${line}\n`;
        const match = /listening on (\S+)/.exec(line);
        if (match?.[1] !== undefined) resolve(match[1]);
      });
      child.once('exit', (code) => reject(new Error(`robota serve exited with ${String(code)}:\n${seen}`)));
    }),
    'robota serve start',
  );
  return {
    url,
    project,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGKILL');
        await new Promise((resolve) => child.once('exit', resolve));
      }
    },
  };
}

/** Reads `events` until one that ends a prompt; returns them all. */
async function untilPromptEnd<E extends { type: string; seq: number }>(events: AsyncIterableIterator<E>): Promise<E[]> {
  const seen: E[] = [];
  for (;;) {
    const next = await within(20_000, events.next(), 'the next event');
    assert.equal(next.done, false, `the stream ended early after ${JSON.stringify(seen)}`);
    const event = next.value as E;
    seen.push(event);
    if (['complete', 'refused', 'truncated', 'error', 'interrupted'].includes(event.type)) return seen;
  }
}

describe('RemoteSession', () => {
  let mock: MockLlm;
  let serve: Serve;

  before(async () => {
    mock = await startMockLlm({ turns: [] });
    serve = await startServe(mock);
  });

  after(async () => {
    await serve?.stop();
    await mock?.stop();
  });

  test('commands, state, names, fork and close work over HTTP', async () => {
    await mock.setScript({ turns: [{ text: 'hello' }] });
    const session = await RemoteSession.create(serve.url, { token: TOKEN, cwd: serve.project });
    assert.equal((await session.submit('hi')).status, 'complete');
    const attached = await RemoteSession.connect(serve.url, session.sessionId, { token: TOKEN });
    assert.ok(attached.getFullHistory().length >= 2);
    assert.ok(attached.listCommands().some((c) => c.name === 'rename'));
    const renamed = await attached.executeCommand('rename', 'remote one');
    assert.equal(renamed.success, true);
    assert.equal(session.getName(), 'remote one');
    session.setName('second');
    assert.equal(attached.getName(), 'second');
    const context = session.getContextState();
    assert.equal(typeof context.used_tokens, 'number');
    assert.deepEqual(await session.pendingPermissions(), []);
    const copy = await session.fork('copy');
    assert.notEqual(copy.sessionId, session.sessionId);
    assert.equal(copy.getName(), 'copy');
    await copy.close();

    const events = session.events();
    await session.close();
    // The stream ends once the session is closed.
    for (;;) {
      const next = await within(20_000, events.next(), 'the stream end');
      if (next.done === true) break;
    }
    assert.throws(
      () => session.info(),
      (error: unknown) => error instanceof RobotaError && error.code === 'not_found',
    );
  });

  test('a permission request is answered over HTTP', async () => {
    await mock.setScript({
      turns: [
        { tool_calls: [{ id: 'w1', name: 'Write', input: { file_path: 'out.txt', content: 'written remotely' } }] },
        { text: 'Wrote it.' },
      ],
    });
    const session = await RemoteSession.create(serve.url, { token: TOKEN, cwd: serve.project });
    const events = session.events();
    const submitted = session.submit('write out.txt');
    let requestId: string | undefined;
    while (requestId === undefined) {
      const next = await within(20_000, events.next(), 'the permission request');
      assert.equal(next.done, false);
      const event = next.value as RemoteEvent;
      if (event.type === 'permission_request') requestId = event.request_id;
      assert.ok(!['complete', 'error', 'interrupted'].includes(event.type), `ended without asking: ${event.type}`);
    }
    await events.return?.();
    const pending = await session.pendingPermissions();
    assert.deepEqual(
      pending.map((p) => p.request_id),
      [requestId],
    );
    await assert.rejects(
      session.answerPermission('no-such-request', true),
      (error: unknown) => error instanceof RobotaError && error.code === 'not_found',
    );
    await session.answerPermission(requestId, 'allow_once');
    assert.equal((await submitted).status, 'complete');
    assert.equal(readFileSync(path.join(serve.project, 'out.txt'), 'utf8'), 'written remotely');
    await session.close();
  });

  test('a wrong token is unauthorized; unknown sessions are not found; bad folders are refused', async () => {
    await assert.rejects(
      RemoteSession.create(serve.url, { token: 'not-the-token', cwd: serve.project }),
      (error: unknown) => error instanceof RobotaError && error.code === 'unauthorized' && /token/.test(error.message),
    );
    await assert.rejects(
      RemoteSession.connect(serve.url, 'no-such-session', { token: TOKEN }),
      (error: unknown) => error instanceof RobotaError && error.code === 'not_found',
    );
    await assert.rejects(
      RemoteSession.create(serve.url, { token: TOKEN, cwd: tempDir() }),
      (error: unknown) => error instanceof RobotaError && error.code === 'path_outside_roots',
    );
    await assert.rejects(
      RemoteSession.connect('http://127.0.0.1:9', 'any', { token: TOKEN, timeoutMs: 5000 }),
      (error: unknown) => error instanceof RobotaError && error.code === 'connection',
    );
  });
  /** Code written once against the session surface: it runs unchanged on a local
   * `InteractiveSession` and on a `RemoteSession`. */
  async function driveASession(session: InteractiveSession | RemoteSession): Promise<void> {
    const events: AsyncIterableIterator<RobotaEvent | RemoteEvent> = session.events();
    const result = await session.submit('Read notes.txt');
    assert.equal(result.status, 'complete', JSON.stringify(result));
    assert.ok(result.status === 'complete' && result.outcome.response === 'All read.');
    const seen = await untilPromptEnd(events);
    await events.return?.();
    const types: string[] = seen.map((e) => e.type);
    for (const wanted of ['tool_start', 'tool_end', 'text_delta', 'complete']) {
      assert.ok(types.includes(wanted), `no ${wanted} in ${types.join(',')}`);
    }
    const seqs = seen.map((e) => e.seq);
    assert.deepEqual(
      seqs,
      seqs.map((_, i) => (seqs[0] ?? 0) + i),
      'seqs are contiguous',
    );
    const text = seen.map((e) => (e.type === 'text_delta' ? e.text : '')).join('');
    // The engine separates the rounds' texts with a blank line.
    assert.equal(text.trimStart(), 'All read.');
    assert.equal(session.isExecuting(), false);
    assert.equal(session.getPendingPrompt(), null);

    assert.ok(session.listCommands().some((c) => c.name === 'rename'));
    assert.equal((await session.executeCommand('rename', 'shared code')).success, true);
    assert.equal(session.getName(), 'shared code');
    session.setName('renamed');
    assert.equal(session.getName(), 'renamed');
    await session.rename('third');
    assert.equal(session.getName(), 'third');

    assert.equal(session.getMessages()[0]?.role, 'user');
    assert.ok(session.getFullHistory().some((entry) => (entry as { category?: string }).category === 'event'));
    assert.ok(session.getContextState().used_tokens > 0);

    // abort() is a plain call on both: the running prompt ends interrupted.
    const slow: AsyncIterableIterator<RobotaEvent | RemoteEvent> = session.events();
    const running = session.submit('Say something slowly');
    for (;;) {
      const next = await within(20_000, slow.next(), 'the first text of the slow prompt');
      assert.equal(next.done, false);
      const event = next.value as RobotaEvent | RemoteEvent;
      if (event.type === 'text_delta') break;
      assert.ok(!['complete', 'error', 'interrupted'].includes(event.type), `ended before streaming: ${event.type}`);
    }
    await slow.return?.();
    assert.equal(session.isExecuting(), true);
    session.abort();
    assert.equal((await within(30_000, running, 'the aborted prompt')).status, 'interrupted');
    assert.equal(session.isExecuting(), false);
    await session.shutdown();
  }

  const driveScript = {
    turns: [
      { tool_calls: [{ id: 't1', name: 'Read', input: { file_path: 'notes.txt' } }] },
      { text: ['All ', 'read.'], chunk_delay_ms: 20 },
      { text: Array.from({ length: 200 }, () => 'slow '), chunk_delay_ms: 50 },
    ],
  };

  test('the same code drives a local and a remote session', async () => {
    writeFileSync(path.join(serve.project, 'notes.txt'), 'shared notes\n');
    // Local: the same project folder and the same model as the server's sessions.
    await mock.setScript(driveScript);
    await driveASession(
      new InteractiveSession({
        cwd: serve.project,
        home: tempDir('robota-remote-local-home-'),
        provider: new AnthropicProvider({ model: 'claude-sonnet-4-5', apiKey: 'test-key', baseUrl: mock.baseUrl }),
      }),
    );
    // Remote: only the constructor differs.
    await mock.setScript(driveScript);
    await driveASession(await RemoteSession.create(serve.url, { token: TOKEN, cwd: serve.project }));
  });
});
