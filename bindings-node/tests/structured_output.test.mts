/**
 * Structured output against mock-llm: an answer valid first time (typed from the schema), one
 * fixed after the follow-up that names the validation errors, one that never matches (a
 * `structured_output` RobotaError after 1 + the limit requests), and the `complete` event and
 * prompt result of an interactive session.
 */

import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';

import {
  AnthropicProvider,
  InteractiveSession,
  RobotaError,
  createQuery,
  type FromSchema,
  type RobotaEvent,
} from '@robota/native';

import { hermetic, startMockLlm, within, type MockLlm } from './helpers.mjs';

const citySchema = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    population: { type: 'integer', minimum: 0 },
    size: { enum: ['small', 'large'] },
  },
  required: ['name', 'population'],
  additionalProperties: false,
} as const;

type City = FromSchema<typeof citySchema>;

// Compile-time checks of the schema → type mapping (tsc --strict fails the build otherwise).
const typed: City = { name: 'Lisbon', population: 1, size: 'large' };
// @ts-expect-error `population` is required by the schema.
const missing: City = { name: 'Lisbon' };
void typed;
void missing;

function lastUserText(request: { body: any }): string {
  const content = request.body.messages.at(-1).content;
  if (typeof content === 'string') return content;
  return (content as Array<{ text?: string }>).map((block) => block.text ?? '').join('');
}

describe('structured output', () => {
  let mock: MockLlm | undefined;
  afterEach(async () => {
    await mock?.stop();
    mock = undefined;
  });

  const provider = (m: MockLlm) =>
    new AnthropicProvider({ model: 'claude-test', apiKey: 'sk-test', baseUrl: m.baseUrl, maxRetries: 0 });

  test('a valid answer first time resolves typed from the schema', async () => {
    mock = await startMockLlm({ turns: [{ text: '{"name": "Lisbon", "population": 545000}' }] });
    const query = createQuery({ ...hermetic(), provider: provider(mock), builtinTools: false });
    const city = await within(10_000, query.structured('Largest city of Portugal?', citySchema), 'query');
    const population: number = city.population;
    assert.equal(population, 545000);
    assert.equal(city.name, 'Lisbon');
    assert.equal((await mock.requests()).length, 1);
  });

  test('an invalid answer is fixed after the follow-up names the errors', async () => {
    mock = await startMockLlm({
      turns: [{ text: '{"name": "Lisbon", "population": "many"}' }, { text: '{"name": "Lisbon", "population": 545000}' }],
    });
    const query = createQuery({ ...hermetic(), provider: provider(mock), builtinTools: false });
    const result = await within(
      10_000,
      query('Largest city of Portugal?', { outputFormat: { type: 'json_schema', schema: citySchema } }),
      'query',
    );
    assert.deepEqual(result.structured_output, { name: 'Lisbon', population: 545000 });
    const sent = await mock.requests();
    assert.equal(sent.length, 2);
    assert.match(lastUserText(sent[1]!), /\/population/);
  });

  test('an answer that never matches rejects with a structured_output error after the limit', async () => {
    mock = await startMockLlm({ repeat: true, turns: [{ text: 'Lisbon, about half a million people.' }] });
    const query = createQuery({
      ...hermetic(),
      provider: provider(mock),
      builtinTools: false,
      outputFormat: citySchema,
      maxStructuredOutputRetries: 2,
    });
    await assert.rejects(
      within(10_000, query('Largest city of Portugal?'), 'query'),
      (error: unknown) =>
        error instanceof RobotaError && error.code === 'structured_output' && /did not match/.test(error.message),
    );
    assert.equal((await mock.requests()).length, 3, '1 request + 2 follow-ups');
  });

  test('a malformed schema is an invalid_argument and nothing is sent', async () => {
    mock = await startMockLlm({ turns: [] });
    const query = createQuery({ ...hermetic(), provider: provider(mock), builtinTools: false });
    await assert.rejects(
      query('hi', { outputFormat: { type: 'no-such-type' } }),
      (error: unknown) => error instanceof RobotaError && error.code === 'invalid_argument',
    );
    assert.equal((await mock.requests()).length, 0);
  });

  test('an interactive session carries structured_output on complete and fails typed at the limit', async () => {
    mock = await startMockLlm({
      turns: [
        { text: '{"name": "Lisbon"}' },
        { text: '{"name": "Lisbon", "population": 545000}' },
        { text: 'no JSON here' },
        { text: 'still none' },
      ],
    });
    const session = new InteractiveSession({
      ...hermetic(),
      provider: provider(mock),
      builtinTools: false,
      outputFormat: { type: 'json_schema', schema: citySchema },
      maxStructuredOutputRetries: 1,
    });
    const completes: RobotaEvent[] = [];
    session.on('complete', (event) => completes.push(event));
    try {
      const fixed = await within(10_000, session.submit('Largest city of Portugal?'), 'submit');
      assert.ok(fixed.status === 'complete');
      assert.deepEqual(fixed.outcome.structured_output, { name: 'Lisbon', population: 545000 });
      const complete = completes.at(-1);
      assert.ok(complete?.type === 'complete');
      assert.deepEqual(complete.outcome.structured_output, { name: 'Lisbon', population: 545000 });
      const failed = await within(10_000, session.submit('And of Spain?'), 'submit');
      assert.ok(failed.status === 'error');
      assert.equal(failed.error.kind, 'structured_output');
      assert.ok((failed.outcome?.structured_output_errors ?? []).length > 0);
      assert.equal((await mock.requests()).length, 4);
    } finally {
      await session.shutdown();
    }
  });

  test('a prompt takes its own outputFormat; the next one is free text', async () => {
    mock = await startMockLlm({
      turns: [{ text: '{"name": "Lisbon", "population": 545000}' }, { text: 'Just text.' }],
    });
    const session = new InteractiveSession({ ...hermetic(), provider: provider(mock), builtinTools: false });
    try {
      const shaped = await within(10_000, session.submit('Largest city?', { outputFormat: citySchema }), 'submit');
      assert.ok(shaped.status === 'complete');
      assert.deepEqual(shaped.outcome.structured_output, { name: 'Lisbon', population: 545000 });
      const plain = await within(10_000, session.submit('Thanks'), 'submit');
      assert.ok(plain.status === 'complete');
      assert.equal(plain.outcome.structured_output, undefined);
      await assert.rejects(
        session.submit('again', { outputFormat: { type: 'no-such-type' } }),
        (error: unknown) => error instanceof RobotaError && error.code === 'invalid_argument',
      );
      assert.equal((await mock.requests()).length, 2);
    } finally {
      await session.shutdown();
    }
  });
});
