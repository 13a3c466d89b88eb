// Plugins through the Swift API: a local marketplace folder added and a plugin installed with the
// `plugin` command, then listed with its state and its skill (named plugin:skill) by a new session.
import Foundation
import Robota
import XCTest

final class PluginTests: XCTestCase {
    private func write(_ text: String, to path: String) throws {
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try text.write(to: url, atomically: true, encoding: .utf8)
    }

    private func session(cwd: String, home: String) throws -> InteractiveSession {
        var options = SessionOptions(provider: .scripted(turns: [.text("Hi!")]), cwd: cwd)
        options.home = home
        options.loadProjectContext = false
        options.builtinTools = false
        return try InteractiveSession(options: options)
    }

    func testAPluginFromALocalMarketplaceIsInstalledListedAndItsSkillRuns() async throws {
        let market = try temporaryDirectory()
        try write(
            #"{"name": "local", "plugins": [{"name": "hello", "source": "./hello"}]}"#,
            to: market + "/.claude-plugin/marketplace.json")
        try write(#"{"name": "hello", "version": "0.1.0"}"#, to: market + "/hello/.claude-plugin/plugin.json")
        try write("---\ndescription: Say hi.\n---\nSay hi to $0.\n", to: market + "/hello/skills/hi/SKILL.md")
        let cwd = try temporaryDirectory(), home = try temporaryDirectory()

        let first = try session(cwd: cwd, home: home)
        XCTAssertEqual(try first.listPlugins().plugins, [])
        let added = try await first.executeCommand("plugin", args: "marketplace add \(market)")
        XCTAssertTrue(added.success, added.message)
        let installed = try await first.executeCommand("plugin", args: "install hello@local")
        XCTAssertTrue(installed.success, installed.message)
        let missing = try await first.executeCommand("plugin", args: "install nothing@local")
        XCTAssertFalse(missing.success)
        try await first.shutdown()

        let session = try session(cwd: cwd, home: home)
        let listing = try session.listPlugins()
        XCTAssertEqual(listing.plugins.map(\.id), ["hello@local"])
        let plugin = try XCTUnwrap(listing.plugins.first)
        XCTAssertEqual(plugin.version, "0.1.0")
        XCTAssertTrue(plugin.installed && plugin.enabled && plugin.loaded)
        XCTAssertEqual(plugin.skills, ["hello:hi"])
        XCTAssertEqual(listing.marketplaces.map(\.name), ["local"])
        let skills = try session.listSkills()
        XCTAssertEqual(skills.map(\.name), ["hello:hi"])
        XCTAssertEqual(skills.first?.source.kind, "plugin")
        XCTAssertEqual(skills.first?.source.plugin, "hello")
        let result = try await session.executeCommand("hello:hi", args: "Ada")
        XCTAssertTrue(result.success, result.message)
        try await session.waitIdle()
        let userText = try session.messages().first?["content"]?.arrayValue?
            .compactMap { $0["text"]?.stringValue }.joined()
        XCTAssertEqual(userText.map { $0.contains("Say hi to Ada.") }, true, "\(String(describing: userText))")
        try await session.shutdown()
    }
}
