// What a host adds beside its own tools: an in-process MCP server whose tool is a Swift
// function (the model calls it as `mcp__calc__add`), a command that acts on the live session
// through its context (plan mode, a clean slate), and a subagent started in the background from
// host code and read back from its task log. Runs offline on the scripted model.
import Foundation
import Robota

let add = FunctionTool(
    name: "add", description: "Adds a and b.",
    inputSchema: [
        "type": "object", "required": ["a", "b"],
        "properties": ["a": ["type": "number"], "b": ["type": "number"]],
    ], isReadOnly: true
) { input, _ in
    let sum = (input["a"]?.numberValue ?? 0) + (input["b"]?.numberValue ?? 0)
    return "\(Int(sum))"
}

let tidy = Command(name: "tidy", description: "Switch to plan mode and start over.") { context in
    try await context.setPermissionMode("plan")
    try await context.clear()
    let state = try await context.state()
    return CommandResult(
        message: "now in \(state.permissionMode) mode, conversation cleared",
        effects: [["type": "conversation_history_cleared"]])
}

var options = SessionOptions(
    provider: .scripted(turns: [
        ScriptedTurn(toolCalls: [(id: "call_1", name: "mcp__calc__add", input: ["a": 2, "b": 3])]),
        .text("2 + 3 = 5."),
        .text("Every file has a test."),
    ]),
    cwd: FileManager.default.currentDirectoryPath,
    commandModules: [CommandModule(name: "editor", commands: [tidy])])
options.loadProjectContext = false
options.mcpServers = ["calc": .sdk(tools: [add])]
// Read-only MCP tools still go through the permission rules: allow this server's.
options.settings = ["permissions": ["allow": ["mcp__calc"]]]
let session = try InteractiveSession(options: options)

let answer = try await session.submit("What is 2 + 3?")
print("[model] \(answer.response ?? "")")
let tidied = try await session.executeCommand("tidy")
print("[/tidy] \(tidied.message)")

let task = try session.startBackgroundSubagent(SubagentRequest(prompt: "Check that every file has a test."))
let done = try await session.waitBackgroundTask(task.id, timeout: .seconds(30))
let report = try session.readBackgroundTaskLog(task.id).text
print("[\(task.id) \(done.status.rawValue)] \(report)")
try await session.shutdown()
guard answer.response == "2 + 3 = 5.", tidied.success, done.status == .completed,
    report.contains("Every file has a test.")
else {
    print("unexpected result")
    exit(1)
}
