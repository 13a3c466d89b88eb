//! `robota providers`: the provider types robota builds (their credentials, defaults and setup
//! links), the model catalog, and `probe`, which checks a settings profile's endpoint and key
//! and says exactly what failed.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use robota::framework::config::{load_settings, ProviderProfile, SettingsOptions};
use robota::provider::catalog;
use robota::provider::definitions::{self, probe, ProbeRequest, DEFINITIONS};

use crate::driver::CliError;

/// `robota providers [list | models [TYPE] | probe …]`
#[derive(Debug, Parser)]
#[command(
    about = "List provider types and known models, or probe a provider's endpoint and key",
    disable_help_subcommand = true
)]
pub struct ProvidersArgs {
    /// What to do (default: `list`).
    #[command(subcommand)]
    command: Option<ProvidersCommand>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum ProvidersCommand {
    /// The provider types, where their keys come from, their defaults and setup links.
    List,
    /// The model catalog: context window, max output and prices per model.
    Models {
        /// Only this provider type's models.
        provider: Option<String>,
    },
    /// Checks that an endpoint answers and accepts the key (asks for its model list).
    Probe {
        /// The settings profile to probe (default: the active one, `currentProvider`).
        #[arg(long)]
        profile: Option<String>,
        /// Probe a provider type directly instead of a profile (key from its environment
        /// variables).
        #[arg(long = "type", value_name = "TYPE", conflicts_with = "profile")]
        kind: Option<String>,
        /// The endpoint (with `--type`; default: the type's).
        #[arg(long, requires = "kind")]
        base_url: Option<String>,
        /// A model the endpoint should list (default: the profile's model).
        #[arg(long)]
        model: Option<String>,
        /// The project directory whose settings are read (default: the current directory).
        #[arg(long)]
        cwd: Option<PathBuf>,
    },
}

/// Runs `robota providers`; the exit code is 0, or 1 when a probe failed.
pub async fn run(args: ProvidersArgs) -> Result<u8, CliError> {
    match args.command.unwrap_or(ProvidersCommand::List) {
        ProvidersCommand::List => {
            if args.json {
                print_json(&DEFINITIONS)?;
            } else {
                for d in DEFINITIONS {
                    println!("{} — {}", d.kind, d.display_name);
                    if !d.aliases.is_empty() {
                        println!("  aliases: {}", d.aliases.join(", "));
                    }
                    if !d.credential_env.is_empty() {
                        println!(
                            "  credentials: {}{}",
                            d.credential_env.join(" or "),
                            if d.key_required { "" } else { " (optional)" }
                        );
                    }
                    if let Some(model) = d.default_model {
                        println!("  default model: {model}");
                    }
                    if let Some(url) = d.default_base_url {
                        println!("  default endpoint: {url}");
                    }
                    if let Some(keys) = d.help.api_keys {
                        println!("  get a key: {keys}");
                    }
                    println!("  docs: {}", d.help.docs);
                }
            }
            Ok(0)
        }
        ProvidersCommand::Models { provider } => {
            let models: Vec<_> = catalog::entries()
                .iter()
                .filter(|e| provider.as_deref().is_none_or(|p| e.provider == p))
                .map(|e| catalog::model_info(&e.id))
                .collect();
            if args.json {
                print_json(&models)?;
            } else {
                println!(
                    "model catalog (checked {}): context window, max output, USD per million \
                     input/output/cache-read/cache-write tokens",
                    catalog::checked()
                );
                for m in &models {
                    let price = m.price.map_or_else(
                        || "price unknown".to_owned(),
                        |p| {
                            format!(
                                "${}/${}/${}/${}",
                                p.input_per_mtok,
                                p.output_per_mtok,
                                p.cache_read_per_mtok,
                                p.cache_write_per_mtok
                            )
                        },
                    );
                    let window = if m.defaults.iter().any(|d| d == "context_window") {
                        "window unknown".to_owned()
                    } else {
                        format!("{} tokens", m.context_window)
                    };
                    let output = m
                        .max_output
                        .map_or_else(|| "max output unknown".to_owned(), |o| format!("{o} out"));
                    println!(
                        "{:<10} {:<24} {window}, {output}, {price}{}",
                        m.provider.as_deref().unwrap_or(""),
                        m.model,
                        if m.thinking { ", thinking" } else { "" }
                    );
                }
            }
            Ok(0)
        }
        ProvidersCommand::Probe {
            profile,
            kind,
            base_url,
            model,
            cwd,
        } => {
            let request = match kind {
                Some(kind) => direct_request(&kind, base_url, model)?,
                None => profile_request(profile.as_deref(), model, cwd)?,
            };
            let report = probe(&request).await;
            if args.json {
                print_json(&report)?;
            } else if report.ok {
                println!("ok: {}", report.message);
            } else {
                let stage = report
                    .stage
                    .and_then(|s| serde_json::to_value(s).ok())
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                println!("failed ({stage}): {}", report.message);
            }
            Ok(if report.ok { 0 } else { 1 })
        }
    }
}

/// A probe of a provider type with its key from the environment.
fn direct_request(
    kind: &str,
    base_url: Option<String>,
    model: Option<String>,
) -> Result<ProbeRequest, CliError> {
    let definition = definitions::definition(kind).ok_or_else(|| {
        let known: Vec<&str> = DEFINITIONS.iter().map(|d| d.kind).collect();
        CliError::usage(format!(
            "--type {kind}: unknown provider type (known: {})",
            known.join(", ")
        ))
    })?;
    let api_key = definition
        .credential_env
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()));
    Ok(ProbeRequest {
        kind: definition.kind.to_owned(),
        base_url,
        api_key,
        model,
    })
}

/// A probe of a settings profile: its type, endpoint, key and model.
fn profile_request(
    name: Option<&str>,
    model: Option<String>,
    cwd: Option<PathBuf>,
) -> Result<ProbeRequest, CliError> {
    let cwd = match cwd {
        Some(dir) => dir,
        None => std::env::current_dir()
            .map_err(|e| CliError::usage(format!("cannot read the current directory: {e}")))?,
    };
    let loaded = load_settings(&SettingsOptions::from_env(&cwd))
        .map_err(|error| CliError::usage(error.to_string()))?;
    let settings = loaded.settings;
    let profile: ProviderProfile = match name {
        Some(name) => settings.providers.get(name).cloned().ok_or_else(|| {
            let names: Vec<&str> = settings.providers.keys().map(String::as_str).collect();
            CliError::usage(format!(
                "no provider profile \"{name}\" in the settings (profiles: {})",
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            ))
        })?,
        None => match settings.provider {
            Some(resolved) => resolved.profile,
            None => {
                return Err(CliError::usage(
                    "no provider profile is active (set `currentProvider` in the settings, or \
                     name one with --profile, or probe a type with --type)",
                ))
            }
        },
    };
    let definition = definitions::definition(&profile.kind);
    let api_key = profile.api_key.clone().or_else(|| {
        let from_env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        profile
            .api_key_env
            .as_deref()
            .and_then(from_env)
            .or_else(|| definition.and_then(|d| d.credential_env.iter().find_map(|n| from_env(n))))
    });
    Ok(ProbeRequest {
        kind: profile.kind.clone(),
        base_url: profile.base_url.clone(),
        api_key,
        model: model.or(profile.model.clone()),
    })
}

fn print_json(value: &impl serde::Serialize) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| CliError::usage(format!("cannot write JSON: {e}")))?;
    println!("{text}");
    Ok(())
}
