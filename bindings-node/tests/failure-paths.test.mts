/**
 * The failure paths a newcomer meets first: hooks that fail closed where they guard (throwing,
 * slow or unreadable callbacks), Claude Code hook JSON and the `{EventName: fn}` map, tool error
 * results and exceptions, events before the permission handler, construction errors that name
 * the option, unknown event names, and what a shut-down session does.
 */

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import {
  evaluatePermission,
  InteractiveSession,
  OpenAIProvider,
  RobotaError,
  ScriptedProvider,
  tool,
  type HooksOption,
  type ScriptedTurn,
} from '@robota/native';

import { hermetic, within } from './helpers.mjs';

const call = (name: string, input: unknown, id = 'call_1'): ScriptedTurn => ({ tool_calls: [{ id, name, input }] });

function toolResults(session: InteractiveSession): Array<{ content: string; is_error?: boolean; tool_use_id: string }> {
  return session
    .getMessages()
    .flatMap((m) => m.content)
    .filter((b): b is Extract<typeof b, { type: 'tool_result' }> => b.type === 'tool_result')
    .map((b) => ({ content: b.content, is_error: b.is_error, tool_use_id: b.tool_use_id }));
}

/** Collects the process warnings emitted while `f` runs. */
async function warningsDuring<T>(f: () => Promise<T>): Promise<{ value: T; warnings: Error[] }> {
  const warnings: Error[] = [];
  const listener = (warning: Error): void => {
    warnings.push(warning);
  };
  process.on('warning', listener);
  try {
    const value = await f();
    // Warnings are emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
    return { value, warnings };
  } finally {
    process.off('warning', listener);
  }
}

/** Runs one call of the `danger` tool under `hooks`; returns whether it ran and what the model saw. */
async function runGuarded(hooks: HooksOption): Promise<{ ran: boolean; content: string; warnings: Error[]; hookErrors: unknown[] }> {
  let ran = false;
  const session = new InteractiveSession({
    ...hermetic(),
    builtinTools: false,
    provider: new ScriptedProvider([call('danger', { what: 'x' }), { text: 'after' }]),
    tools: [
      tool({
        name: 'danger',
        description: 'Dangerous.',
        inputSchema: { type: 'object' },
        readOnly: true,
        execute: () => {
          ran = true;
          return 'done';
        },
      }),
    ],
    hooks,
  });
  const hookErrors: unknown[] = [];
  session.on('session', (event) => {
    if (event.event.type === 'hook_error') hookErrors.push(event.event);
  });
  const { warnings } = await warningsDuring(async () => {
    const result = await within(10_000, session.submit('go'), 'submit');
    assert.equal(result.status, 'complete');
  });
  const content = toolResults(session)[0]?.content ?? '';
  await session.shutdown();
  return { ran, content, warnings, hookErrors };
}

describe('hooks fail closed', () => {
  test('a throwing PreToolUse hook blocks the call, names the hook and warns the developer', async () => {
    const { ran, content, warnings, hookErrors } = await runGuarded([
      {
        event: 'PreToolUse',
        name: 'guard',
        callback: () => {
          throw new TypeError('policy is undefined');
        },
      },
    ]);
    assert.equal(ran, false);
    assert.match(content, /hook callback `guard`/);
    assert.match(content, /TypeError: policy is undefined/);
    assert.ok(
      warnings.some((w) => w.name === 'RobotaWarning' && /guard/.test(w.message) && /blocked/.test(w.message)),
      warnings.map((w) => w.message).join('\n'),
    );
    assert.equal(hookErrors.length, 1);
    assert.equal((hookErrors[0] as { blocked?: boolean }).blocked, true);
  });

  const unreadable: Array<[string, () => unknown, RegExp]> = [
    ['a number', () => 42, /returned a number/],
    ['a typo', () => ({ decison: 'block' }), /unknown field `decison`/],
    ['an unknown decision', () => ({ decision: 'deny' }), /decision: "deny"/],
  ];
  for (const [what, answer, says] of unreadable) {
    test(`a PreToolUse hook answering ${what} blocks`, async () => {
      const { ran, content } = await runGuarded({ PreToolUse: { name: 'picky', callback: answer as never } });
      assert.equal(ran, false);
      assert.match(content, /picky/);
      assert.match(content, says);
    });
  }

  test('a slow hook times out and blocks', async () => {
    const { ran, content } = await runGuarded([
      { event: 'PreToolUse', name: 'slow', timeoutMs: 200, callback: () => new Promise(() => undefined) },
    ]);
    assert.equal(ran, false);
    assert.match(content, /timed out/);
  });

  test("onFailure: 'allow' lets the call through", async () => {
    const { ran, content, hookErrors } = await runGuarded([
      {
        event: 'PreToolUse',
        onFailure: 'allow',
        callback: () => {
          throw new Error('metrics down');
        },
      },
    ]);
    assert.equal(ran, true);
    assert.equal(content, 'done');
    assert.equal(hookErrors.length, 1);
  });

  test("Claude Code's hook JSON and the {EventName: fn} and matcher forms", async () => {
    let outcome = await runGuarded({ PreToolUse: () => ({ decision: 'block', reason: 'not on Fridays' }) });
    assert.equal(outcome.ran, false);
    assert.match(outcome.content, /not on Fridays/);
    outcome = await runGuarded({
      PreToolUse: [
        {
          matcher: 'danger',
          hooks: [
            () => ({
              hookSpecificOutput: {
                hookEventName: 'PreToolUse',
                permissionDecision: 'deny',
                permissionDecisionReason: 'denied by policy',
              },
            }),
          ],
        },
      ],
    });
    assert.equal(outcome.ran, false);
    assert.match(outcome.content, /denied by policy/);
    // A matcher that does not apply: the call runs.
    outcome = await runGuarded({ PreToolUse: [{ matcher: 'Bash', hooks: [() => ({ decision: 'block', reason: 'no' })] }] });
    assert.equal(outcome.ran, true);
  });

  test('a throwing PermissionRequest hook denies the call before the permission handler is asked', async () => {
    let ran = false;
    const asked: string[] = [];
    const session = new InteractiveSession({
      ...hermetic(),
      builtinTools: false,
      provider: new ScriptedProvider([call('write_it', { what: 'x' }), { text: 'after' }]),
      tools: [
        tool({
          name: 'write_it',
          description: 'Writes.',
          inputSchema: { type: 'object' },
          execute: () => {
            ran = true;
            return 'written';
          },
        }),
      ],
      hooks: {
        PermissionRequest: function approver(): never {
          throw new ReferenceError('approvers is not defined');
        },
      },
      permissionHandler: (request) => {
        asked.push(request.tool_name);
        return true;
      },
    });
    const { warnings } = await warningsDuring(() => within(10_000, session.submit('go'), 'submit'));
    const content = toolResults(session)[0]?.content ?? '';
    await session.shutdown();
    assert.equal(ran, false);
    assert.deepEqual(asked, []);
    assert.match(content, /approver/);
    assert.match(content, /ReferenceError: approvers is not defined/);
    assert.ok(warnings.some((w) => /approver/.test(w.message)), warnings.map((w) => w.message).join('\n'));
  });

  test("onFailure: 'block' is refused where nothing can be blocked, naming the hook", () => {
    assert.throws(
      () =>
        new InteractiveSession({
          ...hermetic(),
          provider: new ScriptedProvider([]),
          hooks: [{ event: 'PostToolUse', name: 'audit', onFailure: 'block', callback: () => undefined }],
        }),
      (e: unknown) => e instanceof RobotaError && e.code === 'invalid_argument' && /hook `audit`/.test(e.message),
    );
  });
});

describe('tools', () => {
  test('error results are errors in every spelling; a throw reaches the model and the developer', async () => {
    const mk = (name: string, execute: () => unknown) =>
      tool({ name, description: name, inputSchema: { type: 'object' }, readOnly: true, execute });
    const session = new InteractiveSession({
      ...hermetic(),
      builtinTools: false,
      provider: new ScriptedProvider([
        {
          tool_calls: [
            { id: 'a', name: 'camel', input: {} },
            { id: 'b', name: 'snake', input: {} },
            { id: 'c', name: 'throws', input: {} },
            { id: 'd', name: 'data', input: {} },
          ],
        },
        { text: 'ok' },
      ]),
      tools: [
        mk('camel', () => ({ content: 'disk full', isError: true })),
        mk('snake', () => ({ content: 'quota exceeded', is_error: true })),
        mk('throws', () => {
          throw new RangeError('index 7 out of range');
        }),
        mk('data', () => ({ temp: 21 })),
      ],
    });
    const ends = new Map<string, string | undefined>();
    session.on('tool_end', (event) => ends.set(event.tool.name, event.tool.result));
    const { warnings } = await warningsDuring(() => within(10_000, session.submit('go'), 'submit'));
    const results = new Map(toolResults(session).map((r) => [r.tool_use_id, r]));
    assert.deepEqual(Object.fromEntries(ends), { camel: 'error', snake: 'error', throws: 'error', data: 'success' });
    assert.equal(results.get('c')?.content, 'RangeError: index 7 out of range');
    assert.equal(results.get('d')?.content, '{"temp":21}');
    assert.ok(warnings.some((w) => /tool `throws` threw RangeError: index 7 out of range/.test(w.message)));
    await session.shutdown();
  });
});

describe('ordering', () => {
  test('streamed text reaches listeners before the permission handler is called (50 trials)', async () => {
    for (let trial = 0; trial < 50; trial++) {
      const seen: string[] = [];
      const session = new InteractiveSession({
        ...hermetic(),
        builtinTools: false,
        provider: new ScriptedProvider([
          { text: Array.from({ length: 30 }, (_, i) => `w${i} `), tool_calls: [{ id: 'c1', name: 'write_it', input: {} }] },
          { text: 'done' },
        ]),
        tools: [tool({ name: 'write_it', description: 'Writes.', inputSchema: { type: 'object' }, execute: () => 'written' })],
        permissionHandler: () => {
          seen.push('handler');
          return true;
        },
      });
      session.on('text_delta', () => {
        if (!seen.includes('text')) seen.push('text');
      });
      session.on('permission_request', () => seen.push('request'));
      const result = await within(10_000, session.submit('go'), 'submit');
      assert.equal(result.status, 'complete');
      assert.deepEqual(seen, ['text', 'request', 'handler'], `trial ${trial}`);
      await session.shutdown();
    }
  });
});

describe('construction errors name the option in its own spelling', () => {
  const bad = (f: () => unknown, code: string, pattern: RegExp): void => {
    assert.throws(f, (e: unknown) => {
      assert.ok(e instanceof RobotaError, `expected RobotaError, got ${String(e)}`);
      assert.equal(e.code, code);
      assert.match(e.message, pattern);
      assert.doesNotMatch(e.message, /u32|Config\.|_[a-z]+`|cancel_queue|ShutDownError/);
      return true;
    });
  };
  const scripted = (): ScriptedProvider => new ScriptedProvider([]);
  const mk = (name: string, extra: Record<string, unknown> = {}) =>
    tool({ name, description: '', inputSchema: { type: 'object' }, execute: () => '', ...extra });

  test('base URL, numbers, tools', () => {
    bad(() => new InteractiveSession({ ...hermetic(), provider: new OpenAIProvider({ model: 'm', baseUrl: 'localhost:11434/v1' }) }), 'invalid_argument', /`baseUrl`.*http/);
    bad(() => new InteractiveSession({ ...hermetic(), provider: scripted(), maxTurns: -1 }), 'invalid_json', /`maxTurns`.*whole number/);
    bad(() => new InteractiveSession({ ...hermetic(), provider: scripted(), tools: [mk('get weather')] }), 'invalid_argument', /invalid tool name `get weather`/);
    bad(() => new InteractiveSession({ ...hermetic(), provider: scripted(), tools: [mk('lookup'), mk('lookup')] }), 'invalid_argument', /two tools have this name/);
    bad(() => new InteractiveSession({ ...hermetic(), provider: scripted(), tools: [mk('Read')] }), 'invalid_argument', /`replacesBuiltin`/);
    new InteractiveSession({ ...hermetic(), provider: scripted(), tools: [mk('Read', { replacesBuiltin: true })] });
    bad(
      () => new InteractiveSession({ ...hermetic(), provider: scripted(), tools: [tool({ name: 't', description: '', inputSchema: { type: 'string' }, execute: () => '' })] }),
      'invalid_argument',
      /`inputSchema` must describe an object/,
    );
    bad(() => new ScriptedProvider('nope' as never), 'invalid_argument', /`turns`/);
  });

  test('arguments of the wrong type name the argument, never a Rust type', async () => {
    bad(() => new InteractiveSession({ ...hermetic(), provider: scripted(), eventBuffer: -5 }), 'invalid_argument', /`eventBuffer` must be a whole number of at least 1, not a number \(-5\)/);
    bad(() => new InteractiveSession({ ...hermetic(), provider: scripted(), tools: 'x' as never }), 'invalid_argument', /`tools` must be a list/);
    bad(
      () => new InteractiveSession({ ...hermetic(), provider: scripted(), commandModules: [{ name: 'm' } as never] }),
      'invalid_argument',
      /command module `m`: `commands` must be a list/,
    );
    bad(() => evaluatePermission(42 as never, {}, { cwd: '/' }), 'invalid_argument', /`tool` must be a string, not a number \(42\)/);
    const session = new InteractiveSession({ ...hermetic(), provider: new ScriptedProvider([{ text: 'a' }]) });
    bad(() => session.setName(5 as never), 'invalid_argument', /setName\(name\): `name` must be a string/);
    const rejects = async (p: Promise<unknown>, pattern: RegExp): Promise<void> => {
      await assert.rejects(p, (e: unknown) => {
        assert.ok(e instanceof RobotaError && e.code === 'invalid_argument', String(e));
        assert.match(e.message, pattern);
        assert.doesNotMatch(e.message, /rust type|String`/);
        return true;
      });
    };
    await rejects(session.executeCommand(5 as never), /executeCommand\(name, args\): `name` must be a string/);
    await rejects(session.compact(5 as never), /compact\(instructions\): `instructions` must be a string/);
    // A value the addon itself cannot convert.
    await rejects(session.submit('x', { displayInput: 5 as never }), /wrong type: expected a string, got number 5/);
    await session.shutdown();
  });

  test('an empty prompt', async () => {
    const session = new InteractiveSession({ ...hermetic(), provider: new ScriptedProvider([{ text: 'hi' }]) });
    await assert.rejects(session.submit('  '), (e: unknown) => e instanceof RobotaError && e.code === 'invalid_argument' && /empty/.test(e.message));
    await session.shutdown();
  });

  test('a queued-prompt refusal speaks no other language', async () => {
    const session = new InteractiveSession({ ...hermetic(), provider: new ScriptedProvider([{ text: ['a', 'b'], delay_ms_per_chunk: 50 }, { text: 'c' }]) });
    const first = session.submit('one');
    const second = session.submit('two');
    await assert.rejects(session.submit('three'), (e: unknown) => e instanceof RobotaError && e.code === 'queue_full' && !/cancel_queue/.test(e.message));
    await Promise.all([first, second]);
    await session.shutdown();
  });
});

describe('events and shutdown', () => {
  test('an unknown event name is an error', () => {
    const session = new InteractiveSession({ ...hermetic(), provider: new ScriptedProvider([]) });
    assert.throws(
      // Untyped, as from JavaScript: tsc itself refuses the name (see tests/types/).
      () => (session as unknown as { on(name: string, listener: () => void): void }).on('text_dleta', () => undefined),
      (e: unknown) => e instanceof RobotaError && e.code === 'invalid_argument' && /unknown event `text_dleta`/.test(e.message),
    );
    session.on('text_delta', () => undefined);
    session.on('event', () => undefined);
    session.once('complete', () => undefined);
  });

  test('after shutdown every action fails with shut_down', async () => {
    const session = new InteractiveSession({ ...hermetic(), provider: new ScriptedProvider([{ text: 'hi' }]) });
    assert.equal((await session.submit('hi')).status, 'complete');
    await session.shutdown();
    await session.shutdown();
    const shutDown = (e: unknown): boolean => e instanceof RobotaError && e.code === 'shut_down';
    await assert.rejects(session.submit('again'), shutDown);
    await assert.rejects(session.executeCommand('help'), shutDown);
    await assert.rejects(session.compact(), shutDown);
    assert.throws(() => session.listCommands(), shutDown);
    assert.throws(() => session.setName('later'), shutDown);
    assert.throws(() => session.events(), shutDown);
    session.abort();
    assert.equal(session.cancelQueue(), null);
    assert.deepEqual(
      session.getMessages().map((m) => m.role),
      ['user', 'assistant'],
    );
  });
});
