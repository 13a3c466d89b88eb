//! Which store a session is saved in, as settings (`"sessionStore"`), the CLI
//! (`--session-store`) and the bindings' configs name it: [`StoreChoice`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::store::{FileSessionStore, SessionStore, StoreError};

/// A session store by name: `{"type": "file"}` (the default: `.robota/sessions` and
/// `.robota/logs` in the project), `{"type": "sqlite", "path": "…"}` (one database file for
/// many sessions; needs the `sqlite` feature) or `{"type": "postgres", "url": "postgres://…"}`
/// (a PostgreSQL database shared by many workers and projects; needs the `postgres` feature).
/// A relative `path` is resolved against the project directory, and `~/` against the home
/// directory.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum StoreChoice {
    /// The file store of the project.
    File,
    /// A SQLite database.
    Sqlite {
        /// The database file.
        path: PathBuf,
    },
    /// A PostgreSQL database. Give the connection string as `url`, or name the environment
    /// variable that holds it as `urlEnv` (so no password sits in a settings file).
    Postgres {
        /// The connection string (`postgres://user:password@host:port/database`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        /// The environment variable holding the connection string.
        #[serde(
            default,
            rename = "urlEnv",
            alias = "url_env",
            skip_serializing_if = "Option::is_none"
        )]
        url_env: Option<String>,
        /// The project key the sessions are kept under (default: the project directory).
        /// Workers on other hosts that continue the same sessions must use the same key.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        project: Option<String>,
    },
}

/// Never prints a connection string (it may hold a password).
impl std::fmt::Debug for StoreChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreChoice::File => f.write_str("File"),
            StoreChoice::Sqlite { path } => f.debug_struct("Sqlite").field("path", path).finish(),
            StoreChoice::Postgres {
                url,
                url_env,
                project,
            } => f
                .debug_struct("Postgres")
                .field("url", &url.as_ref().map(|_| "<redacted>"))
                .field("url_env", url_env)
                .field("project", project)
                .finish(),
        }
    }
}

impl StoreChoice {
    /// Reads the settings' `sessionStore` value; the error says what is wrong with it.
    pub fn from_settings(value: &Value) -> Result<StoreChoice, String> {
        serde_json::from_value(value.clone()).map_err(|error| {
            format!(
                "`sessionStore` must be {{\"type\": \"file\"}}, {{\"type\": \"sqlite\", \
                 \"path\": \"…\"}} or {{\"type\": \"postgres\", \"url\": \"postgres://…\"}}: {error}"
            )
        })
    }

    /// Reads the CLI's `--session-store` argument: `file`, `sqlite:PATH`, a `postgres://` (or
    /// `postgresql://`) URL, or `postgres-env:NAME` (the URL is in environment variable NAME).
    pub fn from_argument(argument: &str) -> Result<StoreChoice, String> {
        match argument.split_once(':') {
            _ if argument == "file" => Ok(StoreChoice::File),
            Some(("postgres" | "postgresql", rest)) if rest.starts_with("//") => {
                Ok(StoreChoice::Postgres {
                    url: Some(argument.to_string()),
                    url_env: None,
                    project: None,
                })
            }
            Some(("postgres-env", name)) if !name.is_empty() => Ok(StoreChoice::Postgres {
                url: None,
                url_env: Some(name.to_string()),
                project: None,
            }),
            Some(("sqlite", path)) if !path.is_empty() => Ok(StoreChoice::Sqlite {
                path: PathBuf::from(path),
            }),
            _ => Err(format!(
                "{argument:?} is not a session store: use `file`, `sqlite:PATH`, `postgres://…` or `postgres-env:NAME`"
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
            StoreChoice::Postgres {
                url,
                url_env,
                project: key,
            } => {
                let url = match (url, url_env) {
                    (Some(url), None) => url.clone(),
                    (None, Some(name)) => std::env::var(name).map_err(|_| {
                        postgres_error(format!(
                            "the environment variable {name} (`urlEnv`) is not set"
                        ))
                    })?,
                    _ => {
                        return Err(postgres_error(
                            "give exactly one of `url` and `urlEnv`".to_string(),
                        ))
                    }
                };
                let key = key.clone().unwrap_or_else(|| project.display().to_string());
                open_postgres(url, key)
            }
        }
    }
}

fn postgres_error(message: String) -> StoreError {
    StoreError::Io {
        op: "open",
        path: PathBuf::from("the PostgreSQL session store"),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, message),
    }
}

#[cfg(feature = "postgres")]
fn open_postgres(url: String, project: String) -> Result<Arc<dyn SessionStore>, StoreError> {
    let config = super::postgres_store::PostgresConfig { url, project };
    Ok(Arc::new(
        super::postgres_store::PostgresSessionStore::connect(&config)?,
    ))
}

#[cfg(not(feature = "postgres"))]
fn open_postgres(_url: String, _project: String) -> Result<Arc<dyn SessionStore>, StoreError> {
    Err(postgres_error(
        "this build of robota has no PostgreSQL store (build it with the `postgres` feature)"
            .to_string(),
    ))
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
        assert_eq!(
            StoreChoice::from_settings(
                &serde_json::json!({"type": "postgres", "urlEnv": "DATABASE_URL", "project": "app"})
            ),
            Ok(StoreChoice::Postgres {
                url: None,
                url_env: Some("DATABASE_URL".into()),
                project: Some("app".into())
            })
        );
        assert!(StoreChoice::from_settings(&serde_json::json!({"type": "mysql"})).is_err());
        assert_eq!(
            StoreChoice::from_argument("postgres://u@h/db"),
            Ok(StoreChoice::Postgres {
                url: Some("postgres://u@h/db".into()),
                url_env: None,
                project: None
            })
        );
        assert!(StoreChoice::from_argument("postgres:").is_err());
        let neither = StoreChoice::Postgres {
            url: None,
            url_env: None,
            project: None,
        };
        assert!(neither.open(Path::new("/p"), None).is_err());
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
