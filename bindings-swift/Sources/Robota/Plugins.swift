// Plugins from Swift: `PluginInfo` and `PluginListing`, what `InteractiveSession.listPlugins()`
// reports (installed and enabled plugins, known marketplaces, problems found).
import Foundation

/// A plugin of the session's user and project.
public struct PluginInfo: Sendable, Decodable, Equatable {
    /// `name@marketplace`, as in the settings' `enabledPlugins`.
    public let id: String
    /// The plugin's name: the namespace of its skills (`name:skill`), commands and agents.
    public let name: String
    /// The marketplace it was installed from.
    public let marketplace: String
    /// Its version, when known.
    public let version: String?
    /// What it does.
    public let description: String?
    /// Installed in the user's robota folder.
    public let installed: Bool
    /// Turned on by the settings.
    public let enabled: Bool
    /// The settings file that turned it on or off.
    public let enabledIn: String?
    /// Its folder, when installed.
    public let path: String?
    /// Loaded into this session.
    public let loaded: Bool
    /// Its skills, commands and agents (qualified names).
    public let skills: [String], commands: [String], agents: [String]

    enum CodingKeys: String, CodingKey {
        case id, name, marketplace, version, description, installed, enabled, path, loaded
        case skills, commands, agents
        case enabledIn = "enabled_in"
    }

    /// Decodes the engine's plugin (absent lists are empty).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        name = try c.decode(String.self, forKey: .name)
        marketplace = try c.decode(String.self, forKey: .marketplace)
        version = try c.decodeIfPresent(String.self, forKey: .version)
        description = try c.decodeIfPresent(String.self, forKey: .description)
        installed = try c.decode(Bool.self, forKey: .installed)
        enabled = try c.decode(Bool.self, forKey: .enabled)
        enabledIn = try c.decodeIfPresent(String.self, forKey: .enabledIn)
        path = try c.decodeIfPresent(String.self, forKey: .path)
        loaded = try c.decodeIfPresent(Bool.self, forKey: .loaded) ?? false
        skills = try c.decodeIfPresent([String].self, forKey: .skills) ?? []
        commands = try c.decodeIfPresent([String].self, forKey: .commands) ?? []
        agents = try c.decodeIfPresent([String].self, forKey: .agents) ?? []
    }
}

/// `InteractiveSession.listPlugins()`: plugins, known marketplaces and problems found.
public struct PluginListing: Sendable, Decodable, Equatable {
    /// A marketplace robota knows.
    public struct Marketplace: Sendable, Decodable, Equatable {
        /// Its name (the part after `@` in plugin ids).
        public let name: String
        /// The plugins it offers.
        public let plugins: [String]
    }

    /// A problem found (the file, when there is one, and what is wrong).
    public struct Warning: Sendable, Decodable, Equatable {
        /// The file concerned.
        public let file: String?
        /// What is wrong and what robota did about it.
        public let message: String
    }

    /// Installed or enabled plugins.
    public let plugins: [PluginInfo]
    /// Known marketplaces.
    public let marketplaces: [Marketplace]
    /// Problems found.
    public let warnings: [Warning]
}
