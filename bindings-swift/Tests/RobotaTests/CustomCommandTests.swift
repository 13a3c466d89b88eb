// Custom slash commands through the Swift API: a command folder and a command given as data,
// listed with their source, run with arguments.
import Foundation
import Robota
import XCTest

final class CustomCommandTests: XCTestCase {
    func testFolderAndDataCommandsAreListedAndRunWithArguments() async throws {
        let root = try temporaryDirectory()
        let gitDir = URL(fileURLWithPath: root).appendingPathComponent("git")
        try FileManager.default.createDirectory(at: gitDir, withIntermediateDirectories: true)
        try "---\ndescription: Review a file.\nargument-hint: FILE FOCUS\n---\nReview $1 for $2.\n"
            .write(to: gitDir.appendingPathComponent("review.md"), atomically: true, encoding: .utf8)

        var options = SessionOptions(
            provider: .scripted(turns: [.text("Reviewed.")]), cwd: try temporaryDirectory())
        options.customCommands = [
            .folder(URL(fileURLWithPath: root)),
            .content(name: "greet", content: "Say hi to $1."),
        ]
        options.home = try temporaryDirectory()
        options.loadProjectContext = false
        options.builtinTools = false
        let session = try InteractiveSession(options: options)

        let commands = Dictionary(
            uniqueKeysWithValues: try session.listCommands().map { ($0.name, $0) })
        XCTAssertEqual(commands["review"]?.source.kind, "host")
        XCTAssertEqual(commands["review"]?.description, "Review a file. (host:git)")
        XCTAssertEqual(commands["greet"]?.source.kind, "host")
        XCTAssertEqual(commands["help"]?.source.kind, "builtin")

        let result = try await session.executeCommand("review", args: "main.swift \"error handling\"")
        XCTAssertTrue(result.success)
        try await session.waitIdle()
        let userText = try session.messages().first?["content"]?.arrayValue?
            .compactMap { $0["text"]?.stringValue }.joined()
        XCTAssertEqual(
            userText.map { $0.contains("Review main.swift for error handling.") }, true,
            "\(String(describing: userText))")
        try await session.shutdown()
    }
}
