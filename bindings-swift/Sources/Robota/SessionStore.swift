// Session stores of your own: keep robota's sessions in your database, object store or cache.
// Implement `SessionStore` and pass it as `SessionOptions.sessionStore`; robota builds resume,
// crash recovery, fork and listing on its ten methods, exactly as on its own stores. Check a
// store with `runStoreConformance(_:)`, the suite the built-in stores pass.
import Foundation
import RobotaNative

/// One appended batch of log lines: bytes `start` to `end` of a session's log.
public struct LogChunk: Sendable, Equatable {
    /// Byte offset of the chunk's first byte (robota's offsets: never measure `lines`).
    public var start: UInt64
    /// Byte offset just after the chunk.
    public var end: UInt64
    /// Complete JSON lines.
    public var lines: String

    /// A chunk holding bytes `start` to `end` of the log: `lines`, complete JSON lines.
    public init(start: UInt64, end: UInt64, lines: String) {
        self.start = start
        self.end = end
        self.lines = lines
    }
}

/// Where sessions are saved, implemented by you. Per session id a store keeps one snapshot (a
/// string, replaced whole) with its summary (listing reads only summaries), a log of chunks —
/// appended only when the log ends exactly at the chunk's `start` (throw otherwise: that is what
/// keeps two writers of one session from interleaving) — and at most one lease, taken with a
/// compare-and-set on its `"token"`. robota waits up to 120 s for each call; a thrown error
/// fails the operation with its description.
public protocol SessionStore: Sendable {
    /// Replaces the snapshot of `sessionId` (whole, atomically) and keeps `summary`.
    func putSnapshot(sessionId: String, summary: JSONValue, snapshot: String) async throws
    /// The snapshot of `sessionId`, `nil` when there is none.
    func getSnapshot(sessionId: String) async throws -> String?
    /// The summaries kept with every snapshot, in any order.
    func listSnapshots() async throws -> [JSONValue]
    /// Appends `chunk` — only when the log ends exactly at `chunk.start` (0: no log yet).
    func appendLog(sessionId: String, chunk: LogChunk) async throws
    /// The chunks of the log in order, at least from the one holding byte `start` (all of them
    /// is correct); `nil` when there is no log.
    func readLog(sessionId: String, start: UInt64) async throws -> [LogChunk]?
    /// The `end` of the log's last chunk, `nil` when there is no log.
    func logLength(sessionId: String) async throws -> UInt64?
    /// The ids of the sessions that have a log.
    func listLogs() async throws -> [String]
    /// Removes the snapshot, log and lease of `sessionId`; false when there was nothing.
    func deleteSession(sessionId: String) async throws -> Bool
    /// Takes the lease for `lease` when none is held, or when the held one's `"token"` is
    /// `replaceToken` (robota replaces the lease of a process that is gone): store it and return
    /// `nil`. Otherwise return the held lease unchanged. Atomically.
    func acquireLease(sessionId: String, lease: JSONValue, replaceToken: String?) async throws
        -> JSONValue?
    /// Removes the lease of `sessionId` if its `"token"` is `token`.
    func releaseLease(sessionId: String, token: String) async throws
}

/// One check of `runStoreConformance(_:)`.
public struct StoreCheck: Sendable, Equatable, Decodable {
    /// The check's name (`snapshot_round_trip`, `a_second_writer_is_locked_out`, …).
    public let check: String
    /// Whether the store passed it.
    public let passed: Bool
    /// What differed, when it failed.
    public let message: String?
}

/// Runs robota's store conformance suite on your store: each check gets a fresh, empty store from
/// `factory`. The checks that need a second process run only on the built-in stores.
public func runStoreConformance(_ factory: @escaping @Sendable () -> any SessionStore)
    async throws(RobotaError) -> [StoreCheck]
{
    let stores = StoreTable(factory)
    let bridge = CallbackBridge { request, _ in
        let index = Int(request["store_index"]?.numberValue ?? 0)
        return try await answerStore(stores.store(index), request)
    }
    let json = try await callNative { try await RobotaNative.runStoreConformance(callback: bridge) }
    do { return try JSONValue(parsing: json).decode([StoreCheck].self) } catch {
        throw .invalidJson("cannot read the conformance outcome: \(error)")
    }
}

/// One store per index, made on first use.
private final class StoreTable: @unchecked Sendable {
    private let factory: @Sendable () -> any SessionStore
    private var stores: [Int: any SessionStore] = [:]
    private let lock = NSLock()

    init(_ factory: @escaping @Sendable () -> any SessionStore) { self.factory = factory }

    func store(_ index: Int) -> any SessionStore {
        lock.lock()
        defer { lock.unlock() }
        if let store = stores[index] { return store }
        let store = factory()
        stores[index] = store
        return store
    }
}

/// The bridge a session's store is reached through.
func storeBridge(_ store: any SessionStore) -> CallbackBridge {
    CallbackBridge { request, _ in try await answerStore(store, request) }
}

private func offset(_ value: JSONValue?) -> UInt64 { UInt64(max(0, value?.numberValue ?? 0)) }

/// Answers one engine store operation (`{"op": …}`, see `HostStoreFunction` in the engine).
private func answerStore(_ store: any SessionStore, _ request: JSONValue) async throws -> JSONValue {
    let id = request["session_id"]?.stringValue ?? ""
    switch request["op"]?.stringValue ?? "" {
    case "put_snapshot":
        try await store.putSnapshot(
            sessionId: id, summary: request["summary"] ?? .null,
            snapshot: request["snapshot"]?.stringValue ?? "")
        return .null
    case "get_snapshot":
        return try await store.getSnapshot(sessionId: id).map(JSONValue.string) ?? .null
    case "list_snapshots":
        return .array(try await store.listSnapshots())
    case "append_log":
        try await store.appendLog(
            sessionId: id,
            chunk: LogChunk(
                start: offset(request["start"]), end: offset(request["end"]),
                lines: request["lines"]?.stringValue ?? ""))
        return .null
    case "read_log":
        guard let chunks = try await store.readLog(sessionId: id, start: offset(request["start"]))
        else { return .null }
        return .array(
            chunks.map { ["start": .number(Double($0.start)), "lines": .string($0.lines)] })
    case "log_length":
        return try await store.logLength(sessionId: id).map { .number(Double($0)) } ?? .null
    case "list_logs":
        return .array(try await store.listLogs().map(JSONValue.string))
    case "delete_session":
        return .bool(try await store.deleteSession(sessionId: id))
    case "acquire_lease":
        return try await store.acquireLease(
            sessionId: id, lease: request["lease"] ?? .null,
            replaceToken: request["replace_token"]?.stringValue) ?? .null
    case "release_lease":
        try await store.releaseLease(sessionId: id, token: request["token"]?.stringValue ?? "")
        return .null
    case let op:
        throw RobotaError.invalidArgument("unknown store operation \(op)")
    }
}
