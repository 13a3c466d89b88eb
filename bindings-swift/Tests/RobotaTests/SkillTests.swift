// Skills through the Swift API: a skill folder on disk and a skill given as data, listed with
// their source, run as a command, reported by typed `skillActivation` events.
import Foundation
import Robota
import XCTest

final class SkillTests: XCTestCase {
    func testFolderAndDataSkillsAreListedAndRunAsCommands() async throws {
        let skillsRoot = try temporaryDirectory()
        let tidyDir = URL(fileURLWithPath: skillsRoot).appendingPathComponent("tidy")
        try FileManager.default.createDirectory(at: tidyDir, withIntermediateDirectories: true)
        try "---\ndescription: Tidies a file.\nargument-hint: FILE\n---\nTidy $ARGUMENTS.\n"
            .write(to: tidyDir.appendingPathComponent("SKILL.md"), atomically: true, encoding: .utf8)

        var options = SessionOptions(
            provider: .scripted(turns: [.text("Tidied.")]), cwd: try temporaryDirectory(),
            skills: [
                .folder(URL(fileURLWithPath: skillsRoot)),
                .content(name: "greet", content: "---\ndescription: Greets.\ncontext: fork\n---\nHi $0."),
            ])
        options.home = try temporaryDirectory()
        options.loadProjectContext = false
        options.builtinTools = false
        let session = try InteractiveSession(options: options)
        let log = EventLog()
        let stream = session.events
        let reader = Task { for await event in stream { await log.append(event) } }

        let skills = try session.listSkills().sorted { $0.name < $1.name }
        XCTAssertEqual(skills.map(\.name), ["greet", "tidy"])
        let greet = skills[0], tidy = skills[1]
        XCTAssertEqual(greet.description, "Greets.")
        XCTAssertEqual(greet.source.kind, "host")
        XCTAssertNil(greet.source.root)
        XCTAssertNil(greet.file)
        XCTAssertEqual(greet.context, "fork")
        XCTAssertEqual(tidy.source.kind, "host")
        XCTAssertNotNil(tidy.source.root)
        XCTAssertEqual(tidy.file.map { URL(fileURLWithPath: $0).lastPathComponent }, "SKILL.md")
        XCTAssertEqual(tidy.argumentHint, "FILE")
        XCTAssertEqual(tidy.context, "inline")
        XCTAssertTrue(tidy.userInvocable)

        let result = try await session.executeCommand("tidy", args: "notes.txt")
        XCTAssertTrue(result.success)
        try await session.waitIdle()
        let userText = try session.messages().first?["content"]?.arrayValue?
            .compactMap { $0["text"]?.stringValue }.joined()
        XCTAssertEqual(userText.map { $0.contains("Tidy notes.txt.") }, true, "\(String(describing: userText))")
        func activationsSoFar() async -> [SkillActivation] {
            await log.events.compactMap {
                if case .skillActivation(let activation) = $0.kind { activation } else { nil }
            }
        }
        try await waitUntil("the completed activation") { await activationsSoFar().count >= 2 }
        reader.cancel()
        try await session.shutdown()
        let activations = await activationsSoFar()
        XCTAssertEqual(activations.map(\.status), ["started", "completed"])
        XCTAssertEqual(activations.first?.skillName, "tidy")
        XCTAssertEqual(activations.first?.source, "host")
        XCTAssertEqual(activations.first?.invocation, "user_slash")
        XCTAssertEqual(activations.first?.mode, "inject")
        XCTAssertEqual(activations.first?.arguments, "notes.txt")
        XCTAssertNotNil(activations.first?.path)
    }

    func testAMissingSkillFolderDoesNotStopTheSession() async throws {
        var options = SessionOptions(
            provider: .scripted(turns: []), cwd: try temporaryDirectory(),
            skills: [.folder(URL(fileURLWithPath: "/nonexistent/robota-skills"))])
        options.home = try temporaryDirectory()
        options.loadProjectContext = false
        let session = try InteractiveSession(options: options)
        XCTAssertEqual(try session.listSkills(), [])
        try await session.shutdown()
    }
}
