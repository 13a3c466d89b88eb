/** Plugins from Node: a local marketplace folder added and a plugin installed through the
 * `plugin` command, then listed with its source and state, its skill (named plugin:skill) run by
 * a new session. */

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

test('plugins: installed from a local marketplace, listed with their state, their skills run', async () => {
  const options = hermetic();
  const market = tempDir();
  write(
    path.join(market, '.claude-plugin', 'marketplace.json'),
    JSON.stringify({ name: 'local', plugins: [{ name: 'hello', source: './hello' }] }),
  );
  write(path.join(market, 'hello', '.claude-plugin', 'plugin.json'), JSON.stringify({ name: 'hello', version: '0.1.0' }));
  write(path.join(market, 'hello', 'skills', 'hi', 'SKILL.md'), '---\ndescription: Say hi.\n---\nSay hi to $0.\n');

  const first = new InteractiveSession({ ...options, provider: new ScriptedProvider([]) });
  assert.deepEqual(first.listPlugins().plugins, []);
  const added = await within(10_000, first.executeCommand('plugin', `marketplace add ${market}`), 'add');
  assert.equal(added.success, true, added.message);
  const installed = await within(10_000, first.executeCommand('plugin', 'install hello@local'), 'install');
  assert.equal(installed.success, true, installed.message);
  const bad = await within(10_000, first.executeCommand('plugin', 'install nothing@local'), 'bad install');
  assert.equal(bad.success, false);
  await first.shutdown();

  const session = new InteractiveSession({ ...options, provider: new ScriptedProvider([{ text: 'Hi!' }]) });
  const listing = session.listPlugins();
  assert.equal(listing.plugins.length, 1);
  const plugin = listing.plugins[0];
  assert.ok(plugin !== undefined);
  assert.equal(plugin.id, 'hello@local');
  assert.equal(plugin.version, '0.1.0');
  assert.ok(plugin.installed && plugin.enabled && plugin.loaded);
  assert.deepEqual(plugin.skills, ['hello:hi']);
  assert.deepEqual(listing.marketplaces.map((m) => m.name), ['local']);
  assert.deepEqual(
    session.listSkills().map((s) => [s.name, s.source.kind]),
    [['hello:hi', 'plugin']],
  );
  const result = await within(5_000, session.executeCommand('hello:hi', 'Ada'), 'plugin skill');
  assert.equal(result.success, true, result.message);
  await within(5_000, session.waitIdle(), 'idle');
  await session.shutdown();
  assert.match(JSON.stringify(session.getMessages()[0]), /Say hi to Ada\./);
});
