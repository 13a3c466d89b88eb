/** Agent definitions from Node: a Node session composes the same command modules as every other
 * language, so `.claude/agents/*.md` files load and the `agent` command lists and runs them. */

import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { InteractiveSession, ScriptedProvider } from '@robota/native';

import { hermetic, within } from './helpers.mjs';

test('agents: project agent definitions load and the agent command lists them', async () => {
  const options = hermetic();
  const agents = path.join(options.cwd, '.claude', 'agents');
  mkdirSync(agents, { recursive: true });
  writeFileSync(
    path.join(agents, 'reviewer.md'),
    '---\nname: reviewer\ndescription: Reviews a change for bugs.\ntools: [Read, Grep]\n---\nReview carefully.\n',
  );
  const session = new InteractiveSession({ ...options, provider: new ScriptedProvider([{ text: 'ok' }]) });
  try {
    assert.ok(session.listCommands().some((c) => c.name === 'agent'), 'the agent command is there');
    const listed = await within(5_000, session.executeCommand('agent', 'list'), 'agent list');
    assert.equal(listed.success, true, listed.message);
    assert.match(listed.message, /reviewer/);
    assert.match(listed.message, /Reviews a change for bugs\./);
  } finally {
    await session.shutdown();
  }
});
