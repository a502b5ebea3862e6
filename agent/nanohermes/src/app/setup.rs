//! Loading the configuration, the same way for every command: the trust
//! question on a terminal, the layered files, one line per warning, the
//! agent's defaults, the API key variable withheld from every child.

use std::io::IsTerminal as _;

use crate::config::{Config, DEFAULT_API_KEY_ENV, Options};
use nanohermes_config::{self as sources, ConfigSources, Loaded};
use nanohermes_core::events::{RunEvents, TerminalUi};

/// A loaded configuration and what it was loaded from.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The checked settings.
    pub config: Config,
    /// The layers that were read (home, environment, flags).
    pub sources: ConfigSources,
    /// The merged layers, with every server's origin.
    pub loaded: Loaded,
}

/// Loads the configuration for a command; `needs_model` is false for
/// commands that never talk to the model. A [`sources::ConfigError`] comes
/// back inside the `anyhow::Error`, so `cli::main` can exit 2.
pub fn load(options: &Options, needs_model: bool) -> anyhow::Result<Setup> {
    let workspace = options.workspace()?;
    let sources = ConfigSources::from_process(workspace.clone(), options.overrides()?);
    ask_about_trust(&sources)?;
    let loaded = sources::load(&sources)?;
    let mut ui = TerminalUi::default();
    for warning in &loaded.warnings {
        ui.notice(warning);
    }
    let env = |name: &str| sources.env.get(name).cloned();
    let mut config = Config::from_settings(
        loaded.settings.clone(),
        workspace,
        options,
        &env,
        needs_model,
    )?;
    config.guidance.home = sources.nanohermes_home.clone();
    // Before anything is spawned: no child may receive the model's key,
    // whatever it is called and whatever policy a child is started with.
    mcp_tools::spawn::withhold(DEFAULT_API_KEY_ENV);
    mcp_tools::spawn::withhold(&config.api_key_env);
    for var in &config.key_vars {
        mcp_tools::spawn::withhold(var);
    }
    Ok(Setup {
        config,
        sources,
        loaded,
    })
}

/// `nanohermes trust`: the user's explicit decision to trust the
/// workspace's files as they are now (the way to re-trust without a
/// terminal). Prints each file with its digest and each variable its
/// `.mcp.json` passes to a server, then records them.
pub fn trust(options: &Options) -> anyhow::Result<()> {
    use std::io::Write as _;
    let workspace = options.workspace()?;
    let sources = ConfigSources::from_process(workspace.clone(), options.overrides()?);
    let check = sources::trust_check(&sources)?;
    let mut out = std::io::stdout().lock();
    if check.project_files.is_empty() && check.changes.is_empty() {
        writeln!(
            out,
            "{} has no project config to trust",
            workspace.display()
        )?;
        return Ok(());
    }
    check.trust_now()?;
    writeln!(out, "trusted {} as it is now:", workspace.display())?;
    for change in &check.changes {
        if change.kind == sources::digests::ChangeKind::Removed {
            writeln!(out, "  {} (removed)", change.path.display())?;
        }
    }
    for file in &check.project_files {
        writeln!(out, "  {}", file.display())?;
    }
    if !check.expansions.is_empty() {
        writeln!(
            out,
            ".mcp.json passes these environment variables to servers:"
        )?;
        for line in &check.expansions {
            writeln!(out, "  {line}")?;
        }
    }
    Ok(())
}

/// On a terminal (stdin and stderr), a project with config files the user
/// never decided about, or a trusted one whose files changed since, gets
/// one yes/no question; the answer is recorded (see
/// [`sources::TrustCheck::ask_and_record`]). Without a terminal nothing is
/// asked and [`sources::load`] skips the files with a one-line notice.
fn ask_about_trust(sources: &ConfigSources) -> Result<(), sources::ConfigError> {
    let is_tty = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if !is_tty {
        return Ok(());
    }
    let check = sources::trust_check(sources)?;
    if check.should_ask(true) {
        let mut input = std::io::stdin().lock();
        check.ask_and_record(&mut input, &mut std::io::stderr())?;
    }
    Ok(())
}
