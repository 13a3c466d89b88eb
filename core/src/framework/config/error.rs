//! Errors and warnings produced while loading settings. Every one names the file it came from, the
//! JSON path inside that file, and what was expected, so the user can go straight to the fix.

use std::fmt;
use std::io;
use std::path::PathBuf;

use serde::Serialize;

use super::SettingsSource;

/// A settings problem that stops the settings from loading.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// The file exists but could not be read (permissions, it is a directory, …).
    #[error("cannot read settings file {}: {source}", path.display())]
    Read {
        /// The settings file.
        path: PathBuf,
        /// The operating-system error.
        #[source]
        source: io::Error,
    },
    /// The path is not a regular file (a FIFO, a device, a directory, or a link to one) or the
    /// file is over the 1 MiB cap (see [`crate::files`]).
    #[error(transparent)]
    File(crate::files::FileError),
    /// The file is not valid JSON.
    #[error(
        "{}:{line}:{column}: settings file is not valid JSON: {message}",
        path.display()
    )]
    Parse {
        /// The settings file.
        path: PathBuf,
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// What the JSON parser reported.
        message: String,
    },
    /// A value has the wrong type or an out-of-range value.
    #[error("{source_label}: `{json_path}`: expected {expected}, found {found}")]
    InvalidValue {
        /// The layer the value came from.
        source_label: SettingsSource,
        /// Where the value is, e.g. `providers.anthropic.baseURL`.
        json_path: String,
        /// What the value should have been.
        expected: String,
        /// What it was.
        found: String,
    },
    /// A required field is absent.
    #[error("{source_label}: `{json_path}` is missing the required field `{field}` ({expected})")]
    MissingField {
        /// The layer that defines the object missing the field.
        source_label: SettingsSource,
        /// Path of the object, e.g. `providers.local`.
        json_path: String,
        /// The missing field.
        field: String,
        /// What the field should hold.
        expected: String,
    },
    /// A `$ENV:NAME` reference names a variable that is not set.
    #[error(
        "{source_label}: `{json_path}` refers to the environment variable `{variable}` \
         (\"$ENV:{variable}\"), which is not set; set it or write the value literally"
    )]
    MissingEnvVar {
        /// The layer holding the reference.
        source_label: SettingsSource,
        /// Where the reference is.
        json_path: String,
        /// The variable name.
        variable: String,
    },
    /// `currentProvider` names a profile that no layer defines.
    #[error(
        "{source_label}: `currentProvider` is \"{name}\", but `providers` has no profile of that \
         name (defined profiles: {})",
        list_or_none(available)
    )]
    UnknownProfile {
        /// The layer that set `currentProvider`.
        source_label: SettingsSource,
        /// The requested profile.
        name: String,
        /// The profiles that do exist, sorted.
        available: Vec<String>,
    },
    /// `permissions.defaultMode` is not a permission mode.
    #[error(
        "{source_label}: `{json_path}`: unknown permission mode \"{value}\"; expected one of: {}",
        super::PermissionModeSetting::VALID_NAMES.join(", ")
    )]
    InvalidPermissionMode {
        /// The layer that set the mode.
        source_label: SettingsSource,
        /// Where the mode is (`permissions.defaultMode`).
        json_path: String,
        /// The value found.
        value: String,
    },
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

/// What kind of non-fatal problem a [`SettingsWarning`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SettingsWarningKind {
    /// A key robota does not know at all (often a typo).
    UnknownKey,
    /// A key that Claude Code or TypeScript Robota understands but robota does not use. Hosts may
    /// hide these; they are reported so nothing is ignored silently.
    IgnoredKey,
    /// A `$ENV:NAME` reference in a provider profile that is not active could not be resolved; the
    /// field is left unset. It becomes an error if that profile is selected.
    UnresolvedEnvReference,
    /// A provider `type` robota has no built-in provider for (a host may register one).
    UnknownProviderType,
}

/// A non-fatal settings problem, returned next to the loaded settings instead of being dropped.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SettingsWarning {
    /// What kind of problem.
    pub kind: SettingsWarningKind,
    /// The layer it came from.
    pub source: SettingsSource,
    /// The JSON path of the value concerned.
    pub json_path: String,
    /// A sentence for the user.
    pub message: String,
}

impl fmt::Display for SettingsWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: `{}`: {}", self.source, self.json_path, self.message)
    }
}
