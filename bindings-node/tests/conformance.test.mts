/**
 * The shared conformance scenarios (tests/conformance/scenarios/*.json), played through the
 * Node binding with host tools and permission answers implemented here in JavaScript, and
 * normalized by the rules of tests/conformance/README.md. Results must equal `expected`.
 */

import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

import {
  InteractiveSession,
  ScriptedProvider,
  tool,
  type Command,
  type CommandResult,
  type PermissionMode,
  type Message,
  type PermissionAnswer,
  type PromptResult,
  type RobotaEvent,
  type ScriptedTurn,
} from '@robota/native';

import { repoDir, tempDir, within } from './helpers.mjs';

interface HostToolSpec {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
  read_only?: boolean;
  delay_ms?: number;
  result: { content: string; is_error?: boolean };
}

interface HostCommandSpec {
  name: string;
  description: string;
  operations: Array<{ op: string; mode?: string; instructions?: string }>;
  result: { message: string; effects?: Array<{ type: string; [key: string]: unknown }> };
}

/** A scenario's host command: performs its operations on the live context, then answers. */
function hostCommand(spec: HostCommandSpec): Command {
  return {
    name: spec.name,
    description: spec.description,
    async execute(_args, context) {
      for (const op of spec.operations) {
        if (op.op === 'set_permission_mode') await context.setPermissionMode(op.mode as PermissionMode);
        else if (op.op === 'clear') await context.clear();
        else if (op.op === 'compact') await context.compact(op.instructions);
        else throw new Error(`unknown context operation ${JSON.stringify(op)}`);
      }
      return { success: true, ...spec.result };
    },
  };
}

interface Scenario {
  name: string;
  description: string;
  provider: { turns: ScriptedTurn[] };
  host_tools?: HostToolSpec[];
  permission_answers?: Array<{ tool: string; answer: string; message?: string; input?: Record<string, unknown> }>;
  settings?: { permission_mode?: string; allow?: string[]; deny?: string[] };
  skills?: Array<{ name: string; content: string }>;
  commands?: Array<{ name: string; content: string }>;
  mcp_servers?: string[];
  host_commands?: HostCommandSpec[];
  builtin_tools?: boolean;
  output_format?: { type: 'json_schema'; schema: Record<string, unknown> };
  max_structured_output_retries?: number;
  actions: Array<
    | { submit: string }
    | { abort_after_event: string }
    | { command: { name: string; args: string } }
    | { wait_idle: Record<string, never> }
    | { start_background_subagent: { prompt: string; agent_type?: string } }
    | { list_background_tasks: Record<string, never> }
    | { cancel_background_task: string }
  >;
  expected: Record<string, unknown>;
}

const WAIT_MS = 20_000;
const KEPT = new Set([
  'text_delta',
  'thinking',
  'tool_start',
  'tool_end',
  'permission_request',
  'complete',
  'interrupted',
  'error',
  'skill_activation',
]);
const scenarioDir = path.join(repoDir, 'tests', 'conformance', 'scenarios');

const mcpServersDir = path.join(repoDir, 'tests', 'mcp-servers');

/** The scenario's MCP servers from the catalog in tests/conformance/README.md. */
function mcpServers(scenario: Scenario): Record<string, { command: string; args: string[] }> {
  const servers: Record<string, { command: string; args: string[] }> = {};
  for (const name of scenario.mcp_servers ?? []) {
    assert.equal(name, 'pytools', `${scenario.name}: unknown MCP server ${name}`);
    const python = path.join(mcpServersDir, '.venv', 'bin', 'python');
    assert.ok(existsSync(python), 'the MCP test servers are not installed: run tests/mcp-servers/setup.sh');
    servers[name] = { command: python, args: [path.join(mcpServersDir, 'python_server.py')] };
  }
  return servers;
}

function hostTool(spec: HostToolSpec) {
  return tool({
    name: spec.name,
    description: spec.description,
    inputSchema: spec.input_schema,
    readOnly: spec.read_only === true,
    async execute(_input: unknown, { signal }) {
      const delay = spec.delay_ms ?? 0;
      if (delay > 0) {
        const aborted = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), delay);
          signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve(true);
          });
        });
        if (aborted) return { content: 'aborted', isError: true };
      }
      return { content: spec.result.content, isError: spec.result.is_error === true };
    },
  });
}

function normalizeEvents(raw: RobotaEvent[], sessionId: string): unknown[] {
  let lastSeq = 0;
  const out: Array<Record<string, unknown>> = [];
  for (const event of raw) {
    assert.equal(event.session_id, sessionId, 'every event carries the session id');
    assert.ok(event.seq > lastSeq, `seq strictly increases (${event.seq} after ${lastSeq})`);
    lastSeq = event.seq;
    if (!KEPT.has(event.type)) continue;
    const previous = out.at(-1);
    if ((event.type === 'text_delta' || event.type === 'thinking') && previous?.type === event.type) {
      previous.text = `${String(previous.text)}${event.text}`;
      continue;
    }
    switch (event.type) {
      case 'text_delta':
      case 'thinking':
        out.push({ type: event.type, text: event.text });
        break;
      case 'tool_start':
        out.push({ type: event.type, name: event.tool.name, first_arg: event.tool.first_arg });
        break;
      case 'tool_end': {
        const projected: Record<string, unknown> = { type: event.type, name: event.tool.name, result: event.tool.result };
        if (event.tool.tool_result_data !== undefined) projected.tool_result_data = event.tool.tool_result_data;
        out.push(projected);
        break;
      }
      case 'permission_request':
        out.push({ type: event.type, tool_name: event.tool_name, input: event.input });
        break;
      case 'complete':
        out.push({
          type: event.type,
          response: event.outcome.response,
          stop_reason: event.outcome.stop_reason,
          tools_executed: event.outcome.tools_executed,
          ...(event.outcome.structured_output !== undefined
            ? { structured_output: event.outcome.structured_output }
            : {}),
        });
        break;
      case 'interrupted':
        out.push({ type: event.type });
        break;
      case 'error':
        out.push({ type: event.type, message: event.message });
        break;
      case 'skill_activation':
        out.push({
          type: event.type,
          skill_name: event.data.skill_name,
          invocation: event.data.invocation,
          mode: event.data.mode,
          status: event.data.status,
        });
        break;
      default:
        break;
    }
  }
  return out;
}

function normalizeMessage(message: Message): Record<string, unknown> {
  const out: Record<string, unknown> = { role: message.role };
  const text = message.content
    .filter((b) => b.type === 'text')
    .map((b) => String(b.text))
    .join('');
  if (text !== '') out.text = text;
  const toolUses = message.content
    .filter((b) => b.type === 'tool_use')
    .map((b) => ({ name: b.name, input: b.input }));
  if (toolUses.length > 0) out.tool_uses = toolUses;
  const toolResults = message.content
    .filter((b) => b.type === 'tool_result')
    .map((b) => ({ content: b.content, is_error: b.is_error ?? false }));
  if (toolResults.length > 0) out.tool_results = toolResults;
  if (message.state === 'interrupted') out.state = 'interrupted';
  return out;
}

async function play(scenario: Scenario): Promise<Record<string, unknown>> {
  const answers = [...(scenario.permission_answers ?? [])];
  const problems: string[] = [];
  const settings =
    scenario.settings === undefined
      ? undefined
      : {
          permissions: {
            ...(scenario.settings.permission_mode !== undefined ? { defaultMode: scenario.settings.permission_mode } : {}),
            allow: scenario.settings.allow ?? [],
            deny: scenario.settings.deny ?? [],
          },
        };
  const session = new InteractiveSession({
    cwd: tempDir(),
    home: tempDir(),
    loadProjectContext: false,
    builtinTools: scenario.builtin_tools ?? false,
    ...(settings !== undefined ? { settings } : {}),
    ...(scenario.skills !== undefined ? { skills: scenario.skills } : {}),
    ...(scenario.commands !== undefined ? { customCommands: scenario.commands } : {}),
    ...(scenario.mcp_servers !== undefined ? { mcpServers: mcpServers(scenario) } : {}),
    ...(scenario.output_format !== undefined ? { outputFormat: scenario.output_format } : {}),
    ...(scenario.max_structured_output_retries !== undefined
      ? { maxStructuredOutputRetries: scenario.max_structured_output_retries }
      : {}),
    ...(scenario.host_commands !== undefined
      ? { commandModules: [{ name: 'scenario', commands: scenario.host_commands.map(hostCommand) }] }
      : {}),
    provider: new ScriptedProvider(scenario.provider.turns),
    tools: (scenario.host_tools ?? []).map(hostTool),
    permissionHandler: (request): PermissionAnswer => {
      const next = answers.shift();
      if (next === undefined || next.tool !== request.tool_name) {
        problems.push(`unexpected permission request for ${request.tool_name}`);
        return { type: 'deny', message: 'unexpected request' };
      }
      switch (next.answer) {
        case 'allow_once':
          return 'allow_once';
        case 'allow_session':
          return 'allow_session';
        case 'allow_with_input':
          return { type: 'allow_with_input', input: next.input ?? {} };
        case 'deny':
          return { type: 'deny', message: next.message ?? '' };
        default:
          problems.push(`unknown permission answer ${next.answer}`);
          return 'deny';
      }
    },
  });
  const events: RobotaEvent[] = [];
  let waiter: (() => void) | null = null;
  session.on('event', (event) => {
    events.push(event);
    waiter?.();
  });
  const prompts: Array<Promise<PromptResult>> = [];
  const commands: unknown[] = [];
  const backgroundTasks: unknown[] = [];
  const settle = async (): Promise<void> => {
    await within(WAIT_MS, session.waitIdle(), `${scenario.name}: wait_idle`);
    await within(WAIT_MS, Promise.all(prompts), `${scenario.name}: prompts`);
  };
  for (const action of scenario.actions) {
    if ('submit' in action) {
      prompts.push(session.submit(action.submit));
    } else if ('abort_after_event' in action) {
      const type = action.abort_after_event;
      await within(
        WAIT_MS,
        new Promise<void>((resolve) => {
          const check = (): void => {
            if (events.some((e) => e.type === type)) {
              waiter = null;
              resolve();
            }
          };
          waiter = check;
          check();
        }),
        `${scenario.name}: waiting for ${type}`,
      );
      session.abort();
    } else if ('command' in action) {
      const result: CommandResult = await session.executeCommand(action.command.name, action.command.args);
      commands.push({ name: action.command.name, success: result.success, effects: result.effects ?? [] });
    } else if ('start_background_subagent' in action) {
      const { prompt, agent_type } = action.start_background_subagent;
      await session.startBackgroundSubagent(prompt, agent_type !== undefined ? { agentType: agent_type } : {});
    } else if ('list_background_tasks' in action) {
      backgroundTasks.push(
        session.listBackgroundTasks().map((t) => ({ id: t.id, kind: t.kind, status: t.status, command: t.command })),
      );
    } else if ('cancel_background_task' in action) {
      await within(WAIT_MS, session.cancelBackgroundTask(action.cancel_background_task), `${scenario.name}: cancel`);
    } else if ('wait_idle' in action) {
      await settle();
    } else {
      assert.fail(`${scenario.name}: unknown action ${JSON.stringify(action)}`);
    }
  }
  await settle();
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(problems, [], `${scenario.name}: permission answers`);
  const actual: Record<string, unknown> = {};
  const expected = scenario.expected;
  if ('events' in expected) actual.events = normalizeEvents(events, session.getSessionId());
  if ('messages' in expected) actual.messages = session.getMessages().map(normalizeMessage);
  if ('background_tasks' in expected) actual.background_tasks = backgroundTasks;
  if ('response' in expected) {
    const last = [...events].reverse().find((e) => e.type === 'complete' || e.type === 'interrupted');
    actual.response = last?.type === 'complete' ? last.outcome.response : last?.type === 'interrupted' ? last.outcome?.response : undefined;
  }
  if ('commands' in expected) actual.commands = commands;
  if ('name' in expected) actual.name = session.getName();
  await session.shutdown();
  return actual;
}

describe('conformance scenarios', () => {
  const files = readdirSync(scenarioDir).filter((f) => f.endsWith('.json')).sort();
  test('the scenario directory is not empty', () => {
    assert.ok(files.length >= 5, `found ${files.length} scenarios in ${scenarioDir}`);
  });
  for (const file of files) {
    const scenario = JSON.parse(readFileSync(path.join(scenarioDir, file), 'utf8')) as Scenario;
    test(scenario.name, async () => {
      assert.equal(`${scenario.name}.json`, file, 'name matches the file name');
      const actual = await play(scenario);
      assert.deepEqual(actual, scenario.expected, `${scenario.name}: expected vs actual`);
    });
  }
});
