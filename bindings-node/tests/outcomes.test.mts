/**
 * How a prompt ends, against mock-llm over loopback: a refusal, a cut-off answer and a failed
 * model call (401, retries exhausted) each end `submit()` with their own status — never
 * `complete` — with the provider's explanation or the error's kind, HTTP status and retry advice.
 */

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { AnthropicProvider, InteractiveSession, createQuery, type RobotaEvent } from '@robota/native';

import { hermetic, startMockLlm, within, type MockLlm } from './helpers.mjs';

describe('outcomes', () => {
  let mock: MockLlm;
  before(async () => {
    mock = await startMockLlm();
  });
  after(async () => {
    await mock.stop();
  });

  const provider = () =>
    new AnthropicProvider({ model: 'claude-test', apiKey: 'sk-test', baseUrl: mock.baseUrl, maxRetries: 0 });

  test('a refusal resolves refused, with what the provider said, and is not re-asked', async () => {
    const details = { type: 'refusal', category: 'cyber', explanation: 'Working malware.' };
    await mock.setScript({ turns: [{ refusal: ["I can't ", 'help with that.'], stop_details: details }] });
    const session = new InteractiveSession({ ...hermetic(), provider: provider() });
    const refused: RobotaEvent[] = [];
    session.on('refused', (event) => refused.push(event));
    const result = await within(10_000, session.submit('write malware'), 'submit');
    assert.equal(result.status, 'refused');
    assert.ok(result.status === 'refused');
    assert.equal(result.outcome.stop_reason, 'refused');
    assert.equal(result.outcome.response, "I can't help with that.");
    assert.deepEqual(result.outcome.refusal, {
      text: "I can't help with that.",
      category: 'cyber',
      explanation: 'Working malware.',
    });
    assert.equal(refused.length, 1);
    assert.equal((await mock.requests()).length, 1);
    await session.shutdown();
  });

  test('a cut-off answer resolves truncated', async () => {
    await fetch(`${mock.baseUrl}/_mock/reset`, { method: 'POST', body: '{}' });
    await mock.setScript({ turns: [{ text: ['Half of ', 'it'], stop_reason: 'max_tokens' }, { text: ' and the rest.' }] });
    const session = new InteractiveSession({ ...hermetic(), provider: provider() });
    const result = await within(10_000, session.submit('write a lot'), 'submit');
    assert.equal(result.status, 'truncated');
    assert.equal(result.status === 'truncated' && result.outcome.response, 'Half of it');
    // The host chooses to continue: the model sees the cut-off answer and is asked to go on.
    const after = await within(10_000, session.continueAnswer(), 'continue');
    assert.equal(after.status === 'complete' && after.outcome.response, ' and the rest.');
    const sent = JSON.stringify((await mock.requests())[1]?.body.messages);
    assert.match(sent, /Half of it/);
    assert.match(sent, /cut off/);
    await session.shutdown();
  });

  test('a failed model call resolves error, never complete', async () => {
    await mock.setScript({ turns: [{ fault: { kind: 'status', status: 401, message: 'invalid x-api-key' } }] });
    const session = new InteractiveSession({ ...hermetic(), provider: provider() });
    const types: string[] = [];
    session.on('event', (event) => types.push(event.type));
    // An 'error' listener: without one the engine's error event is not emitted as 'error'.
    session.on('error', () => {});
    const result = await within(10_000, session.submit('hi'), 'submit');
    assert.equal(result.status, 'error');
    assert.ok(result.status === 'error');
    assert.match(result.message, /invalid x-api-key/);
    assert.equal(result.error.kind, 'auth');
    assert.equal(result.error.status, 401);
    assert.equal(result.error.retryable, false);
    assert.ok(types.includes('error'), types.join());
    assert.ok(!types.includes('complete'), types.join());

    await mock.setScript({ turns: [{ fault: { kind: 'status', status: 429, retry_after: '7' } }] });
    const limited = await within(10_000, session.submit('again'), 'submit');
    assert.ok(limited.status === 'error');
    assert.equal(limited.error.kind, 'rate_limit');
    assert.equal(limited.error.retryable, true);
    assert.equal(limited.error.retry_after_ms, 7000);
    await session.shutdown();
  });

  test('an unreachable host resolves error with kind network', async () => {
    const session = new InteractiveSession({
      ...hermetic(),
      provider: new AnthropicProvider({ model: 'm', apiKey: 'k', baseUrl: 'http://127.0.0.1:1', maxRetries: 0 }),
    });
    session.on('error', () => {});
    const result = await within(10_000, session.submit('hi'), 'submit');
    assert.ok(result.status === 'error');
    assert.equal(result.error.kind, 'network');
    assert.equal(result.error.retryable, true);
    await session.shutdown();
  });

  test('query results carry the status and the refusal', async () => {
    await mock.setScript({ turns: [{ refusal: 'No.', stop_details: { type: 'refusal', explanation: 'Policy.' } }] });
    const query = createQuery({ ...hermetic(), provider: provider() });
    const result = await within(10_000, query('do harm'), 'query');
    assert.equal(result.status, 'refused');
    assert.equal(result.refusal?.explanation, 'Policy.');
  });
});
