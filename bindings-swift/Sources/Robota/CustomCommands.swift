import Foundation

/// A custom slash command the host registers: a folder searched like `.claude/commands`
/// (`**/*.md`, subfolders as namespaces), or a command given as data. `listCommands()` lists
/// them with their source; `executeCommand(name, args:)` runs one.
public enum CustomCommand: Sendable, Equatable {
    /// A folder of command files.
    case folder(URL)
    /// A command given as data: `content` is what a command file would hold (optional
    /// frontmatter, then the prompt with `$ARGUMENTS` / `$1`…).
    case content(name: String, content: String)

    /// The engine's command registration.
    var json: JSONValue {
        switch self {
        case .folder(let url): ["dir": .string(url.path)]
        case .content(let name, let content): ["name": .string(name), "content": .string(content)]
        }
    }
}
