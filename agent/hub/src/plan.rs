//! From a configured [`ServerSpec`] to what the hub starts: the launch
//! recipe, the environment a child gets, names, timeouts, trust and the
//! tool filter.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use mcp_tools::ToolContext;
use mcp_tools::spawn::EnvPolicy;

use nanohermes_config::{HttpSpec, Origin, ServerSpec, StdioSpec, Transport};

use super::agents;
use super::connect::{ChildSpec, EraHint, HttpTarget, Launch};
use super::era::{Era, EraCache, config_key};
use super::input::SharedElicitor;
use super::{HubConfig, call_timeout_over};
use nanohermes_builtins::{Builtin, BuiltinOptions, Hosted as _};

/// One server to start, before it has started.
pub(crate) struct Planned {
    pub(crate) name: String,
    /// Its tools are named `NAME__TOOL` (every server but a built-in).
    pub(crate) prefixed: bool,
    /// Its read-only annotations are believed.
    pub(crate) trusted: bool,
    pub(crate) startup_timeout: Duration,
    pub(crate) call_timeout: Duration,
    pub(crate) filter: ToolFilter,
    pub(crate) launch: Launch,
    /// Who answers its elicitations.
    pub(crate) elicitor: Option<SharedElicitor>,
    /// May wait for its first call to start (a built-in in this process
    /// whose tools are known): not when a failed start must stop the hub
    /// (`required = true`) or the caller wants every server started.
    pub(crate) on_first_use: bool,
}

/// `enabled_tools` (an allow-list, when set) then `disabled_tools`, on the
/// server's own tool names, then the recursion guard: what is declared and
/// what may be called.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolFilter {
    pub(crate) enabled: Option<Vec<String>>,
    pub(crate) disabled: Vec<String>,
    /// `(depth, max_agent_depth)` when this external server's `run_task`
    /// is withheld because this agent is already that deep.
    pub(crate) depth_cap: Option<(usize, usize)>,
}

impl ToolFilter {
    /// Whether the server's tool `raw_name` is offered.
    pub(crate) fn allows(&self, raw_name: &str) -> bool {
        self.refusal("", raw_name).is_none()
    }

    /// Why tool `raw_name` of `server` is withheld, or `None` when it is
    /// offered.
    pub(crate) fn refusal(&self, server: &str, raw_name: &str) -> Option<String> {
        if self.depth_cap.is_some() && raw_name == agents::RUN_TASK {
            let (depth, max) = self.depth_cap.unwrap_or_default();
            return Some(agents::withheld_warning(server, depth, max));
        }
        let listed = self
            .enabled
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == raw_name));
        (!listed || self.disabled.iter().any(|n| n == raw_name)).then(|| {
            format!(
                "tool {raw_name} of server {server} is withheld by mcp_servers.{server}.enabled_tools or disabled_tools"
            )
        })
    }
}

/// Whether the hub believes the annotations (read-only, destructive) of a
/// server from `origin`. Every origin is the user's choice: the built-ins,
/// their own config, a flag they typed, and a project's files, which are
/// read only once the user trusted that project. An origin added later has
/// to decide here.
pub fn trusted_annotations(origin: &Origin) -> bool {
    match origin {
        Origin::Default | Origin::UserConfig(_) | Origin::Flag | Origin::AgentFlag => true,
        Origin::ProjectConfig(_) | Origin::McpJson(_) => true,
    }
}

/// Plans every enabled server. A bad spec (an unknown built-in, a bad name)
/// is an error.
pub(crate) fn plan(
    spec: &ServerSpec,
    config: &HubConfig,
    ctx: &ToolContext,
    eras: &Arc<EraCache>,
) -> anyhow::Result<Planned> {
    let builtin = match spec.builtin {
        Some(name) => match Builtin::from_name(name.name()) {
            Some(builtin) => Some(builtin),
            None => bail!("no built-in server named {:?}", name.name()),
        },
        None => None,
    };
    let options = BuiltinOptions {
        allow_private_network: config.allow_private_network,
        web_allowed_domains: config.web_allowed_domains.clone(),
        sandbox: config.sandbox.clone(),
    };
    let cached = |description: String| EraHint::Cached(Arc::clone(eras), config_key(&description));
    let launch = match (&spec.transport, builtin) {
        (Transport::InProcess, Some(builtin)) => Launch::InProcess(builtin, ctx.clone(), options),
        (Transport::BuiltinProcess, Some(builtin)) => Launch::Child(
            builtin_child(builtin, config, ctx.max_output),
            EraHint::Modern,
        ),
        (Transport::InProcess | Transport::BuiltinProcess, None) => {
            bail!("server {} runs a built-in but names none", spec.name)
        }
        (Transport::Stdio(stdio), _) => {
            let child = stdio_child(stdio, config);
            let description = format!("stdio {child:?}");
            Launch::Child(child, cached(description))
        }
        (Transport::Http(http), _) => {
            let target = http_target(&spec.name, http, config)?;
            let hint = match http.era {
                Some(Era::Modern) => EraHint::Modern,
                Some(Era::Legacy) => EraHint::Legacy,
                None => cached(format!("http {} {:?}", target.url, http)),
            };
            Launch::Http(target, hint)
        }
    };
    // A built-in's tools stop themselves; the hub's timeout sits above that,
    // whatever the configured value, so their own answer arrives first.
    let call_timeout = match builtin {
        Some(builtin) => spec
            .tool_timeout
            .max(call_timeout_over(builtin.max_call_time())),
        None => spec.tool_timeout,
    };
    Ok(Planned {
        on_first_use: !spec.required && config.builtins_on_first_use,
        name: spec.name.clone(),
        prefixed: builtin.is_none(),
        trusted: trusted_annotations(&spec.origin),
        startup_timeout: spec.startup_timeout,
        call_timeout,
        filter: ToolFilter {
            enabled: spec.enabled_tools.clone(),
            disabled: spec.disabled_tools.clone(),
            // Built-ins never offer run_task; every other server may be an
            // agent, whatever its transport.
            depth_cap: (builtin.is_none()
                && !agents::may_mount_subagents(config.agent_depth, config.max_agent_depth))
            .then_some((config.agent_depth, config.max_agent_depth)),
        },
        launch,
        elicitor: config.elicitor.clone(),
    })
}

/// `nanohermes builtin NAME --root WORKSPACE ...`: ours, so it gets the
/// user's environment minus secrets, as the in-process server would see.
fn builtin_child(builtin: Builtin, config: &HubConfig, max_output: usize) -> ChildSpec {
    let mut args = vec![
        "builtin".to_owned(),
        builtin.name().to_owned(),
        "--root".to_owned(),
        config.workspace.display().to_string(),
        "--max-output".to_owned(),
        max_output.to_string(),
    ];
    if builtin == Builtin::Web && config.allow_private_network {
        args.push("--allow-private-network".to_owned());
    }
    if builtin == Builtin::Web
        && let Some(domains) = &config.web_allowed_domains
    {
        args.push("--fetch-allowlist".to_owned());
        for domain in domains.entries() {
            args.push("--allow-fetch-domain".to_owned());
            args.push(domain);
        }
    }
    if matches!(builtin, Builtin::Shell | Builtin::Git) {
        args.extend(config.sandbox.to_args());
    }
    ChildSpec {
        program: config.builtin_exe.clone(),
        args,
        env: EnvPolicy::ScrubSecrets,
        cwd: config.workspace.clone(),
    }
}

/// An external program: the allow-list, then (for another NanoHermes
/// started with `serve`) this agent's model settings, then the variables it
/// names from the agent's environment (`env_vars`), then its own `env`
/// values, then its agent depth (this process's depth + 1), last so that
/// nothing can reset it.
fn stdio_child(stdio: &StdioSpec, config: &HubConfig) -> ChildSpec {
    let (workspace, depth) = (&config.workspace, config.agent_depth);
    let mut pairs: Vec<(String, String)> = match &config.subagent_model {
        Some(model)
            if agents::is_nanohermes_serve(stdio, &config.builtin_exe, config.serve_command) =>
        {
            model.env()
        }
        _ => Vec::new(),
    };
    pairs.extend(
        stdio
            .env_vars
            .iter()
            .filter_map(|name| std::env::var(name).ok().map(|v| (name.clone(), v))),
    );
    pairs.extend(stdio.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    pairs.push((
        agents::AGENT_DEPTH_VAR.to_owned(),
        agents::child_depth(depth),
    ));
    ChildSpec {
        program: PathBuf::from(&stdio.command),
        args: stdio.args.clone(),
        env: EnvPolicy::AllowList(pairs),
        cwd: stdio.cwd.clone().unwrap_or_else(|| workspace.to_path_buf()),
    }
}

/// Headers and token from the spec and the environment. A named variable
/// that is unset is an error that names the key, since the server would
/// refuse us anyway.
fn http_target(name: &str, http: &HttpSpec, config: &HubConfig) -> anyhow::Result<HttpTarget> {
    let var = |key: &str, var: &str| match std::env::var(var) {
        Ok(value) if !value.is_empty() => Ok(value),
        _ => bail!(
            "mcp_servers.{name}.{key} names {var}, which is not set; export {var} or remove {key}"
        ),
    };
    let bearer = match &http.bearer_token_env_var {
        Some(v) => Some(var("bearer_token_env_var", v)?),
        None => None,
    };
    let mut headers: Vec<(String, String)> = http
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (header, v) in &http.env_headers {
        headers.push((header.clone(), var("env_http_headers", v)?));
    }
    // OAuth only where no static credential is configured.
    let static_auth = bearer.is_some()
        || headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
    let oauth = match &config.credentials {
        Some(path) if !static_auth => Some(crate::auth::Authorizer {
            name: name.to_owned(),
            url: http.url.clone(),
            settings: oauth_settings(name, http)?,
            store: crate::auth::CredentialsFile::new(path),
            browser: config.oauth_browser.unwrap_or(crate::auth::Browser::Print),
        }),
        _ => None,
    };
    Ok(HttpTarget {
        url: http.url.clone(),
        bearer,
        headers,
        oauth,
        may_authorize: config.oauth_browser.is_some(),
    })
}

/// The `oauth_*` keys of server `name`, with the secret read from its
/// variable (an unset variable is an error that names the key).
pub fn oauth_settings(name: &str, http: &HttpSpec) -> anyhow::Result<crate::auth::OAuthSettings> {
    let oauth = &http.oauth;
    let client_secret = match &oauth.client_secret_env_var {
        _ if oauth.client_secret.is_some() => oauth.client_secret.clone(),
        Some(var) => match std::env::var(var) {
            Ok(value) if !value.is_empty() => Some(value),
            _ => bail!(
                "mcp_servers.{name}.oauth_client_secret_env_var names {var}, which is not set; export {var} or remove oauth_client_secret_env_var"
            ),
        },
        None => None,
    };
    Ok(crate::auth::OAuthSettings {
        client_id: oauth.client_id.clone(),
        client_secret,
        client_metadata_url: oauth.client_metadata_url.clone(),
        scopes: oauth.scopes.clone(),
        callback_port: oauth.callback_port,
    })
}

/// Variables of the agent's environment a server will not receive: for a
/// stdio server, everything outside the allow-list it did not name in
/// `env_vars`/`env`; for a built-in child, the secrets; nothing for
/// in-process and HTTP servers (they get no environment from us). Sorted.
pub(crate) fn withheld_env(spec: &ServerSpec) -> Vec<String> {
    let mut names: Vec<String> = std::env::vars_os()
        .map(|(name, _)| name.to_string_lossy().into_owned())
        .filter(|name| match &spec.transport {
            Transport::Stdio(stdio) => {
                !mcp_tools::spawn::is_allowed_name(name)
                    && !stdio.env_vars.iter().any(|v| v == name)
                    // It gets its own value (depth + 1) instead.
                    && name != agents::AGENT_DEPTH_VAR
                    && !stdio.env.contains_key(name)
            }
            Transport::BuiltinProcess => mcp_tools::spawn::is_secret_name(name),
            Transport::InProcess | Transport::Http(_) => false,
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enabled_tools_then_disabled_tools() {
        let filter = ToolFilter {
            enabled: Some(vec!["a".into(), "b".into()]),
            disabled: vec!["b".into()],
            depth_cap: None,
        };
        assert!(filter.allows("a"));
        assert!(!filter.allows("b"), "disabled wins");
        assert!(!filter.allows("c"), "not in the allow-list");
        assert!(ToolFilter::default().allows("anything"));
    }

    #[test]
    fn the_depth_cap_withholds_run_task_only() {
        let capped = ToolFilter {
            depth_cap: Some((3, 3)),
            ..ToolFilter::default()
        };
        assert!(capped.allows("echo"));
        assert!(!capped.allows("run_task"));
        assert!(ToolFilter::default().allows("run_task"));
        assert_eq!(
            capped.refusal("helper", "run_task").unwrap(),
            "subagent helper not mounted: this agent is already 3 levels deep (max_agent_depth = 3)"
        );
    }
}
