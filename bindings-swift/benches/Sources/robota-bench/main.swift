// robota-bench: `throughput N RUNS` (one scripted turn of N one-character text deltas read from
// `session.events`, nothing coalesced), `first-event` (prints a line at the first text delta of a
// session's first prompt; what `cold-start` times), `cold-start RUNS` (median wall time from spawning a process to
// its first line: this binary's `first-event` against `/bin/true`-like `print-now`).
import Foundation
import Robota

func hermetic(_ turns: [ScriptedTurn]) throws -> SessionOptions {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("robota-bench-\(UUID())")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    var options = SessionOptions(provider: .scripted(turns: turns), cwd: dir.path)
    options.home = dir.path
    options.loadProjectContext = false
    options.builtinTools = false
    return options
}

func throughput(events n: Int) async throws -> Double {
    var options = try hermetic([ScriptedTurn(text: Array(repeating: "x", count: n))])
    options.eventBuffer = UInt32(n + 1024)  // nothing coalesced: every delta is one event
    let session = try InteractiveSession(options: options)
    let stream = session.events
    let start = Date()
    let consumer = Task { () -> Int in
        var received = 0
        for await event in stream {
            switch event.kind {
            case .textDelta: received += 1
            case .complete, .refused, .truncated, .interrupted, .error: return received
            default: continue
            }
        }
        return received
    }
    _ = try await session.submit("go")
    let received = await consumer.value
    let elapsed = Date().timeIntervalSince(start)
    precondition(received == n, "received \(received) of \(n) events")
    try await session.shutdown()
    return Double(n) / elapsed
}

/// Wall time from spawning `arguments` to reading the first line it prints.
func timeToFirstLine(_ arguments: [String]) throws -> Double {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: arguments[0])
    process.arguments = Array(arguments.dropFirst())
    let pipe = Pipe()
    process.standardOutput = pipe
    let start = Date()
    try process.run()
    _ = pipe.fileHandleForReading.readData(ofLength: 1)
    let elapsed = Date().timeIntervalSince(start)
    process.waitUntilExit()
    return elapsed * 1000
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

let arguments = CommandLine.arguments
switch arguments.dropFirst().first {
case "print-now":
    FileHandle.standardOutput.write(Data("first\n".utf8))
case "first-event":
    let options = try hermetic([ScriptedTurn(text: ["first", " event"])])
    let session = try InteractiveSession(options: options)
    let stream = session.events
    let printer = Task {
        for await event in stream {
            if case .textDelta = event.kind {
                FileHandle.standardOutput.write(Data("first\n".utf8))
                return
            }
        }
    }
    _ = try await session.submit("go")
    await printer.value
case "cold-start":
    let runs = Int(arguments.dropFirst(2).first ?? "") ?? 21
    let me = URL(fileURLWithPath: arguments[0]).standardizedFileURL.path
    var bare: [Double] = []
    var first: [Double] = []
    for _ in 0..<runs {  // interleaved, so machine load affects both alike
        bare.append(try timeToFirstLine([me, "print-now"]))
        first.append(try timeToFirstLine([me, "first-event"]))
    }
    print(String(format: "cold start, median of %d: bare %.1f ms, first event %.1f ms, overhead %.1f ms",
                 runs, median(bare), median(first), median(first) - median(bare)))
default:
    let n = Int(arguments.dropFirst(2).first ?? "") ?? 200_000
    let runs = Int(arguments.dropFirst(3).first ?? "") ?? 3
    for run in 1...runs {
        let rate = try await throughput(events: n)
        print(String(format: "throughput run %d: %d events into an AsyncStream consumer, %.0f events/s", run, n, rate))
    }
}
