// Edit checkpoints from Swift: `EditCheckpoint` (one prompt's saved files), what inspecting one
// shows, and what a restore or rollback did. Changes made by Bash are not tracked.
import Foundation

/// One prompt's saved files (`InteractiveSession.listEditCheckpoints()`).
public struct EditCheckpoint: Sendable, Decodable, Equatable {
    /// The id to inspect or restore (`turn-0003`).
    public let id: String
    /// Order within the session, from 1.
    public let sequence: Int
    /// The prompt that started it (its start).
    public let prompt: String
    /// RFC 3339 time the prompt started.
    public let createdAt: String
    /// False while the prompt runs.
    public let finished: Bool
    /// Files the prompt changed.
    public let fileCount: Int
    /// Bytes of saved content.
    public let bytes: Int

    enum CodingKeys: String, CodingKey {
        case id, sequence, prompt, finished, bytes
        case createdAt = "created_at", fileCount = "file_count"
    }
}

/// A checkpoint's files and what restoring it undoes.
public struct EditCheckpointInspection: Sendable, Decodable, Equatable {
    /// One saved file.
    public struct File: Sendable, Decodable, Equatable {
        /// The path relative to the project.
        public let displayPath: String
        /// The absolute path.
        public let path: String
        /// Whether it existed before the prompt changed it.
        public let existed: Bool
        /// Whether its saved content is on disk.
        public let snapshotExists: Bool
        /// `restore_preimage` or `delete_created_file`.
        public let action: String

        enum CodingKeys: String, CodingKey {
            case path, existed, action
            case displayPath = "display_path", snapshotExists = "snapshot_exists"
        }
    }

    /// The checkpoint.
    public let checkpoint: EditCheckpoint
    /// Its files.
    public let files: [File]
    /// Checkpoints `restoreEditCheckpoint` undoes, newest first.
    public let restoreRange: [String]
    /// Checkpoints `rollbackEditCheckpoint` undoes, newest first.
    public let rollbackRange: [String]

    enum CodingKeys: String, CodingKey {
        case checkpoint, files
        case restoreRange = "restore_range", rollbackRange = "rollback_range"
    }
}

/// What a restore or rollback did.
public struct EditCheckpointRestore: Sendable, Decodable, Equatable {
    /// The checkpoint restored to (or rolled back through).
    public let checkpointId: String
    /// The prompts undone, newest first.
    public let rolledBack: [String]
    /// Files written back to their saved content.
    public let restored: [String]
    /// Files deleted because the undone prompts created them.
    public let deleted: [String]
    /// Files that could not be put back, with the reason.
    public let problems: [String]

    enum CodingKeys: String, CodingKey {
        case restored, deleted, problems
        case checkpointId = "checkpoint_id", rolledBack = "rolled_back"
    }

    /// Decodes the engine's report (`problems` is absent when there are none).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        checkpointId = try c.decode(String.self, forKey: .checkpointId)
        rolledBack = try c.decode([String].self, forKey: .rolledBack)
        restored = try c.decode([String].self, forKey: .restored)
        deleted = try c.decode([String].self, forKey: .deleted)
        problems = try c.decodeIfPresent([String].self, forKey: .problems) ?? []
    }
}
