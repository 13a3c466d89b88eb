// Session stores written in Swift: an actor keeping everything in memory passes the engine's
// store conformance suite; one that forgets snapshots fails it; a session saved in it resumes
// with its history and name in a new session, one writer at a time; SQLite persistence works
// from Swift too.
import Foundation
import Robota
import XCTest

/// Everything in dictionaries, behind an actor (robota calls from several threads).
actor MemoryStore: SessionStore {
    var snapshots: [String: (summary: JSONValue, snapshot: String)] = [:]
    var logs: [String: [LogChunk]] = [:]
    var leases: [String: JSONValue] = [:]
    let forgetSnapshots: Bool

    init(forgetSnapshots: Bool = false) { self.forgetSnapshots = forgetSnapshots }

    struct Conflict: Error, CustomStringConvertible {
        let description: String
    }

    func putSnapshot(sessionId: String, summary: JSONValue, snapshot: String) async throws {
        if !forgetSnapshots { snapshots[sessionId] = (summary, snapshot) }
    }
    func getSnapshot(sessionId: String) async throws -> String? { snapshots[sessionId]?.snapshot }
    func listSnapshots() async throws -> [JSONValue] { snapshots.values.map(\.summary) }
    func appendLog(sessionId: String, chunk: LogChunk) async throws {
        let end = logs[sessionId]?.last?.end ?? 0
        guard end == chunk.start else {
            throw Conflict(description: "the log ends at \(end), not \(chunk.start)")
        }
        logs[sessionId, default: []].append(chunk)
    }
    func readLog(sessionId: String, start: UInt64) async throws -> [LogChunk]? { logs[sessionId] }
    func logLength(sessionId: String) async throws -> UInt64? {
        logs[sessionId].map { $0.last?.end ?? 0 }
    }
    func listLogs() async throws -> [String] { Array(logs.keys) }
    func deleteSession(sessionId: String) async throws -> Bool {
        let found = snapshots.removeValue(forKey: sessionId) != nil
        let logged = logs.removeValue(forKey: sessionId) != nil
        leases.removeValue(forKey: sessionId)
        return found || logged
    }
    func acquireLease(sessionId: String, lease: JSONValue, replaceToken: String?) async throws
        -> JSONValue?
    {
        if let held = leases[sessionId], held["token"]?.stringValue != replaceToken { return held }
        leases[sessionId] = lease
        return nil
    }
    func releaseLease(sessionId: String, token: String) async throws {
        if leases[sessionId]?["token"]?.stringValue == token { leases.removeValue(forKey: sessionId) }
    }
    func leaseCount() -> Int { leases.count }
}

final class SessionStoreTests: XCTestCase {
    func testAMemoryStorePassesTheConformanceSuiteAndAForgetfulOneFails() async throws {
        let checks = try await runStoreConformance { MemoryStore() }
        XCTAssertEqual(checks.count, 9)
        XCTAssertEqual(checks.filter { !$0.passed }, [])
        let forgetful = try await runStoreConformance { MemoryStore(forgetSnapshots: true) }
        let roundTrip = forgetful.first { $0.check == "snapshot_round_trip" }
        XCTAssertEqual(roundTrip?.passed, false)
        XCTAssertTrue(roundTrip?.message?.contains("round trip") ?? false, "\(forgetful)")
    }

    func testASessionInASwiftStoreResumesWithItsHistoryOneWriterAtATime() async throws {
        let dir = try temporaryDirectory()
        let store = MemoryStore()
        var options = SessionOptions(
            provider: .scripted(turns: [.text("Noted: 7.")]), cwd: dir)
        options.sessionStore = store
        let first = try await InteractiveSession.open(options: options)
        _ = try await first.submit("Remember 7")
        try first.setName("memory")
        let id = first.sessionId

        var again = options
        again.resumeSessionId = id
        do {
            _ = try await InteractiveSession.open(options: again)
            XCTFail("a second writer must be refused")
        } catch RobotaError.sessionLocked {}
        try await first.shutdown()
        let leases = await store.leaseCount()
        XCTAssertEqual(leases, 0, "released at shutdown")
        XCTAssertFalse(FileManager.default.fileExists(atPath: "\(dir)/.robota/sessions"))

        again.provider = .scripted(turns: [.text("It was 7.")])
        let resumed = try await InteractiveSession.open(options: again)
        XCTAssertEqual(resumed.sessionId, id)
        XCTAssertEqual(resumed.name, "memory")
        let result = try await resumed.submit("What was it?")
        XCTAssertEqual(result.response, "It was 7.")
        let texts = try resumed.messages().compactMap {
            $0["content"]?.arrayValue?.first?["text"]?.stringValue
        }
        XCTAssertEqual(texts, ["Remember 7", "Noted: 7.", "What was it?", "It was 7."])
        try await resumed.shutdown()
    }

    func testSQLitePersistenceFromSwift() async throws {
        let dir = try temporaryDirectory()
        let first = try InteractiveSession(options: SessionOptions(
            provider: .scripted(turns: [.text("Noted.")]), cwd: dir,
            persistence: .sqlite(path: "sessions.db")))
        _ = try await first.submit("Remember 7")
        let id = first.sessionId
        try await first.shutdown()
        XCTAssertTrue(FileManager.default.fileExists(atPath: "\(dir)/sessions.db"))
        var options = SessionOptions(
            provider: .scripted(turns: []), cwd: dir, persistence: .sqlite(path: "sessions.db"))
        options.resumeSessionId = id
        let resumed = try InteractiveSession(options: options)
        XCTAssertEqual(try resumed.messages().count, 2)
        try await resumed.shutdown()
    }
}
