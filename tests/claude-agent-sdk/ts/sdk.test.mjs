// The Claude Agent SDK for TypeScript, unmodified, running `robota` as its CLI
// (pathToClaudeCodeExecutable) with mock-llm as the model. ROBOTA_BIN and MOCK_LLM_BIN name the
// binaries (default: target/debug under CARGO_TARGET_DIR or the workspace's target/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { createSdkMcpServer, query, tool } from '@anthropic-ai/claude-agent-sdk';
import { z } from 'zod';

const root = resolve(import.meta.dirname, '../../..');
const target = process.env.CARGO_TARGET_DIR ?? join(root, 'target');
const robota = process.env.ROBOTA_BIN ?? join(target, 'debug', 'robota');
const mockLlm = process.env.MOCK_LLM_BIN ?? join(target, 'debug', 'mock-llm');

/** Starts mock-llm with `turns` and a project whose settings point robota at it. */
async function setUp(t, turns) {
  const dir = mkdtempSync(join(tmpdir(), 'robota-ts-sdk-'));
  const project = join(dir, 'project');
  const home = join(dir, 'home');
  mkdirSync(join(project, '.robota'), { recursive: true });
  mkdirSync(home);
  writeFileSync(join(dir, 'script.json'), JSON.stringify({ turns }));
  const mock = spawn(mockLlm, ['--script', join(dir, 'script.json')], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  t.after(() => mock.kill());
  const [line] = await once(createInterface({ input: mock.stdout }), 'line');
  const { base_url: baseUrl } = JSON.parse(line);
  writeFileSync(
    join(project, '.robota', 'settings.json'),
    JSON.stringify({
      currentProvider: 'mock',
      providers: {
        mock: {
          type: 'anthropic', model: 'claude-sonnet-4-5', apiKey: 'test-key', baseURL: baseUrl,
          options: { maxRetries: 0 },
        },
      },
    }),
  );
  const env = { ...process.env, HOME: home };
  for (const name of ['ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', 'OPENAI_API_KEY', 'OPENAI_BASE_URL']) {
    delete env[name];
  }
  const requests = async () => (await fetch(`${baseUrl}/_mock/requests`)).json();
  return { project, env, requests };
}

async function collect(prompt, options) {
  const messages = [];
  for await (const message of query({ prompt, options })) messages.push(message);
  return messages;
}

const toolResults = (messages) =>
  Object.fromEntries(
    messages
      .filter((m) => m.type === 'user' && Array.isArray(m.message.content))
      .flatMap((m) => m.message.content)
      .filter((b) => b.type === 'tool_result')
      .map((b) => [b.tool_use_id, b]),
  );

test('an SDK MCP server tool called by the model', async (t) => {
  const { project, env, requests } = await setUp(t, [
    { tool_calls: [{ id: 'toolu_add', name: 'mcp__calc__add', input: { a: 2, b: 3 } }] },
    { text: '2 + 3 = 5', usage: { input_tokens: 9, output_tokens: 4 } },
  ]);
  const calls = [];
  const add = tool('add', 'Add two numbers', { a: z.number(), b: z.number() }, async (args) => {
    calls.push(args);
    return { content: [{ type: 'text', text: `sum=${args.a + args.b}` }] };
  });
  const messages = await collect('Add 2 and 3', {
    pathToClaudeCodeExecutable: robota,
    cwd: project,
    env,
    mcpServers: { calc: createSdkMcpServer({ name: 'calc', version: '1.0.0', tools: [add] }) },
    allowedTools: ['mcp__calc__add'],
  });
  assert.deepEqual(calls, [{ a: 2, b: 3 }]);
  const init = messages[0];
  assert.equal(init.type, 'system');
  assert.equal(init.subtype, 'init');
  assert.ok(init.tools.includes('mcp__calc__add'));
  const result = toolResults(messages).toolu_add;
  assert.equal(result.is_error, false);
  assert.match(JSON.stringify(result.content), /sum=5/);
  const last = messages.at(-1);
  assert.equal(last.type, 'result');
  assert.equal(last.subtype, 'success');
  assert.equal(last.result, '2 + 3 = 5');
  assert.equal(last.usage.output_tokens, 4);
  assert.match(JSON.stringify((await requests())[1].body.messages), /sum=5/);
});

test('canUseTool allows one call and denies another', async (t) => {
  const { project, env } = await setUp(t, [
    {
      tool_calls: [
        { id: 'toolu_yes', name: 'Bash', input: { command: 'touch yes.txt' } },
        { id: 'toolu_no', name: 'Bash', input: { command: 'touch no.txt' } },
      ],
    },
    { text: 'Half done.' },
  ]);
  const asked = [];
  const messages = await collect('Run two commands', {
    pathToClaudeCodeExecutable: robota,
    cwd: project,
    env,
    canUseTool: async (name, input) => {
      asked.push(input.command);
      return input.command.includes('yes')
        ? { behavior: 'allow', updatedInput: input }
        : { behavior: 'deny', message: 'not this one' };
    },
  });
  assert.deepEqual(asked.sort(), ['touch no.txt', 'touch yes.txt']);
  assert.ok(existsSync(join(project, 'yes.txt')));
  assert.ok(!existsSync(join(project, 'no.txt')));
  const results = toolResults(messages);
  assert.equal(results.toolu_yes.is_error, false);
  assert.equal(results.toolu_no.is_error, true);
  assert.match(String(results.toolu_no.content), /not this one/);
  assert.equal(messages.at(-1).result, 'Half done.');
});

test('sessionId, persistSession, partial messages, agents and a changed tool input', async (t) => {
  const { project, env, requests } = await setUp(t, [
    {
      text: ['Let me ', 'delegate.'],
      tool_calls: [{ id: 'toolu_task', name: 'Task', input: {
        description: 'check', prompt: 'Check it', subagent_type: 'checker' } }],
    },
    { tool_calls: [{ id: 'toolu_sub', name: 'Bash', input: { command: 'touch asked.txt' } }] },
    { text: 'Checked.' },
    { text: 'All done.' },
  ]);
  const messages = await collect('Check the project', {
    pathToClaudeCodeExecutable: robota,
    cwd: project,
    env,
    sessionId: 'ts-chosen-session',
    persistSession: false,
    includePartialMessages: true,
    allowedTools: ['Task'],
    agents: { checker: { description: 'Checks things', prompt: 'CHECKER-PROMPT', tools: ['Bash'] } },
    canUseTool: async () => ({ behavior: 'allow', updatedInput: { command: 'touch changed.txt' } }),
  });
  const last = messages.at(-1);
  assert.equal(last.type, 'result');
  assert.equal(last.result, 'All done.');
  assert.equal(last.session_id, 'ts-chosen-session');
  assert.ok(!existsSync(join(project, '.robota', 'sessions', 'ts-chosen-session.json')));
  // The subagent's Bash call ran with the input canUseTool gave.
  assert.ok(existsSync(join(project, 'changed.txt')));
  assert.ok(!existsSync(join(project, 'asked.txt')));
  assert.match(JSON.stringify((await requests())[1].body.system), /CHECKER-PROMPT/);
  const events = messages.filter((m) => m.type === 'stream_event').map((m) => m.event);
  assert.deepEqual(events.slice(0, 2).map((e) => e.type), ['message_start', 'content_block_start']);
  assert.equal(
    events.filter((e) => e.delta?.type === 'text_delta').map((e) => e.delta.text).join(''),
    'Let me delegate.All done.',
  );
  const toolBlock = events.find((e) => e.content_block?.type === 'tool_use');
  assert.equal(toolBlock.content_block.name, 'Task');
  assert.equal(events.filter((e) => e.type === 'message_stop').length, 2);
});
