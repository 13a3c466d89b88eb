//! Google OAuth access tokens for Vertex AI: Application Default Credentials (a key file of type
//! `service_account` or `authorized_user`, named by `GOOGLE_APPLICATION_CREDENTIALS` or found at
//! gcloud's well-known path, else the metadata server), each token cached until shortly before
//! it expires.
//!
//! The lookup order and file formats are Google's ("How Application Default Credentials works"):
//!
//! 1. `GOOGLE_APPLICATION_CREDENTIALS` (or an explicit file): a service-account key, whose signed
//!    JWT is exchanged at the file's `token_uri` (by the `gcp_auth` crate), or gcloud user
//!    credentials (`authorized_user`), whose refresh token is exchanged at the file's
//!    `token_uri` (default `https://oauth2.googleapis.com/token`).
//! 2. gcloud's file, written by `gcloud auth application-default login`:
//!    `$CLOUDSDK_CONFIG/application_default_credentials.json`, by default under
//!    `~/.config/gcloud` (`%APPDATA%\gcloud` on Windows).
//! 3. The metadata server of Google Cloud compute (`http://metadata.google.internal`, or the
//!    host in `GCE_METADATA_HOST`), which answers for the attached service account.
//!
//! The user-credential and metadata flows are written here rather than taken from `gcp_auth`
//! because that crate fixes their endpoints (it ignores the file's `token_uri` and
//! `GCE_METADATA_HOST`, which Google's own libraries honour, and does not accept user
//! credentials in `GOOGLE_APPLICATION_CREDENTIALS`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gcp_auth::{CustomServiceAccount, TokenProvider};
use reqwest::header::{HeaderName, HeaderValue, AUTHORIZATION};
use serde::Deserialize;
use tokio::sync::Mutex;

use super::http::{direct_client, error_chain, read_capped_body};
use crate::message::{ProviderError, ProviderErrorKind};

/// The OAuth scope requested for Vertex AI calls.
pub const CLOUD_PLATFORM_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// Where user credentials are exchanged when their file names no `token_uri`.
pub const DEFAULT_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";

/// The metadata server's host when `GCE_METADATA_HOST` is unset.
pub const DEFAULT_METADATA_HOST: &str = "metadata.google.internal";

/// Key files larger than this are refused (real ones are a few kilobytes).
const MAX_KEY_FILE_BYTES: u64 = 1024 * 1024;

/// A cached token is replaced when less than this is left of its life.
const REFRESH_MARGIN: Duration = Duration::from_secs(60);

/// Token endpoints and the metadata server must answer within this.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);

/// Connecting to the metadata server gives up after this: off Google Cloud nothing answers.
const METADATA_CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// Token responses larger than this are refused.
const MAX_TOKEN_RESPONSE_BYTES: usize = 64 * 1024;

/// Where Vertex AI's access tokens come from.
pub(crate) struct GoogleCredentials {
    source: Source,
    /// The last token from a user-credential or metadata source (`gcp_auth` caches service
    /// accounts' itself). The lock is held while a token is fetched, so concurrent calls wait
    /// for one refresh instead of each starting their own.
    cached: Mutex<Option<CachedToken>>,
}

enum Source {
    ServiceAccount(Box<CustomServiceAccount>),
    AuthorizedUser {
        file: PathBuf,
        user: AuthorizedUser,
        client: reqwest::Client,
    },
    MetadataServer {
        /// `http://host` (no trailing slash).
        base: String,
        /// What was looked for before falling back to the metadata server, for the error
        /// when it does not answer either.
        searched: String,
        client: reqwest::Client,
    },
}

struct CachedToken {
    value: String,
    refresh_at: Instant,
}

/// The fields of an `authorized_user` file that robota uses.
#[derive(Deserialize)]
struct AuthorizedUser {
    client_id: String,
    client_secret: String,
    refresh_token: String,
    #[serde(default)]
    token_uri: Option<String>,
    /// The project billed for the calls (sent as `x-goog-user-project`).
    #[serde(default)]
    quota_project_id: Option<String>,
}

/// A token endpoint's answer.
#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    expires_in: Option<u64>,
}

/// An OAuth error body (`{"error": "invalid_grant", "error_description": "…"}`).
#[derive(Deserialize)]
struct OAuthError {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

impl fmt::Debug for GoogleCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GoogleCredentials")
            .field("source", &self.kind())
            .finish()
    }
}

fn auth_error(provider: &str, message: String) -> ProviderError {
    ProviderError::new(ProviderErrorKind::Auth, provider, message)
}

const LOGIN_HINT: &str = "run `gcloud auth application-default login`, set \
                          GOOGLE_APPLICATION_CREDENTIALS to a service-account key file, or run \
                          on Google Cloud with a service account attached";

impl GoogleCredentials {
    /// Finds the credentials (see the module docs): `explicit_file`, else the variables read
    /// through `var`. Fails with [`ProviderErrorKind::Auth`] when a named file cannot be used;
    /// the metadata server is only asked on the first [`token`](Self::token).
    pub(crate) fn find(
        provider: &str,
        explicit_file: Option<PathBuf>,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ProviderError> {
        let named =
            explicit_file.or_else(|| var("GOOGLE_APPLICATION_CREDENTIALS").map(PathBuf::from));
        if let Some(file) = named {
            return Self::from_file(provider, &file, "GOOGLE_APPLICATION_CREDENTIALS");
        }
        let well_known = well_known_file(var);
        if let Some(file) = &well_known {
            if file.is_file() {
                return Self::from_file(provider, file, "gcloud's application default credentials");
            }
        }
        let host = var("GCE_METADATA_HOST").unwrap_or_else(|| DEFAULT_METADATA_HOST.to_string());
        let host = host.trim().trim_end_matches('/');
        let base = if host.starts_with("http://") || host.starts_with("https://") {
            host.to_string()
        } else {
            format!("http://{host}")
        };
        let searched = match &well_known {
            Some(file) => format!(
                "GOOGLE_APPLICATION_CREDENTIALS is not set and there is no {}",
                file.display()
            ),
            None => "GOOGLE_APPLICATION_CREDENTIALS is not set and there is no home directory \
                     to look for gcloud's credentials in"
                .to_string(),
        };
        Ok(Self::new(Source::MetadataServer {
            base,
            searched,
            client: token_client(provider, Some(METADATA_CONNECT_TIMEOUT))?,
        }))
    }

    fn new(source: Source) -> Self {
        GoogleCredentials {
            source,
            cached: Mutex::new(None),
        }
    }

    /// Reads a credentials file; `named_by` says where its path came from, for errors.
    fn from_file(provider: &str, file: &Path, named_by: &str) -> Result<Self, ProviderError> {
        let unusable = |why: String| {
            auth_error(
                provider,
                format!(
                    "cannot use {} ({named_by}) as Google credentials: {why}",
                    file.display()
                ),
            )
        };
        let text = read_capped(file).map_err(&unusable)?;
        let kind = serde_json::from_str::<serde_json::Value>(&text)
            .map_err(|e| unusable(format!("it is not JSON ({e})")))?
            .get("type")
            .and_then(|t| t.as_str())
            .map(str::to_string)
            .unwrap_or_default();
        match kind.as_str() {
            "service_account" => {
                let account = CustomServiceAccount::from_json(&text).map_err(|e| {
                    unusable(format!("it is not a valid service-account key ({e})"))
                })?;
                Ok(Self::new(Source::ServiceAccount(Box::new(account))))
            }
            "authorized_user" => {
                let user: AuthorizedUser = serde_json::from_str(&text).map_err(|e| {
                    unusable(format!(
                        "its user credentials are incomplete ({e}); run `gcloud auth \
                         application-default login` again"
                    ))
                })?;
                Ok(Self::new(Source::AuthorizedUser {
                    file: file.to_path_buf(),
                    user,
                    client: token_client(provider, None)?,
                }))
            }
            "" => Err(unusable(
                "it has no \"type\" (expected \"service_account\" or \"authorized_user\")".into(),
            )),
            other => Err(unusable(format!(
                "credentials of type {other:?} are not supported (use a service-account key \
                 or `gcloud auth application-default login`)"
            ))),
        }
    }

    /// What kind of credentials these are, for messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self.source {
            Source::ServiceAccount(_) => "service account key",
            Source::AuthorizedUser { .. } => "gcloud user credentials",
            Source::MetadataServer { .. } => "metadata server",
        }
    }

    /// The project named in a service-account key, if any.
    pub(crate) fn key_project(&self) -> Option<String> {
        match &self.source {
            Source::ServiceAccount(account) => account.project_id().map(str::to_string),
            _ => None,
        }
    }

    /// The headers that authenticate one request: `Authorization: Bearer <token>` with a token
    /// that has not expired, and `x-goog-user-project` when user credentials name a quota
    /// project.
    pub(crate) async fn headers(
        &self,
        provider: &str,
    ) -> Result<Vec<(HeaderName, HeaderValue)>, ProviderError> {
        let token = self.token(provider).await?;
        let mut value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
            auth_error(
                provider,
                "the access token is not a valid header value".into(),
            )
        })?;
        value.set_sensitive(true);
        let mut headers = vec![(AUTHORIZATION, value)];
        if let Source::AuthorizedUser { user, .. } = &self.source {
            if let Some(project) = &user.quota_project_id {
                if let Ok(value) = HeaderValue::from_str(project) {
                    headers.push((HeaderName::from_static("x-goog-user-project"), value));
                }
            }
        }
        Ok(headers)
    }

    /// A valid access token: the cached one, or a new one when less than a minute of it is left.
    pub(crate) async fn token(&self, provider: &str) -> Result<String, ProviderError> {
        match &self.source {
            Source::ServiceAccount(account) => {
                let token = account.token(&[CLOUD_PLATFORM_SCOPE]).await.map_err(|e| {
                    auth_error(
                        provider,
                        format!(
                            "could not get an access token for the service account: {e}; check \
                             the key file (GOOGLE_APPLICATION_CREDENTIALS) and that the account \
                             is enabled"
                        ),
                    )
                })?;
                Ok(token.as_str().to_string())
            }
            Source::AuthorizedUser { file, user, client } => {
                self.cached_or(refresh_user_token(provider, client, file, user))
                    .await
            }
            Source::MetadataServer {
                base,
                searched,
                client,
            } => {
                self.cached_or(metadata_token(provider, client, base, searched))
                    .await
            }
        }
    }

    /// The cached token while it has more than a minute left, else the one `fetch` gets (which
    /// is then cached). `fetch` is only polled when needed.
    async fn cached_or(
        &self,
        fetch: impl std::future::Future<Output = Result<TokenResponse, ProviderError>>,
    ) -> Result<String, ProviderError> {
        let mut cached = self.cached.lock().await;
        if let Some(token) = cached.as_ref() {
            if Instant::now() < token.refresh_at {
                return Ok(token.value.clone());
            }
        }
        let fetched_at = Instant::now();
        let response = fetch.await?;
        let lifetime = Duration::from_secs(response.expires_in.unwrap_or(3600));
        *cached = Some(CachedToken {
            value: response.access_token.clone(),
            refresh_at: fetched_at + lifetime.saturating_sub(REFRESH_MARGIN),
        });
        Ok(response.access_token)
    }
}

/// gcloud's well-known credentials file, when a config directory can be named.
fn well_known_file(var: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let dir = match var("CLOUDSDK_CONFIG") {
        Some(dir) => PathBuf::from(dir),
        None if cfg!(windows) => PathBuf::from(var("APPDATA")?).join("gcloud"),
        None => PathBuf::from(var("HOME")?).join(".config").join("gcloud"),
    };
    Some(dir.join("application_default_credentials.json"))
}

fn read_capped(file: &Path) -> Result<String, String> {
    let metadata = std::fs::metadata(file).map_err(|e| format!("it cannot be read ({e})"))?;
    if metadata.len() > MAX_KEY_FILE_BYTES {
        return Err(format!(
            "it is {} bytes, more than a credentials file can be ({MAX_KEY_FILE_BYTES})",
            metadata.len()
        ));
    }
    std::fs::read_to_string(file).map_err(|e| format!("it cannot be read ({e})"))
}

fn token_client(
    provider: &str,
    connect_timeout: Option<Duration>,
) -> Result<reqwest::Client, ProviderError> {
    let mut builder = direct_client().timeout(TOKEN_TIMEOUT);
    if let Some(timeout) = connect_timeout {
        builder = builder.connect_timeout(timeout);
    }
    builder.build().map_err(|e| {
        ProviderError::new(
            ProviderErrorKind::Provider,
            provider,
            format!(
                "could not build the HTTP client for Google tokens: {}",
                error_chain(&e)
            ),
        )
    })
}

/// Exchanges user credentials' refresh token for an access token.
async fn refresh_user_token(
    provider: &str,
    client: &reqwest::Client,
    file: &Path,
    user: &AuthorizedUser,
) -> Result<TokenResponse, ProviderError> {
    let uri = user.token_uri.as_deref().unwrap_or(DEFAULT_TOKEN_URI);
    let form = [
        ("grant_type", "refresh_token"),
        ("client_id", user.client_id.as_str()),
        ("client_secret", user.client_secret.as_str()),
        ("refresh_token", user.refresh_token.as_str()),
    ];
    let failed = |why: String| {
        auth_error(
            provider,
            format!(
                "could not refresh the Google user credentials in {} at {uri}: {why}",
                file.display()
            ),
        )
    };
    let response = client
        .post(uri)
        .form(&form)
        .send()
        .await
        .map_err(|e| failed(error_chain(&e)))?;
    read_token_response(response)
        .await
        .map_err(|why| match why {
            TokenFailure::Refused(detail) => failed(format!(
                "{detail}; run `gcloud auth application-default login` again"
            )),
            TokenFailure::Other(detail) => failed(detail),
        })
}

/// Asks the metadata server for the attached service account's token.
async fn metadata_token(
    provider: &str,
    client: &reqwest::Client,
    base: &str,
    searched: &str,
) -> Result<TokenResponse, ProviderError> {
    let url = format!("{base}/computeMetadata/v1/instance/service-accounts/default/token");
    let response = client
        .get(&url)
        .query(&[("scopes", CLOUD_PLATFORM_SCOPE)])
        .header("Metadata-Flavor", "Google")
        .send()
        .await
        .map_err(|e| {
            auth_error(
                provider,
                format!(
                    "no Google Cloud credentials for Vertex AI: {searched}, and the metadata \
                     server at {base} did not answer ({}); {LOGIN_HINT}",
                    error_chain(&e)
                ),
            )
        })?;
    read_token_response(response).await.map_err(|why| {
        let detail = match why {
            TokenFailure::Refused(detail) | TokenFailure::Other(detail) => detail,
        };
        auth_error(
            provider,
            format!(
                "the metadata server at {base} gave no access token: {detail}; check that a \
                 service account with the cloud-platform scope is attached, or {LOGIN_HINT}"
            ),
        )
    })
}

enum TokenFailure {
    /// The endpoint refused the credentials (4xx).
    Refused(String),
    /// Anything else: a server error or an unreadable answer.
    Other(String),
}

async fn read_token_response(response: reqwest::Response) -> Result<TokenResponse, TokenFailure> {
    let status = response.status();
    let body = read_capped_body(response, MAX_TOKEN_RESPONSE_BYTES)
        .await
        .map_err(|e| TokenFailure::Other(error_chain(&e)))?
        .ok_or_else(|| {
            TokenFailure::Other(format!(
                "the answer is larger than {MAX_TOKEN_RESPONSE_BYTES} bytes"
            ))
        })?;
    let text = String::from_utf8_lossy(&body);
    if !status.is_success() {
        let detail = match serde_json::from_str::<OAuthError>(&text) {
            Ok(error) => match error.error_description {
                Some(description) => format!("{} ({description})", error.error),
                None => error.error,
            },
            Err(_) => super::http::truncate(text.trim(), 300),
        };
        let detail = format!("HTTP {}: {detail}", status.as_u16());
        return Err(if status.is_client_error() {
            TokenFailure::Refused(detail)
        } else {
            TokenFailure::Other(detail)
        });
    }
    let token: TokenResponse = serde_json::from_str(&text)
        .map_err(|e| TokenFailure::Other(format!("the answer is not a token response ({e})")))?;
    if token.access_token.trim().is_empty() {
        return Err(TokenFailure::Other(
            "the answer has an empty access_token".into(),
        ));
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn well_known_file_follows_cloudsdk_config_then_home() {
        let file = well_known_file(&vars(&[("CLOUDSDK_CONFIG", "/cfg"), ("HOME", "/h")]));
        assert_eq!(
            file,
            Some(PathBuf::from("/cfg/application_default_credentials.json"))
        );
        if !cfg!(windows) {
            let file = well_known_file(&vars(&[("HOME", "/h")]));
            assert_eq!(
                file,
                Some(PathBuf::from(
                    "/h/.config/gcloud/application_default_credentials.json"
                ))
            );
            assert_eq!(well_known_file(&vars(&[])), None);
        }
    }

    #[test]
    fn without_files_the_metadata_server_is_next() {
        let credentials = GoogleCredentials::find(
            "vertex",
            None,
            &vars(&[("GCE_METADATA_HOST", "127.0.0.1:9")]),
        )
        .unwrap();
        assert_eq!(credentials.kind(), "metadata server");
        match &credentials.source {
            Source::MetadataServer { base, searched, .. } => {
                assert_eq!(base, "http://127.0.0.1:9");
                assert!(searched.contains("GOOGLE_APPLICATION_CREDENTIALS is not set"));
            }
            _ => panic!("expected the metadata server"),
        }
    }
}
