/**
 * The model catalog (`getModelInfo`, `listModels`) and the `fallbackModel` option, the latter
 * against mock-llm over loopback (an overloaded main model, then the fallback's answer).
 */

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import {
  AnthropicProvider,
  InteractiveSession,
  ProfileProvider,
  RobotaError,
  createQuery,
  getModelInfo,
  listModels,
  type ModelInfo,
} from '@robota/native';

import { hermetic, startMockLlm, within, type MockLlm } from './helpers.mjs';

describe('model catalog', () => {
  test('a snapshot of a known model has the catalog figures', () => {
    const info: ModelInfo = getModelInfo('claude-sonnet-4-5-20250929');
    assert.equal(info.model, 'claude-sonnet-4-5-20250929');
    assert.equal(info.known, true);
    assert.equal(info.catalog_id, 'claude-sonnet-4-5');
    assert.equal(info.provider, 'anthropic');
    assert.equal(info.context_window, 200000);
    assert.equal(info.max_output, 64000);
    assert.equal(info.thinking, true);
    assert.equal(info.price?.input_per_mtok, 3.0);
    assert.equal(info.price?.output_per_mtok, 15.0);
    assert.deepEqual(info.defaults, []);
    assert.ok(info.sources.length > 0 && info.sources.every((url) => url.startsWith('https://')));
    assert.match(info.checked, /^\d{4}-\d{2}$/);
  });

  test('a Bedrock id matches the catalog model', () => {
    const info = getModelInfo('us.anthropic.claude-sonnet-4-5-20250929-v1:0');
    assert.equal(info.known, true);
    assert.equal(info.catalog_id, 'claude-sonnet-4-5');
    assert.equal(info.context_window, 200000);
    assert.equal(info.price?.input_per_mtok, 3.0);
  });

  test('an unknown model gets the defaults and no price', () => {
    const info = getModelInfo('my-local-llama');
    assert.equal(info.known, false);
    assert.equal(info.catalog_id, undefined);
    assert.equal(info.price, undefined);
    assert.equal(info.max_output, undefined);
    assert.equal(info.thinking, false);
    assert.ok(info.context_window > 0);
    assert.deepEqual([...info.defaults].sort(), ['context_window', 'max_output', 'price']);
    assert.deepEqual(info.sources, []);
  });

  test('an empty, blank or overlong model id is an invalid_argument error', () => {
    for (const model of ['', '   ', 'x'.repeat(1025)]) {
      assert.throws(
        () => getModelInfo(model),
        (error: unknown) => error instanceof RobotaError && error.code === 'invalid_argument' && /model id/.test(error.message),
      );
    }
    assert.throws(
      () => getModelInfo(42 as unknown as string),
      (error: unknown) => error instanceof RobotaError && error.code === 'invalid_argument',
    );
  });

  test('listModels filters by provider', () => {
    const everything = listModels();
    const anthropic = listModels('anthropic');
    assert.ok(anthropic.length > 0 && anthropic.length < everything.length);
    assert.ok(anthropic.every((info) => info.known && info.provider === 'anthropic'));
    assert.ok(anthropic.some((info) => info.catalog_id === 'claude-sonnet-4-5'));
    assert.deepEqual(listModels('no-such-provider'), []);
  });
});

describe('fallbackModel', () => {
  let mock: MockLlm;
  before(async () => {
    mock = await startMockLlm();
  });
  after(async () => {
    await mock.stop();
  });

  const overloadedThenText = async () => {
    await fetch(`${mock.baseUrl}/_mock/reset`, { method: 'POST', body: '{}' });
    await mock.setScript({ turns: [{ fault: { kind: 'status', status: 529 } }, { text: 'from the fallback' }] });
  };
  const provider = () =>
    new AnthropicProvider({ model: 'claude-opus-4-6', apiKey: 'sk-test', baseUrl: mock.baseUrl, maxRetries: 0 });

  test('the fallback model answers when the main model is overloaded, with a warning event', async () => {
    await overloadedThenText();
    const session = new InteractiveSession({ ...hermetic(), provider: provider(), fallbackModel: 'claude-haiku-4-5' });
    const warnings: Array<{ type: string; [key: string]: unknown }> = [];
    session.on('session', (event) => {
      if (event.event.type === 'warning') warnings.push(event.event);
    });
    const result = await within(10_000, session.submit('hello'), 'submit');
    assert.equal(result.status, 'complete');
    assert.equal(result.status === 'complete' && result.outcome.response, 'from the fallback');
    const models = (await mock.requests()).map((request) => request.body.model);
    assert.deepEqual(models, ['claude-opus-4-6', 'claude-haiku-4-5']);
    assert.deepEqual(
      warnings.map((warning) => warning.source),
      ['fallback_model'],
    );
    assert.match(String(warnings[0]?.message), /claude-haiku-4-5/);
    await session.shutdown();
  });

  test('queries take fallbackModel too', async () => {
    await overloadedThenText();
    const query = createQuery({ ...hermetic(), provider: provider(), fallbackModel: 'claude-haiku-4-5' });
    const result = await within(10_000, query('hello'), 'query');
    assert.equal(result.response, 'from the fallback');
    const models = (await mock.requests()).map((request) => request.body.model);
    assert.deepEqual(models, ['claude-opus-4-6', 'claude-haiku-4-5']);
  });

  test('profile types are providers too: a Gemini session reaches the Gemini endpoint', async () => {
    await fetch(`${mock.baseUrl}/_mock/reset`, { method: 'POST', body: '{}' });
    await mock.setScript({ turns: [{ text: 'from gemini' }] });
    const gemini = new ProfileProvider('gemini', {
      model: 'gemini-2.5-pro',
      apiKey: 'g-key',
      baseUrl: mock.baseUrl,
      maxRetries: 0,
    });
    const session = new InteractiveSession({ ...hermetic(), provider: gemini });
    const result = await within(10_000, session.submit('hello'), 'submit');
    assert.equal(result.status === 'complete' && result.outcome.response, 'from gemini');
    assert.equal(session.getContextState().max_tokens, 1048576);
    const [request] = await mock.requests();
    assert.equal(request?.path, '/v1beta/models/gemini-2.5-pro:streamGenerateContent');
    assert.equal(request?.headers['x-goog-api-key'], 'g-key');
    await session.shutdown();
    // A gemma profile must name its model.
    assert.throws(
      () => new InteractiveSession({ ...hermetic(), provider: new ProfileProvider('gemma') }),
      (error: unknown) => error instanceof RobotaError && /model/.test(error.message),
    );
  });
});
