/** Custom slash commands from Node: `.claude/commands` of the project and the home folder, a
 * host folder and a command given as data, listing with sources (and namespaces), running one
 * with arguments by name. */

import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { InteractiveSession, ScriptedProvider } from '@robota/native';

import { hermetic, tempDir, within } from './helpers.mjs';

function write(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
}

test('custom commands: listed with their source, run with arguments', async () => {
  const options = hermetic();
  write(
    path.join(options.cwd, '.claude', 'commands', 'git', 'review.md'),
    '---\ndescription: Review a file.\n---\nReview $1 for $2.\n',
  );
  write(path.join(options.home, '.claude', 'commands', 'standup.md'), 'Write my standup.\n');
  const hosted = tempDir();
  write(path.join(hosted, 'deploy.md'), '---\ndescription: Deploy.\n---\nDEPLOY $ARGUMENTS\n');
  const session = new InteractiveSession({
    ...options,
    provider: new ScriptedProvider([{ text: 'Reviewed.' }]),
    customCommands: [{ dir: hosted }, { name: 'greet', content: 'Say hi to $1.' }],
  });
  const listed = Object.fromEntries(session.listCommands().map((c) => [c.name, c]));
  assert.deepEqual(listed['review']?.source, { kind: 'project' });
  assert.equal(listed['review']?.descriptor.description, 'Review a file. (project:git)');
  assert.deepEqual(listed['standup']?.source, { kind: 'user' });
  assert.deepEqual(listed['deploy']?.source, { kind: 'host' });
  assert.deepEqual(listed['greet']?.source, { kind: 'host' });
  const result = await within(
    5_000,
    session.executeCommand('review', 'main.ts "error handling"'),
    'custom command',
  );
  assert.equal(result.success, true, result.message);
  await within(5_000, session.waitIdle(), 'idle');
  await session.shutdown();
  assert.match(JSON.stringify(session.getMessages()[0]), /Review main\.ts for error handling\./);
});
