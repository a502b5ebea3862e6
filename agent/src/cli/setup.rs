//! Loading the configuration, the same way for every command: the trust
//! question on a terminal, the layered files, one line per warning, the
//! agent's defaults, the API key variable withheld from every child.

use std::io::IsTerminal as _;

use crate::config::sources::{self, ConfigSources, Loaded};
use crate::config::{Config, DEFAULT_API_KEY_ENV, Options};
use crate::ui::{TerminalUi, Ui};

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
/// back inside the `anyhow::Error`, so [`super::main`] can exit 2.
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
    Ok(Setup {
        config,
        sources,
        loaded,
    })
}

/// On a terminal (stdin and stderr), a project with config files the user
/// never decided about gets one yes/no question; the answer is recorded in
/// the user's config either way. Without a terminal nothing is asked and
/// [`sources::load`] skips the files with a one-line notice.
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
