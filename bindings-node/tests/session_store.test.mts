/** Session stores written in JavaScript: an in-memory one and an async one over files pass the
 * engine's store conformance suite; a session saved in one over mock-llm resumes with its history
 * in a new session, one writer at a time; the sync paths that would call the store on the
 * JavaScript thread are refused with a message saying what to use; a store that loses data fails
 * the suite, and one that throws reaches the user. */

import assert from 'node:assert/strict';
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import {
  AnthropicProvider,
  InteractiveSession,
  RobotaError,
  ScriptedProvider,
  runStoreConformance,
  tool,
  type LogChunk,
  type SessionLease,
  type SessionStore,
  type SessionSummary,
} from '@robota/native';

import { hermetic, startMockLlm, tempDir, type MockLlm } from './helpers.mjs';

class MemoryStore implements SessionStore {
  snapshots = new Map<string, { summary: SessionSummary; snapshot: string }>();
  logs = new Map<string, LogChunk[]>();
  leases = new Map<string, SessionLease>();

  putSnapshot(id: string, summary: SessionSummary, snapshot: string): void {
    this.snapshots.set(id, { summary, snapshot });
  }
  getSnapshot(id: string): string | null {
    return this.snapshots.get(id)?.snapshot ?? null;
  }
  listSnapshots(): SessionSummary[] {
    return [...this.snapshots.values()].map((s) => s.summary);
  }
  appendLog(id: string, chunk: LogChunk): void {
    const chunks = this.logs.get(id) ?? [];
    const end = chunks.at(-1)?.end ?? 0;
    if (end !== chunk.start) throw new Error(`the log ends at ${end}, not ${chunk.start}: another writer appended`);
    chunks.push(chunk);
    this.logs.set(id, chunks);
  }
  readLog(id: string): LogChunk[] | null {
    return this.logs.get(id) ?? null;
  }
  logLength(id: string): number | null {
    const chunks = this.logs.get(id);
    return chunks === undefined ? null : (chunks.at(-1)?.end ?? 0);
  }
  listLogs(): string[] {
    return [...this.logs.keys()];
  }
  deleteSession(id: string): boolean {
    const found = this.snapshots.delete(id);
    const logged = this.logs.delete(id);
    this.leases.delete(id);
    return found || logged;
  }
  acquireLease(id: string, lease: SessionLease, replaceToken: string | null): SessionLease | null {
    const held = this.leases.get(id);
    if (held !== undefined && held.token !== replaceToken) return held;
    this.leases.set(id, lease);
    return null;
  }
  releaseLease(id: string, token: string): void {
    if (this.leases.get(id)?.token === token) this.leases.delete(id);
  }
}

/** Every method async, over files: snapshots written to a temporary file and renamed. */
class DirectoryStore implements SessionStore {
  constructor(readonly dir: string) {}
  #file(kind: string, id: string): string {
    return path.join(this.dir, `${id}.${kind}.json`);
  }
  async #read<T>(kind: string, id: string): Promise<T | null> {
    try {
      return JSON.parse(await readFile(this.#file(kind, id), 'utf8')) as T;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }
  async #write(kind: string, id: string, value: unknown): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const temporary = `${this.#file(kind, id)}.tmp`;
    await writeFile(temporary, JSON.stringify(value));
    await rename(temporary, this.#file(kind, id));
  }
  /** The summary in a file of its own, so listing never reads a snapshot. */
  async putSnapshot(id: string, summary: SessionSummary, snapshot: string): Promise<void> {
    await this.#write('snapshot', id, snapshot);
    await this.#write('summary', id, summary);
  }
  async getSnapshot(id: string): Promise<string | null> {
    return await this.#read<string>('snapshot', id);
  }
  async #kind(kind: string): Promise<string[]> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    return names.filter((n) => n.endsWith(`.${kind}.json`)).map((n) => n.slice(0, -`.${kind}.json`.length));
  }
  async listSnapshots(): Promise<SessionSummary[]> {
    const out: SessionSummary[] = [];
    for (const id of await this.#kind('summary')) {
      const summary = await this.#read<SessionSummary>('summary', id);
      if (summary !== null) out.push(summary);
    }
    return out;
  }
  async appendLog(id: string, chunk: LogChunk): Promise<void> {
    const chunks = (await this.#read<LogChunk[]>('log', id)) ?? [];
    const end = chunks.at(-1)?.end ?? 0;
    if (end !== chunk.start) throw new Error(`the log ends at ${end}, not ${chunk.start}`);
    await this.#write('log', id, [...chunks, chunk]);
  }
  async readLog(id: string, start: number): Promise<LogChunk[] | null> {
    const chunks = await this.#read<LogChunk[]>('log', id);
    return chunks === null ? null : chunks.filter((c) => c.end > start);
  }
  async logLength(id: string): Promise<number | null> {
    const chunks = await this.#read<LogChunk[]>('log', id);
    return chunks === null ? null : (chunks.at(-1)?.end ?? 0);
  }
  async listLogs(): Promise<Array<{ id: string; updatedAt: string | null }>> {
    return (await this.#kind('log')).map((id) => ({ id, updatedAt: null }));
  }
  async deleteSession(id: string): Promise<boolean> {
    let found = false;
    for (const kind of ['snapshot', 'summary', 'log', 'lease']) {
      found = (await this.#read(kind, id)) !== null || found;
      await rm(this.#file(kind, id), { force: true });
    }
    return found;
  }
  async acquireLease(id: string, lease: SessionLease, replaceToken: string | null): Promise<SessionLease | null> {
    // One process, one event loop: read-then-write does not interleave with another call here.
    const held = await this.#read<SessionLease>('lease', id);
    if (held !== null && held.token !== replaceToken) return held;
    await this.#write('lease', id, lease);
    return null;
  }
  async releaseLease(id: string, token: string): Promise<void> {
    if ((await this.#read<SessionLease>('lease', id))?.token === token) await rm(this.#file('lease', id), { force: true });
  }
}

const remember = tool({
  name: 'remember',
  description: 'Stores a fact.',
  inputSchema: { type: 'object', properties: { fact: { type: 'string' } }, required: ['fact'] },
  execute: (input: { fact: string }) => `stored ${input.fact}`,
});

describe('session stores written in JavaScript', () => {
  let mock: MockLlm;
  before(async () => {
    mock = await startMockLlm();
  });
  after(async () => {
    await mock.stop();
  });

  test('an in-memory store and an async store over files pass the conformance suite', async () => {
    for (const factory of [() => new MemoryStore(), () => new DirectoryStore(tempDir('robota-store-'))]) {
      const checks = await runStoreConformance(factory);
      assert.equal(checks.length, 9);
      assert.deepEqual(checks.filter((c) => !c.passed), []);
      assert.ok(checks.some((c) => c.check === 'a_second_writer_is_locked_out'));
    }
  });

  test('a store that loses snapshots, or whose factory throws, fails the suite', async () => {
    class Forgetful extends MemoryStore {
      override putSnapshot(): void {}
    }
    const checks = await runStoreConformance(() => new Forgetful());
    const roundTrip = checks.find((c) => c.check === 'snapshot_round_trip');
    assert.equal(roundTrip?.passed, false);
    assert.match(roundTrip?.message ?? '', /round trip/);
    const broken = await runStoreConformance(() => {
      throw new Error('no database');
    });
    // The factory is called when a check first uses its store: every check fails, most naming why.
    assert.ok(broken.every((c) => !c.passed), JSON.stringify(broken));
    assert.ok(broken.filter((c) => /no database/.test(c.message ?? '')).length >= 7, JSON.stringify(broken));
  });

  test('a session in a JavaScript store resumes with its history, one writer at a time', async () => {
    await mock.setScript({
      turns: [
        { tool_calls: [{ id: 't1', name: 'remember', input: { fact: '42' } }] },
        { text: 'Stored 42.' },
        { text: 'You said 42.' },
      ],
    });
    const store = new DirectoryStore(tempDir('robota-store-'));
    const provider = new AnthropicProvider({ model: 'claude-test', apiKey: 'sk-test', baseUrl: mock.baseUrl, maxRetries: 0 });
    const base = { ...hermetic(), provider, sessionStore: store, tools: [remember], permissionMode: 'bypassPermissions' as const };

    assert.throws(
      () => new InteractiveSession(base),
      (e: unknown) => e instanceof RobotaError && e.code === 'invalid_argument' && /InteractiveSession\.open/.test(e.message),
    );
    const first = await InteractiveSession.open(base);
    const answer = await first.submit('Remember 42');
    assert.ok(answer.status === 'complete' && answer.response === 'Stored 42.', JSON.stringify(answer));
    assert.throws(
      () => first.setName('memory'),
      (e: unknown) => e instanceof RobotaError && /session\.rename/.test(e.message),
    );
    await first.rename('memory');
    const id = first.getSessionId();
    const history = first.getMessages();
    assert.deepEqual(history.map((m) => m.role), ['user', 'assistant', 'tool', 'assistant']);
    await assert.rejects(
      InteractiveSession.open({ ...base, resumeSessionId: id }),
      (e: unknown) => e instanceof RobotaError && e.code === 'session_locked',
    );
    await first.shutdown();
    assert.equal(await store.acquireLease(id, { pid: 1, host: 'h', since: 's', token: 'probe' }, null), null, 'released at shutdown');
    await store.releaseLease(id, 'probe');
    assert.ok((await store.getSnapshot(id)) !== null);
    assert.ok(((await store.logLength(id)) ?? 0) > 0);

    const resumed = await InteractiveSession.open({ ...base, resumeSessionId: id });
    assert.deepEqual(resumed.getMessages(), history);
    assert.equal(resumed.getName(), 'memory');
    const again = await resumed.submit('What did I say?');
    assert.ok(again.status === 'complete' && again.response === 'You said 42.', JSON.stringify(again));
    await resumed.shutdown();
    const requests = await mock.requests();
    const last = requests.at(-1)?.body.messages as Array<{ role: string; content: Array<{ type: string }> }>;
    assert.deepEqual(last.map((m) => m.role), ['user', 'assistant', 'user', 'assistant', 'user']);
    assert.equal(last[1]?.content[0]?.type, 'tool_use');
  });

  test('a store that throws reaches the user, and a store is not a persistence option too', async () => {
    class Down extends MemoryStore {
      override getSnapshot(): string | null {
        throw new Error('the database is down');
      }
    }
    await assert.rejects(
      InteractiveSession.open({ ...hermetic(), provider: new ScriptedProvider([]), sessionStore: new Down(), resumeSessionId: 'abc' }),
      (e: unknown) => e instanceof RobotaError && /the database is down/.test(e.message),
    );
    await assert.rejects(
      InteractiveSession.open({ ...hermetic(), provider: new ScriptedProvider([]), sessionStore: new MemoryStore(), persistence: 'project' }),
      (e: unknown) => e instanceof RobotaError && e.code === 'invalid_argument' && /persistence/.test(e.message),
    );
    await assert.rejects(
      InteractiveSession.open({ ...hermetic(), provider: new ScriptedProvider([]), sessionStore: {} as SessionStore }),
      (e: unknown) => e instanceof RobotaError && /putSnapshot/.test(e.message),
    );
  });
});
