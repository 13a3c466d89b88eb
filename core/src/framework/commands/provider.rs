//! The `provider` command (spec 000 "Provider common APIs"): the provider profiles of the
//! settings files (`providers` + `currentProvider`) — `list`, `show <name>`, `add <name> <type>
//! <model> [baseURL] [apiKey]`, `use <name>`, `remove <name>` — and `probe [name]`, which makes
//! one cheap real request (a 1-token answer) with a profile and says exactly what failed: the
//! host name does not resolve, the connection is refused, the request timed out, the key is
//! refused (401/403), the endpoint or model is unknown (404).
//!
//! Profiles are read from the user's, the project's and the local settings file (later ones win,
//! as when settings load) and written through the command host's settings adapter: `add` and
//! `use` write the user's file (profiles hold keys, which do not belong in a shared project
//! file), `remove` the file that defines the profile. A change applies to sessions created
//! afterwards; `use` also returns [`CommandEffect::ProviderChangeRequested`] so a host can
//! restart with it now.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::host::{CommandHostContext, CommandModule, SystemCommand};
use super::types::{
    CommandDescriptor, CommandEffect, CommandResult, CommandSource, SubcommandDescriptor,
};
use crate::session::SettingsDestination;

/// The command's name.
pub const PROVIDER_COMMAND: &str = "provider";

const USAGE: &str = "Usage: provider [list] | show <name> | add <name> <type> <model> [baseURL] \
                     [apiKey or $ENV:VAR] | use <name> | remove <name> | probe [name]";

/// How long `probe` waits for the endpoint (to connect, and for the answer).
const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

/// The module holding `provider`.
pub fn provider_command_module() -> CommandModule {
    CommandModule::new("robota-command-provider", CommandSource::Builtin)
        .with_command(Arc::new(ProviderCommand::new()))
}

/// `provider …`: see the module docs.
#[derive(Debug)]
pub struct ProviderCommand {
    descriptor: CommandDescriptor,
}

impl ProviderCommand {
    /// The command.
    pub fn new() -> Self {
        ProviderCommand {
            descriptor: CommandDescriptor::new(
                PROVIDER_COMMAND,
                "List, add, switch, remove and probe provider profiles",
            )
            .with_argument_hint("[list | show | add | use | remove | probe]")
            .with_subcommands(vec![
                SubcommandDescriptor::new("list", "The profiles and which one is current"),
                SubcommandDescriptor::new("show", "One profile (the key is masked)"),
                SubcommandDescriptor::new("add", "Add a profile to the user's settings"),
                SubcommandDescriptor::new("use", "Make a profile the current one"),
                SubcommandDescriptor::new("remove", "Delete a profile"),
                SubcommandDescriptor::new("probe", "Check a profile's endpoint and key"),
            ]),
        }
    }
}

impl Default for ProviderCommand {
    fn default() -> Self {
        Self::new()
    }
}

/// The layers profiles are read from, lowest precedence first.
const LAYERS: [SettingsDestination; 3] = [
    SettingsDestination::UserSettings,
    SettingsDestination::ProjectSettings,
    SettingsDestination::LocalSettings,
];

/// The merged profiles (name → (profile, the layer defining it)) and `currentProvider`.
struct Profiles {
    profiles: Vec<(String, Value, SettingsDestination)>,
    current: Option<String>,
}

impl Profiles {
    fn read(ctx: &dyn CommandHostContext) -> Result<Self, String> {
        let mut profiles: Vec<(String, Value, SettingsDestination)> = Vec::new();
        let mut current = None;
        let mut readable = 0;
        for layer in LAYERS {
            let Ok(settings) = ctx.read_settings(layer) else {
                continue;
            };
            readable += 1;
            if let Some(Value::Object(map)) = settings.get("providers") {
                for (name, profile) in map {
                    profiles.retain(|(known, _, _)| known != name);
                    profiles.push((name.clone(), profile.clone(), layer));
                }
            }
            if let Some(Value::String(name)) = settings.get("currentProvider") {
                current = Some(name.clone());
            }
        }
        if readable == 0 {
            return Err(
                "provider profiles live in settings files, and this session has none \
                        (settings are off)"
                    .into(),
            );
        }
        profiles.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Profiles { profiles, current })
    }

    fn get(&self, name: &str) -> Option<&(String, Value, SettingsDestination)> {
        self.profiles.iter().find(|(known, _, _)| known == name)
    }

    fn names(&self) -> String {
        if self.profiles.is_empty() {
            return "none".into();
        }
        let names: Vec<&str> = self.profiles.iter().map(|(n, _, _)| n.as_str()).collect();
        names.join(", ")
    }
}

/// The profile with its key masked (a `$ENV:` reference is shown as written).
fn masked(profile: &Value) -> Value {
    let mut shown = profile.clone();
    if let Some(Value::String(key)) = shown.get_mut("apiKey") {
        if !key.starts_with("$ENV:") {
            let tail: String = key
                .chars()
                .rev()
                .take(4)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            *key = if key.chars().count() > 8 {
                format!("…{tail}")
            } else {
                "…".into()
            };
        }
    }
    shown
}

#[async_trait]
impl SystemCommand for ProviderCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let words: Vec<&str> = args.split_whitespace().collect();
        let profiles = match Profiles::read(ctx) {
            Ok(profiles) => profiles,
            Err(message) => return CommandResult::error(message),
        };
        match words.as_slice() {
            [] | ["list"] => list(&profiles),
            ["show", name] => match profiles.get(name) {
                Some((name, profile, layer)) => CommandResult::ok(format!(
                    "{name} ({layer}):\n{}",
                    serde_json::to_string_pretty(&masked(profile)).unwrap_or_default()
                ))
                .with_data(json!({"name": name, "profile": masked(profile), "scope": layer})),
                None => unknown(name, &profiles),
            },
            ["add", name, kind, model, rest @ ..] if rest.len() <= 2 => {
                add(ctx, &profiles, name, kind, model, rest).await
            }
            ["use", name] => {
                if profiles.get(name).is_none() {
                    return unknown(name, &profiles);
                }
                let patch = json!({ "currentProvider": name });
                match ctx
                    .update_settings(SettingsDestination::UserSettings, patch)
                    .await
                {
                    Ok(path) => CommandResult::ok(format!(
                        "Current provider: {name} (saved in {}); new sessions use it.",
                        path.display()
                    ))
                    .with_effect(CommandEffect::ProviderChangeRequested {
                        profile: name.to_string(),
                    }),
                    Err(e) => CommandResult::error(format!("Could not switch providers: {e}")),
                }
            }
            ["remove", name] => {
                let Some((_, _, layer)) = profiles.get(name) else {
                    return unknown(name, &profiles);
                };
                if profiles.current.as_deref() == Some(*name) {
                    return CommandResult::error(format!(
                        "{name} is the current provider; `provider use <other>` first"
                    ));
                }
                let patch = json!({ "providers": { *name: null } });
                match ctx.update_settings(*layer, patch).await {
                    Ok(path) => CommandResult::ok(format!(
                        "Removed provider {name} from {}.",
                        path.display()
                    )),
                    Err(e) => CommandResult::error(format!("Could not remove {name}: {e}")),
                }
            }
            ["probe"] | ["probe", _] => {
                let name = match words.get(1) {
                    Some(name) => name.to_string(),
                    None => match &profiles.current {
                        Some(current) => current.clone(),
                        None => {
                            return CommandResult::error(
                                "no current provider to probe; name one: provider probe <name>",
                            )
                        }
                    },
                };
                match profiles.get(&name) {
                    Some((_, profile, _)) => probe(&name, profile).await,
                    None => unknown(&name, &profiles),
                }
            }
            _ => CommandResult::error(USAGE),
        }
    }
}

fn unknown(name: &str, profiles: &Profiles) -> CommandResult {
    CommandResult::error(format!(
        "no provider profile named `{name}` (profiles: {})",
        profiles.names()
    ))
}

fn list(profiles: &Profiles) -> CommandResult {
    if profiles.profiles.is_empty() {
        return CommandResult::ok(
            "No provider profiles. Add one: provider add <name> <type> <model> [baseURL] [apiKey]",
        )
        .with_data(json!({"profiles": [], "current": profiles.current}));
    }
    let mut text = String::from("Provider profiles:");
    let mut rows = Vec::new();
    for (name, profile, layer) in &profiles.profiles {
        let mark = if profiles.current.as_deref() == Some(name.as_str()) {
            "*"
        } else {
            " "
        };
        let kind = profile.get("type").and_then(Value::as_str).unwrap_or("?");
        let model = profile.get("model").and_then(Value::as_str).unwrap_or("-");
        text.push_str(&format!("\n {mark} {name} — {kind} {model} ({layer})"));
        rows.push(json!({"name": name, "type": kind, "model": model, "scope": layer}));
    }
    CommandResult::ok(text).with_data(json!({"profiles": rows, "current": profiles.current}))
}

async fn add(
    ctx: &dyn CommandHostContext,
    profiles: &Profiles,
    name: &str,
    kind: &str,
    model: &str,
    rest: &[&str],
) -> CommandResult {
    let valid_name = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !valid_name {
        return CommandResult::error(format!(
            "`{name}`: profile names use letters, digits, `-`, `_` and `.`"
        ));
    }
    if profiles.get(name).is_some() {
        return CommandResult::error(format!(
            "a profile named `{name}` exists; remove it first or pick another name"
        ));
    }
    if !crate::framework::config::KNOWN_PROVIDER_TYPES.contains(&kind) {
        return CommandResult::error(format!(
            "unknown provider type `{kind}`; use one of {}",
            crate::framework::config::KNOWN_PROVIDER_TYPES.join(", ")
        ));
    }
    let mut profile = Map::new();
    profile.insert("type".into(), json!(kind));
    profile.insert("model".into(), json!(model));
    for value in rest {
        if value.starts_with("http://") || value.starts_with("https://") {
            profile.insert("baseURL".into(), json!(value));
        } else {
            profile.insert("apiKey".into(), json!(value));
        }
    }
    let patch = json!({ "providers": { name: Value::Object(profile.clone()) } });
    match ctx
        .update_settings(SettingsDestination::UserSettings, patch)
        .await
    {
        Ok(path) => CommandResult::ok(format!(
            "Added provider {name} ({kind} {model}) to {}. Check it: provider probe {name}",
            path.display()
        ))
        .with_data(json!({"name": name, "profile": masked(&Value::Object(profile))})),
        Err(e) => CommandResult::error(format!("Could not add {name}: {e}")),
    }
}

/// The key a profile names: literal, or the variable of a `$ENV:NAME` reference.
fn api_key(profile: &Value) -> Result<Option<String>, String> {
    match profile.get("apiKey").and_then(Value::as_str) {
        None => Ok(None),
        Some(reference) => match reference.strip_prefix("$ENV:") {
            Some(var) => std::env::var(var)
                .map(Some)
                .map_err(|_| format!("its apiKey is $ENV:{var}, and {var} is not set")),
            None => Ok(Some(reference.to_string())),
        },
    }
}

/// Makes one 1-token request with the profile and reports what happened.
async fn probe(name: &str, profile: &Value) -> CommandResult {
    let fail = |what: &str, detail: String| {
        CommandResult::error(format!("Probe of {name} failed: {what}. {detail}"))
            .with_data(json!({"name": name, "ok": false, "failure": what}))
    };
    let kind = profile.get("type").and_then(Value::as_str).unwrap_or("");
    let model = profile
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let base_url = profile
        .get("baseURL")
        .and_then(Value::as_str)
        .map(str::to_string);
    let key = match api_key(profile) {
        Ok(key) => key,
        Err(problem) => return fail("no key", problem),
    };
    // Built as a session would build it, so every profile type robota knows can be probed.
    let mut options = profile
        .get("options")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    options.insert("maxRetries".into(), json!(0));
    let settings_profile = crate::framework::config::ProviderProfile {
        name: name.to_string(),
        kind: kind.to_string(),
        model: (!model.is_empty()).then(|| model.clone()),
        api_key: key,
        api_key_env: None,
        base_url: base_url.clone(),
        timeout_ms: Some(u64::try_from(PROBE_TIMEOUT.as_millis()).unwrap_or(u64::MAX)),
        options: Some(Value::Object(options)),
    };
    let provider: Result<Arc<dyn crate::provider::Provider>, String> = match kind {
        "scripted" | "replay" => {
            return fail(
                "cannot probe",
                format!("profiles of type `{kind}` make no network requests"),
            )
        }
        _ => crate::framework::assembly::provider::provider_from_profile(
            &settings_profile,
            std::path::Path::new("."),
            &|variable| std::env::var(variable).ok(),
        )
        .map(|built| built.provider)
        .map_err(|e| e.to_string()),
    };
    let provider = match provider {
        Ok(provider) => provider,
        Err(problem) => return fail("the profile is incomplete", problem),
    };
    let request = crate::provider::ProviderRequest {
        system: None,
        messages: vec![std::sync::Arc::new(crate::message::Message::user("ping"))],
        tools: Vec::new(),
        max_tokens: Some(1),
        ..crate::provider::ProviderRequest::default()
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let endpoint = base_url.unwrap_or_else(|| "the default endpoint".into());
    match provider.stream(&request, &|_| {}, &cancel).await {
        Ok(response) => CommandResult::ok(format!(
            "Probe of {name} passed: {endpoint} answered with model {}.",
            if response.model.is_empty() {
                model.as_str()
            } else {
                response.model.as_str()
            }
        ))
        .with_data(json!({"name": name, "ok": true})),
        Err(error) => {
            let text = error.message.to_lowercase();
            let (what, hint) = match (error.kind, error.status) {
                (_, Some(401)) | (_, Some(403)) | (crate::message::ProviderErrorKind::Auth, _) => (
                    "the key was refused",
                    "check apiKey (or the variable it names)",
                ),
                (_, Some(404)) => (
                    "endpoint or model not found (404)",
                    "check baseURL and the model id",
                ),
                _ if text.contains("dns")
                    || text.contains("lookup")
                    || text.contains("resolve") =>
                {
                    ("the host name does not resolve (DNS)", "check baseURL")
                }
                _ if text.contains("refused") => (
                    "connection refused",
                    "is the server running, and is the port in baseURL right?",
                ),
                _ if text.contains("timed out") || text.contains("timeout") => (
                    "the request timed out",
                    "the endpoint did not answer in time",
                ),
                _ => ("the request failed", "see the error"),
            };
            fail(
                what,
                format!(
                    "{endpoint}: {} ({hint})",
                    error.message.trim_end_matches('.')
                ),
            )
        }
    }
}
