/**
 * OpenTelemetry export from Node: a session with `telemetry` sends its spans to a real OTLP
 * receiver (tests/otlp-receiver, started here) over gRPC, the prompt under the `traceparent`
 * given to `submit`; a malformed traceparent is refused with `invalid_argument`.
 */

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';

import { AnthropicProvider, InteractiveSession, RobotaError } from '@robota/native';

import { hermetic, repoDir, startMockLlm, within, type MockLlm } from './helpers.mjs';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

interface Span {
  type: string;
  name: string;
  trace_id: string;
  parent_span_id: string;
  span_id: string;
  service_name: string | null;
  attributes: Record<string, unknown>;
}

function receiverBinary(): string {
  const target = process.env.CARGO_TARGET_DIR ?? path.join(repoDir, 'target');
  const binary = path.join(target, 'debug', 'otlp-receiver');
  if (!existsSync(binary)) throw new Error(`otlp-receiver not found at ${binary}; run \`cargo build -p otlp-receiver\``);
  return binary;
}

describe('telemetry', () => {
  let mock: MockLlm;
  before(async () => {
    mock = await startMockLlm();
  });
  after(async () => {
    await mock.stop();
  });

  const provider = () =>
    new AnthropicProvider({ model: 'claude-test', apiKey: 'sk-test', baseUrl: mock.baseUrl, maxRetries: 0 });

  test('spans reach the collector in the trace of the submit traceparent', async () => {
    const child = spawn(receiverBinary(), [], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: child.stdout! });
    const spans: Span[] = [];
    let ready: (endpoints: { grpc: string }) => void;
    const endpoints = new Promise<{ grpc: string }>((resolve) => (ready = resolve));
    let first = true;
    lines.on('line', (line) => {
      const value = JSON.parse(line);
      if (first) {
        first = false;
        ready(value);
      } else if (value.type === 'span') {
        spans.push(value as Span);
      }
    });
    try {
      const { grpc } = await within(10_000, endpoints, 'receiver');
      await mock.setScript({ turns: [{ text: 'traced', usage: { input_tokens: 9, output_tokens: 2 } }] });
      const session = new InteractiveSession({
        ...hermetic(),
        provider: provider(),
        telemetry: { endpoint: grpc, protocol: 'grpc', serviceName: 'node-host' },
      });
      const result = await within(10_000, session.submit('hello', { traceparent: `00-${TRACE}-${PARENT}-01` }), 'submit');
      assert.equal(result.status, 'complete');
      assert.equal(await session.flushTelemetry(), true);
      await session.shutdown();
      for (let i = 0; i < 200 && !spans.some((s) => s.name === 'chat claude-test'); i++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      const prompt = spans.find((s) => s.name === 'invoke_agent robota');
      assert.ok(prompt, JSON.stringify(spans));
      assert.equal(prompt.trace_id, TRACE);
      assert.equal(prompt.parent_span_id, PARENT);
      assert.equal(prompt.service_name, 'node-host');
      const chat = spans.find((s) => s.name === 'chat claude-test');
      assert.ok(chat, JSON.stringify(spans));
      assert.equal(chat.parent_span_id, prompt.span_id);
      assert.equal(chat.attributes['gen_ai.usage.input_tokens'], 9);
    } finally {
      child.stdin?.end();
      if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
    }
  });

  test('a malformed traceparent is an invalid_argument error', async () => {
    assert.throws(
      () => new InteractiveSession({ ...hermetic(), provider: provider(), traceparent: '00-nope' }),
      (error: unknown) => error instanceof RobotaError && error.code === 'invalid_argument' && /W3C/.test(error.message),
    );
    const session = new InteractiveSession({ ...hermetic(), provider: provider() });
    await assert.rejects(
      session.submit('hi', { traceparent: 'garbage' }),
      (error: unknown) => error instanceof RobotaError && error.code === 'invalid_argument',
    );
    await session.shutdown();
  });
});
