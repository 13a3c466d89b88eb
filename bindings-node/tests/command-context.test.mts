/** A command written in JavaScript acts on its session through the live context — the same
 * facade the built-in commands use: clear, compact, change the permission mode, write settings —
 * over mock-llm; a context kept past its command is refused with a `command` RobotaError. */

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { AnthropicProvider, InteractiveSession, RobotaError, ScriptedProvider, type CommandContext } from '@robota/native';

import { hermetic, startMockLlm, within, type MockLlm } from './helpers.mjs';

describe('command context', () => {
  let mock: MockLlm;
  before(async () => {
    mock = await startMockLlm();
  });
  after(async () => {
    await mock.stop();
  });

  test('a JavaScript command clears, compacts, switches the mode and writes settings', async () => {
    await mock.setScript({
      turns: [{ text: ['first answer'] }, { text: ['second answer'] }, { text: ['SUMMARY: two answers'] }],
    });
    let kept: CommandContext | undefined;
    const options = hermetic();
    const session = new InteractiveSession({
      ...options,
      provider: new AnthropicProvider({ model: 'claude-test', apiKey: 'sk-test', baseUrl: mock.baseUrl, maxRetries: 0 }),
      builtinTools: false,
      commandModules: [
        {
          name: 'tidy',
          commands: [
            {
              name: 'tidy',
              description: 'Plan mode, compact, clear',
              blocking: true,
              async execute(_args, context) {
                kept = context;
                const before = await context.state();
                const history = await context.history();
                const written = await context.updateSettings({ language: 'ko', statusLine: { enabled: false } });
                // Two operations at once are performed one after the other.
                const [settings, commands] = await Promise.all([context.readSettings(), context.commands()]);
                await context.setPermissionMode('plan');
                const compacted = await context.compact('keep names');
                await context.clear();
                const afterState = await context.state();
                const auto = await context.setAutoCompact(true, 0.5);
                const switched = await context.switchModel('claude-haiku-4-5');
                return {
                  message: 'tidied',
                  success: true,
                  data: { before, historyEntries: history.length, written, settings, commands: commands.length, compacted, after: afterState, auto, switched },
                  effects: [{ type: 'conversation_history_cleared' }],
                };
              },
            },
          ],
        },
      ],
    });
    await within(10_000, session.submit('one'), 'one');
    await within(10_000, session.submit('two'), 'two');
    assert.equal(session.getMessages().length, 4);
    const result = await within(10_000, session.executeCommand('tidy'), 'tidy');
    assert.ok(result.success, result.message);
    assert.deepEqual(result.effects, [{ type: 'conversation_history_cleared' }]);
    const data = result.data as any;
    assert.equal(data.before.permission_mode, 'default');
    assert.equal(data.before.context_state.message_count, 4);
    assert.ok(data.historyEntries >= 4);
    assert.ok(data.commands > 5);
    assert.equal(data.compacted.messages_before, 4);
    assert.equal(data.after.permission_mode, 'plan');
    assert.equal(data.after.context_state.message_count, 0);
    assert.deepEqual(data.settings, { language: 'ko', statusLine: { enabled: false } });
    assert.deepEqual(data.auto, { enabled: true, threshold: 0.5 });
    assert.equal(data.switched.model, 'claude-haiku-4-5');
    assert.ok(data.switched.contextWindow > 0);
    // What the session really did.
    assert.deepEqual(session.getMessages(), []);
    const local = path.join(options.cwd, '.claude', 'settings.local.json');
    assert.equal(data.written, local);
    assert.equal(JSON.parse(readFileSync(local, 'utf8')).language, 'ko');
    const permissions = await session.executeCommand('permissions');
    assert.match(permissions.message, /plan/);
    const requests = await mock.requests();
    assert.equal(requests.length, 3);
    assert.match(JSON.stringify(requests[2]?.body), /keep names/);

    // The context works only while the command runs.
    assert.ok(kept !== undefined);
    await assert.rejects(kept.clear(), (error: unknown) => error instanceof RobotaError && error.code === 'command' && /no longer valid/.test(error.message));
    await session.shutdown();
  });

  test('bad operations reject with typed errors and change nothing', async () => {
    const errors: unknown[] = [];
    const session = new InteractiveSession({
      ...hermetic(),
      provider: new ScriptedProvider([]),
      commandModules: [
        {
          name: 'bad',
          commands: [
            {
              name: 'bad-ops',
              description: 'd',
              async execute(_args, context) {
                for (const attempt of [
                  () => context.setPermissionMode('yolo' as never),
                  () => context.updateSettings({ x: 1 }, 'nowhere' as never),
                  () => context.setAutoCompact(true, 2),
                ]) {
                  await attempt().catch((error: unknown) => errors.push(error));
                }
                return 'done';
              },
            },
          ],
        },
      ],
    });
    const result = await within(10_000, session.executeCommand('bad-ops'), 'bad-ops');
    assert.ok(result.success);
    assert.ok(errors[0] instanceof RobotaError && errors[0].code === 'invalid_argument' && /yolo/.test(errors[0].message));
    assert.ok(errors[1] instanceof RobotaError && errors[1].code === 'invalid_json');
    assert.ok(errors[2] instanceof RobotaError && errors[2].code === 'invalid_argument' && /\(0, 1\]/.test(errors[2].message));
    assert.doesNotMatch((await session.executeCommand('permissions')).message, /plan/);
    await session.shutdown();
  });
});
