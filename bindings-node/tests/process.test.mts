/**
 * Process lifetime: a script that is done exits by itself even with a live session and a
 * listener (the event and host threadsafe functions are weak), a running prompt keeps the
 * process alive until it ends, and the addon works inside (and survives termination of)
 * worker_threads.
 */

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, test } from 'node:test';
import { Worker } from 'node:worker_threads';

import { packageDir, tempDir, within } from './helpers.mjs';

const entry = pathToFileURL(path.join(packageDir, 'dist', 'esm', 'index.js')).href;

/** Runs `source` as an ES module in a fresh Node process; resolves with its exit code and output. */
function runScript(source: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const file = path.join(tempDir(), 'script.mjs');
  writeFileSync(file, source);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the script did not exit within 15 s (stdout: ${stdout}, stderr: ${stderr})`));
    }, 15_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('process lifetime', () => {
  test('a finished script exits by itself while a session and listeners exist', async () => {
    const { code, stdout, stderr } = await runScript(`
      import { InteractiveSession, ScriptedProvider } from ${JSON.stringify(entry)};
      const session = new InteractiveSession({ cwd: process.cwd(), loadProjectContext: false,
        provider: new ScriptedProvider([{ text: 'bye' }]) });
      session.on('event', () => {});
      const result = await session.submit('hi');
      console.log(result.status, result.outcome.response);
      // no shutdown(): the process must still exit
    `);
    assert.equal(code, 0, stderr);
    assert.equal(stdout.trim(), 'complete bye');
  });

  test('an un-awaited prompt keeps the process alive until it ends', async () => {
    const { code, stdout, stderr } = await runScript(`
      import { InteractiveSession, ScriptedProvider } from ${JSON.stringify(entry)};
      const session = new InteractiveSession({ cwd: process.cwd(), loadProjectContext: false,
        provider: new ScriptedProvider([{ text: ['slow ', 'answer'], delay_ms_per_chunk: 200 }]) });
      session.on('complete', (ev) => console.log('complete:', ev.outcome.response));
      void session.submit('hi');
    `);
    assert.equal(code, 0, stderr);
    assert.equal(stdout.trim(), 'complete: slow answer');
  });

  test('a session that never ran does not hold the process', async () => {
    const { code, stderr } = await runScript(`
      import { InteractiveSession, ScriptedProvider } from ${JSON.stringify(entry)};
      globalThis.keep = new InteractiveSession({ cwd: process.cwd(), loadProjectContext: false,
        provider: new ScriptedProvider([]) });
    `);
    assert.equal(code, 0, stderr);
  });
});

describe('worker_threads', () => {
  const workerSource = `
    import { parentPort, workerData } from 'node:worker_threads';
    const { InteractiveSession, ScriptedProvider } = await import(workerData.entry);
    const session = new InteractiveSession({ cwd: workerData.cwd, loadProjectContext: false,
      provider: new ScriptedProvider([{ text: ['from ', 'worker'], delay_ms_per_chunk: workerData.delay }]) });
    let deltas = 0;
    session.on('text_delta', () => { deltas += 1; parentPort.postMessage({ delta: true }); });
    const result = await session.submit('hi');
    parentPort.postMessage({ response: result.outcome?.response, deltas });
    await session.shutdown();
  `;

  function startWorker(delay: number): Worker {
    const file = path.join(tempDir(), 'worker.mjs');
    writeFileSync(file, workerSource);
    return new Worker(file, { workerData: { entry, cwd: tempDir(), delay } });
  }

  test('sessions run inside workers, several at once', async () => {
    const runs = Array.from({ length: 4 }, async () => {
      const worker = startWorker(0);
      const answer = new Promise<{ response: string; deltas: number }>((resolve, reject) => {
        worker.on('message', (m: { response?: string; deltas: number }) => {
          if (m.response !== undefined) resolve({ response: m.response, deltas: m.deltas });
        });
        worker.on('error', reject);
      });
      const exit = new Promise<number>((resolve) => worker.on('exit', resolve));
      const result = await within(15_000, answer, 'worker answer');
      assert.equal(result.response, 'from worker');
      assert.equal(await within(15_000, exit, 'worker exit'), 0);
    });
    await Promise.all(runs);
  });

  test('terminating a worker mid-prompt does not crash the process', async () => {
    const worker = startWorker(500);
    await within(
      15_000,
      new Promise<void>((resolve, reject) => {
        worker.once('message', () => resolve());
        worker.on('error', reject);
      }),
      'first delta from the worker',
    );
    await within(15_000, worker.terminate(), 'worker termination');
    // Still alive and able to run another worker afterwards.
    const again = startWorker(0);
    const code = await within(15_000, new Promise<number>((resolve) => again.on('exit', resolve)), 'second worker');
    assert.equal(code, 0);
  });
});

describe('child processes', () => {
  // A subshell with two sleepers, a sleeper the shell backgrounds with `&`, and the shell waiting
  // for them; each writes its pid.
  const TREE =
    '( sleep 300 & echo $! > gc1.pid; sleep 300 & echo $! > gc2.pid; wait ) & ' +
    'sleep 300 & echo $! > amp.pid; echo $$ > shell.pid; wait';
  const PID_FILES = ['shell.pid', 'gc1.pid', 'gc2.pid', 'amp.pid'];

  /** True while `pid` runs (a zombie has exited: it counts as dead). */
  function alive(pid: number): boolean {
    try {
      process.kill(pid, 0);
    } catch {
      return false;
    }
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return !'ZX'.includes(stat.charAt(stat.lastIndexOf(')') + 2));
    } catch {
      return false;
    }
  }

  /** The tree's pids, waiting (up to 10 s) for each pid file in `cwd`. */
  async function readPids(cwd: string): Promise<number[]> {
    const pids: number[] = [];
    for (const name of PID_FILES) {
      const file = path.join(cwd, name);
      const deadline = Date.now() + 10_000;
      for (;;) {
        const text = existsSync(file) ? readFileSync(file, 'utf8').trim() : '';
        if (/^[0-9]+$/.test(text)) {
          pids.push(Number(text));
          break;
        }
        assert.ok(Date.now() < deadline, `${name} was never written`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    return pids;
  }

  function assertAllDead(pids: number[], when: string): void {
    for (const pid of pids) assert.equal(alive(pid), false, `process ${pid} survived ${when}`);
  }

  const bashTurns = (background: boolean) => [
    { tool_calls: [{ id: 'c1', name: 'Bash', input: { command: TREE, run_in_background: background } }] },
    { text: 'done' },
  ];

  test('shutdown() stops background tasks and what they started', { skip: process.platform !== 'linux' }, async () => {
    const { InteractiveSession, ScriptedProvider } = await import(entry);
    const cwd = tempDir();
    const session = new InteractiveSession({ cwd, home: tempDir(), loadProjectContext: false,
      permissionMode: 'bypassPermissions', sandbox: false, provider: new ScriptedProvider(bashTurns(true)) });
    const result = await session.submit('go');
    assert.equal(result.outcome?.response, 'done');
    const pids = await readPids(cwd);
    for (const pid of pids) assert.ok(alive(pid), 'the background task should outlive its turn');
    await session.shutdown();
    assertAllDead(pids, 'shutdown()');
  });

  for (const [mode, ending] of [
    ['bg-natural', 'the script ends (environment cleanup)'],
    ['bg-exit', 'process.exit()'],
    ['fg-exit', 'process.exit() during the call'],
  ] as const) {
    test(`process exit stops the sessions' processes: ${ending}`, { skip: process.platform !== 'linux' }, async () => {
      const cwd = tempDir();
      const background = mode.startsWith('bg');
      const { code, stdout, stderr } = await runScript(`
        import { existsSync } from 'node:fs';
        import { InteractiveSession, ScriptedProvider } from ${JSON.stringify(entry)};
        const cwd = ${JSON.stringify(cwd)};
        const session = new InteractiveSession({ cwd, home: cwd, loadProjectContext: false,
          permissionMode: 'bypassPermissions', sandbox: false,
          provider: new ScriptedProvider(${JSON.stringify(bashTurns(background))}) });
        const result = session.submit('go');
        if (${JSON.stringify(background)}) await result;
        while (!existsSync(cwd + '/amp.pid') || !existsSync(cwd + '/gc2.pid')) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        console.log('READY');
        if (${JSON.stringify(mode.endsWith('exit'))}) process.exit(0);
        // otherwise: nothing keeps the process alive; it ends with the session never shut down
      `);
      assert.equal(code, 0, stderr);
      assert.equal(stdout.trim(), 'READY', stderr);
      assertAllDead(await readPids(cwd), ending);
    });
  }

  test('terminating a worker stops the processes of its sessions', { skip: process.platform !== 'linux' }, async () => {
    const cwd = tempDir();
    const file = path.join(tempDir(), 'worker.mjs');
    writeFileSync(
      file,
      `
      import { parentPort, workerData } from 'node:worker_threads';
      const { InteractiveSession, ScriptedProvider } = await import(workerData.entry);
      const session = new InteractiveSession({ cwd: workerData.cwd, home: workerData.cwd,
        loadProjectContext: false, permissionMode: 'bypassPermissions', sandbox: false,
        provider: new ScriptedProvider(workerData.turns) });
      await session.submit('go');
      parentPort.postMessage('started');
      setInterval(() => {}, 1000); // stay alive until terminated
    `,
    );
    const worker = new Worker(file, { workerData: { entry, cwd, turns: bashTurns(true) } });
    await within(
      15_000,
      new Promise<void>((resolve, reject) => {
        worker.once('message', () => resolve());
        worker.on('error', reject);
      }),
      'the worker started its background task',
    );
    const pids = await readPids(cwd);
    for (const pid of pids) assert.ok(alive(pid));
    await within(15_000, worker.terminate(), 'worker termination');
    assertAllDead(pids, 'terminating the worker (environment cleanup hook)');
  });
});
