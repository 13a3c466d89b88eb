/**
 * Subagents started from Node against mock-llm: one in the foreground on a model alias (its
 * report names the mapped model, the model call used it), one in the background waited for and
 * read, a slow one cancelled with its lifecycle seen as events; bad requests reject with typed
 * errors.
 */

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import { AnthropicProvider, InteractiveSession, RobotaError, type RobotaEventOf } from '@robota/native';

import { hermetic, startMockLlm, within, type MockLlm } from './helpers.mjs';

const invalidArgument = (error: unknown) => error instanceof RobotaError && error.code === 'invalid_argument';

describe('subagents from host code', () => {
  let mock: MockLlm;
  before(async () => {
    mock = await startMockLlm();
  });
  after(async () => {
    await mock.stop();
  });

  test('a host runs one subagent, starts two in the background and cancels one', async () => {
    await mock.setScript({
      turns: [
        { text: 'FOREGROUND-REPORT' },
        { text: 'BACKGROUND-REPORT' },
        { text: Array.from({ length: 100 }, () => 'slow '), chunk_delay_ms: 200 },
      ],
    });
    const session = new InteractiveSession({
      ...hermetic(),
      provider: new AnthropicProvider({ model: 'claude-sonnet-4-5', apiKey: 'sk-test', baseUrl: mock.baseUrl }),
    });
    const events: Array<RobotaEventOf<'background_task_event'>> = [];
    session.on('background_task_event', (event) => events.push(event));
    try {
      const report = await within(20_000, session.runSubagent('answer now', { model: 'haiku' }), 'runSubagent');
      assert.equal(report.response, 'FOREGROUND-REPORT');
      assert.equal(report.agent_type, 'general-purpose');
      assert.equal(report.model, 'claude-haiku-4-5');
      assert.equal(report.interrupted, false);

      const task = await session.startBackgroundSubagent('report back', { agentType: 'Explore' });
      assert.deepEqual([task.id, task.kind, task.status], ['agent_1', 'agent', 'running']);
      assert.deepEqual(task.origin, { kind: 'host' });
      assert.equal((await session.waitBackgroundTask('agent_1', 20_000)).status, 'completed');
      assert.equal(session.readBackgroundTaskLog('agent_1').text, 'BACKGROUND-REPORT');

      const slow = await session.startBackgroundSubagent('take your time');
      assert.equal(slow.id, 'agent_2');
      assert.equal((await session.waitBackgroundTask('agent_2', 300)).status, 'running');
      assert.equal((await session.cancelBackgroundTask('agent_2')).status, 'cancelled');

      await assert.rejects(session.startBackgroundSubagent('x', { agentType: 'no-such-agent' }), invalidArgument);
      await assert.rejects(
        session.startBackgroundSubagent('x', { isolation: 'vm' as 'none' }),
        (error: unknown) => invalidArgument(error) && /isolation/.test(String(error)),
      );
      await assert.rejects(session.runSubagent('  '), invalidArgument);
      await assert.rejects(
        session.runSubagent('x', { model: 5 as unknown as string }),
        (error: unknown) => invalidArgument(error) && /options\.model/.test(String(error)),
      );
      assert.deepEqual(
        session.listBackgroundTasks().map((t) => t.id),
        ['agent_1', 'agent_2'],
      );

      const transitions = () =>
        events
          .map((e) => e.data as { event?: string; task_id: string; status: string })
          .filter((d) => d.event === 'state_changed')
          .map((d) => [d.task_id, d.status]);
      for (let i = 0; i < 100 && transitions().length < 6; i++) await sleep(20);
      assert.deepEqual(transitions(), [
        ['agent_1', 'queued'],
        ['agent_1', 'running'],
        ['agent_1', 'completed'],
        ['agent_2', 'queued'],
        ['agent_2', 'running'],
        ['agent_2', 'cancelled'],
      ]);
      const models = (await mock.requests()).map((r) => r.body.model);
      assert.deepEqual(models, ['claude-haiku-4-5', 'claude-sonnet-4-5', 'claude-sonnet-4-5']);
    } finally {
      await session.shutdown();
    }
  });
});
