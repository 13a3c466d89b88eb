/** Test helpers: a hermetic temp directory and a mock-llm server started from the test. */

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** The bindings-node directory (tests are compiled to build-test/tests/). */
export const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The repository root. */
export const repoDir = path.resolve(packageDir, '..');

/** A fresh empty directory. */
export function tempDir(prefix = 'robota-node-'): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

/** Options that keep a session hermetic: empty cwd and home, no project context. */
export function hermetic(): { cwd: string; home: string; loadProjectContext: false } {
  return { cwd: tempDir(), home: tempDir(), loadProjectContext: false };
}

/** The mock-llm binary: `MOCK_LLM_BIN`, else `<target>/debug/mock-llm`. */
export function mockLlmBinary(): string {
  const fromEnv = process.env.MOCK_LLM_BIN;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  const target = process.env.CARGO_TARGET_DIR ?? path.join(repoDir, 'target');
  const binary = path.join(target, 'debug', process.platform === 'win32' ? 'mock-llm.exe' : 'mock-llm');
  if (!existsSync(binary)) {
    throw new Error(`mock-llm not found at ${binary}; run \`cargo build -p mock-llm\` or set MOCK_LLM_BIN`);
  }
  return binary;
}

/** A running mock-llm server. */
export interface MockLlm {
  baseUrl: string;
  /** Replaces the script (rewinds to turn 0). */
  setScript(script: unknown): Promise<void>;
  /** Requests recorded so far. */
  requests(): Promise<Array<{ path: string; body: any; headers: Record<string, string> }>>;
  stop(): Promise<void>;
}

/** Starts mock-llm with `script`; it stops when `stop()` is called or this process dies. */
export async function startMockLlm(script: unknown = { turns: [] }): Promise<MockLlm> {
  const child: ChildProcess = spawn(mockLlmBinary(), ['--exit-on-stdin-eof'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const stdout = child.stdout;
  if (stdout === null) throw new Error('mock-llm has no stdout');
  const line = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: stdout });
    lines.once('line', (l) => {
      lines.close();
      resolve(l);
    });
    child.once('exit', (code) => reject(new Error(`mock-llm exited with ${String(code)} before listening`)));
  });
  const { base_url: baseUrl } = JSON.parse(line) as { base_url: string };
  const mock: MockLlm = {
    baseUrl,
    async setScript(next) {
      const response = await fetch(`${baseUrl}/_mock/script`, { method: 'POST', body: JSON.stringify(next) });
      if (!response.ok) throw new Error(`mock-llm rejected the script: ${await response.text()}`);
    },
    async requests() {
      const response = await fetch(`${baseUrl}/_mock/requests`);
      return (await response.json()) as Array<{ path: string; body: any; headers: Record<string, string> }>;
    },
    async stop() {
      child.stdin?.end();
      if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
    },
  };
  await mock.setScript(script);
  return mock;
}

/** Rejects after `ms` — wraps a promise so a deadlock fails the test instead of hanging it. */
export function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
