/** Edit checkpoints and project memory from Node, against mock-llm: the model writes, edits
 * and (through a JavaScript tool declaring `mutatesFiles`) deletes files in a temp git repo over
 * two prompts; the checkpoints are listed, inspected, restored and rolled back; the `rewind`
 * and `memory` commands run, and a secret is refused. */

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { AnthropicProvider, InteractiveSession, RobotaError, ScriptedProvider, tool } from '@robota/native';

import { hermetic, startMockLlm, within } from './helpers.mjs';

const git = (cwd: string, ...args: string[]): string => execFileSync('git', args, { cwd, encoding: 'utf8' });

test('edit checkpoints: restore to the first prompt, then roll it back', async () => {
  const options = hermetic();
  const work = realpathSync(options.cwd);
  git(work, 'init', '-q');
  git(work, 'config', 'user.email', 't@example.com');
  git(work, 'config', 'user.name', 't');
  writeFileSync(path.join(work, 'a.txt'), 'one\n');
  writeFileSync(path.join(work, 'gone.txt'), 'doomed\n');
  writeFileSync(path.join(work, '.gitignore'), '.robota/\n');
  git(work, 'add', '.');
  git(work, 'commit', '-qm', 'start');
  const removeFile = tool({
    name: 'remove_file',
    description: 'Deletes a file.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
    mutatesFiles: ['path'],
    execute: (input: { path: string }) => {
      unlinkSync(path.join(work, input.path));
      return 'removed';
    },
  });
  const mock = await startMockLlm({
    turns: [
      { tool_calls: [{ id: 'w', name: 'Write', input: { file_path: path.join(work, 'new.txt'), content: 'created\n' } }] },
      { text: 'one' },
      {
        tool_calls: [
          { id: 'e', name: 'Edit', input: { file_path: path.join(work, 'a.txt'), old_string: 'one', new_string: 'two' } },
          { id: 'r', name: 'remove_file', input: { path: 'gone.txt' } },
        ],
      },
      { text: 'two' },
    ],
  });
  const session = new InteractiveSession({
    ...options,
    cwd: work,
    permissionMode: 'bypassPermissions',
    sandbox: false,
    provider: new AnthropicProvider({ model: 'claude-test', apiKey: 'sk-test', baseUrl: mock.baseUrl }),
    tools: [removeFile],
  });
  try {
    assert.equal((await within(10_000, session.submit('create'), 'first')).status, 'complete');
    assert.equal((await within(10_000, session.submit('edit and delete'), 'second')).status, 'complete');
    assert.equal(readFileSync(path.join(work, 'a.txt'), 'utf8'), 'two\n');
    assert.equal(existsSync(path.join(work, 'gone.txt')), false);

    assert.deepEqual(
      session.listEditCheckpoints().map((c) => c.id),
      ['turn-0001', 'turn-0002'],
    );
    const inspected = session.inspectEditCheckpoint('turn-0002');
    assert.deepEqual(
      inspected.files.map((f) => f.display_path),
      ['a.txt', 'gone.txt'],
    );
    assert.deepEqual(inspected.rollback_range, ['turn-0002']);
    assert.throws(
      () => session.inspectEditCheckpoint('turn-0099'),
      (e: unknown) => e instanceof RobotaError && e.code === 'invalid_argument',
    );

    const restored = session.restoreEditCheckpoint('turn-0001');
    assert.deepEqual(restored.rolled_back, ['turn-0002']);
    assert.equal(readFileSync(path.join(work, 'a.txt'), 'utf8'), 'one\n');
    assert.equal(readFileSync(path.join(work, 'gone.txt'), 'utf8'), 'doomed\n');
    const listed = await session.executeCommand('rewind', 'list');
    assert.equal(listed.success, true);
    assert.match(listed.message, /Bash/);
    const rolledBack = session.rollbackEditCheckpoint('turn-0001');
    assert.deepEqual(rolledBack.deleted, ['new.txt']);
    assert.equal(git(work, 'status', '--porcelain'), '');
  } finally {
    await session.shutdown();
    await mock.stop();
  }
});

test('memory: add, de-duplicate, refuse a secret, show', async () => {
  const options = hermetic();
  const session = new InteractiveSession({ ...options, provider: new ScriptedProvider([]) });
  const added = await session.executeCommand('memory', 'add project build Run make check first');
  assert.equal(added.success, true, added.message);
  const again = await session.executeCommand('memory', 'add project build run make CHECK first.');
  assert.equal((again.data as { deduplicated: boolean }).deduplicated, true);
  const secret = await session.executeCommand('memory', 'add reference ci token: ghp_1A2b3C4d5E6f7G8h9I0jK1lM2nO3pQ4rS5tU');
  assert.equal(secret.success, false);
  assert.equal((secret.data as { category: string }).category, 'api_token');
  const index = readFileSync(path.join(options.cwd, '.robota', 'memory', 'MEMORY.md'), 'utf8');
  assert.match(index, /Run make check first/);
  assert.doesNotMatch(index, /ghp_/);
  const shown = await session.executeCommand('memory', 'show build');
  assert.match(shown.message, /Run make check first/);
  await session.shutdown();
});
