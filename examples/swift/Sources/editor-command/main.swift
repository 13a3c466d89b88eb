// An editor command, as an IDE extension runs one: the user selects code in a file and asks
// about it. The agent gets the selection and the path, may call a Swift tool (`symbol_info`,
// here a stand-in for the IDE's index) after the user allows it in a permission prompt, and the
// answer streams back. Runs offline: the scripted model calls the tool, then answers.
import Foundation
import Robota

/// A stand-in for the IDE's symbol index.
struct SymbolInfo: Tool {
    struct Input: Decodable { let symbol: String }

    let name = "symbol_info"
    let description = "Returns where a symbol is defined and how often it is used."
    let inputSchema: JSONValue = [
        "type": "object", "properties": ["symbol": ["type": "string"]], "required": ["symbol"],
    ]

    func call(input: JSONValue, context: ToolContext) async throws -> ToolResult {
        let input = try decodeInput(Input.self, from: input)
        return "\(input.symbol): defined in Sources/App/Math.swift:3, used 7 times"
    }
}

let filePath = "Sources/App/Math.swift"
let selection = "func square(_ x: Int) -> Int { x * x }"

// The scripted model: ask the index about the symbol, then explain.
let model = ProviderConfig.scripted(turns: [
    ScriptedTurn(toolCalls: [(id: "call_1", name: "symbol_info", input: ["symbol": "square"])]),
    ScriptedTurn(text: ["`square` returns its argument ", "times itself; ", "it is used 7 times."]),
])

let session = try InteractiveSession(options: SessionOptions(
    provider: model, cwd: FileManager.default.currentDirectoryPath, tools: [SymbolInfo()],
    permissionHandler: { request in
        // An IDE shows a prompt here; the example answers as a user clicking "Allow".
        print("[permission] \(request.toolName) \(request.input) — \(request.reason): allowed")
        return .allow
    }))

let events = session.events
let printer = Task {
    for await event in events {
        switch event.kind {
        case .toolStart(let tool): print("[tool] \(tool.name)(\(tool.firstArg))")
        case .textDelta(let text): print(text, terminator: "")
        case .complete, .refused, .truncated, .interrupted, .error: return
        default: continue
        }
    }
}

let prompt = "Explain this selection from \(filePath):\n```swift\n\(selection)\n```"
let result = try await session.submit(prompt, displayInput: "Explain selection")
await printer.value
print()
guard case .complete(let outcome) = result, outcome.toolsExecuted == ["symbol_info"] else {
    print("unexpected result: \(result)")
    exit(1)
}
try await session.shutdown()
