/** Skills from Node: SKILL.md folders in the project and the home folder, host-registered
 * folders and data, listing with sources, running one by name, typed skill_activation events. */

import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { InteractiveSession, ScriptedProvider, type RobotaEventOf } from '@robota/native';

import { hermetic, tempDir, within } from './helpers.mjs';

function writeSkill(root: string, name: string, text: string): void {
  mkdirSync(path.join(root, name), { recursive: true });
  writeFileSync(path.join(root, name, 'SKILL.md'), text);
}

test('skills: listed with their source, run by name, typed skill_activation events', async () => {
  const options = hermetic();
  writeSkill(path.join(options.cwd, '.claude', 'skills'), 'review', '---\ndescription: Review code.\n---\nReview $0 now.\n');
  writeSkill(path.join(options.home, '.robota', 'skills'), 'notes', '---\ndescription: Take notes.\n---\nNOTES\n');
  const hosted = tempDir();
  writeSkill(hosted, 'from-folder', '---\ndescription: From a host folder.\n---\nFOLDER\n');
  const session = new InteractiveSession({
    ...options,
    provider: new ScriptedProvider([{ text: 'Reviewed.' }]),
    skills: [{ dir: hosted }, { name: 'greet', content: '---\ndescription: Greet.\n---\nHi $0' }],
  });
  const sources = Object.fromEntries(session.listSkills().map((s) => [s.name, s.source.kind]));
  assert.deepEqual(sources, { 'from-folder': 'host', greet: 'host', notes: 'user', review: 'project' });
  const seen: Array<RobotaEventOf<'skill_activation'>> = [];
  session.on('skill_activation', (event) => seen.push(event));
  const result = await within(5_000, session.executeCommand('review', 'lib.ts'), 'skill command');
  assert.equal(result.success, true, result.message);
  // waitIdle() resolves after the listeners have had every event of the skill's run.
  await within(5_000, session.waitIdle(), 'idle');
  assert.equal(seen.length, 2, 'both skill_activation events were delivered by waitIdle()');
  await session.shutdown();
  assert.match(JSON.stringify(session.getMessages()[0]), /Review lib\.ts now\./);
  assert.deepEqual(
    seen.map((e) => [e.data.skill_name, e.data.invocation, e.data.mode, e.data.status, e.data.source]),
    [
      ['review', 'user_slash', 'inject', 'started', 'project'],
      ['review', 'user_slash', 'inject', 'completed', 'project'],
    ],
  );
});
