//! Which store a session is saved in, as settings (`"sessionStore"`), the CLI
//! (`--session-store`) and the bindings' configs name it: [`StoreChoice`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::store::{FileSessionStore, SessionStore, StoreError};

/// A session store by name: `{"type": "file"}` (the default: `.robota/sessions` and
/// `.robota/logs` in the project) or `{"type": "sqlite", "path": "…"}` (one database file for
/// many sessions; needs the `sqlite` feature). A relative `path` is resolved against the
/// project directory, and `~/` against the home directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum StoreChoice {
    /// The file store of the project.
    File,
    /// A SQLite database.
    Sqlite {
        /// The database file.
        path: PathBuf,
    },
}

impl StoreChoice {
    /// Reads the settings' `sessionStore` value; the error says what is wrong with it.
    pub fn from_settings(value: &Value) -> Result<StoreChoice, String> {
        serde_json::from_value(value.clone()).map_err(|error| {
            format!(
                "`sessionStore` must be {{\"type\": \"file\"}} or {{\"type\": \"sqlite\", \
                 \"path\": \"…\"}}: {error}"
            )
        })
    }

    /// Reads the CLI's `--session-store` argument: `file` or `sqlite:PATH`.
    pub fn from_argument(argument: &str) -> Result<StoreChoice, String> {
        match argument.split_once(':') {
            _ if argument == "file" => Ok(StoreChoice::File),
            Some(("sqlite", path)) if !path.is_empty() => Ok(StoreChoice::Sqlite {
                path: PathBuf::from(path),
            }),
            _ => Err(format!(
                "{argument:?} is not a session store: use `file` or `sqlite:PATH`"
            )),
        }
    }

    /// Opens the store for the project in `project` (`home` expands a `~/` path).
    pub fn open(
        &self,
        project: &Path,
        home: Option<&Path>,
    ) -> Result<Arc<dyn SessionStore>, StoreError> {
        match self {
            StoreChoice::File => Ok(Arc::new(FileSessionStore::for_project(project))),
            StoreChoice::Sqlite { path } => open_sqlite(&resolve(path, project, home)),
        }
    }
}

/// `path` against the project directory, `~/…` against `home`.
fn resolve(path: &Path, project: &Path, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~"), home) {
        (Ok(rest), Some(home)) => home.join(rest),
        _ => project.join(path),
    }
}

#[cfg(feature = "sqlite")]
fn open_sqlite(path: &Path) -> Result<Arc<dyn SessionStore>, StoreError> {
    Ok(Arc::new(super::sqlite_store::SqliteSessionStore::open(
        path,
    )?))
}

#[cfg(not(feature = "sqlite"))]
fn open_sqlite(path: &Path) -> Result<Arc<dyn SessionStore>, StoreError> {
    Err(StoreError::Io {
        op: "open the session database",
        path: path.to_path_buf(),
        source: std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "this build of robota has no SQLite store (build it with the `sqlite` feature)",
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_parse_from_settings_and_arguments() {
        assert_eq!(
            StoreChoice::from_settings(&serde_json::json!({"type": "sqlite", "path": "s.db"})),
            Ok(StoreChoice::Sqlite {
                path: "s.db".into()
            })
        );
        assert_eq!(
            StoreChoice::from_settings(&serde_json::json!({"type": "file"})),
            Ok(StoreChoice::File)
        );
        assert!(StoreChoice::from_settings(&serde_json::json!({"type": "postgres"})).is_err());
        assert!(StoreChoice::from_settings(&serde_json::json!({"type": "sqlite"})).is_err());
        assert_eq!(
            StoreChoice::from_argument("sqlite:/tmp/x.db"),
            Ok(StoreChoice::Sqlite {
                path: "/tmp/x.db".into()
            })
        );
        assert!(StoreChoice::from_argument("sqlite:").is_err());
        assert!(StoreChoice::from_argument("mysql:x").is_err());
        assert_eq!(
            resolve(Path::new("~/s.db"), Path::new("/p"), Some(Path::new("/h"))),
            PathBuf::from("/h/s.db")
        );
        assert_eq!(
            resolve(Path::new(".robota/s.db"), Path::new("/p"), None),
            PathBuf::from("/p/.robota/s.db")
        );
    }
}
