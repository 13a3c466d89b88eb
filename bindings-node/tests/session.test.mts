/** InteractiveSession end to end: scripted provider and mock-llm, JS extensions, errors. */

import assert from 'node:assert/strict';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import {
  AnthropicProvider,
  CustomProvider,
  InteractiveSession,
  OpenAIProvider,
  ReplayProvider,
  RobotaError,
  ScriptedProvider,
  createQuery,
  evaluatePermission,
  tool,
  type HookInput,
  type PermissionRequest,
  type RobotaEvent,
  type ScriptedTurn,
} from '@robota/native';

import { hermetic, startMockLlm, tempDir, within, type MockLlm } from './helpers.mjs';

function scripted(turns: ScriptedTurn[]): ScriptedProvider {
  return new ScriptedProvider(turns);
}

const toolCall = (name: string, input: unknown, id = 'call_1'): ScriptedTurn => ({
  tool_calls: [{ id, name, input }],
});

function collect(session: InteractiveSession): RobotaEvent[] {
  const events: RobotaEvent[] = [];
  session.on('event', (event) => events.push(event));
  return events;
}

function toolResults(session: InteractiveSession): Array<{ content: string; is_error?: boolean }> {
  return session
    .getMessages()
    .flatMap((m) => m.content)
    .filter((b): b is Extract<typeof b, { type: 'tool_result' }> => b.type === 'tool_result')
    .map((b) => ({ content: b.content, is_error: b.is_error }));
}

describe('full turn', () => {
  let mock: MockLlm;
  before(async () => {
    mock = await startMockLlm();
  });
  after(async () => {
    await mock.stop();
  });

  test('scripted: typed events in order, result, history', async () => {
    const session = new InteractiveSession({ ...hermetic(), provider: scripted([{ text: ['Hel', 'lo'] }]) });
    const events = collect(session);
    const deltas: string[] = [];
    session.on('text_delta', (ev) => deltas.push(ev.text));
    const result = await within(10_000, session.submit('Hi'), 'submit');
    assert.equal(result.status, 'complete');
    assert.equal(result.status === 'complete' && result.outcome.response, 'Hello');
    assert.equal(deltas.join(''), 'Hello');
    const seqs = events.map((e) => e.seq);
    assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
    assert.ok(events.every((e) => e.session_id === session.getSessionId()));
    assert.equal(events.at(-1)?.type, 'complete');
    assert.deepEqual(
      session.getMessages().map((m) => m.role),
      ['user', 'assistant'],
    );
    assert.equal(session.isExecuting(), false);
    assert.equal(typeof session.getContextState().used_tokens, 'number');
    await session.shutdown();
  });

  test('anthropic over mock-llm: streamed text and the request sent', async () => {
    await mock.setScript({ turns: [{ text: ['Hello ', 'from ', 'mock'] }] });
    const session = new InteractiveSession({
      ...hermetic(),
      provider: new AnthropicProvider({ model: 'claude-test', apiKey: 'sk-test', baseUrl: mock.baseUrl }),
      builtinTools: false,
    });
    const result = await within(10_000, session.submit('Say hello'), 'submit');
    assert.equal(result.status, 'complete');
    assert.equal(result.status === 'complete' && result.outcome.response, 'Hello from mock');
    const requests = await mock.requests();
    const last = requests.at(-1);
    assert.equal(last?.path, '/v1/messages');
    assert.equal(last?.headers['x-api-key'], 'sk-test');
    assert.equal(last?.body.model, 'claude-test');
    await session.shutdown();
  });

  test('openai over mock-llm with a JS tool: two rounds', async () => {
    await mock.setScript({
      turns: [
        { tool_calls: [{ id: 'c1', name: 'add', input: { a: 2, b: 3 } }] },
        { text: 'The sum is 5.' },
      ],
    });
    const session = new InteractiveSession({
      ...hermetic(),
      provider: new OpenAIProvider({ model: 'gpt-test', apiKey: 'sk-test', baseUrl: `${mock.baseUrl}/v1` }),
      builtinTools: false,
      tools: [
        tool<{ a: number; b: number }>({
          name: 'add',
          description: 'Adds two numbers.',
          inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
          readOnly: true,
          execute: async ({ a, b }) => String(a + b),
        }),
      ],
    });
    const result = await within(10_000, session.submit('2+3?'), 'submit');
    assert.equal(result.status === 'complete' && result.outcome.response, 'The sum is 5.');
    assert.deepEqual(toolResults(session), [{ content: '5', is_error: false }]);
    const requests = await mock.requests();
    assert.equal(requests.at(-1)?.path, '/v1/chat/completions');
    await session.shutdown();
  });

  test('events() async iterator ends at shutdown', async () => {
    const session = new InteractiveSession({ ...hermetic(), provider: scripted([{ text: 'Yo' }]) });
    const seen: string[] = [];
    const reader = (async () => {
      for await (const event of session.events()) {
        seen.push(event.type);
        if (event.type === 'complete') break;
      }
    })();
    await session.submit('hi');
    await within(5_000, reader, 'iterator');
    assert.ok(seen.includes('text_delta'));
    assert.equal(seen.at(-1), 'complete');
    const rest = session.events();
    await session.shutdown();
    assert.deepEqual(await rest.next(), { value: undefined, done: true });
  });
});

describe('JS extensions', () => {
  test('tools: async result, throw becomes an error result', async () => {
    const session = new InteractiveSession({
      ...hermetic(),
      builtinTools: false,
      provider: scripted([
        {
          tool_calls: [
            { id: 'c1', name: 'lookup', input: { city: 'Oslo' } },
            { id: 'c2', name: 'broken', input: {} },
          ],
        },
        { text: 'done' },
      ]),
      tools: [
        tool({
          name: 'lookup',
          description: 'Weather.',
          inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
          readOnly: true,
          async execute(input: { city: string }) {
            await new Promise((r) => setTimeout(r, 10));
            return { content: `sunny in ${input.city}` };
          },
        }),
        tool({
          name: 'broken',
          description: 'Always fails.',
          inputSchema: { type: 'object' },
          readOnly: true,
          execute() {
            throw new Error('disk on fire');
          },
        }),
      ],
    });
    const ends: string[] = [];
    session.on('tool_end', (ev) => ends.push(`${ev.tool.name}:${ev.tool.result ?? ''}`));
    const result = await within(10_000, session.submit('go'), 'submit');
    assert.equal(result.status, 'complete');
    assert.deepEqual(ends.sort(), ['broken:error', 'lookup:success']);
    const results = toolResults(session);
    assert.deepEqual(results.find((r) => r.content.startsWith('sunny')), { content: 'sunny in Oslo', is_error: false });
    assert.ok(results.some((r) => r.is_error === true && r.content.includes('disk on fire')));
    await session.shutdown();
  });

  test('permission handler: allow, deny with message, throw denies, another input', async () => {
    const answers = ['allow', 'deny', 'throw', 'rewrite'];
    const requests: PermissionRequest[] = [];
    const write = tool({
      name: 'write_note',
      description: 'Writes a note.',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
      execute: (input: { text: string }) => `wrote ${input.text}`,
    });
    const session = new InteractiveSession({
      ...hermetic(),
      builtinTools: false,
      provider: scripted([
        toolCall('write_note', { text: 'a' }, 'c1'),
        toolCall('write_note', { text: 'b' }, 'c2'),
        toolCall('write_note', { text: 'c' }, 'c3'),
        toolCall('write_note', { text: 'd' }, 'c4'),
        { text: 'ok' },
      ]),
      tools: [write],
      permissionHandler: async (request, { signal }) => {
        assert.equal(signal.aborted, false);
        requests.push(request);
        // Awaiting session state from inside a callback must not deadlock.
        assert.equal(session.isExecuting(), true);
        const answer = answers.shift();
        if (answer === 'allow') return true;
        if (answer === 'deny') return { type: 'deny', message: 'Not today.' };
        if (answer === 'rewrite') return { type: 'allow_with_input', input: { text: 'rewritten' } };
        throw new Error('handler crashed');
      },
    });
    const result = await within(10_000, session.submit('write three notes'), 'submit');
    assert.equal(result.status, 'complete');
    assert.equal(requests.length, 4);
    assert.equal(requests[0]?.tool_name, 'write_note');
    const results = toolResults(session);
    assert.deepEqual(results[0], { content: 'wrote a', is_error: false });
    assert.equal(results[1]?.is_error, true);
    assert.match(results[1]?.content ?? '', /Not today\./);
    assert.equal(results[2]?.is_error, true);
    assert.match(results[2]?.content ?? '', /handler crashed/);
    assert.deepEqual(results[3], { content: 'wrote rewritten', is_error: false });
    await session.shutdown();
  });

  test('hooks: UserPromptSubmit sees the prompt, PreToolUse blocks, a throwing hook is survived', async () => {
    const seen: HookInput[] = [];
    let ran = false;
    const session = new InteractiveSession({
      ...hermetic(),
      builtinTools: false,
      provider: scripted([toolCall('danger', {}), { text: 'blocked, fine' }]),
      tools: [
        tool({
          name: 'danger',
          description: 'Dangerous.',
          inputSchema: { type: 'object' },
          readOnly: true,
          execute: () => {
            ran = true;
            return 'ran';
          },
        }),
      ],
      hooks: [
        { event: 'UserPromptSubmit', callback: (input) => void seen.push(input) },
        { event: 'UserPromptSubmit', callback: () => { throw new Error('hook bug'); } },
        { event: 'PreToolUse', matcher: 'danger', callback: () => ({ type: 'block', reason: 'No danger allowed.' }) },
      ],
    });
    const result = await within(10_000, session.submit('do it'), 'submit');
    assert.equal(result.status, 'complete');
    assert.equal(ran, false);
    assert.equal(seen[0]?.hook_event_name, 'UserPromptSubmit');
    assert.equal(seen[0]?.prompt, 'do it');
    assert.match(toolResults(session)[0]?.content ?? '', /No danger allowed\./);
    await session.shutdown();
  });

  test('complete carries the prompt report; rawInput reaches UserPromptSubmit as prompt', async () => {
    const seen: HookInput[] = [];
    const session = new InteractiveSession({
      ...hermetic(),
      builtinTools: false,
      provider: scripted([toolCall('probe', { path: 'a.txt' }), { text: 'probed' }]),
      tools: [
        tool({
          name: 'probe',
          description: 'Probes.',
          inputSchema: { type: 'object' },
          readOnly: true,
          execute: () => 'probe ok',
        }),
      ],
      hooks: [{ event: 'UserPromptSubmit', callback: (input) => void seen.push(input) }],
    });
    const completes: RobotaEvent[] = [];
    session.on('complete', (event) => void completes.push(event));
    const result = await within(
      10_000,
      session.submit('Probe the file a.txt carefully.', { displayInput: '/probe', rawInput: '/probe a.txt' }),
      'submit',
    );
    assert.equal(seen[0]?.prompt, '/probe a.txt');
    assert.equal(result.status, 'complete');
    if (result.status !== 'complete') return;
    assert.equal(result.response, 'probed');
    assert.deepEqual(
      result.history.filter((e) => e.category === 'event').map((e) => e.type),
      ['tool-start', 'tool-end', 'tool-summary'],
    );
    assert.equal(result.history[0]?.type, 'user');
    assert.equal(result.tool_summaries[0]?.name, 'probe');
    assert.equal(result.tool_summaries[0]?.first_arg, 'a.txt');
    assert.equal(result.tool_summaries[0]?.result, 'success');
    assert.equal(typeof result.context_state.used_tokens, 'number');
    const event = completes[0];
    assert.equal(event?.type === 'complete' && event.tool_summaries.length, 1);
    await session.shutdown();
  });

  test('command module: listed, executed, may await the session; throw is a failed result', async () => {
    let session!: InteractiveSession;
    session = new InteractiveSession({
      ...hermetic(),
      provider: scripted([{ text: 'hi' }]),
      commandModules: [
        {
          name: 'notes',
          commands: [
            {
              name: 'count',
              description: 'Counts messages.',
              async execute(args) {
                await new Promise((r) => setTimeout(r, 5));
                return `${session.getMessages().length} messages ${args}`;
              },
            },
            {
              name: 'explode',
              description: 'Fails.',
              execute() {
                throw new Error('kaboom');
              },
            },
            {
              name: 'rename-twice',
              description: 'Calls another command.',
              async execute(args) {
                await session.executeCommand('rename', args);
                return { message: 'renamed', success: true, data: { name: session.getName() } };
              },
            },
          ],
        },
      ],
    });
    assert.ok(session.listCommands().some((c) => c.name === 'count'));
    await session.submit('hello');
    const count = await within(5_000, session.executeCommand('count', 'total'), 'command');
    assert.deepEqual({ message: count.message, success: count.success }, { message: '2 messages total', success: true });
    const failed = await session.executeCommand('explode');
    assert.equal(failed.success, false);
    assert.match(failed.message, /kaboom/);
    const nested = await within(5_000, session.executeCommand('rename-twice', 'Chat'), 'nested command');
    assert.deepEqual(nested.data, { name: 'Chat' });
    await assert.rejects(session.executeCommand('no-such-command'), (e: unknown) => e instanceof RobotaError && e.code === 'command');
    await session.shutdown();
  });

  test('custom provider implemented in JavaScript', async () => {
    const session = new InteractiveSession({
      ...hermetic(),
      builtinTools: false,
      provider: new CustomProvider({
        model: 'echo-1',
        respond: async (request) => {
          const last = request.messages.at(-1);
          const block = last?.content[0] as { text?: string } | undefined;
          return { text: `echo: ${block?.text ?? ''}` };
        },
      }),
    });
    const result = await session.submit('ping');
    assert.equal(result.status === 'complete' && result.outcome.response, 'echo: ping');
    await session.shutdown();
  });

  test('custom provider: streamed chunks, thinking, tool calls, errors and abort', async () => {
    const turns: ScriptedTurn[] = [
      { thinking: 'Look it up.', tool_calls: [{ id: 't1', name: 'lookup', input: { city: 'Oslo' } }] },
      {
        text: ['sunny ', 'in ', 'Oslo'],
        delay_ms_per_chunk: 5,
        usage: { input_tokens: 7, output_tokens: 3 },
        retries: [{ delay_ms: 5, error: { kind: 'overloaded', message: 'busy' } }],
      },
      { text: 'partial', error: { kind: 'rate_limit', message: 'slow down' } },
      { text: ['a', 'b', 'c'], delay_ms_per_chunk: 2_000 },
    ];
    const session = new InteractiveSession({
      ...hermetic(),
      builtinTools: false,
      provider: new CustomProvider({ respond: () => turns.shift() ?? { text: 'done' } }),
      tools: [
        tool({
          name: 'lookup',
          description: 'Weather.',
          inputSchema: { type: 'object' },
          readOnly: true,
          execute: (input: { city: string }) => `sunny in ${input.city}`,
        }),
      ],
    });
    const deltas: string[] = [];
    const thinking: string[] = [];
    session.on('text_delta', (event) => deltas.push(event.text));
    session.on('thinking', (event) => thinking.push(event.text));
    const first = await within(10_000, session.submit('weather?'), 'streamed submit');
    assert.equal(first.status === 'complete' && first.outcome.response, 'sunny in Oslo');
    assert.deepEqual(deltas.filter((d) => d.trim() !== ''), ['sunny ', 'in ', 'Oslo']);
    assert.deepEqual(thinking, ['Look it up.']);
    assert.deepEqual(toolResults(session)[0], { content: 'sunny in Oslo', is_error: false });
    const failed = await within(10_000, session.submit('again'), 'failing submit');
    // A failed model call ends the prompt as an error, never as complete.
    assert.equal(failed.status, 'error');
    assert.equal(failed.status === 'error' && failed.error.kind, 'rate_limit');
    assert.match(failed.status === 'error' ? failed.error.message : '', /slow down/);
    assert.equal(failed.status === 'error' && failed.outcome?.response, 'partial');
    const controller = new AbortController();
    session.once('text_delta', () => controller.abort());
    const aborted = await within(5_000, session.submit('slow', { signal: controller.signal }), 'aborted submit');
    assert.equal(aborted.status, 'interrupted');
    await session.shutdown();
  });
});

describe('control', () => {
  test('abort via AbortSignal interrupts a slow turn', async () => {
    const session = new InteractiveSession({
      ...hermetic(),
      provider: scripted([{ text: ['a', 'b', 'c', 'd', 'e', 'f'], delay_ms_per_chunk: 2_000 }]),
    });
    const controller = new AbortController();
    session.once('text_delta', () => controller.abort());
    const result = await within(5_000, session.submit('slow', { signal: controller.signal }), 'aborted submit');
    assert.equal(result.status, 'interrupted');
    assert.equal(session.isExecuting(), false);
    await session.shutdown();
  });

  test('queueing: one waits, a third is refused, cancelQueue drops the waiting one', async () => {
    const session = new InteractiveSession({
      ...hermetic(),
      provider: scripted([
        { text: ['one'], delay_ms_per_chunk: 300 },
        { text: 'two' },
        { text: 'three' },
      ]),
    });
    const first = session.submit('first');
    const second = session.submit('second', { displayInput: 'second (shown)' });
    await assert.rejects(session.submit('third'), (e: unknown) => e instanceof RobotaError && e.code === 'queue_full');
    assert.equal(session.getPendingPrompt(), 'second (shown)');
    assert.equal(session.cancelQueue(), 'second (shown)');
    assert.deepEqual(await second, { status: 'cancelled' });
    const third = session.submit('third');
    const [r1, r3] = await within(10_000, Promise.all([first, third]), 'queued prompts');
    assert.equal(r1.status === 'complete' && r1.outcome.response, 'one');
    assert.equal(r3.status === 'complete' && r3.outcome.response, 'two');
    await session.shutdown();
    await assert.rejects(session.submit('late'), (e: unknown) => e instanceof RobotaError && e.code === 'shut_down');
  });

  test('signals and abort(): each prompt settles with its own result', async () => {
    const session = new InteractiveSession({
      ...hermetic(),
      provider: scripted([
        { text: ['one ', 'two ', 'three'], delay_ms_per_chunk: 300 },
        { text: 'after' },
        { text: ['x', 'y', 'z'], delay_ms_per_chunk: 2_000 },
      ]),
    });
    const ends: string[] = [];
    session.on('complete', () => ends.push('complete'));
    session.on('interrupted', () => ends.push('interrupted'));
    // An aborted signal of the queued prompt drops it and leaves the running one alone.
    const queuedController = new AbortController();
    const running = session.submit('first');
    const queued = session.submit('second', { signal: queuedController.signal });
    queuedController.abort();
    assert.deepEqual(await within(5_000, queued, 'dropped prompt'), { status: 'cancelled' });
    const first = await within(10_000, running, 'running prompt');
    assert.equal(first.status === 'complete' && first.outcome.response, 'one two three');
    // The terminal event reached the listeners before the Promise settled.
    assert.deepEqual(ends, ['complete']);
    assert.equal((await within(10_000, session.submit('next'), 'next prompt')).status, 'complete');
    // abort(): the running prompt is interrupted, the queued one cancelled.
    const slow = session.submit('slow');
    const waiting = session.submit('waiting');
    session.once('text_delta', () => session.abort());
    const [interrupted, cancelled] = await within(10_000, Promise.all([slow, waiting]), 'aborted prompts');
    assert.equal(interrupted.status, 'interrupted');
    assert.deepEqual(cancelled, { status: 'cancelled' });
    assert.deepEqual(ends, ['complete', 'complete', 'interrupted']);
    await session.shutdown();
  });

  test('a signal cancels exactly its own prompt, queued or running', async () => {
    const session = new InteractiveSession({
      ...hermetic(),
      provider: scripted([
        { text: ['one ', 'two ', 'three'], delay_ms_per_chunk: 300 },
        { text: ['x', 'y', 'z'], delay_ms_per_chunk: 2_000 },
        { text: 'kept' },
      ]),
    });
    const ends: string[] = [];
    session.on('complete', () => ends.push('complete'));
    session.on('interrupted', () => ends.push('interrupted'));
    // The queued prompt's signal drops only it: the running one completes.
    const runningController = new AbortController();
    const queuedController = new AbortController();
    const running = session.submit('first', { signal: runningController.signal });
    const queued = session.submit('second', { signal: queuedController.signal });
    queuedController.abort();
    assert.deepEqual(await within(5_000, queued, 'dropped prompt'), { status: 'cancelled' });
    assert.equal(session.getPendingPrompt(), null);
    const first = await within(10_000, running, 'running prompt');
    assert.equal(first.status === 'complete' && first.outcome.response, 'one two three');
    runningController.abort(); // after the end: a no-op
    assert.deepEqual(ends, ['complete']);
    // The running prompt's signal interrupts only it: the queued one still runs.
    const slowController = new AbortController();
    const waitingController = new AbortController();
    const slow = session.submit('slow', { signal: slowController.signal });
    const waiting = session.submit('waiting', { signal: waitingController.signal });
    session.once('text_delta', () => slowController.abort());
    const interrupted = await within(10_000, slow, 'interrupted prompt');
    assert.equal(interrupted.status, 'interrupted');
    const kept = await within(10_000, waiting, 'kept prompt');
    assert.equal(kept.status === 'complete' && kept.outcome.response, 'kept');
    assert.deepEqual(ends, ['complete', 'interrupted', 'complete']);
    await session.shutdown();
  });

  test('a rejected @file prompt fails alone and leaves the running prompt alone', async () => {
    const session = new InteractiveSession({
      ...hermetic(),
      provider: scripted([{ text: ['still ', 'running'], delay_ms_per_chunk: 200 }]),
    });
    const errors: string[] = [];
    session.on('error', (event) => errors.push(event.message));
    const running = session.submit('slow one');
    await assert.rejects(
      session.submit('summarize @./missing-notes.txt'),
      (e: unknown) => e instanceof RobotaError && e.code === 'invalid_argument' && /missing-notes/.test(e.message),
    );
    const result = await within(10_000, running, 'running prompt');
    assert.equal(result.status === 'complete' && result.outcome.response, 'still running');
    assert.equal(errors.length, 1);
    await session.shutdown();
  });

  test('resume: a saved session continues with its history', async () => {
    const store = { sessionsDir: tempDir(), logsDir: tempDir() };
    const base = hermetic();
    const first = new InteractiveSession({ ...base, persistence: store, provider: scripted([{ text: 'first answer' }]) });
    await first.submit('remember this');
    first.setName('saved chat');
    const id = first.getSessionId();
    await first.shutdown();
    const resumed = new InteractiveSession({
      ...base,
      persistence: store,
      resumeSessionId: id,
      provider: scripted([{ text: 'second answer' }]),
    });
    assert.equal(resumed.getSessionId(), id);
    assert.deepEqual(resumed.getMessages().map((m) => m.role), ['user', 'assistant']);
    await resumed.submit('and now?');
    assert.equal(resumed.getMessages().length, 4);
    await resumed.shutdown();
  });

  test('a session saved in SQLite resumes with its history, one writer at a time', async () => {
    const database = path.join(tempDir(), 'sessions.db');
    const base = hermetic();
    const first = new InteractiveSession({ ...base, persistence: { sqlite: database }, provider: scripted([{ text: 'first answer' }]) });
    await first.submit('remember this');
    const id = first.getSessionId();
    assert.throws(
      () => new InteractiveSession({ ...base, persistence: { sqlite: database }, resumeSessionId: id, provider: scripted([]) }),
      (e: unknown) => e instanceof RobotaError && e.code === 'session_locked',
    );
    await first.shutdown();
    assert.ok(existsSync(database));
    const resumed = new InteractiveSession({
      ...base,
      persistence: { sqlite: database },
      resumeSessionId: id,
      provider: scripted([{ text: 'second answer' }]),
    });
    assert.deepEqual(resumed.getMessages().map((m) => m.role), ['user', 'assistant']);
    await resumed.submit('and now?');
    assert.equal(resumed.getMessages().length, 4);
    await resumed.shutdown();
  });

  test('a PostgreSQL store is picked by its options, and its password is never shown', () => {
    // No server here (the PostgreSQL store is tested against a real one in core and the CLI):
    // an unreachable database proves the options reach the store, with a clear error.
    assert.throws(
      () =>
        new InteractiveSession({
          ...hermetic(),
          persistence: { postgres: { url: 'postgres://robota:hunter2@127.0.0.1:1/none', project: 'p' } },
          provider: scripted([]),
        }),
      (e: unknown) =>
        e instanceof RobotaError &&
        e.code === 'invalid_argument' &&
        e.message.includes('postgres://robota@127.0.0.1:1/none') &&
        !e.message.includes('hunter2'),
    );
    assert.throws(
      () =>
        new InteractiveSession({
          ...hermetic(),
          persistence: { postgres: { urlEnv: 'ROBOTA_NO_SUCH_VARIABLE_SET' } },
          provider: scripted([]),
        }),
      (e: unknown) => e instanceof RobotaError && e.message.includes('ROBOTA_NO_SUCH_VARIABLE_SET'),
    );
  });

  test('resume after damage: a session_recovered event and the report, and one writer at a time', async () => {
    const store = { sessionsDir: tempDir(), logsDir: tempDir() };
    const base = hermetic();
    const first = new InteractiveSession({ ...base, persistence: store, provider: scripted([{ text: 'noted' }]) });
    await first.submit('remember 42');
    const id = first.getSessionId();
    // Open elsewhere: a second writer is refused with a typed error naming the holder.
    assert.throws(
      () => new InteractiveSession({ ...base, persistence: store, resumeSessionId: id, provider: scripted([]) }),
      (e: unknown) =>
        e instanceof RobotaError &&
        e.code === 'session_locked' &&
        e.message.includes(`this process (pid ${process.pid})`) &&
        /fork/.test(e.message),
    );
    await first.shutdown();
    assert.equal(first.getRecoveryReport(), null);

    // A garbage snapshot, and a turn a killed process started and never finished.
    writeFileSync(path.join(store.sessionsDir, `${id}.json`), 'garbage {{{');
    const log = path.join(store.logsDir, `${id}.jsonl`);
    const seqs = readFileSync(log, 'utf8').trim().split('\n').map((line) => (JSON.parse(line) as { seq: number }).seq);
    appendFileSync(
      log,
      JSON.stringify({ ts: '2026-05-01T10:00:00.000Z', seq: Math.max(...seqs) + 1, type: 'pre_run', input: 'count to three', history_length: 2 }) + '\n',
    );
    const resumed = new InteractiveSession({ ...base, persistence: store, resumeSessionId: id, provider: scripted([{ text: 'one two three' }]) });
    const recovered: Array<RobotaEvent & { type: 'session_recovered' }> = [];
    resumed.on('session_recovered', (event) => recovered.push(event));
    const report = resumed.getRecoveryReport();
    assert.ok(report !== null);
    assert.equal(report.unfinished_turn?.prompt, 'count to three');
    assert.match(report.snapshot?.problem ?? '', /corrupt/);
    assert.ok(report.snapshot?.moved_to?.includes(`${id}.json.damaged-`));
    assert.deepEqual(resumed.getMessages().map((m) => m.role), ['user', 'assistant']);
    await resumed.submit(report.unfinished_turn?.prompt ?? '');
    assert.equal(recovered.length, 1);
    assert.equal(recovered[0]?.session_id, id);
    assert.deepEqual(recovered[0]?.report, report);
    assert.match(recovered[0]?.message ?? '', /did not finish/);
    await resumed.shutdown();
  });

  test('replay: a session log answers again offline', async () => {
    const store = { sessionsDir: tempDir(), logsDir: tempDir() };
    const recorded = new InteractiveSession({ ...hermetic(), persistence: store, provider: scripted([{ text: 'recorded answer' }]) });
    await recorded.submit('question');
    const log = path.join(store.logsDir, `${recorded.getSessionId()}.jsonl`);
    await recorded.shutdown();
    const replayed = new InteractiveSession({ ...hermetic(), provider: new ReplayProvider(log) });
    const result = await replayed.submit('question');
    assert.equal(result.status === 'complete' && result.outcome.response, 'recorded answer');
    await replayed.shutdown();
    assert.throws(
      () => new InteractiveSession({ ...hermetic(), provider: new ReplayProvider(path.join(tempDir(), 'missing.jsonl')) }),
      (e: unknown) => e instanceof RobotaError && e.code === 'invalid_argument' && /cannot replay/.test(e.message),
    );
  });

  test('bad input: typed errors that say what to fix', () => {
    const bad = (f: () => unknown, code: string, pattern: RegExp): void => {
      assert.throws(f, (e: unknown) => {
        assert.ok(e instanceof RobotaError, `expected RobotaError, got ${String(e)}`);
        assert.equal(e.code, code);
        assert.match(e.message, pattern);
        return true;
      });
    };
    bad(() => new InteractiveSession({ provider: { toConfig: () => ({ type: 'telepathy' }) } }), 'invalid_argument', /unknown provider type `telepathy`/);
    bad(() => new InteractiveSession({ ...hermetic(), provider: scripted([]), permissionMode: 'yolo' as never }), 'invalid_json', /permission|yolo/i);
    bad(() => new InteractiveSession({ provider: scripted([]), colour: 'red' } as never), 'invalid_argument', /unknown option `colour`/);
    bad(() => new InteractiveSession({ ...hermetic(), provider: scripted([]), forkSession: true }), 'invalid_argument', /`forkSession` needs `resumeSessionId`/);
    bad(
      () => new InteractiveSession({ ...hermetic(), provider: scripted([]), hooks: [{ event: 'Nope' as never, callback: () => undefined }] }),
      'invalid_argument',
      /unknown hook event `Nope`/,
    );
    bad(() => tool({ name: '', description: '', inputSchema: {}, execute: () => '' }), 'invalid_argument', /`name`/);
  });

  test('a slow listener never loses text: the bounded queue coalesces text_delta only', async () => {
    const n = 20_000;
    const session = new InteractiveSession({
      ...hermetic(),
      builtinTools: false,
      provider: scripted([{ text: Array.from({ length: n }, (_, i) => String(i % 10)) }]),
    });
    let text = '';
    let deltas = 0;
    session.on('text_delta', (event) => {
      deltas += 1;
      text += event.text;
      const until = process.hrtime.bigint() + 20_000n; // 20 µs of work per event
      while (process.hrtime.bigint() < until) {
        // busy: the engine outpaces this listener
      }
    });
    const ends: string[] = [];
    session.on('complete', () => ends.push('complete'));
    const result = await within(30_000, session.submit('flood'), 'flooded submit');
    assert.equal(result.status, 'complete');
    assert.equal(text, Array.from({ length: n }, (_, i) => String(i % 10)).join(''));
    assert.ok(deltas <= n, `${deltas} deltas for ${n} chunks`);
    assert.deepEqual(ends, ['complete']);
    await session.shutdown();
  });

  test('100 concurrent sessions against mock-llm', async () => {
    const server = await startMockLlm({ repeat: true, record: false, turns: [{ text: ['answer ', 'from ', 'mock'] }] });
    try {
      const sessions = Array.from(
        { length: 100 },
        () =>
          new InteractiveSession({
            cwd: tempDir(),
            loadProjectContext: false,
            builtinTools: false,
            provider: new AnthropicProvider({ model: 'claude-test', apiKey: 'sk-test', baseUrl: server.baseUrl }),
          }),
      );
      const deltas = new Map<string, number>();
      for (const s of sessions) s.on('text_delta', (ev) => deltas.set(ev.session_id, (deltas.get(ev.session_id) ?? 0) + 1));
      const results = await within(60_000, Promise.all(sessions.map((s, i) => s.submit(`q${i}`))), '100 sessions');
      results.forEach((r) => assert.equal(r.status === 'complete' && r.outcome.response, 'answer from mock'));
      assert.equal(deltas.size, 100);
      assert.equal(new Set(sessions.map((s) => s.getSessionId())).size, 100);
      await Promise.all(sessions.map((s) => s.shutdown()));
    } finally {
      await server.stop();
    }
  });
});

describe('query and rules', () => {
  test('createQuery runs turns over one session, with a permission handler', async () => {
    let streamed = '';
    const query = createQuery({
      ...hermetic(),
      builtinTools: false,
      provider: scripted([{ text: ['fi', 'rst'] }, { text: 'second' }]),
      onTextDelta: (text) => {
        streamed += text;
      },
    });
    const one = await query('hello');
    assert.equal(one.response, 'first');
    assert.equal(streamed, 'first');
    assert.equal(one.stop_reason, 'completed');
    const two = await query('again');
    assert.equal(two.response, 'second');
    assert.equal(two.session_id, one.session_id);
    assert.equal(query.getMessages().length, 4);
    await assert.rejects(query('no turns left'), (e: unknown) => e instanceof RobotaError);
  });

  test('createQuery: an AbortSignal interrupts the running query', async () => {
    const query = createQuery({
      ...hermetic(),
      provider: scripted([{ text: ['a', 'b', 'c', 'd'], delay_ms_per_chunk: 1_000 }]),
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const result = await within(5_000, query('slow', { signal: controller.signal }), 'aborted query');
    assert.equal(result.stop_reason, 'interrupted');
  });

  test('evaluatePermission', () => {
    const cwd = tempDir();
    const denied = evaluatePermission('Bash', { command: 'rm -rf build' }, { cwd, mode: 'default', rules: { deny: ['Bash(rm *)'] } });
    assert.equal(denied.decision, 'deny');
    const allowed = evaluatePermission('Bash', { command: 'git status' }, { cwd, rules: { allow: ['Bash(git status)'] } });
    assert.equal(allowed.decision, 'allow');
    assert.throws(() => evaluatePermission('Bash', {}, { nope: 1 } as never), (e: unknown) => e instanceof RobotaError && e.code === 'invalid_json');
  });
});

describe('OS sandbox', () => {
  test('sandboxStatus() is typed; bypassPermissions sandboxes Bash by default', async () => {
    const outside = path.join(tempDir(), 'outside.txt');
    const options = hermetic();
    const session = new InteractiveSession({
      ...options,
      permissionMode: 'bypassPermissions',
      provider: scripted([toolCall('Bash', { command: `echo x > ${outside}` }), { text: 'done' }]),
    });
    const status = session.sandboxStatus();
    assert.equal(status.enabled, true);
    assert.equal(status.active, true, status.reason);
    assert.ok(status.backend === 'bwrap' || status.backend === 'landlock');
    assert.equal(status.network.mode, 'none');
    assert.equal(status.guarantees.writes_confined, true);
    assert.ok(status.writable_roots.some((root) => root.length > 0));
    const result = await session.submit('write outside');
    assert.equal(result.status, 'complete');
    const { existsSync } = await import('node:fs');
    assert.equal(existsSync(outside), false, 'the sandboxed Bash call wrote outside the workspace');
    await session.shutdown();

    const off = new InteractiveSession({
      ...hermetic(),
      permissionMode: 'bypassPermissions',
      sandbox: false,
      provider: scripted([{ text: 'ok' }]),
    });
    const offStatus = off.sandboxStatus();
    assert.equal(offStatus.enabled, false);
    assert.equal(offStatus.active, false);
    assert.match(offStatus.reason ?? '', /turned off/);
    await off.shutdown();
  });
});
