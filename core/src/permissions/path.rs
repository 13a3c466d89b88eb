//! Paths in permission checks: turning a tool's path argument into an absolute, normalised path;
//! Read/Edit rule patterns with Claude Code's four anchors and gitignore semantics; symlink
//! resolution through a caller-supplied [`PathResolver`]; and the built-in sensitive paths.
//!
//! Nothing here touches the file system: where a real path matters (symlinks), the caller answers
//! through [`PathResolver`].

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use super::glob::{segment_match, segments_match};

/// Answers "where does this path really lead?" for the evaluator, which does no I/O itself.
///
/// Implement it over the file system in the session (e.g. canonicalise the longest existing
/// prefix) or use the map in [`PermissionContext::symlinks`](super::PermissionContext::symlinks).
pub trait PathResolver {
    /// The fully resolved (symlink-free, absolute) path of `path`, or `None` when it resolves to
    /// itself or is unknown. `path` is absolute and may still contain `..` segments, because `..`
    /// after a symlink climbs from the link's *target*, not from the link.
    fn resolve(&self, path: &Path) -> Option<PathBuf>;

    /// Whether `path` is a directory: `Some(true)`/`Some(false)` when known, `None` when the
    /// resolver cannot tell (the evaluator then assumes it may be one). Used to decide whether a
    /// command reading `path` could reach files a `Read` deny rule protects below it.
    fn is_dir(&self, _path: &Path) -> Option<bool> {
        None
    }
}

/// A map of symbolic links (`link path → target`, both absolute) resolves paths by walking their
/// components: every prefix that is a link is replaced by its target, and `..` then climbs from
/// there, as the kernel does.
impl PathResolver for BTreeMap<PathBuf, PathBuf> {
    fn resolve(&self, path: &Path) -> Option<PathBuf> {
        if self.is_empty() {
            return None;
        }
        let mut current = PathBuf::from("/");
        let mut changed = false;
        let mut hops = 0usize;
        for component in path.components() {
            match component {
                Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
                Component::ParentDir => {
                    current.pop();
                }
                Component::Normal(name) => {
                    current.push(name);
                    // Follow chains of links, but never loop forever on a cycle.
                    while let Some(target) = self.get(&current) {
                        hops += 1;
                        if hops > 40 {
                            return None;
                        }
                        let base = current.parent().map(Path::to_path_buf).unwrap_or_default();
                        current = normalize(&base.join(target));
                        changed = true;
                    }
                }
            }
        }
        changed.then_some(current)
    }
}

/// Joins a tool-given path onto `cwd`, expanding a leading `~` as the tools do. The result keeps
/// `..` segments (see [`PathResolver::resolve`]); `.` and repeated slashes are dropped.
pub(crate) fn absolutize(raw: &str, cwd: &Path, home: Option<&Path>) -> PathBuf {
    let joined = if raw == "~" || raw.starts_with("~/") {
        match home {
            Some(home) => home.join(raw.trim_start_matches('~').trim_start_matches('/')),
            // Without a home directory the tools cannot expand `~` either; keep it literal.
            None => cwd.join(raw),
        }
    } else {
        cwd.join(raw)
    };
    joined.components().collect()
}

/// Lexical normalisation: drops `.`, applies `..` (never above the root), collapses separators.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                if !out.pop() {
                    out.push("/");
                }
                if out.as_os_str().is_empty() {
                    out.push("/");
                }
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push("/");
    }
    out
}

/// A path as the checks see it: where it appears to be, and where it really leads.
#[derive(Debug, Clone)]
pub(crate) struct CheckedPath {
    /// Absolute, lexically normalised.
    pub lexical: PathBuf,
    /// The symlink-resolved path when it differs from `lexical`.
    pub target: Option<PathBuf>,
}

impl CheckedPath {
    pub fn new(raw_abs: &Path, resolver: &dyn PathResolver) -> CheckedPath {
        let lexical = normalize(raw_abs);
        let target = resolver
            .resolve(raw_abs)
            .map(|t| normalize(&t))
            .filter(|t| *t != lexical);
        CheckedPath { lexical, target }
    }

    /// The lexical path, then the target if any.
    pub fn both(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.lexical.as_path()).chain(self.target.as_deref())
    }

    /// Allow semantics: the link and its target must both satisfy `f`.
    pub fn all(&self, mut f: impl FnMut(&Path) -> bool) -> bool {
        self.both().all(&mut f)
    }

    /// Deny semantics: either the link or its target satisfying `f` is enough.
    pub fn any(&self, mut f: impl FnMut(&Path) -> bool) -> bool {
        self.both().any(&mut f)
    }
}

/// Where a path pattern is anchored (Claude Code's four anchors).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Anchor {
    /// `//path`: the file-system root.
    Root,
    /// `~/path`: the home directory.
    Home,
    /// `/path`: the directory the rule's settings file belongs to (its source's base dir), or cwd
    /// when the source has none.
    SourceDir,
    /// `./path`: the cwd.
    Cwd,
    /// A bare relative pattern containing a `/` (`src/**`, `secrets/*.key`): for allow rules the
    /// cwd; deny and ask rules match it at any depth below the cwd, as Claude Code's do.
    CwdRelative,
    /// A bare pattern without `/` (e.g. `*.env`, `.env`): like a `.gitignore` line, any depth
    /// below the cwd.
    CwdAnyDepth,
}

/// A parsed Read/Edit path pattern.
#[derive(Debug, Clone)]
pub(crate) struct PathPattern {
    pub anchor: Anchor,
    /// Pattern segments below the anchor (may be empty: the anchor directory itself).
    pub segments: Vec<String>,
}

impl PathPattern {
    /// Parses the specifier of a `Read(…)`/`Edit(…)` rule.
    pub fn parse(spec: &str) -> Result<PathPattern, String> {
        let (anchor, rest) = if let Some(rest) = spec.strip_prefix("//") {
            (Anchor::Root, rest)
        } else if spec == "~" {
            (Anchor::Home, "")
        } else if let Some(rest) = spec.strip_prefix("~/") {
            (Anchor::Home, rest)
        } else if spec.starts_with('~') {
            return Err(
                "`~user` paths are not supported; write `~/…` for your home directory or an \
                 absolute `//…` path"
                    .to_string(),
            );
        } else if let Some(rest) = spec.strip_prefix('/') {
            (Anchor::SourceDir, rest)
        } else if spec == "." {
            (Anchor::Cwd, "")
        } else if let Some(rest) = spec.strip_prefix("./") {
            (Anchor::Cwd, rest)
        } else if spec.trim_end_matches('/').contains('/') {
            (Anchor::CwdRelative, spec)
        } else {
            (Anchor::CwdAnyDepth, spec)
        };
        // A trailing `/` means "this directory"; since a matching directory covers everything
        // below it anyway (gitignore semantics), it needs no separate handling.
        let mut segments = Vec::new();
        for seg in rest.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    // `..` in a pattern would make the anchor meaningless.
                    return Err(
                        "`..` is not allowed in path rules; anchor the path with `//`, \
                                `~/`, `/` or `./` instead"
                            .to_string(),
                    );
                }
                s => segments.push(s.to_string()),
            }
        }
        if anchor == Anchor::CwdAnyDepth {
            segments.insert(0, "**".to_string());
        }
        Ok(PathPattern { anchor, segments })
    }

    /// Whether the (absolute, normalised) `path` matches: the anchor directory must be a prefix
    /// and the pattern must match the rest of the path, or one of its ancestors, since a matching
    /// directory covers everything below it.
    ///
    /// `strict` (used for allow rules) limits the ancestor case to patterns whose last segment is
    /// a literal name or `**`, so `Edit(./src/*)` allows files directly in `src/` but not deeper,
    /// as "`*` stays within one segment" promises. Deny and ask rules keep full gitignore
    /// semantics, where `Read(./secrets/*)` also covers `secrets/sub/key`: erring towards the
    /// stricter reading is the safe direction for them.
    pub fn matches(
        &self,
        path: &Path,
        anchors: &AnchorDirs<'_>,
        case_insensitive: bool,
        strict: bool,
    ) -> bool {
        // No home directory known: a `~/` rule cannot be placed, so it matches nothing.
        let Some((base_parts, mut pattern)) = self.resolved(anchors, case_insensitive) else {
            return false;
        };
        let path_parts = folded_segments(path, case_insensitive);
        if path_parts.len() < base_parts.len() || path_parts[..base_parts.len()] != base_parts[..] {
            return false;
        }
        let rest: Vec<&str> = path_parts[base_parts.len()..]
            .iter()
            .map(String::as_str)
            .collect();
        if self.anchor == Anchor::CwdRelative && strict {
            // Allow rules read a bare relative pattern at the cwd only.
            pattern.remove(0);
        }
        if pattern.is_empty() {
            // The anchor directory itself: covers everything below it.
            return true;
        }
        if segments_match(&pattern, &rest) {
            return true;
        }
        let covers_contents = !strict
            || pattern
                .last()
                .is_some_and(|last| last == "**" || !last.contains(['*', '?', '[']));
        covers_contents && (1..rest.len()).any(|k| segments_match(&pattern, &rest[..k]))
    }
}

impl PathPattern {
    /// Whether some path at or below the directory `dir` could match (deny/ask semantics): for a
    /// recursive read of `dir`, or a glob in it, that may reach a protected file.
    pub fn may_match_below(
        &self,
        dir: &Path,
        anchors: &AnchorDirs<'_>,
        case_insensitive: bool,
    ) -> bool {
        let Some((base_parts, pattern)) = self.resolved(anchors, case_insensitive) else {
            return false;
        };
        let dir_parts = folded_segments(dir, case_insensitive);
        let shared = base_parts
            .iter()
            .zip(&dir_parts)
            .take_while(|(a, b)| a == b)
            .count();
        if shared < base_parts.len() {
            // `dir` is the anchor's ancestor (it contains everything the pattern can match) or
            // lies elsewhere.
            return shared == dir_parts.len();
        }
        let rest: Vec<String> = dir_parts[base_parts.len()..].to_vec();
        prefix_may_match(&pattern, &rest)
    }

    /// The anchor directory's segments and the pattern's (a bare relative pattern with a `/`
    /// gets a leading `**`: any depth), case-folded when asked. `None` when the anchor cannot
    /// be placed (`~/` without a home directory).
    fn resolved(
        &self,
        anchors: &AnchorDirs<'_>,
        case_insensitive: bool,
    ) -> Option<(Vec<String>, Vec<String>)> {
        let base = match self.anchor {
            Anchor::Root => PathBuf::from("/"),
            Anchor::Home => normalize(anchors.home?),
            Anchor::SourceDir => normalize(anchors.source_dir.unwrap_or(anchors.cwd)),
            Anchor::Cwd | Anchor::CwdRelative | Anchor::CwdAnyDepth => normalize(anchors.cwd),
        };
        let mut pattern: Vec<String> = self
            .segments
            .iter()
            .map(|s| fold(s, case_insensitive))
            .collect();
        if self.anchor == Anchor::CwdRelative {
            pattern.insert(0, "**".to_string());
        }
        Some((folded_segments(&base, case_insensitive), pattern))
    }
}

fn fold(s: &str, case_insensitive: bool) -> String {
    if case_insensitive {
        s.to_lowercase()
    } else {
        s.to_string()
    }
}

fn folded_segments(path: &Path, case_insensitive: bool) -> Vec<String> {
    segments_of(path)
        .iter()
        .map(|s| fold(s, case_insensitive))
        .collect()
}

/// Whether `pattern` can match `rest` followed by any further segments (or an ancestor of it,
/// which covers it).
fn prefix_may_match(pattern: &[String], rest: &[String]) -> bool {
    match (pattern.first(), rest.first()) {
        (None, _) => true,
        (Some(_), None) => true,
        (Some(p), Some(r)) => {
            if p == "**" {
                prefix_may_match(&pattern[1..], rest) || prefix_may_match(pattern, &rest[1..])
            } else {
                segment_match(p, r) && prefix_may_match(&pattern[1..], &rest[1..])
            }
        }
    }
}

/// The directories a pattern's anchor can refer to, for one evaluation.
pub(crate) struct AnchorDirs<'a> {
    pub cwd: &'a Path,
    pub home: Option<&'a Path>,
    pub source_dir: Option<&'a Path>,
}

/// The normal segments of an absolute path, as strings (lossy for non-UTF-8 names, which then
/// only match wildcards).
pub(crate) fn segments_of(path: &Path) -> Vec<String> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect()
}

/// Whether `path` is `dir` or inside it (both absolute and normalised).
pub(crate) fn is_within(path: &Path, dir: &Path, case_insensitive: bool) -> bool {
    if case_insensitive {
        let p = segments_of(path);
        let d = segments_of(dir);
        p.len() >= d.len()
            && p.iter()
                .zip(d.iter())
                .all(|(a, b)| a.to_lowercase() == b.to_lowercase())
    } else {
        path.starts_with(dir)
    }
}

/// Directory names whose contents are always sensitive to write (Claude Code's protected
/// directories and more): repository internals and hooks, agent configuration (settings and
/// hooks live there), editor and IDE configuration (tasks and launch files run programs), git
/// hook managers, the Cargo configuration (build scripts, runners), dev-container definitions,
/// and keys.
pub(crate) const SENSITIVE_DIRS: &[&str] = &[
    ".git",
    ".claude",
    ".robota",
    ".ssh",
    ".gnupg",
    ".vscode",
    ".idea",
    ".husky",
    ".cargo",
    ".devcontainer",
    ".aws",
    ".kube",
    ".docker",
];

/// File names that are always sensitive to write, wherever they are: shell start-up files (they
/// run on every new shell), git configuration and submodules, package-manager configuration
/// (registries, scripts), pre-commit hooks, and project MCP/direnv files (they can start
/// programs).
pub(crate) const SENSITIVE_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".cshrc",
    ".tcshrc",
    ".inputrc",
    ".gitconfig",
    ".git-credentials",
    ".gitmodules",
    ".lfsconfig",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pnpmrc",
    ".pypirc",
    ".netrc",
    ".pre-commit-config.yaml",
    ".pre-commit-hooks.yaml",
    ".mcp.json",
    ".envrc",
];

/// Why deleting or rewriting `path` wholesale is critical, if it is: the file-system root, a
/// top-level directory or one directly inside a system directory, the home directory or one of
/// its ancestors, or one of `anchors` (the working directory and workspace roots) or their
/// ancestors. Claude Code always asks for these.
pub(crate) fn critical_reason(
    path: &Path,
    home: Option<&Path>,
    anchors: &[PathBuf],
    case_insensitive: bool,
) -> Option<String> {
    const SYSTEM: &[&str] = &[
        "bin",
        "boot",
        "dev",
        "etc",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "opt",
        "proc",
        "root",
        "run",
        "sbin",
        "srv",
        "sys",
        "usr",
        "var",
        "home",
        "mnt",
        "media",
        "snap",
        "nix",
        "tmp",
        "private",
        "System",
        "Library",
        "Applications",
        "Users",
        "Volumes",
        "cores",
    ];
    let segments = segments_of(path);
    if segments.is_empty() {
        return Some("it is the root of the file system".into());
    }
    if segments.len() == 1 {
        return Some(format!("`/{}` is a top-level directory", segments[0]));
    }
    let same = |a: &Path, b: &Path| {
        if case_insensitive {
            segments_of(a)
                .iter()
                .map(|s| s.to_lowercase())
                .eq(segments_of(b).iter().map(|s| s.to_lowercase()))
        } else {
            normalize(a) == normalize(b)
        }
    };
    if let Some(home) = home {
        if is_within(&normalize(home), path, case_insensitive) {
            return Some(if same(path, home) {
                "it is the home directory".into()
            } else {
                "it contains the home directory".into()
            });
        }
    }
    for anchor in anchors {
        if is_within(&normalize(anchor), path, case_insensitive) {
            return Some(if same(path, anchor) {
                format!("it is the working directory `{}`", anchor.display())
            } else {
                format!("it contains the working directory `{}`", anchor.display())
            });
        }
    }
    if segments.len() == 2 && SYSTEM.contains(&segments[0].as_str()) {
        return Some(format!("`{}` is a system directory", path.display()));
    }
    None
}

/// Why writing `path` is sensitive, if it is. Names are compared case-insensitively always, since
/// on a case-insensitive file system `.GIT/config` *is* `.git/config`.
#[cfg(test)]
pub(crate) fn sensitive_reason(
    path: &Path,
    extra: &[PathBuf],
    case_insensitive: bool,
) -> Option<String> {
    sensitive_reason_below(path, None, extra, case_insensitive)
}

/// Why writing `path` is sensitive, if it is, with protected directory names looked for only
/// below `root` when `path` is inside it (an isolated checkout that itself lives under
/// `.robota/`). Protected file names and `extra` paths are checked as usual.
pub(crate) fn sensitive_reason_below(
    path: &Path,
    root: Option<&Path>,
    extra: &[PathBuf],
    case_insensitive: bool,
) -> Option<String> {
    let mut segments = segments_of(path);
    if let Some(root) = root.filter(|r| is_within(path, r, case_insensitive)) {
        let depth = segments_of(root).len().min(segments.len());
        segments.drain(..depth);
    }
    for seg in &segments {
        let lower = seg.to_lowercase();
        if let Some(dir) = SENSITIVE_DIRS.iter().find(|d| **d == lower) {
            return Some(format!("it is inside a `{dir}/` directory"));
        }
    }
    if let Some(last) = segments.last() {
        let lower = last.to_lowercase();
        if let Some(file) = SENSITIVE_FILES.iter().find(|f| **f == lower) {
            return Some(format!("`{file}` files are protected"));
        }
    }
    for p in extra {
        let p = normalize(p);
        if is_within(path, &p, case_insensitive) {
            return Some(format!(
                "`{}` is a protected settings or hook file",
                p.display()
            ));
        }
    }
    None
}

/// Whether a path written as `text`, whose location is unknown (after `cd "$X"`, or a glob that
/// may reach dot-files), could name a sensitive path: a segment equal to — or, when it is a glob,
/// able to match — a protected directory or file name. `dot_glob`: globs may match dot-names.
pub(crate) fn sensitive_text_reason(text: &str, dot_glob: bool) -> Option<String> {
    let segments: Vec<String> = text
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_lowercase)
        .collect();
    let last = segments.len().saturating_sub(1);
    for (i, seg) in segments.iter().enumerate() {
        let glob = seg.contains(['*', '?', '[']);
        // Without dotglob a glob reaches a dot-name only when it starts with a dot itself.
        let reaches_dots = dot_glob || seg.starts_with('.');
        let hit =
            |name: &&&str| *seg == ***name || (glob && reaches_dots && segment_match(seg, name));
        if let Some(dir) = SENSITIVE_DIRS.iter().find(hit) {
            return Some(format!("it may be inside a `{dir}/` directory"));
        }
        if i == last {
            if let Some(file) = SENSITIVE_FILES.iter().find(hit) {
                return Some(format!("it may be a `{file}` file, which is protected"));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs<'a>(cwd: &'a Path, home: &'a Path, src: Option<&'a Path>) -> AnchorDirs<'a> {
        AnchorDirs {
            cwd,
            home: Some(home),
            source_dir: src,
        }
    }

    #[test]
    fn normalisation() {
        assert_eq!(
            normalize(Path::new("/a/./b/../c//d")),
            PathBuf::from("/a/c/d")
        );
        assert_eq!(normalize(Path::new("/../../etc")), PathBuf::from("/etc"));
        let p = absolutize("./src/../../etc/passwd", Path::new("/w/p"), None);
        assert_eq!(normalize(&p), PathBuf::from("/w/etc/passwd"));
        let p = absolutize("~/x", Path::new("/w"), Some(Path::new("/home/u")));
        assert_eq!(p, PathBuf::from("/home/u/x"));
    }

    #[test]
    fn anchors() {
        let cwd = Path::new("/w/p");
        let home = Path::new("/home/u");
        let src = Path::new("/w");
        let d = dirs(cwd, home, Some(src));
        let m = |pat: &str, path: &str| {
            PathPattern::parse(pat)
                .unwrap()
                .matches(Path::new(path), &d, false, true)
        };
        let loose = |pat: &str, path: &str| {
            PathPattern::parse(pat)
                .unwrap()
                .matches(Path::new(path), &d, false, false)
        };
        assert!(m("//etc/**", "/etc/passwd"));
        assert!(m("~/.ssh/**", "/home/u/.ssh/id_rsa"));
        assert!(m("/docs/**", "/w/docs/a.md"));
        assert!(!m("/docs/**", "/w/p/docs/a.md"));
        assert!(m("./src/**", "/w/p/src/a/b.rs"));
        assert!(m("src/**", "/w/p/src/a/b.rs"));
        // Deny and ask rules match bare relative patterns at any depth; allow rules do not.
        assert!(!m("src/**", "/w/p/pkg/src/a.rs"));
        assert!(loose("src/**", "/w/p/pkg/src/a.rs"));
        assert!(loose("secrets/**", "/w/p/a/secrets/key"));
        assert!(!loose("./secrets/**", "/w/p/a/secrets/key"));
        assert!(m(".env", "/w/p/.env"));
        assert!(m(".env", "/w/p/sub/.env"));
        assert!(!m("./.env", "/w/p/sub/.env"));
        assert!(m("*.env", "/w/p/a/b/x.env"));
        assert!(m("./src/*", "/w/p/src/a"));
        assert!(!m("./src/*", "/w/p/src/a/b.rs"));
        assert!(loose("./src/*", "/w/p/src/a/b.rs"));
        // A matching directory covers its contents.
        assert!(m("./secrets", "/w/p/secrets/key"));
        assert!(!m("./src/**", "/etc/passwd"));
    }

    #[test]
    fn may_match_below_a_directory() {
        let cwd = Path::new("/w/p");
        let home = Path::new("/home/u");
        let d = dirs(cwd, home, None);
        let below = |pat: &str, dir: &str| {
            PathPattern::parse(pat)
                .unwrap()
                .may_match_below(Path::new(dir), &d, false)
        };
        assert!(below("./.env", "/w/p"));
        assert!(below("./.env", "/w"));
        assert!(below("./.env", "/"));
        assert!(!below("./.env", "/w/p/src"));
        assert!(below(".env", "/w/p/src"));
        assert!(below("secrets/**", "/w/p/a"));
        assert!(!below("./secrets/**", "/w/p/a"));
        assert!(below("./secrets/**", "/w/p/secrets/x"));
        assert!(!below("~/.ssh/**", "/w/p"));
    }

    #[test]
    fn critical_paths() {
        let home = Some(Path::new("/home/u"));
        let anchors = [PathBuf::from("/w/p")];
        let c = |p: &str| critical_reason(Path::new(p), home, &anchors, false).is_some();
        assert!(c("/"));
        assert!(c("/usr"));
        assert!(c("/usr/lib"));
        assert!(c("/etc/ssh"));
        assert!(c("/home/u"));
        assert!(c("/home"));
        assert!(c("/w/p"));
        assert!(c("/w"));
        assert!(!c("/w/p/build"));
        assert!(!c("/home/u/project/x"));
        assert!(!c("/usr/lib/x/y"));
    }

    #[test]
    fn symlink_map_walks_components() {
        let mut map = BTreeMap::new();
        map.insert(PathBuf::from("/w/src/link"), PathBuf::from("/etc"));
        assert_eq!(
            map.resolve(Path::new("/w/src/link/passwd")),
            Some(PathBuf::from("/etc/passwd"))
        );
        // `..` after a link climbs from the target.
        assert_eq!(
            map.resolve(Path::new("/w/src/link/../x")),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(map.resolve(Path::new("/w/src/other")), None);
        // Relative link targets resolve against the link's directory; cycles end.
        let mut map = BTreeMap::new();
        map.insert(PathBuf::from("/a/l"), PathBuf::from("../b"));
        map.insert(PathBuf::from("/c1"), PathBuf::from("/c2"));
        map.insert(PathBuf::from("/c2"), PathBuf::from("/c1"));
        assert_eq!(
            map.resolve(Path::new("/a/l/f")),
            Some(PathBuf::from("/b/f"))
        );
        assert_eq!(map.resolve(Path::new("/c1/f")), None);
    }

    #[test]
    fn sensitive() {
        let no = |p: &str| sensitive_reason(Path::new(p), &[], false).is_none();
        assert!(!no("/w/.git/config"));
        assert!(!no("/w/.GIT/config"));
        assert!(!no("/w/.claude/settings.json"));
        assert!(!no("/home/u/.bashrc"));
        assert!(no("/w/.github/workflows/ci.yml"));
        assert!(no("/w/.gitignore"));
        assert!(sensitive_text_reason(".g*", false).is_some());
        assert!(sensitive_text_reason("$D/.git/config", false).is_some());
        assert!(sensitive_text_reason("x/.bashrc", false).is_some());
        assert!(sensitive_text_reason("src/*.rs", true).is_none());
        assert!(sensitive_text_reason("*", false).is_none());
        assert!(sensitive_text_reason("*", true).is_some());
        assert!(sensitive_reason(
            Path::new("/w/hooks/check.sh"),
            &[PathBuf::from("/w/hooks/check.sh")],
            false
        )
        .is_some());
    }

    #[test]
    fn isolated_roots_only_protect_what_is_below_them() {
        let root = Path::new("/w/.robota/worktrees/a1");
        let below = |p: &str| sensitive_reason_below(Path::new(p), Some(root), &[], false);
        assert!(below("/w/.robota/worktrees/a1/src/lib.rs").is_none());
        assert!(below("/w/.robota/worktrees/a1/.git").is_some());
        assert!(below("/w/.robota/worktrees/a1/.claude/settings.json").is_some());
        assert!(below("/w/.robota/worktrees/a1/x/.bashrc").is_some());
        // Outside the root the whole path counts.
        assert!(below("/w/.robota/settings.json").is_some());
        assert!(below("/w/.robota/worktrees/a2/src/lib.rs").is_some());
        let extra = [PathBuf::from("/w/.robota/worktrees/a1/hook.sh")];
        let path = Path::new("/w/.robota/worktrees/a1/hook.sh");
        assert!(sensitive_reason_below(path, Some(root), &extra, false).is_some());
    }
}
