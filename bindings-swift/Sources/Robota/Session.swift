// InteractiveSession: a long-lived conversation with a queue of one prompt, slash commands and
// an event stream; and `SessionOptions`, what it is made of.
import Foundation
import RobotaNative

/// Where a session is saved.
public enum Persistence: Sendable, Equatable {
    /// Not saved.
    case none
    /// In the project: `<cwd>/.robota/sessions/` and `<cwd>/.robota/logs/`.
    case project
    /// In explicit directories.
    case store(sessionsDir: String, logsDir: String)
    /// One SQLite database for many sessions, shared by every process that opens it (a
    /// relative path is in `cwd`).
    case sqlite(path: String)

    var json: JSONValue {
        switch self {
        case .none: "none"
        case .project: "project"
        case .store(let sessions, let logs):
            ["store": ["sessions_dir": .string(sessions), "logs_dir": .string(logs)]]
        case .sqlite(let path): ["sqlite": ["path": .string(path)]]
        }
    }
}

/// What a session (or a query) is made of. Only `provider` is required.
public struct SessionOptions: Sendable {
    /// The model provider.
    public var provider: ProviderConfig
    /// The working directory (default: the process's current directory).
    public var cwd: String?
    /// `default`, `acceptEdits`, `plan`, `bypassPermissions` or `dontAsk` (default: the
    /// settings' `permissions.defaultMode`).
    public var permissionMode: String?
    /// Replaces the system prompt assembled from the project.
    public var systemPrompt: String?
    /// Appended to the system prompt.
    public var appendSystemPrompt: String?
    /// Most model/tool rounds per prompt (`nil` or 0: no cap).
    public var maxTurns: UInt32?
    /// The session id (a fresh UUID when `nil`).
    public var sessionId: String?
    /// Build the system prompt from AGENTS.md / CLAUDE.md (default true).
    public var loadProjectContext: Bool?
    /// `false`: no built-in file, shell and web tools.
    public var builtinTools: Bool?
    /// The home directory for user settings (none read when `nil`).
    public var home: String?
    /// Settings from code (a settings.json object), above every file.
    public var settings: JSONValue?
    /// Where the session is saved.
    public var persistence: Persistence
    /// Resume this saved session (needs `persistence`).
    public var resumeSessionId: String?
    /// With `resumeSessionId`: continue in a copy with a new id.
    public var forkSession: Bool
    /// Refuse further prompts once the session has spent this many USD.
    public var maxBudgetUsd: Double?
    /// A second model of the same provider, answering while the main model is overloaded (HTTP
    /// 529 or 503 after the provider's retries); each switch is a `.session` event of type
    /// `warning` with `source == "fallback_model"`. The main model itself, or a provider that
    /// cannot switch models (scripted, replay, custom), is refused when the session is created,
    /// naming `fallback_model`.
    public var fallbackModel: String?
    /// Tools written in Swift, beside the built-ins.
    public var tools: [any Tool]
    /// Decides the tool calls the permission rules ask about (without one they are denied).
    public var permissionHandler: PermissionHandler?
    /// In-process hooks.
    public var hooks: [Hook]
    /// Slash command modules written in Swift.
    public var commandModules: [CommandModule]
    /// Skills the host registers (folders or data), ahead of the project's and the user's.
    public var skills: [Skill]
    /// MCP servers to connect (or, `McpServer.sdk`, to run in process), by name; their tools
    /// reach the model as `mcp__<name>__<tool>` (see `listMcpServers()`).
    public var mcpServers: [String: McpServer] = [:]
    /// Opens a remote MCP server's OAuth authorization URL (see `McpAuthorizationHandler`).
    /// Without one, a server that needs authorization is `needs_auth`.
    public var onMcpAuthorization: McpAuthorizationHandler?
    /// Custom slash commands the host registers (folders or data), ahead of the project's
    /// `.claude/commands` and the user's `~/.claude/commands`.
    public var customCommands: [CustomCommand] = []
    /// Keep the built-in commands beside `commandModules` (default true).
    public var builtinCommands: Bool
    /// `false` keeps no edit checkpoints; by default every prompt that changes files is a
    /// checkpoint under `<cwd>/.robota/checkpoints/` that `restoreEditCheckpoint` rewinds to.
    public var editCheckpoints: Bool?
    /// How many events each `events` stream may fall behind before `textDelta`s are joined
    /// (default 256; no other event is ever dropped).
    public var eventBuffer: UInt32?
    /// Export OpenTelemetry traces and metrics over OTLP (spans per prompt, model call, tool
    /// call, hook and compaction). `nil`: nothing is traced.
    public var telemetry: TelemetryOptions?
    /// Your W3C `traceparent`: the session's prompt spans join your trace under that span.
    public var traceparent: String?
    /// The W3C `tracestate` that goes with `traceparent`.
    public var tracestate: String?
    /// Save the session in your own storage (see `SessionStore`) instead of `persistence`.
    public var sessionStore: (any SessionStore)?
    /// Every prompt's answer must be one JSON value matching this JSON Schema (or whole
    /// `{"type": "json_schema", "schema": …}` format); results and `complete` events carry it as
    /// `structuredOutput` (see `decodeStructuredOutput(_:)`).
    public var outputFormat: JSONValue?
    /// Follow-ups an answer that does not match `outputFormat` gets before the prompt fails
    /// (default 5).
    public var maxStructuredOutputRetries: UInt32?

    /// Options with `provider`; set the rest as properties or arguments.
    public init(
        provider: ProviderConfig, cwd: String? = nil, permissionMode: String? = nil,
        systemPrompt: String? = nil, maxTurns: UInt32? = nil, persistence: Persistence = .none,
        tools: [any Tool] = [], permissionHandler: PermissionHandler? = nil, hooks: [Hook] = [],
        commandModules: [CommandModule] = [], skills: [Skill] = []
    ) {
        self.provider = provider
        self.cwd = cwd
        self.permissionMode = permissionMode
        self.systemPrompt = systemPrompt
        self.maxTurns = maxTurns
        self.persistence = persistence
        self.tools = tools
        self.permissionHandler = permissionHandler
        self.hooks = hooks
        self.commandModules = commandModules
        self.skills = skills
        self.forkSession = false
        self.builtinCommands = true
    }

    /// The plain options as the engine's `SessionConfig` JSON.
    func configJSON() throws(RobotaError) -> String {
        var config: [String: JSONValue] = ["persistence": persistence.json]
        func set(_ key: String, _ value: JSONValue?) { if let value { config[key] = value } }
        set("cwd", cwd.map(JSONValue.string))
        set("permission_mode", permissionMode.map(JSONValue.string))
        set("system_prompt", systemPrompt.map(JSONValue.string))
        set("append_system_prompt", appendSystemPrompt.map(JSONValue.string))
        set("max_turns", maxTurns.map { .number(Double($0)) })
        set("session_id", sessionId.map(JSONValue.string))
        set("load_project_context", loadProjectContext.map(JSONValue.bool))
        set("builtin_tools", builtinTools.map(JSONValue.bool))
        set("home", home.map(JSONValue.string))
        set("settings", settings)
        set("resume_session_id", resumeSessionId.map(JSONValue.string))
        if forkSession { config["fork_session"] = true }
        set("max_budget_usd", maxBudgetUsd.map(JSONValue.number))
        set("fallback_model", fallbackModel.map(JSONValue.string))
        if !skills.isEmpty { config["skills"] = .array(skills.map(\.json)) }
        let configured = mcpServers.compactMapValues(\.json)
        if !configured.isEmpty { config["mcp_servers"] = .object(configured) }
        if !customCommands.isEmpty {
            config["commands"] = .array(customCommands.map(\.json))
        }
        set("edit_checkpoints", editCheckpoints.map(JSONValue.bool))
        set("telemetry", telemetry?.json)
        set("traceparent", traceparent.map(JSONValue.string))
        set("tracestate", tracestate.map(JSONValue.string))
        set("output_format", outputFormat.map(outputFormatJSON))
        set("max_structured_output_retries", maxStructuredOutputRetries.map { .number(Double($0)) })
        return try specJSON(.object(config))
    }

    /// The tools, permission handler, hooks and in-process MCP servers for the engine.
    func nativeExtensions() throws(RobotaError) -> NativeExtensions {
        var builtTools: [NativeTool] = []
        for tool in tools { builtTools.append(try tool.native()) }
        var builtHooks: [NativeHook] = []
        for hook in hooks { builtHooks.append(try hook.native()) }
        var builtServers: [NativeMcpServer] = []
        for (name, server) in mcpServers.sorted(by: { $0.key < $1.key }) {
            if case .inProcess(let server) = server {
                builtServers.append(try server.native(name: name))
            }
        }
        return NativeExtensions(
            tools: builtTools, permissionHandler: permissionHandler.map(permissionBridge),
            hooks: builtHooks, mcpServers: builtServers,
            mcpAuthorization: onMcpAuthorization.map(authorizationBridge),
            sessionStore: sessionStore.map(storeBridge))
    }

    func nativeCommandModules() throws(RobotaError) -> [NativeCommandModule] {
        var built: [NativeCommandModule] = []
        for module in commandModules { built.append(try module.native()) }
        return built
    }
}

/// How a submitted prompt ended.
public enum PromptResult: Sendable, Equatable {
    /// The model answered.
    case complete(RunOutcome)
    /// The model refused; `outcome.refusal` has the refusal text and the provider's category
    /// and explanation. The prompt is not asked again.
    case refused(RunOutcome)
    /// The answer was cut off at the output token limit; the outcome has what was written.
    /// `InteractiveSession.continueAnswer()` asks the model to go on.
    case truncated(RunOutcome)
    /// It was aborted; the outcome holds what streamed until then (`nil` when aborted before
    /// it ran).
    case interrupted(RunOutcome?)
    /// A model call failed (401, unreachable host, retries exhausted, …) or the prompt could
    /// not run (a hook rejected it, the budget is spent, …). The outcome is there when the run
    /// had started.
    case error(ErrorInfo, outcome: RunOutcome?)
    /// It never ran: dropped from the queue (`cancelQueue`, `abort`) or the session shut down.
    case cancelled

    /// How the prompt ended, in the vocabulary every language shares.
    public var status: OutcomeStatus {
        switch self {
        case .complete: .complete
        case .refused: .refused
        case .truncated: .truncated
        case .interrupted: .interrupted
        case .error: .error
        case .cancelled: .cancelled
        }
    }

    /// The run's outcome, when the run started.
    public var outcome: RunOutcome? {
        switch self {
        case .complete(let outcome), .refused(let outcome), .truncated(let outcome): outcome
        case .interrupted(let outcome), .error(_, let outcome): outcome
        case .cancelled: nil
        }
    }

    /// The answer text, when the prompt ran.
    public var response: String? { outcome?.response }

    /// What the provider said, when the model refused.
    public var refusal: Refusal? { outcome?.refusal }

    /// Why the prompt failed, when it ended `.error`.
    public var errorInfo: ErrorInfo? {
        if case .error(let info, _) = self { info } else { nil }
    }

    init(eventJSON text: String) throws(RobotaError) {
        let json: JSONValue
        do { json = try JSONValue(parsing: text) } catch {
            throw .internalError("cannot read how the prompt ended: \(error)")
        }
        if json["type"]?.stringValue == "cancelled" {
            self = .cancelled
            return
        }
        switch try SessionEvent(json: json).kind {
        case .complete(let outcome): self = .complete(outcome)
        case .refused(let outcome): self = .refused(outcome)
        case .truncated(let outcome): self = .truncated(outcome)
        case .interrupted(let outcome): self = .interrupted(outcome)
        case .error(let info, let outcome): self = .error(info, outcome: outcome)
        default: throw .internalError("a prompt ended with an unexpected event: \(text)")
        }
    }
}

/// A submitted prompt: whether it waits in the queue, and how it ended.
public final class Prompt: Sendable {
    private let native: NativePrompt
    /// True when it was queued behind a running prompt.
    public let wasQueued: Bool

    init(native: NativePrompt, wasQueued: Bool) {
        self.native = native
        self.wasQueued = wasQueued
    }

    /// Waits until the prompt ended (call once). Cancelling the calling task cancels this
    /// prompt: dropped when queued, aborted when running.
    public func result() async throws -> PromptResult {
        let native = self.native
        let end = try await withTaskCancellationHandler {
            try await callNative { try await native.end() }
        } onCancel: {
            try? native.cancel()
        }
        return try PromptResult(eventJSON: end)
    }

    /// Cancels this prompt only.
    public func cancel() { try? native.cancel() }
}

/// The event subscriptions of one session, closed when it shuts down.
final class Subscriptions: @unchecked Sendable {
    private let lock = NSLock()
    private var open: [ObjectIdentifier: NativeEvents] = [:]

    func add(_ events: NativeEvents) {
        lock.withLock { open[ObjectIdentifier(events)] = events }
    }

    func remove(_ events: NativeEvents) {
        _ = lock.withLock { open.removeValue(forKey: ObjectIdentifier(events)) }
    }

    func closeAll() {
        let all = lock.withLock { () -> [NativeEvents] in
            defer { open.removeAll() }
            return Array(open.values)
        }
        for events in all { try? events.close() }
    }
}

/// A long-lived conversation: prompts run one at a time (one more may wait in the queue),
/// with the engine's tools, permissions, hooks and commands. Safe to use from any task.
public final class InteractiveSession: Sendable {
    let native: NativeSession
    private let subscriptions = Subscriptions()

    /// Creates a session (nothing runs until the first prompt). Throws `RobotaError` for bad
    /// options.
    public init(options: SessionOptions) throws {
        let nativeOptions = NativeSessionOptions(
            configJson: try options.configJSON(),
            provider: try options.provider.native(),
            extensions: try options.nativeExtensions(),
            commandModules: try options.nativeCommandModules(),
            builtinCommands: options.builtinCommands,
            eventBuffer: options.eventBuffer)
        native = try callNative { try NativeSession(options: nativeOptions) }
    }

    /// Creates the session on a thread of its own, for callers on Swift's concurrency pool:
    /// opening a session saved in a `sessionStore` waits for the store's async methods.
    public static func open(options: SessionOptions) async throws -> InteractiveSession {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                do { continuation.resume(returning: try InteractiveSession(options: options)) } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Submits a prompt and waits until it ended. It starts at once, or is queued behind the
    /// running one (`RobotaError.queueFull` when one already waits). Cancelling the calling
    /// task cancels this prompt only.
    public func submit(_ input: String, displayInput: String? = nil) async throws -> PromptResult {
        try await enqueue(input, displayInput: displayInput).result()
    }

    /// Submits a prompt and returns once the session accepted it (started or queued), without
    /// waiting for its end: await `result()` on the returned `Prompt` for that.
    public func enqueue(_ input: String, displayInput: String? = nil) async throws -> Prompt {
        let native = try await callNative {
            try await self.native.submit(input: input, displayInput: displayInput)
        }
        return Prompt(native: native, wasQueued: (try? native.wasQueued()) ?? false)
    }

    /// The session's events from now on, in order. Each access is a new subscription: take
    /// it before submitting the prompt whose events you want. The stream ends when the
    /// consumer stops iterating or the session shuts down.
    public var events: AsyncStream<SessionEvent> {
        guard let subscription = try? native.subscribe() else {
            return AsyncStream { $0.finish() }
        }
        subscriptions.add(subscription)
        let subscriptions = self.subscriptions
        return AsyncStream { continuation in
            let reader = Task {
                // `nil`: closed (or failed). Batches keep the FFI cost per event low.
                while let batch = try? await subscription.nextBatch(max: 4096) {
                    for event in batch {
                        if let event = try? SessionEvent(native: event) { continuation.yield(event) }
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in
                // A cancelled Swift task does not stop the native wait; closing does.
                try? subscription.close()
                subscriptions.remove(subscription)
                reader.cancel()
            }
        }
    }

    /// Asks the model to go on with an answer cut off at the output token limit (after a
    /// prompt that ended `.truncated`) and waits until that ended. The cut-off answer is in the
    /// history, so the model sees where it stopped; the prompt is shown as `(continue)`.
    /// Cancelling the calling task cancels it.
    public func continueAnswer() async throws -> PromptResult {
        let native = try await callNative { try await self.native.continueAnswer() }
        return try await Prompt(native: native, wasQueued: (try? native.wasQueued()) ?? false)
            .result()
    }

    /// Aborts the running prompt and drops the queued one.
    public func abort() { try? native.abort() }

    /// Drops the queued prompt; returns it (as displayed).
    @discardableResult
    public func cancelQueue() -> String? { (try? native.cancelQueue()) ?? nil }

    /// Waits until no prompt is running or queued.
    public func waitIdle() async throws { try await callNative { try await native.waitIdle() } }

    /// Runs a slash command (`name` without the slash).
    public func executeCommand(_ name: String, args: String = "") async throws -> CommandResult {
        let text = try await callNative { try await native.executeCommand(name: name, args: args) }
        return try decodeJSON(CommandResult.self, text)
    }

    /// The commands users can run.
    public func listCommands() throws -> [CommandEntry] {
        try decodeJSON([CommandEntry].self, callNative { try native.listCommands() })
    }

    /// The session's skills, with where each came from; `executeCommand(skill.name, args:)`
    /// runs one.
    public func listSkills() throws -> [SkillInfo] {
        try decodeJSON([SkillInfo].self, callNative { try native.listSkills() })
    }

    /// The plugins of the session's user and project with their state, the known marketplaces
    /// and the problems found. Install one with `executeCommand("plugin", args: "marketplace add
    /// DIR")` and `executeCommand("plugin", args: "install NAME@MARKETPLACE")`; sessions created
    /// afterwards load it.
    public func listPlugins() throws -> PluginListing {
        try decodeJSON(PluginListing.self, callNative { try native.listPlugins() })
    }

    /// The session's MCP servers with their status, tools and prompts; a prompt runs with
    /// `executeCommand("mcp__<server>__<prompt>", args:)`.
    public func listMcpServers() throws -> [McpServerInfo] {
        try decodeJSON([McpServerInfo].self, callNative { try native.listMcpServers() })
    }

    /// Waits until the MCP servers are done starting (each connected, failed, needing
    /// authorization or disabled), at most `timeout` seconds (`nil`: as long as the start-up
    /// timeout allows). Servers connect in the background: right after the session is created
    /// they are `pending`, and each prompt waits for them before its first model call anyway.
    /// True when no server is still starting.
    public func waitForMcpServers(timeout: TimeInterval? = nil) async -> Bool {
        let milliseconds = timeout.map { UInt64(max(0, $0) * 1000) }
        return await native.waitForMcpServers(timeoutMs: milliseconds)
    }

    /// The edit checkpoints, oldest first. Files that Write, Edit, MultiEdit, NotebookEdit and
    /// tools declaring `mutatedFileFields` change are saved before each prompt first changes
    /// them; changes made by Bash are not tracked.
    public func listEditCheckpoints() throws -> [EditCheckpoint] {
        try decodeJSON([EditCheckpoint].self, callNative { try native.listEditCheckpoints() })
    }

    /// One checkpoint: its files and which checkpoints restoring or rolling back undoes.
    public func inspectEditCheckpoint(_ id: String) throws -> EditCheckpointInspection {
        try decodeJSON(
            EditCheckpointInspection.self, callNative { try native.inspectEditCheckpoint(id: id) })
    }

    /// Puts files back as checkpoint `id`'s prompt left them: later prompts' changes are undone
    /// newest first. Throws `busy` while a prompt runs.
    public func restoreEditCheckpoint(_ id: String) throws -> EditCheckpointRestore {
        try decodeJSON(
            EditCheckpointRestore.self,
            callNative { try native.restoreEditCheckpoint(id: id, rollback: false) })
    }

    /// Like `restoreEditCheckpoint`, and also undoes checkpoint `id`'s own prompt.
    public func rollbackEditCheckpoint(_ id: String) throws -> EditCheckpointRestore {
        try decodeJSON(
            EditCheckpointRestore.self,
            callNative { try native.restoreEditCheckpoint(id: id, rollback: true) })
    }

    /// Shuts the session down: aborts any run, fires SessionEnd hooks once, ends every event
    /// stream. `reason` is a SessionEnd reason (`other` by default).
    public func shutdown(reason: String? = nil) async throws {
        try await callNative { try await native.shutdown(reason: reason) }
        subscriptions.closeAll()
    }

    /// Compacts the conversation now; returns the summary.
    public func compact(instructions: String? = nil) async throws -> JSONValue {
        let text = try await callNative { try await native.compact(instructions: instructions) }
        return try decodeJSON(JSONValue.self, text)
    }

    /// True while a prompt runs (or one is queued to run next).
    public var isExecuting: Bool { (try? native.isExecuting()) ?? false }

    /// The queued prompt as displayed.
    public var pendingPrompt: String? { (try? native.getPendingPrompt()) ?? nil }

    /// The chat messages.
    public func messages() throws -> [JSONValue] {
        try decodeJSON([JSONValue].self, callNative { try native.getMessages() })
    }

    /// The full history: messages and event entries.
    public func fullHistory() throws -> [JSONValue] {
        try decodeJSON([JSONValue].self, callNative { try native.getFullHistory() })
    }

    /// How full the context window is.
    public func contextState() throws -> JSONValue {
        try decodeJSON(JSONValue.self, callNative { try native.getContextState() })
    }

    /// The answer text of the current prompt so far.
    public var streamingText: String { (try? native.getStreamingText()) ?? "" }

    /// The tool calls of the current prompt.
    public func activeTools() throws -> [ToolState] {
        try decodeJSON([ToolState].self, callNative { try native.getActiveTools() })
    }

    /// The session's name.
    public var name: String? { (try? native.getName()) ?? nil }

    /// Names the session (`nil` clears the name). Throws `RobotaError.shutDown` once the
    /// session is shut down (the name would not be saved).
    public func setName(_ name: String?) throws {
        try callNative { try native.setName(name: name) }
    }

    /// The session id.
    public var sessionId: String { (try? native.getSessionId()) ?? "" }
}

/// Where and how a session's traces and metrics are exported (OTLP). Unset fields come from the
/// `OTEL_EXPORTER_OTLP_*` and `OTEL_SERVICE_NAME` environment variables.
public struct TelemetryOptions: Sendable {
    /// The collector's base URL (`http://collector:4318` for HTTP, `:4317` for gRPC).
    public var endpoint: String?
    /// `"http"` (HTTP/protobuf, the default) or `"grpc"`.
    public var otlpProtocol: String?
    /// Headers sent with every export (an API key, say).
    public var headers: [String: String]
    /// The `service.name` resource attribute (default `robota`).
    public var serviceName: String?
    /// How long one export, and the flush at shutdown, may take (default 5000 ms).
    public var timeoutMs: UInt64?

    /// Options exporting to `endpoint` over `otlpProtocol`.
    public init(
        endpoint: String? = nil, otlpProtocol: String? = nil, headers: [String: String] = [:],
        serviceName: String? = nil, timeoutMs: UInt64? = nil
    ) {
        self.endpoint = endpoint
        self.otlpProtocol = otlpProtocol
        self.headers = headers
        self.serviceName = serviceName
        self.timeoutMs = timeoutMs
    }

    var json: JSONValue {
        var object: [String: JSONValue] = [:]
        if let endpoint { object["endpoint"] = .string(endpoint) }
        if let otlpProtocol { object["protocol"] = .string(otlpProtocol) }
        if !headers.isEmpty { object["headers"] = .object(headers.mapValues(JSONValue.string)) }
        if let serviceName { object["serviceName"] = .string(serviceName) }
        if let timeoutMs { object["timeoutMs"] = .number(Double(timeoutMs)) }
        return .object(object)
    }
}

