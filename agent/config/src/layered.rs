//! The layers, merged: built-in defaults, then `$NANOHERMES_HOME/config.toml`,
//! then (for a trusted project only, and of those only the files whose
//! content is what the user trusted, see [`super::digests`])
//! `WORKSPACE/.mcp.json` and `WORKSPACE/.nanohermes/config.toml` and
//! `.nanohermes/hooks.json`, then the environment, then flags.
//! Each later layer overrides; `deny` lists add up and hooks run in layer
//! order. Everything comes in through [`ConfigSources`], so tests pass
//! their own home, environment and flags.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::diag::{ConfigError, display_path};
use super::digests::{self, Record, Snapshot};
use super::files;
use super::mcp_json;
use super::raw::{self, BuiltinName, FileKind, HookEvent, HookGroup, Mode, RawConfig, RawServer};
use super::servers::{self, Origin, ServerSpec, Transport, overlay, sets_transport};
use super::trust::{self, TrustStatus};
pub use super::trust_check::{TrustCheck, trust_check};

/// Environment variables read by the environment layer, and their keys.
pub const ENV_KEYS: &[(&str, &str)] = &[
    ("OPENAI_MODEL", "model"),
    ("NANOHERMES_MODEL", "model"),
    ("OPENAI_BASE_URL", "base_url"),
    ("NANOHERMES_FALLBACK_MODEL", "fallback_model"),
    ("NANOHERMES_MODE", "mode"),
    ("NANOHERMES_PROVIDER", "model_provider"),
];

/// What the user typed on the command line; `None` leaves the key to the
/// files and the environment.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--model`.
    pub model: Option<String>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--provider`: beats `model_provider` and `NANOHERMES_PROVIDER`.
    pub model_provider: Option<String>,
    /// `--fallback-model`.
    pub fallback_model: Option<String>,
    /// `--temperature`.
    pub temperature: Option<f64>,
    /// `--max-tokens`.
    pub max_tokens: Option<u32>,
    /// `--no-stream` is `Some(false)`.
    pub stream: Option<bool>,
    /// `--thinking`.
    pub thinking: Option<bool>,
    /// `--max-iterations`.
    pub max_iterations: Option<u32>,
    /// `--max-retries`.
    pub max_retries: Option<u32>,
    /// `--retry-base-ms`.
    pub retry_base_ms: Option<u64>,
    /// `--mode` (parse it with [`Mode::from_name`]).
    pub mode: Option<Mode>,
    /// `--auto-approve`.
    pub auto_approve: Option<bool>,
    /// `--allow`: replaces the files' allow list.
    pub allow: Option<Vec<String>>,
    /// `--deny`: added to the files' deny lists.
    pub deny: Vec<String>,
    /// `--mcp` values, unparsed; each replaces a server of the same name.
    pub mcp: Vec<String>,
    /// `--agent` values, unparsed, after the `--mcp` ones: like `--mcp`,
    /// for servers expected to offer `run_task`.
    pub agents: Vec<String>,
}

/// Everything the merge reads, passed in rather than read from globals.
#[derive(Debug, Clone, Default)]
pub struct ConfigSources {
    /// `$NANOHERMES_HOME` or `~/.nanohermes` (see [`crate::Paths`]);
    /// `None` skips the user file.
    pub nanohermes_home: Option<PathBuf>,
    /// The home directory, only to show paths as `~/…`.
    pub home: Option<PathBuf>,
    /// The workspace, canonical.
    pub workspace: PathBuf,
    /// The environment: the env layer and `${VAR}` in `.mcp.json`.
    pub env: BTreeMap<String, String>,
    /// The flags.
    pub flags: Overrides,
}

impl ConfigSources {
    /// Sources from this process: `HOME`, `NANOHERMES_HOME` and the whole environment.
    pub fn from_process(workspace: PathBuf, flags: Overrides) -> ConfigSources {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        ConfigSources {
            nanohermes_home: crate::Paths::of_process().home().map(Path::to_path_buf),
            home,
            workspace,
            env: std::env::vars().collect(),
            flags,
        }
    }

    /// The user's config file, when there is a home for it.
    pub fn user_config_path(&self) -> Option<PathBuf> {
        self.nanohermes_home.as_deref().map(files::user_config)
    }

    pub(super) fn show(&self, path: &Path) -> String {
        display_path(path, self.home.as_deref())
    }

    /// The trust record (`$NANOHERMES_HOME/trusted-files.json`), when
    /// there is a home for it.
    pub fn trust_record_path(&self) -> Option<PathBuf> {
        self.nanohermes_home.as_deref().map(digests::record_path)
    }

    /// The workspace's project files, each read once.
    pub(super) fn snapshot(&self) -> Result<Snapshot, ConfigError> {
        let candidates =
            files::project_candidates(&self.workspace, self.user_config_path().as_deref());
        Snapshot::read(&candidates, &|p| self.show(p))
    }

    /// The trust record; empty without a home.
    pub(super) fn record(&self) -> Result<Record, ConfigError> {
        match self.trust_record_path() {
            Some(path) => Record::load(&path),
            None => Ok(Record::default()),
        }
    }

    /// The variables that keep the model provider's key: never expanded
    /// into another server's settings from a `.mcp.json`.
    fn key_vars(&self, settings: &Settings) -> Vec<String> {
        settings.key_vars()
    }
}

/// The merged settings. `None`: no layer set the key (the parts use
/// their defaults).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The model.
    pub model: Option<String>,
    /// The API root.
    pub base_url: Option<String>,
    /// The variable holding the API key.
    pub api_key_env: Option<String>,
    /// The chosen provider's name (`model_provider`, `NANOHERMES_PROVIDER`,
    /// `--provider`); `None` keeps `base_url` and `api_key_env`.
    pub model_provider: Option<String>,
    /// Where `model_provider` was set, for errors (`--provider`, a file).
    pub model_provider_source: Option<String>,
    /// The user's `[model_providers.NAME]` tables (never a project's).
    pub model_providers: BTreeMap<String, super::providers::RawProvider>,
    /// The fallback model.
    pub fallback_model: Option<String>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Answer length cap.
    pub max_tokens: Option<u32>,
    /// Streamed answers.
    pub stream: Option<bool>,
    /// High reasoning effort.
    pub thinking: Option<bool>,
    /// Model round trips per run.
    pub max_iterations: Option<u32>,
    /// Retries of a failed model request.
    pub max_retries: Option<u32>,
    /// First retry wait, ms.
    pub retry_base_ms: Option<u64>,
    /// The model stream's idle timeout, ms.
    pub stream_idle_timeout_ms: Option<u64>,
    /// Permission mode.
    pub mode: Option<Mode>,
    /// Shell commands without asking.
    pub auto_approve: Option<bool>,
    /// Only these tools (the last layer that sets it).
    pub allow: Option<Vec<String>>,
    /// Never these tools (every layer's, in order, without repeats).
    pub deny: Vec<String>,
    /// Hooks by event, every layer's in order.
    pub hooks: BTreeMap<HookEvent, Vec<HookGroup>>,
    /// Guidance names read where a directory has no AGENTS.md (the last
    /// layer that sets it).
    pub project_doc_fallback_filenames: Option<Vec<String>>,
    /// How deep a chain of agents mounting agents may go (the last layer
    /// that sets it).
    pub max_agent_depth: Option<u32>,
    /// The history size (serialised characters) past which it is
    /// compacted.
    pub compact_threshold_chars: Option<u32>,
    /// The messages a compaction keeps verbatim.
    pub compact_keep_messages: Option<u32>,
    /// Long-term memory around each task (the last layer that sets it).
    pub memory: Option<bool>,
    /// Defer tools behind `tool_search` (the last layer that sets it).
    pub tool_search: Option<bool>,
    /// Declaration bytes before deferring (the last layer that sets it).
    pub tool_budget_bytes: Option<u32>,
    /// Declared tools before deferring (the last layer that sets it).
    pub tool_budget_count: Option<u32>,
    /// Tools never deferred (the last layer that sets it).
    pub always_load_tools: Option<Vec<String>>,
    /// The commands' sandbox mode (the user's config only).
    pub sandbox: Option<mcp_tools::spawn::SandboxMode>,
    /// Commands' network: none, all, or the allowlist.
    pub sandbox_network: Option<crate::raw::SandboxNetwork>,
    /// The allowlist's domains, as written.
    pub sandbox_allowed_domains: Option<Vec<String>>,
    /// The only domains `web_fetch` reaches, as written (unset: all).
    pub web_allowed_domains: Option<Vec<String>>,
    /// More paths commands may write, as written.
    pub sandbox_writable: Option<Vec<String>>,
    /// Refuse or warn when the sandbox cannot be enforced.
    pub sandbox_unavailable: Option<mcp_tools::spawn::WhenUnavailable>,
    /// Every server, enabled or not: built-ins first, then in the order
    /// they first appear.
    pub servers: Vec<ServerSpec>,
}

impl Settings {
    /// The variables that hold the model provider's secrets (see
    /// [`super::providers::key_vars`]): withheld from every child, expanded
    /// to nothing in a project's `.mcp.json`.
    pub fn key_vars(&self) -> Vec<String> {
        super::providers::key_vars(self.api_key_env.as_deref(), &self.model_providers)
    }

    /// The chosen provider, resolved, or `None` when no layer chose one
    /// (then `base_url` and `api_key_env` decide, as before providers).
    /// `env` reads a built-in's base URL variable.
    pub fn provider(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<super::providers::Provider>, ConfigError> {
        let Some(id) = &self.model_provider else {
            return Ok(None);
        };
        let source = self
            .model_provider_source
            .as_deref()
            .unwrap_or("model_provider");
        super::providers::lookup(id, source, &self.model_providers, env).map(Some)
    }
}

/// The result of [`load`].
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The merged settings.
    pub settings: Settings,
    /// What the user's config says about the workspace.
    pub trust: TrustStatus,
    /// The files that were read, in layer order.
    pub files: Vec<PathBuf>,
    /// Lines to show the user once (skipped project files, ignored keys).
    pub warnings: Vec<String>,
}

pub(super) fn read_user(
    sources: &ConfigSources,
) -> Result<(RawConfig, Option<PathBuf>), ConfigError> {
    let Some(path) = sources.user_config_path() else {
        return Ok((RawConfig::default(), None));
    };
    let shown = sources.show(&path);
    match files::read_optional(&path, &shown)? {
        Some(text) => Ok((raw::parse(&shown, &text, FileKind::User)?, Some(path))),
        None => Ok((RawConfig::default(), None)),
    }
}

/// One server entry while merging.
struct Entry {
    name: String,
    raw: RawServer,
    origin: Origin,
    file: String,
}

/// Merges every layer into [`Settings`].
pub fn load(sources: &ConfigSources) -> Result<Loaded, ConfigError> {
    let mut warnings = Vec::new();
    let mut read = Vec::new();
    let mut settings = Settings::default();
    let mut entries: Vec<Entry> = BuiltinName::ALL
        .iter()
        .map(|b| Entry {
            name: b.name().to_owned(),
            raw: RawServer {
                builtin: Some(*b),
                ..RawServer::default()
            },
            origin: Origin::Default,
            file: "built-in".to_owned(),
        })
        .collect();

    let (user, user_path) = read_user(sources)?;
    let trust = trust::status(&user, &sources.workspace);
    if let Some(path) = user_path {
        let file = sources.show(&path);
        read.push(path.clone());
        apply_file(
            &mut settings,
            &mut entries,
            user,
            Origin::UserConfig(path),
            &file,
        );
    }

    let snapshot = sources.snapshot()?;
    let project = snapshot.existing();
    if !project.is_empty() && !trust.is_trusted() {
        let shown: Vec<String> = project.iter().map(|p| sources.show(p)).collect();
        warnings.push(trust::skipped_notice(&sources.workspace, &shown));
    } else if trust.is_trusted() {
        // Only what the user trusted is read: a file created, changed or
        // removed since is skipped, with one line saying how to re-trust.
        let changes = snapshot.changes(&sources.record()?);
        if !changes.is_empty() {
            warnings.push(trust::changed_notice(
                &sources.workspace,
                &digests::describe(&changes, &|p| sources.show(p)),
            ));
        }
        let usable = |path: &PathBuf| !changes.iter().any(|c| &c.path == path);
        let json_path = files::mcp_json(&sources.workspace);
        let file = sources.show(&json_path);
        if usable(&json_path)
            && let Some(text) = snapshot.text(&json_path, &file)?
        {
            let key_vars = sources.key_vars(&settings);
            let env = |var: &str| sources.env.get(var).cloned();
            let parsed = mcp_json::parse_guarded(&file, &text, &env, &key_vars)?;
            warnings.extend(parsed.warnings);
            for (name, raw) in parsed.servers {
                merge_server(
                    &mut entries,
                    name,
                    raw,
                    Origin::McpJson(json_path.clone()),
                    &file,
                );
            }
            read.push(json_path);
        }
        let toml_path = files::project_config(&sources.workspace);
        let file = sources.show(&toml_path);
        if usable(&toml_path)
            && let Some(text) = snapshot.text(&toml_path, &file)?
        {
            let raw = raw::parse(&file, &text, FileKind::Project)?;
            apply_file(
                &mut settings,
                &mut entries,
                raw,
                Origin::ProjectConfig(toml_path.clone()),
                &file,
            );
            read.push(toml_path);
        }
        // After the project's config.toml: its hooks run after that file's.
        let hooks_path = files::hooks_json(&sources.workspace);
        let file = sources.show(&hooks_path);
        if usable(&hooks_path)
            && let Some(text) = snapshot.text(&hooks_path, &file)?
        {
            let parsed = super::hooks_json::parse(&file, &text)?;
            warnings.extend(parsed.warnings);
            for (event, groups) in parsed.hooks {
                settings.hooks.entry(event).or_default().extend(groups);
            }
            read.push(hooks_path);
        }
    }

    apply_env(&mut settings, &sources.env)?;
    apply_flags(&mut settings, &sources.flags);

    let key_vars = sources.key_vars(&settings);
    let mut servers = Vec::with_capacity(entries.len());
    for e in entries {
        let mut spec = servers::resolve(&e.name, e.raw, e.origin, &e.file, &sources.workspace)?;
        withhold_key(&mut spec, &key_vars, &mut warnings);
        servers.push(spec);
    }
    let flagged = sources.flags.mcp.iter().map(|s| servers::parse_mcp_flag(s));
    let agents = sources
        .flags
        .agents
        .iter()
        .map(|s| servers::parse_agent_flag(s));
    for server in flagged.chain(agents) {
        let server = server?;
        match servers.iter_mut().find(|s| s.name == server.name) {
            Some(slot) => *slot = server,
            None => servers.push(server),
        }
    }
    settings.servers = servers;
    Ok(Loaded {
        settings,
        trust,
        files: read,
        warnings,
    })
}

/// A project's server may not name the model provider's key (any of
/// `key_vars`) in `env_vars`, nor, over HTTP, as its bearer token, a
/// header's variable or its OAuth secret: the name is dropped with a
/// warning, so the key never reaches a server the project chose. (A
/// child's inherited environment never has it: `spawn::withhold`.)
fn withhold_key(spec: &mut ServerSpec, key_vars: &[String], warnings: &mut Vec<String>) {
    if !spec.origin.is_project() {
        return;
    }
    let mut dropped = Vec::new();
    if let Transport::Stdio(stdio) = &mut spec.transport {
        // `env_vars` passes a variable even when it looks secret: the one
        // who named it chose to. A repository does not choose your key.
        stdio.env_vars.retain(|var| {
            let keep = !key_vars.contains(var);
            if !keep {
                dropped.push(var.clone());
            }
            keep
        });
    }
    let Transport::Http(http) = &mut spec.transport else {
        for var in dropped {
            warnings.push(format!(
                "server {:?}: {var} is the model provider's key; a project's server never receives it, so it is not passed",
                spec.name
            ));
        }
        return;
    };
    if http
        .bearer_token_env_var
        .as_ref()
        .is_some_and(|v| key_vars.contains(v))
    {
        dropped.extend(http.bearer_token_env_var.take());
    }
    if http
        .oauth
        .client_secret_env_var
        .as_ref()
        .is_some_and(|v| key_vars.contains(v))
    {
        dropped.extend(http.oauth.client_secret_env_var.take());
    }
    http.env_headers.retain(|_, var| {
        let keep = !key_vars.contains(var);
        if !keep {
            dropped.push(var.clone());
        }
        keep
    });
    for var in dropped {
        warnings.push(format!(
            "server {:?}: {var} is the model provider's key; a project's server never receives it, so it is not sent",
            spec.name
        ));
    }
}

fn merge_server(
    entries: &mut Vec<Entry>,
    name: String,
    raw: RawServer,
    origin: Origin,
    file: &str,
) {
    match entries.iter_mut().find(|e| e.name == name) {
        Some(e) => {
            // The layer that decides what runs is the server's origin.
            if sets_transport(&raw) {
                e.origin = origin;
                e.file = file.to_owned();
            }
            overlay(&mut e.raw, raw);
        }
        None => entries.push(Entry {
            name,
            raw,
            origin,
            file: file.to_owned(),
        }),
    }
}

fn apply_file(
    settings: &mut Settings,
    entries: &mut Vec<Entry>,
    raw: RawConfig,
    origin: Origin,
    file: &str,
) {
    macro_rules! take {
        ($($key:ident),*) => { $( if raw.$key.is_some() { settings.$key = raw.$key; } )* };
    }
    if raw.model_provider.is_some() {
        settings.model_provider_source = Some(format!("{file}: model_provider"));
    }
    // A table replaces the one of the same name (a built-in's too).
    settings.model_providers.extend(raw.model_providers);
    take!(
        model,
        base_url,
        api_key_env,
        model_provider,
        fallback_model,
        temperature,
        max_tokens,
        stream,
        thinking,
        max_iterations,
        max_retries,
        retry_base_ms,
        stream_idle_timeout_ms,
        mode,
        auto_approve,
        allow,
        project_doc_fallback_filenames,
        max_agent_depth,
        compact_threshold_chars,
        compact_keep_messages,
        memory,
        tool_search,
        tool_budget_bytes,
        tool_budget_count,
        always_load_tools,
        sandbox,
        sandbox_network,
        sandbox_allowed_domains,
        sandbox_writable,
        sandbox_unavailable,
        web_allowed_domains
    );
    add_unique(&mut settings.deny, raw.deny.unwrap_or_default());
    for (event, groups) in raw.hooks.unwrap_or_default() {
        settings.hooks.entry(event).or_default().extend(groups);
    }
    for (name, server) in raw.mcp_servers {
        merge_server(entries, name, server, origin.clone(), file);
    }
}

fn apply_env(settings: &mut Settings, env: &BTreeMap<String, String>) -> Result<(), ConfigError> {
    for (var, key) in ENV_KEYS {
        let Some(value) = env.get(*var).map(|v| v.trim()).filter(|v| !v.is_empty()) else {
            continue;
        };
        match *key {
            "model" => settings.model = Some(value.to_owned()),
            "fallback_model" => settings.fallback_model = Some(value.to_owned()),
            "model_provider" => {
                settings.model_provider = Some(value.to_owned());
                settings.model_provider_source = Some((*var).to_owned());
            }
            "base_url" => {
                if !raw::is_http_url(value) {
                    return Err(ConfigError::at(
                        var,
                        None,
                        format!(
                            "{value:?} is not allowed; use an http:// or https:// URL such as http://localhost:11434/v1"
                        ),
                    ));
                }
                settings.base_url = Some(value.trim_end_matches('/').to_owned());
            }
            "mode" => {
                let mode = Mode::from_name(value).ok_or_else(|| {
                    ConfigError::at(
                        var,
                        None,
                        format!("{value:?} is not allowed; use one of {}", Mode::names()),
                    )
                })?;
                settings.mode = Some(mode);
            }
            _ => {}
        }
    }
    Ok(())
}

fn apply_flags(settings: &mut Settings, flags: &Overrides) {
    let f = flags.clone();
    if f.model_provider.is_some() {
        settings.model_provider_source = Some("--provider".to_owned());
    }
    macro_rules! take {
        ($($key:ident),*) => { $( if f.$key.is_some() { settings.$key = f.$key; } )* };
    }
    take!(
        model,
        base_url,
        model_provider,
        fallback_model,
        temperature,
        max_tokens,
        stream,
        thinking,
        max_iterations,
        max_retries,
        retry_base_ms,
        mode,
        auto_approve,
        allow
    );
    add_unique(&mut settings.deny, f.deny);
}

fn add_unique(list: &mut Vec<String>, more: Vec<String>) {
    for item in more {
        if !list.contains(&item) {
            list.push(item);
        }
    }
}
