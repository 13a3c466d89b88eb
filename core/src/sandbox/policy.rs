//! [`SandboxPolicy`]: what a sandboxed command may do, as plain data — the input of every
//! backend. Built from the session's directories and the `sandbox` settings by
//! [`SandboxPolicy::build`], which only looks at the file system to make paths canonical.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::settings::SandboxSettings;

/// Names that stay read-only inside every writable root: repository hooks and configuration,
/// editor and tool configuration that runs code when opened, agent settings, shell start-up
/// files. Whole `.git` is not listed so that `git commit` works; its hooks and config are.
pub const PROTECTED_NAMES: &[&str] = &[
    ".git/hooks",
    ".git/config",
    ".gitmodules",
    ".gitconfig",
    ".claude",
    ".robota",
    ".vscode",
    ".idea",
    ".husky",
    ".devcontainer",
    ".cargo/config",
    ".cargo/config.toml",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pre-commit-config.yaml",
    ".envrc",
    ".mcp.json",
    ".ripgreprc",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".profile",
];

/// Network access of sandboxed commands.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum NetworkPolicy {
    /// No network at all.
    #[default]
    None,
    /// Only HTTP/HTTPS through robota's proxy, to these domains.
    AllowList {
        /// `example.com`, `*.example.com`, IP addresses.
        domains: Vec<String>,
    },
    /// Unrestricted.
    All,
}

impl NetworkPolicy {
    /// From `sandbox.network.allowedDomains`: empty is none, `*` is all.
    pub fn from_domains(domains: &[String]) -> NetworkPolicy {
        let domains: Vec<String> = domains
            .iter()
            .map(|d| d.trim().to_ascii_lowercase())
            .filter(|d| !d.is_empty())
            .collect();
        if domains.iter().any(|d| d == "*") {
            NetworkPolicy::All
        } else if domains.is_empty() {
            NetworkPolicy::None
        } else {
            NetworkPolicy::AllowList { domains }
        }
    }
}

/// What a sandboxed command may do. The default allows writing nowhere and no network.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SandboxPolicy {
    /// Directories (and files) writable below; everything else is read-only. Canonical and
    /// existing.
    pub writable_roots: Vec<PathBuf>,
    /// Paths inside the writable roots that stay read-only (those that exist).
    pub protected_paths: Vec<PathBuf>,
    /// Paths that may not be read (those that exist).
    pub read_denied: Vec<PathBuf>,
    /// Paths inside `read_denied` that may be read after all.
    pub read_allowed: Vec<PathBuf>,
    /// Network access.
    pub network: NetworkPolicy,
    /// Listening on local TCP ports is allowed.
    pub allow_local_binding: bool,
    /// Creating Unix sockets is allowed.
    pub allow_unix_sockets: bool,
    /// The per-session temporary directory (`TMPDIR`), one of the writable roots.
    pub temp_dir: Option<PathBuf>,
}

/// The directories a policy is built from besides the settings.
#[derive(Debug, Clone, Default)]
pub struct PolicyInputs {
    /// The session's working directory.
    pub cwd: PathBuf,
    /// Workspace roots and `permissions.additionalDirectories`.
    pub extra_roots: Vec<PathBuf>,
    /// The per-session temporary directory.
    pub temp_dir: Option<PathBuf>,
    /// Files the session treats as sensitive (settings files, hook scripts): kept read-only.
    pub sensitive_paths: Vec<PathBuf>,
}

impl SandboxPolicy {
    /// The policy for these directories and settings. Paths that do not exist are left out of
    /// the writable roots, protected and denied paths (a mount or a Landlock rule needs an
    /// existing file).
    pub fn build(inputs: &PolicyInputs, settings: &SandboxSettings) -> SandboxPolicy {
        let mut writable_roots = Vec::new();
        let candidates = std::iter::once(&inputs.cwd)
            .chain(&inputs.extra_roots)
            .chain(inputs.temp_dir.iter())
            .chain(&settings.filesystem.allow_write);
        for root in candidates {
            if let Some(root) = existing(root) {
                push_unique(&mut writable_roots, root);
            }
        }
        let mut protected_paths = Vec::new();
        for root in &writable_roots {
            if Some(root) != inputs.temp_dir.as_ref() {
                push_protected_names(&mut protected_paths, root);
            }
        }
        for path in inputs
            .sensitive_paths
            .iter()
            .chain(&settings.filesystem.deny_write)
        {
            if let Some(path) = existing(path) {
                push_unique(&mut protected_paths, path);
            }
        }
        let read_denied = settings
            .filesystem
            .deny_read
            .iter()
            .filter_map(|p| existing(p))
            .collect();
        let read_allowed = settings
            .filesystem
            .allow_read
            .iter()
            .filter_map(|p| existing(p))
            .collect();
        let network = &settings.network;
        SandboxPolicy {
            writable_roots,
            protected_paths,
            read_denied,
            read_allowed,
            network: NetworkPolicy::from_domains(&network.allowed_domains),
            allow_local_binding: network.allow_local_binding,
            allow_unix_sockets: network.allow_all_unix_sockets
                || !network.allow_unix_sockets.is_empty(),
            temp_dir: inputs.temp_dir.as_ref().and_then(|t| existing(t)),
        }
    }

    /// The policy for a command whose working directory is `cwd`: when `cwd` lies inside a
    /// protected path of a writable root (a subagent's worktree under `.robota/worktrees/`), it
    /// becomes a writable root of its own, with its own protected names; otherwise unchanged.
    pub fn for_cwd(&self, cwd: &Path) -> Option<SandboxPolicy> {
        let cwd = existing(cwd)?;
        let inside_root = self.writable_roots.iter().any(|root| cwd.starts_with(root));
        if !inside_root || self.is_writable(&cwd) {
            return None;
        }
        let mut policy = self.clone();
        push_protected_names(&mut policy.protected_paths, &cwd);
        policy.writable_roots.push(cwd);
        Some(policy)
    }

    /// Whether `path` (canonical) is inside a writable root.
    /// The most specific rule wins, as with bubblewrap's mounts: a writable root inside a
    /// protected path (a worktree under `.robota/`) is writable again.
    pub fn is_writable(&self, path: &Path) -> bool {
        let deepest = |paths: &[PathBuf]| {
            paths
                .iter()
                .filter(|p| path.starts_with(p))
                .map(|p| p.components().count())
                .max()
        };
        match (
            deepest(&self.writable_roots),
            deepest(&self.protected_paths),
        ) {
            (Some(root), Some(protected)) => root > protected,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }
}

fn push_protected_names(protected: &mut Vec<PathBuf>, root: &Path) {
    for name in PROTECTED_NAMES {
        if let Some(path) = existing(&root.join(name)) {
            if path.starts_with(root) {
                push_unique(protected, path);
            }
        }
    }
}

fn existing(path: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(path).ok()
}

fn push_unique(list: &mut Vec<PathBuf>, path: PathBuf) {
    if !list.contains(&path) {
        list.push(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cwd_inside_a_protected_path_becomes_its_own_root() {
        let dir = std::env::temp_dir().join(format!("robota-policy-{}", std::process::id()));
        let worktree = dir.join(".robota/worktrees/a");
        std::fs::create_dir_all(worktree.join(".git/hooks")).expect("mkdir");
        let inputs = PolicyInputs {
            cwd: dir.clone(),
            ..PolicyInputs::default()
        };
        let policy = SandboxPolicy::build(&inputs, &SandboxSettings::default());
        let root = dir.canonicalize().expect("canonical");
        let worktree = worktree.canonicalize().expect("canonical");
        assert!(policy.protected_paths.contains(&root.join(".robota")));
        assert!(!policy.is_writable(&worktree));
        assert_eq!(policy.for_cwd(&root), None, "the cwd is already writable");
        let adjusted = policy.for_cwd(&worktree).expect("adjusted policy");
        assert!(adjusted.is_writable(&worktree.join("src")));
        assert!(!adjusted.is_writable(&worktree.join(".git/hooks/pre-commit")));
        assert_eq!(
            policy.for_cwd(Path::new("/")),
            None,
            "outside every root: unchanged"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn network_from_domains() {
        assert_eq!(NetworkPolicy::from_domains(&[]), NetworkPolicy::None);
        assert_eq!(
            NetworkPolicy::from_domains(&["*".into(), "a.com".into()]),
            NetworkPolicy::All
        );
        assert_eq!(
            NetworkPolicy::from_domains(&[" A.com ".into()]),
            NetworkPolicy::AllowList {
                domains: vec!["a.com".into()]
            }
        );
    }
}
