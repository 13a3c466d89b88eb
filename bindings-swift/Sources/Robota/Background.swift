// Work beside the conversation: background tasks (Bash with `run_in_background`, background
// subagents) and subagents started from host code — the typed snapshots, log pages, reports and
// `backgroundTask` events, and the `InteractiveSession` methods that manage them.
import Foundation
import RobotaNative

/// Where a background task stands.
public enum BackgroundTaskStatus: String, Sendable, Decodable, Equatable {
    /// Accepted, not started yet.
    case queued
    /// Running.
    case running
    /// Running, but blocked on a permission answer.
    case waitingPermission = "waiting_permission"
    /// Ended successfully (a process exited with code 0, a subagent answered).
    case completed
    /// Ended with an error: a non-zero exit, a signal, a watchdog, a failure to run.
    case failed
    /// Stopped on request (`cancelBackgroundTask`, `KillShell`) or by the session's shutdown.
    case cancelled
    /// Was running when the process that ran an earlier run of a resumed session ended.
    case lost

    /// True while the task is queued or running.
    public var isRunning: Bool { self == .queued || self == .running || self == .waitingPermission }
}

/// A background task as it was when read.
public struct BackgroundTask: Sendable, Decodable, Equatable {
    /// Who started a task.
    public struct Origin: Sendable, Decodable, Equatable {
        /// `tool` (the model called a tool), `command` or `host`.
        public let kind: String
        /// The tool or command name.
        public let name: String?
        /// The tool call's id, for `tool`.
        public let toolUseId: String?

        enum CodingKeys: String, CodingKey { case kind, name, toolUseId = "tool_use_id" }
    }

    /// `bash_1`, `agent_2`, … (unique within the session, also across resumes).
    public let id: String
    /// `process` (a shell command) or `agent` (a subagent).
    public let kind: String
    /// Who started it.
    public let origin: Origin
    /// The command line (for a subagent, `<agent type>: <task>`).
    public let command: String
    /// A short description, when one was given.
    public let description: String?
    /// Where it runs.
    public let cwd: String
    /// The shell's pid, also its process group id (`nil` for a subagent).
    public let pid: UInt32?
    /// Where it stands.
    public let status: BackgroundTaskStatus
    /// The exit code, once the process exited.
    public let exitCode: Int32?
    /// The signal that ended the process, if one did.
    public let signal: Int32?
    /// Why it failed, was cancelled or was lost.
    public let error: String?
    /// `max_runtime` or `idle` when a watchdog ended it.
    public let timeoutReason: String?
    /// What it is doing now, when its runner says (a subagent's current tool).
    public let currentAction: String?
    /// The file receiving its stdout (the full output; a subagent's report).
    public let stdoutPath: String
    /// The file receiving its stderr.
    public let stderrPath: String
    /// Bytes of output so far (both streams).
    public let outputBytes: UInt64
    /// When it was created, in milliseconds since the Unix epoch.
    public let createdAtMs: UInt64
    /// When it ended, in milliseconds since the Unix epoch.
    public let endedAtMs: UInt64?

    /// True while it is queued or running.
    public var isRunning: Bool { status.isRunning }

    enum CodingKeys: String, CodingKey {
        case id, kind, origin, command, description, cwd, pid, status, signal, error
        case exitCode = "exit_code", timeoutReason = "timeout_reason"
        case currentAction = "current_action", stdoutPath = "stdout_path"
        case stderrPath = "stderr_path", outputBytes = "output_bytes"
        case createdAtMs = "created_at_ms", endedAtMs = "ended_at_ms"
    }
}

/// Which output file of a task to read.
public enum LogStream: String, Sendable, Decodable, Equatable {
    /// Standard output (a subagent's report).
    case stdout
    /// Standard error.
    case stderr
}

/// A page of a task's output file; read on from `nextOffset` until it equals `totalBytes`.
public struct BackgroundTaskLogPage: Sendable, Decodable, Equatable {
    /// The task.
    public let taskId: String
    /// The file read.
    public let stream: LogStream
    /// The file's path.
    public let path: String
    /// The byte offset the page starts at.
    public let offset: UInt64
    /// The offset of the next page.
    public let nextOffset: UInt64
    /// The file's size when read.
    public let totalBytes: UInt64
    /// The page (UTF-8; invalid sequences replaced).
    public let text: String

    enum CodingKeys: String, CodingKey {
        case taskId = "task_id", stream, path, offset, nextOffset = "next_offset"
        case totalBytes = "total_bytes", text
    }
}

/// Where a subagent runs.
public enum SubagentIsolation: String, Sendable, Equatable {
    /// In the session's directory.
    case none
    /// In a git worktree of its own (kept when it changed files, removed otherwise).
    case worktree
}

/// A subagent to run: the task, the agent definition and, optionally, its model.
public struct SubagentRequest: Sendable, Equatable {
    /// What the subagent should do.
    public var prompt: String
    /// The agent definition's name (`general-purpose` when `nil`; `.claude/agents/*.md` add
    /// more).
    public var agentType: String?
    /// Where it runs.
    public var isolation: SubagentIsolation
    /// The model, overriding the definition's: `sonnet`, `opus`, `haiku` (mapped through the
    /// provider's model table), `inherit` or a model id.
    public var model: String?

    /// A request to run `prompt`.
    public init(
        prompt: String, agentType: String? = nil, isolation: SubagentIsolation = .none,
        model: String? = nil
    ) {
        self.prompt = prompt
        self.agentType = agentType
        self.isolation = isolation
        self.model = model
    }

    /// The engine's `SubagentRequest`.
    var fields: [String: JSONValue] {
        var fields: [String: JSONValue] = [
            "prompt": .string(prompt), "isolation": .string(isolation.rawValue),
        ]
        if let agentType { fields["agent_type"] = .string(agentType) }
        if let model { fields["model"] = .string(model) }
        return fields
    }
}

/// What a subagent run produced.
public struct SubagentReport: Sendable, Decodable, Equatable {
    /// The run's id (`agent_id` in hook inputs).
    public let agentId: String
    /// The agent definition used.
    public let agentType: String
    /// The model it ran on.
    public let model: String
    /// Its final answer.
    public let response: String
    /// Why its run ended (`completed`, `interrupted`, `max_turns`, `error`, …).
    public let stopReason: String
    /// True when it was aborted.
    public let interrupted: Bool
    /// Model/tool rounds.
    public let rounds: UInt32
    /// The tools it ran, in order.
    public let toolsExecuted: [String]
    /// Its transcript, when the session keeps a log.
    public let transcriptPath: String?
    /// The worktree and what happened to it, for isolated runs.
    public let worktree: JSONValue?
    /// The model error, when the run ended on one.
    public let error: String?
    /// Things worth knowing (an ignored model override, unknown tools, …).
    public let notes: [String]

    enum CodingKeys: String, CodingKey {
        case agentId = "agent_id", agentType = "agent_type", model, response
        case stopReason = "stop_reason", interrupted, rounds, toolsExecuted = "tools_executed"
        case transcriptPath = "transcript_path", worktree, error, notes
    }

    /// Decodes the engine's report (absent `model` and `notes`: empty).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        agentId = try c.decode(String.self, forKey: .agentId)
        agentType = try c.decode(String.self, forKey: .agentType)
        model = try c.decodeIfPresent(String.self, forKey: .model) ?? ""
        response = try c.decode(String.self, forKey: .response)
        stopReason = try c.decode(String.self, forKey: .stopReason)
        interrupted = try c.decode(Bool.self, forKey: .interrupted)
        rounds = try c.decode(UInt32.self, forKey: .rounds)
        toolsExecuted = try c.decodeIfPresent([String].self, forKey: .toolsExecuted) ?? []
        transcriptPath = try c.decodeIfPresent(String.self, forKey: .transcriptPath)
        worktree = try c.decodeIfPresent(JSONValue.self, forKey: .worktree)
        error = try c.decodeIfPresent(String.self, forKey: .error)
        notes = try c.decodeIfPresent([String].self, forKey: .notes) ?? []
    }
}

/// Progress of a subagent run.
public enum SubagentProgress: Sendable, Equatable {
    /// It is starting.
    case started(agentId: String, agentType: String)
    /// It started a tool.
    case toolStart(agentId: String, toolName: String, toolUseId: String)
    /// One of its tools ended.
    case toolEnd(agentId: String, toolName: String, toolUseId: String, isError: Bool)
    /// It finished (also when interrupted or failed).
    case finished(SubagentReport)
}

/// A `backgroundTask` event: a task's lifecycle change, or a subagent's progress.
public enum BackgroundTaskEvent: Sendable, Equatable {
    /// A task moved from `from` (`nil`: just created) to `status`; `task` is the whole task
    /// after the change.
    case stateChanged(
        taskId: String, from: BackgroundTaskStatus?, status: BackgroundTaskStatus,
        task: BackgroundTask)
    /// A subagent's progress; `taskId` names its task when it runs in the background.
    case subagent(taskId: String?, progress: SubagentProgress)
    /// A kind of progress this version does not know, as the engine sent it.
    case other(JSONValue)

    /// The task the event is about, when it names one.
    public var taskId: String? {
        switch self {
        case .stateChanged(let taskId, _, _, _): taskId
        case .subagent(let taskId, _): taskId
        case .other(let data): data["task_id"]?.stringValue
        }
    }

    init(data: JSONValue) throws(RobotaError) {
        func typed<T: Decodable>(_ key: String, _ t: T.Type) throws(RobotaError) -> T {
            do { return try (data[key] ?? .null).decode(t) } catch {
                throw .internalError("cannot decode a background task event's `\(key)`: \(error)")
            }
        }
        let string = { (key: String) in data[key]?.stringValue ?? "" }
        let taskId = data["task_id"]?.stringValue
        switch (data["task_kind"]?.stringValue, data["event"]?.stringValue) {
        case (_, "state_changed"?):
            var from: BackgroundTaskStatus?
            if let raw = data["from"], raw != .null { from = try typed("from", BackgroundTaskStatus.self) }
            self = .stateChanged(
                taskId: string("task_id"), from: from,
                status: try typed("status", BackgroundTaskStatus.self),
                task: try typed("task", BackgroundTask.self))
        case ("subagent"?, "started"?):
            self = .subagent(
                taskId: taskId,
                progress: .started(agentId: string("agent_id"), agentType: string("agent_type")))
        case ("subagent"?, "tool_start"?):
            self = .subagent(
                taskId: taskId,
                progress: .toolStart(
                    agentId: string("agent_id"), toolName: string("tool_name"),
                    toolUseId: string("tool_use_id")))
        case ("subagent"?, "tool_end"?):
            self = .subagent(
                taskId: taskId,
                progress: .toolEnd(
                    agentId: string("agent_id"), toolName: string("tool_name"),
                    toolUseId: string("tool_use_id"), isError: data["is_error"]?.boolValue ?? false))
        case ("subagent"?, "finished"?):
            self = .subagent(taskId: taskId, progress: .finished(try typed("report", SubagentReport.self)))
        default:
            self = .other(data)
        }
    }
}

extension InteractiveSession {
    /// The background tasks (Bash `run_in_background`, background subagents), oldest first;
    /// those of earlier runs of a resumed session included (still-running ones as `lost`).
    public func listBackgroundTasks() throws -> [BackgroundTask] {
        try decodeJSON([BackgroundTask].self, callNative { try native.listBackgroundTasks() })
    }

    /// One background task (`nil` for an unknown id).
    public func backgroundTask(_ id: String) throws -> BackgroundTask? {
        guard let text = try callNative({ try native.getBackgroundTask(id: id) }) else {
            return nil
        }
        return try decodeJSON(BackgroundTask.self, text)
    }

    /// Stops a running task with its whole process tree (a subagent: its run); returns it
    /// once stopped. An unknown id throws `invalidArgument`.
    @discardableResult
    public func cancelBackgroundTask(_ id: String) async throws -> BackgroundTask {
        let text = try await callNative { try await native.cancelBackgroundTask(id: id) }
        return try decodeJSON(BackgroundTask.self, text)
    }

    /// Waits until the task has ended, at most `timeout`, and returns it as it is then (still
    /// running when the time ran out).
    public func waitBackgroundTask(_ id: String, timeout: Duration = .seconds(30)) async throws
        -> BackgroundTask
    {
        let (seconds, attoseconds) = timeout.components
        let milliseconds = UInt64(max(0, seconds)) * 1000 + UInt64(max(0, attoseconds) / 1_000_000_000_000_000)
        let text = try await callNative {
            try await native.waitBackgroundTask(id: id, timeoutMs: milliseconds)
        }
        return try decodeJSON(BackgroundTask.self, text)
    }

    /// Removes an ended task from the list (its log files stay); a running one throws
    /// `invalidArgument`.
    @discardableResult
    public func closeBackgroundTask(_ id: String) throws -> BackgroundTask {
        try decodeJSON(BackgroundTask.self, callNative { try native.closeBackgroundTask(id: id) })
    }

    /// Writes `input` to a running task's standard input.
    public func sendBackgroundTask(_ id: String, input: String) async throws {
        try await callNative { try await native.sendBackgroundTask(id: id, input: input) }
    }

    /// A page of a task's output file (at most 1 MiB) from byte `offset`.
    public func readBackgroundTaskLog(
        _ id: String, stream: LogStream = .stdout, offset: UInt64 = 0, maxBytes: UInt64 = 65536
    ) throws -> BackgroundTaskLogPage {
        try decodeJSON(
            BackgroundTaskLogPage.self,
            callNative {
                try native.readBackgroundTaskLog(
                    id: id, stream: stream.rawValue, offset: offset, maxBytes: maxBytes)
            })
    }

    /// Runs a subagent to its final report (as `/agent` does); `abort()` stops it. Its progress
    /// arrives as `backgroundTask(.subagent(…))` events.
    public func runSubagent(_ request: SubagentRequest) async throws -> SubagentReport {
        let json = try specJSON(.object(request.fields))
        let text = try await callNative { try await native.runSubagent(requestJson: json) }
        return try decodeJSON(SubagentReport.self, text)
    }

    /// Starts a subagent as a background task and returns the task at once: wait for it with
    /// `waitBackgroundTask`, read its report with `readBackgroundTaskLog`, stop it with
    /// `cancelBackgroundTask`. An unknown agent, an empty prompt, the task limit or a session
    /// without the built-in tools (whose task manager runs background tasks) throws
    /// `invalidArgument` before anything runs.
    public func startBackgroundSubagent(_ request: SubagentRequest) throws -> BackgroundTask {
        let json = try specJSON(.object(request.fields))
        return try decodeJSON(
            BackgroundTask.self, callNative { try native.startBackgroundSubagent(requestJson: json) })
    }
}
