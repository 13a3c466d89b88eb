/**
 * Background tasks from Node against mock-llm: the model starts a process with Bash
 * `run_in_background`; the host lists it, reads its log, sees its lifecycle events, cancels it
 * (its process gone, checked by pid) and closes it.
 */

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import { AnthropicProvider, InteractiveSession, RobotaError, type RobotaEventOf } from '@robota/native';

import { hermetic, startMockLlm, within, type MockLlm } from './helpers.mjs';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 1).trim()[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

describe('background tasks', () => {
  let mock: MockLlm;
  before(async () => {
    mock = await startMockLlm();
  });
  after(async () => {
    await mock.stop();
  });

  test('a host lists, reads, cancels and closes a background task', async () => {
    const options = hermetic();
    await mock.setScript({
      turns: [
        {
          tool_calls: [
            {
              id: 'toolu_bg',
              name: 'Bash',
              input: { command: 'echo $$ > shell.pid; while :; do echo tick; sleep 0.05; done', run_in_background: true },
            },
          ],
        },
        { text: 'started' },
      ],
    });
    const session = new InteractiveSession({
      ...options,
      provider: new AnthropicProvider({ model: 'claude-test', apiKey: 'sk-test', baseUrl: mock.baseUrl }),
      permissionHandler: () => true,
    });
    const events: Array<RobotaEventOf<'background_task_event'>> = [];
    session.on('background_task_event', (event) => events.push(event));
    const result = await within(20_000, session.submit('start it'), 'submit');
    assert.equal(result.status, 'complete');

    const tasks = session.listBackgroundTasks();
    assert.deepEqual(
      tasks.map((t) => [t.id, t.status]),
      [['bash_1', 'running']],
    );
    assert.deepEqual(tasks[0]?.origin, { kind: 'tool', name: 'Bash', tool_use_id: 'toolu_bg' });
    const pidFile = path.join(options.cwd, 'shell.pid');
    for (let i = 0; i < 200 && !(existsSync(pidFile) && session.readBackgroundTaskLog('bash_1').text); i++) {
      await sleep(20);
    }
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    assert.equal(tasks[0]?.pid, pid);
    const page = session.readBackgroundTaskLog('bash_1', { maxBytes: 5 });
    assert.equal(page.text, 'tick\n');
    assert.equal(page.next_offset, 5);

    assert.equal((await session.waitBackgroundTask('bash_1', 100)).status, 'running');
    assert.throws(
      () => session.closeBackgroundTask('bash_1'),
      (error: unknown) => error instanceof RobotaError && error.code === 'invalid_argument',
    );
    const cancelled = await session.cancelBackgroundTask('bash_1');
    assert.equal(cancelled.status, 'cancelled');
    assert.equal(alive(pid), false);
    assert.equal(session.getBackgroundTask('bash_1')?.status, 'cancelled');

    for (let i = 0; i < 100 && events.length < 3; i++) await sleep(20);
    assert.deepEqual(
      events.map((e) => {
        const data = e.data as { task_id: string; status: string };
        return [data.task_id, data.status];
      }),
      [
        ['bash_1', 'queued'],
        ['bash_1', 'running'],
        ['bash_1', 'cancelled'],
      ],
    );

    assert.equal(session.closeBackgroundTask('bash_1').id, 'bash_1');
    assert.deepEqual(session.listBackgroundTasks(), []);
    assert.equal(session.getBackgroundTask('bash_1'), null);
    await assert.rejects(session.cancelBackgroundTask('bash_1'), /No background task `bash_1`/);
    await session.shutdown();
  });
});
