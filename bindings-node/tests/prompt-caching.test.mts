/**
 * Anthropic prompt caching from Node: on by default (breakpoints on the tool definitions and the
 * conversation's end), off with `promptCaching: false`, one-hour TTL with `promptCacheTtl`;
 * cache reads come back in the usage.
 */

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { AnthropicProvider, InteractiveSession, type AnthropicProviderOptions } from '@robota/native';

import { hermetic, startMockLlm, within, type MockLlm } from './helpers.mjs';

describe('prompt caching', () => {
  let mock: MockLlm;
  before(async () => {
    mock = await startMockLlm();
  });
  after(async () => {
    await mock.stop();
  });

  const cases: Array<[Partial<AnthropicProviderOptions>, unknown]> = [
    [{}, { type: 'ephemeral' }],
    [{ promptCacheTtl: '1h' }, { type: 'ephemeral', ttl: '1h' }],
    [{ promptCaching: false }, undefined],
  ];
  for (const [setting, marker] of cases) {
    test(`setting ${JSON.stringify(setting)}`, async () => {
      // Forget the requests of the case before.
      await fetch(`${mock.baseUrl}/_mock/reset`, { method: 'POST', body: '{}' });
      await mock.setScript({
        turns: [{ text: 'one' }, { text: 'two' }],
        prompt_cache: { chars_per_token: 4, min_tokens: 0 },
      });
      const provider = new AnthropicProvider({
        model: 'claude-test',
        apiKey: 'sk-test',
        baseUrl: mock.baseUrl,
        maxRetries: 0,
        ...setting,
      });
      const session = new InteractiveSession({ ...hermetic(), provider });
      await within(10_000, session.submit('first'), 'first');
      const second = await within(10_000, session.submit('second'), 'second');
      await session.shutdown();
      const bodies = (await mock.requests()).map((r) => r.body);
      assert.equal(bodies.length, 2);
      assert.ok(second.status === 'complete');
      const read = second.outcome.usage.cache_read_input_tokens ?? 0;
      if (marker === undefined) {
        assert.ok(!JSON.stringify(bodies).includes('cache_control'));
        assert.equal(read, 0);
        return;
      }
      for (const body of bodies) {
        assert.deepEqual(body.tools.at(-1).cache_control, marker);
        assert.deepEqual(body.messages.at(-1).content.at(-1).cache_control, marker);
      }
      assert.ok(read > 0, `cache read ${read}`);
    });
  }
});
