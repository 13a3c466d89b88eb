// A `tests/mock-llm` server process for the tests: started per test on loopback, stopped by
// closing its stdin (it exits on EOF, so a crashed test never leaves it running).
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import XCTest

/// A running mock-llm process.
final class MockLLM: @unchecked Sendable {
    let baseURL: String
    private let process: Process
    private let stdin: Pipe

    /// Starts mock-llm (the binary `ROBOTA_MOCK_LLM` names) serving `script`.
    init(script: String) throws {
        guard let binary = ProcessInfo.processInfo.environment["ROBOTA_MOCK_LLM"] else {
            throw XCTSkip("ROBOTA_MOCK_LLM is not set (bindings-swift/scripts/test.sh sets it)")
        }
        let scriptFile = FileManager.default.temporaryDirectory
            .appendingPathComponent("mock-llm-\(UUID().uuidString).json")
        try script.write(to: scriptFile, atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--script", scriptFile.path]
        stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        // The one line it prints once listening: {"port": N, "base_url": "http://127.0.0.1:N"}
        var line = Data()
        while true {
            let byte = stdout.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data("\n".utf8) { break }
            line.append(byte)
        }
        let ready = try JSONSerialization.jsonObject(with: line) as? [String: Any]
        guard let url = ready?["base_url"] as? String else {
            throw NSError(domain: "MockLLM", code: 1, userInfo: [
                NSLocalizedDescriptionKey: "mock-llm did not start: \(String(decoding: line, as: UTF8.self))"
            ])
        }
        baseURL = url
    }

    /// The requests the server received (`GET /_mock/requests`).
    func requests() async throws -> [[String: Any]] {
        let url = URL(string: "\(baseURL)/_mock/requests")!
        let (data, _) = try await URLSession.shared.data(from: url)
        return (try JSONSerialization.jsonObject(with: data) as? [[String: Any]]) ?? []
    }

    deinit {
        try? stdin.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}

/// A fresh temporary directory.
func temporaryDirectory() throws -> String {
    let dir = FileManager.default.temporaryDirectory
        .appendingPathComponent("robota-swift-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir.path
}
