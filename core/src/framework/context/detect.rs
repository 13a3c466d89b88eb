//! Project detection from marker files: which languages and package managers a project uses, and
//! its name. The result is neutral metadata for the system prompt; nothing here decides behaviour.
//!
//! The nearest directory from cwd up to the repository root (cwd only outside a repository) that
//! holds any marker is the project directory; every marker in it is reported, so a Rust crate with
//! a `package.json` for its web assets reports both stacks.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::text::{lines, read_text};

/// One language/toolchain found in the project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectStack {
    /// The language, e.g. `Rust`, `TypeScript`, `Python`.
    pub language: String,
    /// The package manager / build tool, e.g. `cargo`, `pnpm`, `uv`, when it can be told.
    pub package_manager: Option<String>,
    /// The marker file that revealed it, e.g. `Cargo.toml`.
    pub marker: String,
}

/// What kind of project the session is in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProjectInfo {
    /// The directory holding the markers, if any were found.
    pub root: Option<PathBuf>,
    /// The project name from the first manifest that declares one.
    pub name: Option<String>,
    /// Every stack found, in marker order.
    pub stacks: Vec<ProjectStack>,
}

/// Detects the project for `cwd`, looking up to `git_root` (inclusive) when given.
pub fn detect_project(cwd: &Path, git_root: Option<&Path>) -> ProjectInfo {
    for dir in cwd.ancestors() {
        let info = detect_in(dir);
        if !info.stacks.is_empty() {
            return info;
        }
        if git_root.is_none_or(|root| dir == root) {
            break;
        }
    }
    ProjectInfo::default()
}

fn stack(language: &str, package_manager: Option<&str>, marker: &str) -> ProjectStack {
    ProjectStack {
        language: language.to_owned(),
        package_manager: package_manager.map(str::to_owned),
        marker: marker.to_owned(),
    }
}

/// The markers of one directory.
fn detect_in(dir: &Path) -> ProjectInfo {
    let has = |name: &str| dir.join(name).is_file();
    let mut stacks = Vec::new();
    let mut name: Option<String> = None;

    if has("Cargo.toml") {
        stacks.push(stack("Rust", Some("cargo"), "Cargo.toml"));
        if let Ok(text) = read_text(&dir.join("Cargo.toml")) {
            name = name.or_else(|| toml_table_string(&text, "package", "name"));
        }
    }
    if has("package.json") {
        let manifest: Option<serde_json::Value> = read_text(&dir.join("package.json"))
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok());
        let declared_manager = manifest
            .as_ref()
            .and_then(|m| m.get("packageManager"))
            .and_then(|value| value.as_str())
            .and_then(|spec| spec.split('@').next())
            .filter(|manager| !manager.is_empty())
            .map(str::to_owned);
        let lockfile_manager = [
            ("pnpm-lock.yaml", "pnpm"),
            ("yarn.lock", "yarn"),
            ("bun.lockb", "bun"),
            ("bun.lock", "bun"),
            ("package-lock.json", "npm"),
            ("npm-shrinkwrap.json", "npm"),
        ]
        .iter()
        .find(|(lockfile, _)| has(lockfile))
        .map(|(_, manager)| (*manager).to_owned());
        let uses_typescript = has("tsconfig.json")
            || manifest.as_ref().is_some_and(|m| {
                ["dependencies", "devDependencies"]
                    .iter()
                    .any(|section| m.get(section).and_then(|d| d.get("typescript")).is_some())
            });
        let language = if uses_typescript {
            "TypeScript"
        } else {
            "JavaScript"
        };
        let manager = declared_manager.or(lockfile_manager);
        stacks.push(stack(language, manager.as_deref(), "package.json"));
        name = name.or_else(|| {
            manifest
                .as_ref()
                .and_then(|m| m.get("name"))
                .and_then(|value| value.as_str())
                .map(str::to_owned)
        });
    }
    if has("deno.json") || has("deno.jsonc") {
        let marker = if has("deno.json") {
            "deno.json"
        } else {
            "deno.jsonc"
        };
        stacks.push(stack("TypeScript", Some("deno"), marker));
    }
    if has("pyproject.toml") {
        let text = read_text(&dir.join("pyproject.toml")).unwrap_or_default();
        let manager = [
            ("uv.lock", "uv"),
            ("poetry.lock", "poetry"),
            ("pdm.lock", "pdm"),
            ("Pipfile.lock", "pipenv"),
        ]
        .iter()
        .find(|(lockfile, _)| has(lockfile))
        .map(|(_, manager)| *manager)
        .or_else(|| text.contains("[tool.poetry]").then_some("poetry"))
        .unwrap_or("pip");
        stacks.push(stack("Python", Some(manager), "pyproject.toml"));
        name = name
            .or_else(|| toml_table_string(&text, "project", "name"))
            .or_else(|| toml_table_string(&text, "tool.poetry", "name"));
    } else if let Some(marker) = ["requirements.txt", "setup.py", "setup.cfg", "Pipfile"]
        .into_iter()
        .find(|marker| has(marker))
    {
        let manager = if marker == "Pipfile" { "pipenv" } else { "pip" };
        stacks.push(stack("Python", Some(manager), marker));
    }
    if has("go.mod") {
        stacks.push(stack("Go", Some("go"), "go.mod"));
        if let Ok(text) = read_text(&dir.join("go.mod")) {
            name = name.or_else(|| {
                lines(&text)
                    .find_map(|line| line.trim().strip_prefix("module "))
                    .map(|module| module.trim().to_owned())
            });
        }
    }
    if has("Package.swift") {
        stacks.push(stack("Swift", Some("swiftpm"), "Package.swift"));
    }
    let simple_markers: &[(&str, &str, &str)] = &[
        ("Gemfile", "Ruby", "bundler"),
        ("pom.xml", "Java", "maven"),
        ("build.gradle", "Java", "gradle"),
        ("build.gradle.kts", "Kotlin", "gradle"),
        ("composer.json", "PHP", "composer"),
        ("mix.exs", "Elixir", "mix"),
        ("pubspec.yaml", "Dart", "pub"),
        ("build.zig", "Zig", "zig"),
        ("CMakeLists.txt", "C/C++", "cmake"),
    ];
    for (marker, language, manager) in simple_markers {
        if has(marker) {
            stacks.push(stack(language, Some(manager), marker));
        }
    }
    if let Some(marker) = first_with_extension(dir, &["csproj", "fsproj", "sln"]) {
        let language = if marker.ends_with(".fsproj") {
            "F#"
        } else {
            "C#"
        };
        stacks.push(stack(language, Some("dotnet"), &marker));
    }

    ProjectInfo {
        root: (!stacks.is_empty()).then(|| dir.to_path_buf()),
        name,
        stacks,
    }
}

/// The first file name in `dir` (sorted, for a stable answer) with one of `extensions`.
fn first_with_extension(dir: &Path, extensions: &[&str]) -> Option<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| {
            Path::new(name)
                .extension()
                .and_then(|ext| ext.to_str())
                .is_some_and(|ext| extensions.contains(&ext))
        })
        .collect();
    names.sort();
    names.into_iter().next()
}

/// A `key = "value"` string from `[table]` of a TOML file. Deliberately tiny: only the manifest
/// name is needed, and a full TOML parser is not worth a dependency for it.
fn toml_table_string(text: &str, table: &str, key: &str) -> Option<String> {
    let header = format!("[{table}]");
    let mut in_table = false;
    for line in lines(text) {
        let line = line.trim();
        if line.starts_with('[') {
            in_table = line == header;
            continue;
        }
        if !in_table {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        if name.trim() != key {
            continue;
        }
        let value = value.trim();
        let quote = value.chars().next().filter(|c| *c == '"' || *c == '\'')?;
        let rest = &value[1..];
        return rest.find(quote).map(|end| rest[..end].to_owned());
    }
    None
}
