//! Shape validation of one settings layer, before merging, so a wrong type is reported against the
//! exact file that contains it (even if a later layer would override it).

use serde_json::{Map, Value};

use super::error::{SettingsError, SettingsWarning, SettingsWarningKind};
use super::json_path::{describe, JsonPath};
use super::{PermissionModeSetting, SettingsSource};

/// Claude Code and TypeScript Robota settings keys robota recognises but does not act on. They are
/// reported as [`SettingsWarningKind::IgnoredKey`] rather than as unknown keys.
const IGNORED_KEYS: &[&str] = &[
    // Claude Code.
    "apiKeyHelper",
    "attribution",
    "autoUpdatesChannel",
    "awsAuthRefresh",
    "awsCredentialExport",
    "alwaysThinkingEnabled",
    "allowManagedHooksOnly",
    "allowManagedPermissionRulesOnly",
    "allowedMcpServers",
    "cleanupPeriodDays",
    "companyAnnouncements",
    "deniedMcpServers",
    "effortLevel",
    "fileSuggestion",
    "forceLoginMethod",
    "forceLoginOrgUUID",
    "includeCoAuthoredBy",
    "includeGitInstructions",
    "otelHeadersHelper",
    "outputStyle",
    "plansDirectory",
    "respectGitignore",
    "spinnerTipsEnabled",
    "statusLine",
    "theme",
    "verbose",
    // TypeScript Robota.
    "defaultTrustLevel",
    "preset",
    "transports",
];

const PROFILE_KEYS: &[&str] = &["type", "model", "apiKey", "baseURL", "timeout", "options"];
const LEGACY_PROVIDER_KEYS: &[&str] = &[
    "name", "type", "model", "apiKey", "baseURL", "timeout", "options",
];

struct LayerValidator<'a> {
    source: &'a SettingsSource,
    warnings: &'a mut Vec<SettingsWarning>,
}

/// Validates the shape of one layer. Errors name the layer's file and the JSON path.
pub(crate) fn validate_layer(
    source: &SettingsSource,
    value: &Value,
    warnings: &mut Vec<SettingsWarning>,
) -> Result<(), SettingsError> {
    let mut validator = LayerValidator { source, warnings };
    let root = JsonPath::root();
    let map = validator.object(value, &root, "a JSON object of settings")?;
    for (key, value) in map {
        let path = root.key(key);
        match key.as_str() {
            "$schema" => {}
            "env" => validator.env(value, &path)?,
            "model" | "language" | "currentProvider" => {
                validator.non_empty_string(value, &path)?;
            }
            "providers" => {
                let profiles = validator.object(value, &path, "an object of provider profiles")?;
                for (name, profile) in profiles {
                    validator.provider_fields(profile, &path.key(name), PROFILE_KEYS)?;
                }
            }
            "provider" => validator.provider_fields(value, &path, LEGACY_PROVIDER_KEYS)?,
            "permissions" => validator.permissions(value, &path)?,
            "hooks" => {
                // The hooks module parses the events; only the outer shape is checked here so the
                // error can name this file.
                validator.object(value, &path, "an object mapping hook event names to lists")?;
            }
            "disableAllHooks" => validator.boolean(value, &path)?,
            // The plugins module reads these; a bad entry is a warning naming this file there,
            // never a reason to refuse the settings.
            "enabledPlugins" | "extraKnownMarketplaces" => {}
            "enableAllProjectMcpServers" => validator.boolean(value, &path)?,
            "enabledMcpjsonServers" | "disabledMcpjsonServers" => {
                validator.string_list(value, &path)?;
            }
            "mcpServers" => {
                // Each server is checked when the session starts (a bad one is a warning naming
                // it, and only that server is left out).
                validator.object(
                    value,
                    &path,
                    "an object mapping server names to definitions",
                )?;
            }
            "sandbox" => validator.sandbox(value, &path)?,
            "telemetry" => {
                validator.object(
                    value,
                    &path,
                    "an object like {\"endpoint\": \"http://collector:4318\", \"protocol\": \"http\"}",
                )?;
                if let Err(error) =
                    serde_json::from_value::<crate::telemetry::TelemetryConfig>(value.clone())
                {
                    return Err(validator.invalid(
                        &path,
                        &format!(
                            "OTLP export options (endpoint, protocol, headers, serviceName, \
                             timeoutMs): {error}"
                        ),
                        value,
                    ));
                }
            }
            "autoCompactThreshold" => validator.threshold(value, &path)?,
            "sessionStore" => {
                if crate::session::store_choice::StoreChoice::from_settings(value).is_err() {
                    return Err(validator.invalid(
                        &path,
                        "{\"type\": \"file\"} or {\"type\": \"sqlite\", \"path\": \"…\"}",
                        value,
                    ));
                }
            }
            "taskContext" => {
                let map = validator.object(value, &path, "an object like {\"enabled\": true}")?;
                for (key, value) in map {
                    match key.as_str() {
                        "enabled" => validator.boolean(value, &path.key(key))?,
                        "dir" => validator.warn(
                            SettingsWarningKind::IgnoredKey,
                            &path.key(key),
                            "robota always reads tasks from `.agents/tasks/`; this value is \
                             ignored"
                                .to_owned(),
                        ),
                        _ => validator.unknown(&path.key(key)),
                    }
                }
            }
            other if IGNORED_KEYS.contains(&other) => validator.warn(
                SettingsWarningKind::IgnoredKey,
                &path,
                "recognised setting that robota does not use; it is ignored".to_owned(),
            ),
            _ => validator.unknown(&path),
        }
    }
    Ok(())
}

impl LayerValidator<'_> {
    fn invalid(&self, path: &JsonPath, expected: &str, found: &Value) -> SettingsError {
        SettingsError::InvalidValue {
            source_label: self.source.clone(),
            json_path: path.to_string(),
            expected: expected.to_owned(),
            found: describe(found),
        }
    }

    fn warn(&mut self, kind: SettingsWarningKind, path: &JsonPath, message: String) {
        self.warnings.push(SettingsWarning {
            kind,
            source: self.source.clone(),
            json_path: path.to_string(),
            message,
        });
    }

    fn unknown(&mut self, path: &JsonPath) {
        self.warn(
            SettingsWarningKind::UnknownKey,
            path,
            "unknown setting; it is ignored (check the spelling)".to_owned(),
        );
    }

    fn object<'v>(
        &self,
        value: &'v Value,
        path: &JsonPath,
        expected: &str,
    ) -> Result<&'v Map<String, Value>, SettingsError> {
        value
            .as_object()
            .ok_or_else(|| self.invalid(path, expected, value))
    }

    fn non_empty_string(&self, value: &Value, path: &JsonPath) -> Result<(), SettingsError> {
        match value.as_str() {
            Some(text) if !text.trim().is_empty() => Ok(()),
            _ => Err(self.invalid(path, "a non-empty string", value)),
        }
    }

    fn boolean(&self, value: &Value, path: &JsonPath) -> Result<(), SettingsError> {
        if value.is_boolean() {
            Ok(())
        } else {
            Err(self.invalid(path, "true or false", value))
        }
    }

    fn string_list(&self, value: &Value, path: &JsonPath) -> Result<(), SettingsError> {
        let items = value
            .as_array()
            .ok_or_else(|| self.invalid(path, "an array of strings", value))?;
        for (index, item) in items.iter().enumerate() {
            self.non_empty_string(item, &path.index(index))?;
        }
        Ok(())
    }

    /// `sandbox`: wrong types are errors; unknown keys are warnings (never fatal), Claude Code
    /// keys robota does not use are reported as ignored.
    fn sandbox(&mut self, value: &Value, path: &JsonPath) -> Result<(), SettingsError> {
        let map = self.object(value, path, "an object like {\"enabled\": true}")?;
        for (key, value) in map {
            let field = path.key(key);
            match key.as_str() {
                "enabled"
                | "failIfUnavailable"
                | "autoAllowBashIfSandboxed"
                | "allowUnsandboxedCommands"
                | "hooks" => self.boolean(value, &field)?,
                "excludedCommands" => self.string_list(value, &field)?,
                "backend" => {
                    if value
                        .as_str()
                        .and_then(crate::sandbox::BackendChoice::parse)
                        .is_none()
                    {
                        return Err(self.invalid(
                            &field,
                            "\"auto\", \"landlock\" or \"bwrap\"",
                            value,
                        ));
                    }
                }
                "bwrapPath" => self.non_empty_string(value, &field)?,
                "network" => {
                    let network =
                        self.object(value, &field, "an object like {\"allowedDomains\": []}")?;
                    for (key, value) in network {
                        let item = field.key(key);
                        match key.as_str() {
                            "allowedDomains" | "allowUnixSockets" => {
                                self.string_list(value, &item)?
                            }
                            "allowLocalBinding" | "allowAllUnixSockets" => {
                                self.boolean(value, &item)?
                            }
                            "httpProxyPort" | "socksProxyPort" => self.warn(
                                SettingsWarningKind::IgnoredKey,
                                &item,
                                "robota runs its own allow-list proxy; this value is ignored"
                                    .to_owned(),
                            ),
                            _ => self.unknown(&item),
                        }
                    }
                }
                "filesystem" => {
                    let filesystem =
                        self.object(value, &field, "an object like {\"allowWrite\": []}")?;
                    for (key, value) in filesystem {
                        let item = field.key(key);
                        match key.as_str() {
                            "allowWrite" | "denyWrite" | "denyRead" | "allowRead" => {
                                self.string_list(value, &item)?
                            }
                            _ => self.unknown(&item),
                        }
                    }
                }
                "ignoreViolations"
                | "enableWeakerNestedSandbox"
                | "enableWeakerNetworkIsolation" => self.warn(
                    SettingsWarningKind::IgnoredKey,
                    &field,
                    "recognised sandbox setting that robota does not use; it is ignored".to_owned(),
                ),
                _ => self.unknown(&field),
            }
        }
        Ok(())
    }

    fn env(&self, value: &Value, path: &JsonPath) -> Result<(), SettingsError> {
        let map = self.object(value, path, "an object of environment variables")?;
        for (name, value) in map {
            if !matches!(value, Value::String(_) | Value::Number(_) | Value::Bool(_)) {
                return Err(self.invalid(&path.key(name), "a string", value));
            }
        }
        Ok(())
    }

    fn provider_fields(
        &mut self,
        value: &Value,
        path: &JsonPath,
        allowed: &[&str],
    ) -> Result<(), SettingsError> {
        let map = self.object(value, path, "an object with `type`, `model`, `apiKey`, …")?;
        for (key, value) in map {
            let field = path.key(key);
            match key.as_str() {
                "type" | "name" | "model" | "apiKey" if allowed.contains(&key.as_str()) => {
                    self.non_empty_string(value, &field)?;
                }
                "baseURL" => {
                    self.non_empty_string(value, &field)?;
                    check_url_shape(self.source, value, &field)?;
                }
                "timeout" => {
                    if matches!(value.as_u64(), None | Some(0)) {
                        return Err(self.invalid(
                            &field,
                            "a positive whole number of milliseconds",
                            value,
                        ));
                    }
                }
                "options" => {
                    self.object(value, &field, "an object of provider-specific options")?;
                }
                _ => self.unknown(&field),
            }
        }
        Ok(())
    }

    fn permissions(&mut self, value: &Value, path: &JsonPath) -> Result<(), SettingsError> {
        let map = self.object(value, path, "an object with `allow`, `ask`, `deny`, …")?;
        for (key, value) in map {
            let field = path.key(key);
            match key.as_str() {
                "allow" | "ask" | "deny" | "additionalDirectories" => {
                    self.string_list(value, &field)?;
                }
                "defaultMode" => {
                    let Some(mode) = value.as_str() else {
                        return Err(self.invalid(&field, "a permission mode name", value));
                    };
                    if mode == "auto" {
                        self.warn(
                            SettingsWarningKind::IgnoredKey,
                            &field,
                            "the \"auto\" (classifier) permission mode is not supported by \
                             robota; this value is ignored"
                                .to_owned(),
                        );
                    } else if PermissionModeSetting::parse(mode).is_none() {
                        return Err(SettingsError::InvalidPermissionMode {
                            source_label: self.source.clone(),
                            json_path: field.to_string(),
                            value: mode.to_owned(),
                        });
                    }
                }
                "disableBypassPermissionsMode" => {
                    if value.as_str() != Some("disable") {
                        return Err(self.invalid(&field, "the string \"disable\"", value));
                    }
                }
                "disableAutoMode" => self.warn(
                    SettingsWarningKind::IgnoredKey,
                    &field,
                    "recognised setting that robota does not use; it is ignored".to_owned(),
                ),
                _ => self.unknown(&field),
            }
        }
        Ok(())
    }

    fn threshold(&self, value: &Value, path: &JsonPath) -> Result<(), SettingsError> {
        let valid = match value {
            Value::Bool(false) => true,
            Value::Number(number) => number
                .as_f64()
                .is_some_and(|fraction| fraction > 0.0 && fraction <= 1.0),
            _ => false,
        };
        if valid {
            Ok(())
        } else {
            Err(self.invalid(
                path,
                "a fraction of the context window greater than 0 and at most 1 (e.g. 0.835), or \
                 false to turn automatic compaction off",
                value,
            ))
        }
    }
}

/// `baseURL` must be an http(s) URL. A `$ENV:` reference is checked after it is resolved.
pub(crate) fn check_url_shape(
    source: &SettingsSource,
    value: &Value,
    path: &JsonPath,
) -> Result<(), SettingsError> {
    let Some(text) = value.as_str() else {
        return Ok(());
    };
    if text.starts_with("$ENV:") || text.starts_with("http://") || text.starts_with("https://") {
        return Ok(());
    }
    Err(SettingsError::InvalidValue {
        source_label: source.clone(),
        json_path: path.to_string(),
        expected: "an http:// or https:// URL".to_owned(),
        found: describe(value),
    })
}
