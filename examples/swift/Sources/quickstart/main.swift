// Quick start: one session, one prompt, the answer streamed as it arrives. Runs offline with the
// scripted provider; use `.anthropic(model: "claude-sonnet-4-6")` (with ANTHROPIC_API_KEY set)
// or `.openAI(model: "gpt-4.1", baseURL: …)` for a real model.
import Foundation
import Robota

let session = try InteractiveSession(options: SessionOptions(
    provider: .scripted(turns: [ScriptedTurn(text: ["Hello", " from", " robota", "!"])]),
    cwd: FileManager.default.currentDirectoryPath))

// Take the stream before submitting, so no event is missed.
let events = session.events
let printer = Task {
    for await event in events {
        switch event.kind {
        case .textDelta(let text): print(text, terminator: "")
        case .complete, .refused, .truncated, .interrupted, .error: return
        default: continue
        }
    }
}

let result = try await session.submit("Say hello")
await printer.value
print("\n[\(result.response == nil ? "no answer" : "complete")] \(try session.messages().count) messages")
try await session.shutdown()
