/**
 * Session stores of your own: keep robota's sessions in your database, object store or cache.
 *
 * Implement {@link SessionStore} over your storage and open the session with
 * `await InteractiveSession.open({ provider, sessionStore: myStore })`. robota builds resume
 * (snapshot plus the log after it), crash recovery, fork and listing on its ten methods, exactly
 * as on its own file and SQLite stores. Check a store with {@link runStoreConformance} — the
 * same suite the built-in stores pass.
 *
 * Per session id a store keeps one snapshot (a string, replaced whole) with its summary (listing
 * reads only the summaries), a log made of chunks `{start, end, lines}` — append one only when
 * the log ends exactly at `start` (throw otherwise: that is what keeps two writers of one
 * session from interleaving) and remember its `end` (byte offsets are robota's; never measure
 * the strings) — and at most one lease, taken with a compare-and-set on its `token`.
 *
 * Methods may return values or Promises; they run on the JavaScript thread while the engine
 * waits (up to 120 s per call) on one of its own. Throw to report a failure: the message
 * reaches the user.
 */

import { RobotaError, describeValue, nativeAsync } from './errors.js';
import { nativeAddon } from './native.js';

/** The summary fields kept with a snapshot (what listing shows). */
export interface SessionSummary {
  /** The session id. */
  id: string;
  /** Its name. */
  name: string | null;
  /** Its working directory. */
  cwd: string | null;
  /** When it was created (RFC 3339). */
  created_at: string | null;
  /** When it was last saved (RFC 3339). */
  updated_at: string | null;
  /** Its provider's name. */
  provider: string | null;
  /** Its model id. */
  model: string | null;
  /** Its permission mode. */
  permission_mode: string | null;
  /** The session it was forked from. */
  parent_id: string | null;
  /** How many chat messages it has, when the snapshot says. */
  message_count: number | null;
  /** Its usage totals, when the snapshot has them. */
  usage: Record<string, unknown> | null;
  /** False for a session known only from its log (resuming rebuilds it from the log). */
  has_snapshot: boolean;
  /** The snapshot format version (0 for log-only sessions). */
  version: number;
}

/** One appended batch of log lines: bytes `start` to `end` of the session's log. */
export interface LogChunk {
  /** The byte offset in the log where the chunk starts. */
  start: number;
  /** The byte offset just after it (`start` + its length in bytes). */
  end: number;
  /** Complete JSON lines. */
  lines: string;
}

/** A session's writer lease: who holds it, and the token that identifies this acquisition. */
export interface SessionLease {
  /** The holder's process id. */
  pid: number;
  /** The host the holder runs on. */
  host: string;
  /** When the lease was taken (RFC 3339, UTC). */
  since: string;
  /** Identifies this acquisition: a release or a write with another token is refused. */
  token: string;
  /** Further fields (kept as given). */
  [key: string]: unknown;
}

/** A value, or a promise of it: every {@link SessionStore} method may answer either way. */
export type MaybePromise<T> = T | Promise<T>;

/** Where sessions are saved, implemented by you (see the module documentation). */
export interface SessionStore {
  /** Replaces the snapshot of `sessionId` (whole, atomically) and keeps `summary` for
   * {@link listSnapshots}. */
  putSnapshot(sessionId: string, summary: SessionSummary, snapshot: string): MaybePromise<void>;
  /** The snapshot of `sessionId`, `null` when there is none. */
  getSnapshot(sessionId: string): MaybePromise<string | null>;
  /** The summaries kept with every snapshot, in any order. */
  listSnapshots(): MaybePromise<SessionSummary[]>;
  /** Appends `chunk` to the log of `sessionId` — only when the log ends exactly at
   * `chunk.start` (0: no log yet); otherwise throw (another writer appended). */
  appendLog(sessionId: string, chunk: LogChunk): MaybePromise<void>;
  /** The chunks of the log of `sessionId` in order, at least from the one holding byte `start`
   * (returning all of them is correct); `null` when there is no log. */
  readLog(sessionId: string, start: number): MaybePromise<LogChunk[] | null>;
  /** The `end` of the log's last chunk, `null` when there is no log. */
  logLength(sessionId: string): MaybePromise<number | null>;
  /** The sessions that have a log: ids, or `{id, updatedAt}`. */
  listLogs(): MaybePromise<
    Array<
      | string
      | {
          /** The session id. */
          id: string;
          /** When its log was last written (RFC 3339), when known. */
          updatedAt?: string | null;
        }
    >
  >;
  /** Removes the snapshot, log and lease of `sessionId`; `false` when there was nothing. */
  deleteSession(sessionId: string): MaybePromise<boolean>;
  /** Takes the lease of `sessionId` for `lease` when none is held, or when the held one's
   * `token` equals `replaceToken` (robota replaces the lease of a process that is gone): store
   * it and return `null`. Otherwise return the held lease unchanged. Do it atomically. */
  acquireLease(sessionId: string, lease: SessionLease, replaceToken: string | null): MaybePromise<SessionLease | null>;
  /** Removes the lease of `sessionId` if its `token` is `token`. */
  releaseLease(sessionId: string, token: string): MaybePromise<void>;
}

const METHODS = [
  'putSnapshot',
  'getSnapshot',
  'listSnapshots',
  'appendLog',
  'readLog',
  'logLength',
  'listLogs',
  'deleteSession',
  'acquireLease',
  'releaseLease',
] as const;

/** `store` checked to have every method; its constructor name names it in messages. */
export function checkStore(store: unknown, what: string): SessionStore {
  if (store === null || typeof store !== 'object') {
    throw new RobotaError('invalid_argument', `${what} must be a SessionStore object, not ${describeValue(store)}`);
  }
  const missing = METHODS.filter((m) => typeof (store as Record<string, unknown>)[m] !== 'function');
  if (missing.length > 0) {
    throw new RobotaError('invalid_argument', `${what} has no ${missing.join(', ')} (a SessionStore has ${METHODS.join(', ')})`);
  }
  return store as SessionStore;
}

/** The store's name in messages. */
export function storeName(store: SessionStore): string {
  const name = (store as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' && name !== '' && name !== 'Object' ? name : 'SessionStore';
}

/** Answers one engine store call (`{op, …}`, see `HostStoreFunction` in the engine). */
export async function storeAnswer(store: SessionStore, args: Record<string, unknown>): Promise<unknown> {
  const id = String(args.session_id ?? '');
  switch (args.op) {
    case 'put_snapshot':
      await store.putSnapshot(id, args.summary as SessionSummary, String(args.snapshot));
      return null;
    case 'get_snapshot':
      return (await store.getSnapshot(id)) ?? null;
    case 'list_snapshots':
      return await store.listSnapshots();
    case 'append_log':
      await store.appendLog(id, { start: Number(args.start), end: Number(args.end), lines: String(args.lines) });
      return null;
    case 'read_log': {
      const chunks = await store.readLog(id, Number(args.start));
      return chunks === null || chunks === undefined ? null : chunks.map((c) => ({ start: c.start, lines: c.lines }));
    }
    case 'log_length':
      return (await store.logLength(id)) ?? null;
    case 'list_logs':
      return (await store.listLogs()).map((log) =>
        typeof log === 'string' ? log : { id: log.id, updated_at: log.updatedAt ?? null },
      );
    case 'delete_session':
      return (await store.deleteSession(id)) === true;
    case 'acquire_lease':
      return (
        (await store.acquireLease(id, args.lease as SessionLease, (args.replace_token as string | null) ?? null)) ?? null
      );
    case 'release_lease':
      await store.releaseLease(id, String(args.token));
      return null;
    default:
      throw new Error(`unknown store operation ${String(args.op)}`);
  }
}

/** One check of {@link runStoreConformance}. */
export interface StoreCheck {
  /** The check's name (`snapshot_round_trip`, `a_second_writer_is_locked_out`, …). */
  check: string;
  /** Whether the store passed it. */
  passed: boolean;
  /** What differed, when it failed. */
  message: string | null;
}

/**
 * Runs robota's store conformance suite on your store: each check gets a fresh, empty store from
 * `factory()`; resolves to every check's outcome (the checks that need a second process run only
 * on the built-in stores).
 */
export async function runStoreConformance(factory: () => SessionStore): Promise<StoreCheck[]> {
  if (typeof factory !== 'function') {
    throw new RobotaError('invalid_argument', `runStoreConformance(factory): \`factory\` must be a function, not ${describeValue(factory)}`);
  }
  const stores = new Map<number, SessionStore>();
  const dispatch = async (json: string): Promise<string> => {
    const request = JSON.parse(json) as { kind?: string; store_index?: number; request?: Record<string, unknown> };
    if (request.kind !== 'store') return 'null';
    try {
      const index = Number(request.store_index);
      let store = stores.get(index);
      if (store === undefined) {
        store = checkStore(factory(), 'the factory\'s result');
        stores.set(index, store);
      }
      return JSON.stringify({ ok: (await storeAnswer(store, request.request ?? {})) ?? null });
    } catch (error) {
      return JSON.stringify({ error: error instanceof Error ? error.message : String(error) });
    }
  };
  const json = await nativeAsync(() => nativeAddon.runStoreConformance(dispatch));
  return JSON.parse(json) as StoreCheck[];
}
