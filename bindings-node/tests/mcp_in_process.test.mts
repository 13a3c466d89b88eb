/** In-process MCP servers from Node (`createSdkMcpServer` with `tool(name, description, schema,
 * handler)`, as in the Claude Agent SDK): a model driven through mock-llm calls the server's
 * tools as `mcp__<server>__<tool>`; the handler's answer reaches the model, a handler that
 * throws is a tool error, a deny rule keeps a call from the handler, and a name shared with a
 * configured server is refused. */

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { AnthropicProvider, InteractiveSession, RobotaError, createSdkMcpServer, tool } from '@robota/native';

import { hermetic, startMockLlm, within, type MockLlm } from './helpers.mjs';

describe('in-process MCP servers', () => {
  let mock: MockLlm;
  before(async () => {
    mock = await startMockLlm();
  });
  after(async () => {
    await mock.stop();
  });

  const provider = () =>
    new AnthropicProvider({ model: 'claude-test', apiKey: 'sk-test', baseUrl: mock.baseUrl, maxRetries: 0 });
  const pair = { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] };

  const calculator = (calls: unknown[]) =>
    createSdkMcpServer({
      name: 'calculator',
      version: '2.0.0',
      tools: [
        tool('add', 'Adds two numbers', pair, async (args: { a: number; b: number }) => {
          calls.push(args);
          return { content: [{ type: 'text', text: `sum = ${args.a + args.b}` }] };
        }),
        tool('divide', 'Divides a by b', pair, (args: { a: number; b: number }) => {
          if (args.b === 0) throw new RangeError('division by zero');
          return args.a / args.b;
        }),
        tool('stats', 'Statistics', { type: 'object' }, async () => ({ mean: 2.5 }), {
          annotations: { readOnlyHint: true },
        }),
      ],
    });

  /** The model requests of this test (mock-llm keeps every test's requests). */
  let seen = 0;
  const requests = async () => (await mock.requests()).slice(seen);
  const script = async (turns: unknown[]) => {
    seen = (await mock.requests()).length;
    await mock.setScript({ turns });
  };
  /** Every tool result the model received in this test, by call id. */
  const results = async () => {
    const found: Record<string, { content: unknown; is_error?: boolean }> = {};
    for (const request of await requests()) {
      for (const message of request.body.messages ?? []) {
        for (const block of Array.isArray(message.content) ? message.content : []) {
          if (block.type === 'tool_result') found[block.tool_use_id] = block;
        }
      }
    }
    return found;
  };
  const text = (content: unknown): string =>
    typeof content === 'string' ? content : (content as Array<{ text?: string }>).map((b) => b.text ?? '').join('');

  test('tools reach the model; a throwing handler is a tool error', async () => {
    await script([
      { tool_calls: [{ id: 't1', name: 'mcp__calc__add', input: { a: 40, b: 2 } }] },
      { tool_calls: [{ id: 't2', name: 'mcp__calc__divide', input: { a: 1, b: 0 } }] },
      { tool_calls: [{ id: 't3', name: 'mcp__calc__stats', input: {} }] },
      { text: 'done' },
    ]);
    const calls: unknown[] = [];
    const session = new InteractiveSession({
      ...hermetic(),
      provider: provider(),
      settings: { permissions: { allow: ['mcp__calc'] } },
      mcpServers: { calc: calculator(calls) },
    });
    assert.equal(await within(20_000, session.waitForMcpServers(), 'the MCP start-up'), true);
    const [calc] = session.listMcpServers();
    assert.ok(calc !== undefined);
    assert.deepEqual(calc.status, { state: 'connected' });
    assert.equal(calc.transport, 'sdk');
    assert.deepEqual(calc.tools, ['mcp__calc__add', 'mcp__calc__divide', 'mcp__calc__stats']);
    await within(20_000, session.submit('compute'), 'submit');
    await within(20_000, session.waitIdle(), 'idle');
    await session.shutdown();
    const add = (await requests())[0]?.body.tools.find((t: { name: string }) => t.name === 'mcp__calc__add');
    assert.deepEqual(add.input_schema.required, ['a', 'b']);
    const found = await results();
    assert.equal(text(found.t1?.content), 'sum = 42');
    assert.notEqual(found.t1?.is_error, true);
    assert.equal(found.t2?.is_error, true);
    assert.match(text(found.t2?.content), /RangeError: division by zero/);
    assert.equal(text(found.t3?.content), '{"mean":2.5}');
    assert.deepEqual(calls, [{ a: 40, b: 2 }]);
  });

  test('a deny rule keeps calls from the handler', async () => {
    await script([{ tool_calls: [{ id: 't1', name: 'mcp__calc__add', input: { a: 1, b: 1 } }] }, { text: 'done' }]);
    const calls: unknown[] = [];
    const session = new InteractiveSession({
      ...hermetic(),
      provider: provider(),
      settings: { permissions: { allow: ['mcp__calc'], deny: ['mcp__calc__add'] } },
      mcpServers: { calc: calculator(calls) },
    });
    await within(20_000, session.submit('add'), 'submit');
    await within(20_000, session.waitIdle(), 'idle');
    await session.shutdown();
    const offered = (await requests())[0]?.body.tools.map((t: { name: string }) => t.name);
    assert.ok(!offered.includes('mcp__calc__add') && offered.includes('mcp__calc__divide'), offered);
    assert.equal((await results()).t1?.is_error, true);
    assert.deepEqual(calls, []);
  });

  test('a name shared with a configured server is refused', () => {
    assert.throws(
      () =>
        new InteractiveSession({
          ...hermetic(),
          provider: provider(),
          settings: { mcpServers: { calc: { command: 'true' } } },
          mcpServers: { calc: calculator([]) },
        }),
      (error: unknown) => error instanceof RobotaError && error.code === 'invalid_argument' && /calc/.test(error.message),
    );
  });
});
