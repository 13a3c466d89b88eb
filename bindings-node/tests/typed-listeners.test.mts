/**
 * Type tests: code a user could write by mistake must fail `tsc --strict` (a wrong event name in
 * `on()`, a field the event does not have, a listener typed for another event, an unknown
 * permission mode or hook failure policy, an unknown hook event). Each mistake carries a
 * `@ts-expect-error`: if the types ever let it through, the directive is unused and compiling the
 * tests (`npm test`'s pretest) fails. The right code must compile; at run time the same mistakes
 * are refused with an `invalid_argument` (or `invalid_json`) error naming them.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  InteractiveSession,
  RobotaError,
  ScriptedProvider,
  type HookRegistration,
  type HooksOption,
  type RobotaEventOf,
} from '@robota/native';

import { hermetic } from './helpers.mjs';

/** Compiled, never called: what tsc must accept and refuse. */
export function typeChecks(session: InteractiveSession): void {
  // The right code.
  session.on('text_delta', (e) => process.stdout.write(e.text));
  session.on('tool_start', (e) => console.log(e.tool.name));
  session.on('event', (e) => console.log(e.type, e.seq));
  session.once('complete', (e) => console.log(e.outcome));
  new InteractiveSession({ provider: new ScriptedProvider([]), permissionMode: 'acceptEdits' });
  const guard: HookRegistration = { event: 'PreToolUse', onFailure: 'allow', callback: () => undefined };
  const map: HooksOption = { PreToolUse: () => ({ decision: 'block', reason: 'no' }) };
  void guard;
  void map;

  // @ts-expect-error an unknown event name
  session.on('text_dleta', () => undefined);
  // @ts-expect-error a field the event does not have
  session.on('text_delta', (e) => console.log(e.txt));
  const onToolStart = (e: RobotaEventOf<'tool_start'>): void => console.log(e.tool.name);
  // @ts-expect-error a listener typed for another event
  session.on('text_delta', onToolStart);
  // @ts-expect-error an unknown permission mode
  new InteractiveSession({ provider: new ScriptedProvider([]), permissionMode: 'yolo' });
  // @ts-expect-error an unknown hook failure policy
  const deny: HookRegistration = { event: 'PreToolUse', onFailure: 'deny', callback: () => undefined };
  // @ts-expect-error an unknown hook event in the map form
  const typo: HooksOption = { PreToolUs: () => undefined };
  void deny;
  void typo;
}

test('the mistakes tsc refuses are refused at run time too', () => {
  const untyped = (f: () => unknown, pattern: RegExp): void => {
    assert.throws(f, (e: unknown) => {
      assert.ok(e instanceof RobotaError, String(e));
      assert.ok(e.code === 'invalid_argument' || e.code === 'invalid_json', e.code);
      assert.match(e.message, pattern);
      return true;
    });
  };
  const session = new InteractiveSession({ ...hermetic(), provider: new ScriptedProvider([]) });
  untyped(() => (session.on as (name: string, f: () => void) => unknown)('text_dleta', () => undefined), /unknown event `text_dleta`/);
  untyped(
    () => new InteractiveSession({ ...hermetic(), provider: new ScriptedProvider([]), hooks: { PreToolUs: () => undefined } as never }),
    /PreToolUs/,
  );
  untyped(
    () =>
      new InteractiveSession({
        ...hermetic(),
        provider: new ScriptedProvider([]),
        hooks: [{ event: 'PreToolUse', onFailure: 'deny' as never, callback: () => undefined }],
      }),
    /hook `PreToolUse hook #1`: `onFailure`: .*`deny`/,
  );
});
