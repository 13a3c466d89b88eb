/**
 * The Claude Code tools models call (TodoWrite, MultiEdit, NotebookEdit) against mock-llm: the
 * todo list arrives as a `todo_update` event, the editing tools ask like Edit, and PreToolUse hooks
 * see (and can block) all three.
 */

import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { AnthropicProvider, InteractiveSession, type HookRegistration, type RobotaEventOf } from '@robota/native';

import { hermetic, startMockLlm, within, type MockLlm } from './helpers.mjs';

/** A session on mock-llm whose permission handler records the tools it is asked about and
 * allows them. */
function askingSession(
  mock: MockLlm,
  options: ReturnType<typeof hermetic>,
  asked: string[],
  hooks: HookRegistration[] = [],
): InteractiveSession {
  return new InteractiveSession({
    ...options,
    provider: new AnthropicProvider({ model: 'claude-test', apiKey: 'sk-test', baseUrl: mock.baseUrl }),
    permissionHandler: (request) => {
      asked.push(request.tool_name);
      return true;
    },
    hooks,
  });
}

describe('Claude Code tools', () => {
  let mock: MockLlm;
  before(async () => {
    mock = await startMockLlm();
  });
  after(async () => {
    await mock.stop();
  });

  test('TodoWrite emits todo_update; MultiEdit and NotebookEdit ask like Edit; hooks see all three', async () => {
    const options = hermetic();
    const app = path.join(options.cwd, 'app.ts');
    const notebook = path.join(options.cwd, 'nb.ipynb');
    const locked = path.join(options.cwd, 'locked.ts');
    writeFileSync(app, 'let a = 1;\nlet b = 2;\n');
    writeFileSync(locked, 'const keep = true;\n');
    writeFileSync(
      notebook,
      JSON.stringify({
        cells: [{ cell_type: 'code', id: 'c1', metadata: {}, execution_count: 4, outputs: [], source: ['x = 1'] }],
        metadata: {},
        nbformat: 4,
        nbformat_minor: 5,
      }),
    );
    await mock.setScript({
      turns: [
        {
          tool_calls: [
            {
              id: 'toolu_todo',
              name: 'TodoWrite',
              input: {
                todos: [
                  { content: 'Edit app.ts', status: 'completed', activeForm: 'Editing app.ts' },
                  { content: 'Update the notebook', status: 'in_progress', activeForm: 'Updating the notebook' },
                ],
              },
            },
          ],
        },
        {
          tool_calls: [
            {
              id: 'toolu_multi',
              name: 'MultiEdit',
              input: {
                file_path: app,
                edits: [
                  { old_string: 'let a = 1;', new_string: 'const a = 1;' },
                  { old_string: 'let b = 2;', new_string: 'const b = 2;' },
                ],
              },
            },
          ],
        },
        {
          tool_calls: [
            { id: 'toolu_nb', name: 'NotebookEdit', input: { notebook_path: notebook, cell_id: 'c1', new_source: 'x = 2' } },
          ],
        },
        {
          tool_calls: [
            {
              id: 'toolu_locked',
              name: 'MultiEdit',
              input: { file_path: locked, edits: [{ old_string: 'true', new_string: 'false' }] },
            },
          ],
        },
        { text: 'done' },
      ],
    });
    const asked: string[] = [];
    const hooked: string[] = [];
    const session = askingSession(mock, options, asked, [
      {
        event: 'PreToolUse',
        matcher: 'TodoWrite|MultiEdit|NotebookEdit',
        callback: (input) => {
          hooked.push(String(input.tool_name));
          return JSON.stringify(input.tool_input).includes('locked')
            ? { type: 'block', reason: 'locked.ts is read-only' }
            : undefined;
        },
      },
    ]);
    const updates: Array<RobotaEventOf<'todo_update'>> = [];
    session.on('todo_update', (event) => updates.push(event));
    const result = await within(20_000, session.submit('work'), 'submit');
    assert.equal(result.status, 'complete');
    assert.equal(updates.length, 1);
    assert.deepEqual(updates[0]?.todos, [
      { content: 'Edit app.ts', status: 'completed', active_form: 'Editing app.ts' },
      { content: 'Update the notebook', status: 'in_progress', active_form: 'Updating the notebook' },
    ]);
    assert.equal(readFileSync(app, 'utf8'), 'const a = 1;\nconst b = 2;\n');
    const cells = (JSON.parse(readFileSync(notebook, 'utf8')) as { cells: Array<Record<string, unknown>> }).cells;
    assert.deepEqual(cells[0]?.source, ['x = 2']);
    assert.equal(cells[0]?.execution_count, null);
    // TodoWrite needs no approval; the call the hook blocked never asked nor ran.
    assert.deepEqual(asked, ['MultiEdit', 'NotebookEdit']);
    assert.deepEqual(hooked, ['TodoWrite', 'MultiEdit', 'NotebookEdit', 'MultiEdit']);
    assert.equal(readFileSync(locked, 'utf8'), 'const keep = true;\n');
    await session.shutdown();
  });
  test('configuration warnings reach the host; the valid entries still apply', async () => {
    const options = hermetic();
    mkdirSync(path.join(options.cwd, '.claude'));
    writeFileSync(
      path.join(options.cwd, '.claude', 'settings.json'),
      JSON.stringify({ permissions: { allow: ['// tools we trust', 'Bash*', 'Bash(echo:*)'] } }),
    );
    await mock.setScript({
      turns: [{ tool_calls: [{ id: 'toolu_echo', name: 'Bash', input: { command: 'echo allowed' } }] }, { text: 'done' }],
    });
    const asked: string[] = [];
    const session = askingSession(mock, options, asked);
    const warnings = session.getWarnings();
    const rule = warnings.filter((w) => w.json_path === 'permissions.allow[1]');
    assert.equal(rule.length, 1, JSON.stringify(warnings));
    assert.equal(rule[0]?.kind, 'permission_rule');
    assert.ok(rule[0]?.file?.endsWith('settings.json'));
    assert.match(rule[0]?.message ?? '', /invalid permission rule `Bash\*`.*the rule is skipped/);
    assert.ok(
      warnings.some((w) => w.message.includes('is a comment (`// tools we trust`) and was skipped')),
      JSON.stringify(warnings),
    );
    const result = await within(20_000, session.submit('echo'), 'submit');
    assert.equal(result.status, 'complete');
    assert.deepEqual(asked, [], 'the remaining allow rule took effect');
    await session.shutdown();
  });
});
