//! Subagents: MCP servers that take whole tasks through a `run_task` tool
//! (another `nanohermes serve`, or any MCP agent), the `agent_list`
//! meta-tool that names them, and the recursion guard.
//!
//! Nothing here mounts anything: a subagent is an ordinary external server
//! (started through the spawn policy like any stdio server), so its
//! `run_task` is `NAME__run_task` by the usual prefixing. What this module
//! adds:
//! - **`agent_list`**, a read-only meta-tool following the `skill` pattern
//!   ([`super::skills`]): its name is claimed before any server tool is
//!   named, it is declared only while at least one subagent's `run_task`
//!   is offered to the model (so a policy that withholds every `run_task`,
//!   such as plan mode, withholds it too), and it lists only those. Each
//!   line says what the agent is for: the config's `description`, else the
//!   server's `instructions`, else the `run_task` tool's description, on
//!   one line and cut at [`ABOUT_CHARS`].
//! - **The recursion guard.** This process's depth is
//!   [`AGENT_DEPTH_VAR`] (absent: 0); every external stdio server the hub
//!   starts gets depth + 1 in that variable, set explicitly after its own
//!   `env` so the allow-list environment cannot drop it and a config cannot
//!   reset it. At depth >= `max_agent_depth` ([`DEFAULT_MAX_AGENT_DEPTH`])
//!   the hub offers no external server's `run_task` (nor `agent_list`) and
//!   warns once per such server. A value that is not a whole number counts
//!   as too deep (fail closed). A server reached over HTTP gets no
//!   environment from us, so the guard cannot follow it there.
//! - **A NanoHermes subagent inherits the model** ([`SubagentModel`]): a
//!   stdio server whose command is this executable or a program named
//!   `nanohermes`, started with `serve`, gets this agent's base URL and
//!   model (`OPENAI_BASE_URL`, `NANOHERMES_MODEL`; with a provider,
//!   `NANOHERMES_PROVIDER` and that provider's base URL variable), its key
//!   under the variable `api_key_env` (or the provider's `env_key`) names,
//!   the provider's header variables, and `NANOHERMES_HOME` when set (so it
//!   reads the same config), all in its environment (never in its argv,
//!   which other users can read in /proc). They come before the entry's
//!   `env_vars` and `env`, so an entry that sets any of them wins, and the
//!   child's own flags (`--model`, `--base-url`) beat its environment. Any
//!   other server gets the allow-list only, as before: only NanoHermes is
//!   known to use those variables for a model.
//! - **Failed subagent calls are counted** ([`SubagentTally`]), so a run
//!   can say at its end that every delegation failed.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rmcp::model::Tool;
use serde_json::{Value, json};

use super::Hub;
use super::plan::ToolFilter;
use nanohermes_config::{Origin, ServerSpec, StdioSpec};
use nanohermes_core::toolbox::ToolFacts;

/// The tool that makes a server a subagent.
pub const RUN_TASK: &str = "run_task";

/// The meta-tool listing the subagents.
pub const AGENT_LIST: &str = "agent_list";

/// The environment variable carrying how many agents deep a process runs.
pub const AGENT_DEPTH_VAR: &str = "NANOHERMES_AGENT_DEPTH";

/// The environment variable carrying the parent session's prompt cache
/// key to a NanoHermes subagent, so the subagents of one session share
/// its cache routing.
pub const PROMPT_CACHE_KEY_VAR: &str = "NANOHERMES_PROMPT_CACHE_KEY";

/// `max_agent_depth` when no layer sets it.
pub const DEFAULT_MAX_AGENT_DEPTH: usize = 3;

/// The longest "what it is for" line `agent_list` shows, in characters.
pub const ABOUT_CHARS: usize = 300;

/// What the policy knows about `agent_list`: it only reads.
pub const FACTS: ToolFacts = super::resources::FACTS;

/// This process's agent depth, from [`AGENT_DEPTH_VAR`]: 0 when unset or
/// empty; `usize::MAX` (too deep for any limit) when it is not a whole
/// number.
pub fn agent_depth() -> usize {
    parse_depth(std::env::var(AGENT_DEPTH_VAR).ok().as_deref())
}

/// [`agent_depth`] for a given value of the variable.
pub fn parse_depth(value: Option<&str>) -> usize {
    match value.map(str::trim) {
        None | Some("") => 0,
        Some(text) => text.parse().unwrap_or(usize::MAX),
    }
}

/// Whether a process `depth` agents deep may mount subagents under
/// `max_agent_depth`.
pub fn may_mount_subagents(depth: usize, max_agent_depth: usize) -> bool {
    depth < max_agent_depth
}

/// Why a process `depth` agents deep is past `max_agent_depth`, for a
/// server such as `nanohermes serve` to refuse `run_task` with; `None`
/// within the limit. A hub at the limit mounts no subagent, so a server
/// started by a hub is never more than `max_agent_depth` deep: a deeper one
/// was started some other way around the guard.
pub fn depth_refusal(depth: usize, max_agent_depth: usize) -> Option<String> {
    (depth > max_agent_depth).then(|| {
        format!(
            "this agent is {} (max_agent_depth = {max_agent_depth}); it takes no task, \
             do the work yourself or ask the user",
            depth_words(depth)
        )
    })
}

/// The warning for subagent `server` withheld at `depth`.
pub(crate) fn withheld_warning(server: &str, depth: usize, max_agent_depth: usize) -> String {
    format!(
        "subagent {server} not mounted: this agent is already {} (max_agent_depth = {max_agent_depth})",
        depth_words(depth)
    )
}

/// The one warning a server's first listing calls for: its `run_task`
/// withheld by the depth cap, or an `--agent` server that offers none.
pub(crate) fn withheld(spec: &ServerSpec, filter: &ToolFilter, tools: &[Tool]) -> Option<String> {
    let uncapped = ToolFilter {
        depth_cap: None,
        ..filter.clone()
    };
    // A run_task the config withholds anyway is not worth a warning.
    let offers = tools.iter().any(|tool| tool.name == RUN_TASK) && uncapped.allows(RUN_TASK);
    if offers {
        return filter
            .depth_cap
            .map(|(depth, max)| withheld_warning(&spec.name, depth, max));
    }
    (spec.origin == Origin::AgentFlag).then(|| {
        format!(
            "server {} was mounted with --agent but offers no {RUN_TASK} tool; its tools are \
             offered as from --mcp, and agent_list does not name it",
            spec.name
        )
    })
}

fn depth_words(depth: usize) -> String {
    match depth {
        usize::MAX => format!("too deep ({AGENT_DEPTH_VAR} is not a whole number)"),
        1 => "1 level deep".to_owned(),
        n => format!("{n} levels deep"),
    }
}

/// The value a child of a process `depth` deep gets in [`AGENT_DEPTH_VAR`].
pub(crate) fn child_depth(depth: usize) -> String {
    depth.saturating_add(1).to_string()
}

/// The model settings a NanoHermes subagent inherits from this agent.
#[derive(Clone, PartialEq, Eq)]
pub struct SubagentModel {
    /// The API root (`OPENAI_BASE_URL` in the child).
    pub base_url: String,
    /// The model (`NANOHERMES_MODEL` in the child).
    pub model: String,
    /// The variable the key is read from (`api_key_env`); the child gets
    /// the key under the same name.
    pub key_env: String,
    /// The key, when this agent has one.
    pub key: Option<String>,
    /// The session's prompt cache key, shared with the subagent.
    pub prompt_cache_key: Option<String>,
    /// The model provider this agent chose (`--provider`,
    /// `model_provider`): `NANOHERMES_PROVIDER` in the child, which reads
    /// the provider's table from the same config.
    pub provider: Option<String>,
    /// The variable the child reads the base URL from: `OPENAI_BASE_URL`
    /// without a provider, a built-in provider's own (`ANTHROPIC_BASE_URL`),
    /// none for a provider whose table fixes it.
    pub base_url_env: Option<String>,
    /// The provider's header variables (`env_http_headers`) and their
    /// values: secrets like the key, passed under their own names.
    pub secrets: Vec<(String, String)>,
}

impl std::fmt::Debug for SubagentModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubagentModel")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("key_env", &self.key_env)
            .field("key", &self.key.as_ref().map(|_| "[REDACTED]"))
            .field("provider", &self.provider)
            .field("base_url_env", &self.base_url_env)
            .field(
                "secrets",
                &self
                    .secrets
                    .iter()
                    .map(|(name, _)| name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl SubagentModel {
    /// The (name, value) pairs a NanoHermes subagent's environment gets.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut pairs = Vec::new();
        if let Some(var) = &self.base_url_env {
            pairs.push((var.clone(), self.base_url.clone()));
        }
        pairs.push(("NANOHERMES_MODEL".to_owned(), self.model.clone()));
        if let Some(provider) = &self.provider {
            pairs.push(("NANOHERMES_PROVIDER".to_owned(), provider.clone()));
        }
        if let Some(key) = &self.key {
            pairs.push((self.key_env.clone(), key.clone()));
        }
        pairs.extend(self.secrets.iter().cloned());
        if let Some(cache_key) = &self.prompt_cache_key {
            pairs.push((PROMPT_CACHE_KEY_VAR.to_owned(), cache_key.clone()));
        }
        if let Some(home) = nanohermes_config::Paths::of_process().home() {
            pairs.push((
                "NANOHERMES_HOME".to_owned(),
                home.to_string_lossy().into_owned(),
            ));
        }
        pairs
    }
}

/// Whether `stdio` starts another NanoHermes as an MCP server: its command
/// is `exe` (this executable) or a program named `nanohermes`, and its
/// arguments are the `serve` command (`is_serve` knows the command line,
/// [`crate::HubConfig::serve_command`]).
pub fn is_nanohermes_serve(stdio: &StdioSpec, exe: &Path, is_serve: ServeCommand) -> bool {
    let command = Path::new(&stdio.command);
    let named = command.file_name().is_some_and(|name| name == "nanohermes");
    let same = || {
        let ours = exe.canonicalize().ok();
        resolve(command).and_then(|p| p.canonicalize().ok()) == ours && ours.is_some()
    };
    if !named && !same() {
        return false;
    }
    let args: Vec<&str> = stdio.args.iter().map(String::as_str).collect();
    is_serve(&args)
}

/// Whether the arguments (after the program name) are NanoHermes's `serve`
/// command: the binary's command line knows, so it passes this in.
pub type ServeCommand = fn(&[&str]) -> bool;

/// `command` as the child's exec would find it: a path as given, a bare
/// name through this process's `PATH` (the child gets the same `PATH`).
fn resolve(command: &Path) -> Option<PathBuf> {
    if command.components().count() > 1 {
        return Some(command.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(command))
        .find(|candidate| candidate.is_file())
}

/// How the subagent calls (`run_task` of an external server) of a run went.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubagentTally {
    /// Calls made.
    pub calls: usize,
    /// Calls whose result was an error.
    pub failed: usize,
    /// The last failure's text, without the `ERROR: ` prefix.
    pub last_error: Option<String>,
}

impl SubagentTally {
    /// The notice for a run in which every subagent call failed (at least
    /// one was made), or `None`.
    pub fn all_failed_notice(&self) -> Option<String> {
        if self.calls == 0 || self.failed < self.calls {
            return None;
        }
        let last = self
            .last_error
            .as_deref()
            .map(|e| mcp_tools::clamp(e, 400))
            .unwrap_or_default();
        Some(format!(
            "every subagent call failed ({} of {}), so the task was not delegated; the last \
             error: {last}; check the subagent's command and its model settings \
             (`nanohermes mcp call NAME run_task '{{\"task\":\"...\"}}'` tries one directly)",
            self.failed, self.calls
        ))
    }
}

/// The hub's subagent bookkeeping.
#[derive(Debug, Default)]
pub(crate) struct Agents {
    /// Per server, in the hub's server order: its configured `description`.
    pub(crate) descriptions: Vec<Option<String>>,
    /// What `agent_list` lists now: (tool name, what it is for), in tool
    /// order. Empty: `agent_list` is not declared.
    listed: Vec<(String, String)>,
    /// The subagent calls so far.
    tally: Mutex<SubagentTally>,
}

impl Agents {
    /// Counts one answer of `server`'s `run_task`, and returns it with a
    /// failure said to be the subagent's: "the model request failed" from
    /// a child would otherwise read as the caller's own model failing.
    pub(crate) fn note(&self, server: &str, answer: String) -> String {
        let mut tally = self.tally.lock().unwrap_or_else(|p| p.into_inner());
        tally.calls += 1;
        let Some(error) = answer.strip_prefix("ERROR: ") else {
            return answer;
        };
        tally.failed += 1;
        // The hub's own messages already name the server.
        let error = if error.contains(&format!("server {server} ")) {
            error.to_owned()
        } else {
            format!("subagent {server} failed: {error}")
        };
        tally.last_error = Some(error.clone());
        format!("ERROR: {error}")
    }

    /// The subagent calls so far.
    pub(crate) fn tally(&self) -> SubagentTally {
        self.tally.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether `agent_list` is declared now.
    pub(crate) fn declares(&self, name: &str) -> bool {
        name == AGENT_LIST && !self.listed.is_empty()
    }
}

/// `text` on one line (every run of whitespace one space), cut at
/// [`ABOUT_CHARS`] characters with `…`.
fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(ABOUT_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

fn declaration() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": AGENT_LIST,
            "description": "List the subagents you can hand a whole task to, \
                            with the tool that runs each and what it is for",
            "parameters": {"type": "object", "properties": {}},
        }
    })
}

impl Hub {
    /// Recomputes what `agent_list` lists from the declarations built so
    /// far (after the policy narrowed them) and declares it when there is
    /// something to list and `allowed` says the policy lets it be offered.
    pub(super) fn declare_agents(&mut self, allowed: impl Fn(&str, &ToolFacts) -> bool) {
        let declared: Vec<&str> = self
            .declarations
            .iter()
            .map(super::declarations::name)
            .collect();
        let mut listed = Vec::new();
        for tool in &self.tools {
            if tool.builtin || tool.raw_name != RUN_TASK || !declared.contains(&tool.name.as_str())
            {
                continue;
            }
            let Some((_, server)) = self.by_name.get(&tool.name) else {
                continue;
            };
            let instructions = self.connections[*server]
                .watch()
                .and_then(|(peer, _, _)| peer.peer_info())
                .and_then(|info| info.instructions.clone());
            let about = [
                self.agents.descriptions[*server].clone(),
                instructions,
                Some(tool.description.clone()),
            ]
            .into_iter()
            .flatten()
            .map(|text| one_line(&text))
            .find(|text| !text.is_empty())
            .unwrap_or_else(|| "(no description)".to_owned());
            listed.push((tool.name.clone(), about));
        }
        if !allowed(AGENT_LIST, &FACTS) {
            listed.clear();
        }
        if !listed.is_empty() {
            self.declarations.push(declaration());
        }
        self.agents.listed = listed;
    }

    /// Runs `agent_list` if `name` is it and it is declared; `None`
    /// otherwise.
    pub(super) fn call_agent_list(&self, name: &str) -> Option<String> {
        if !self.agents.declares(name) {
            return None;
        }
        let mut answer = String::from(
            "Subagents (call one's tool with a whole task in plain words; it works on its own \
             and answers with its result):",
        );
        for (tool, about) in &self.agents.listed {
            answer.push_str(&format!("\n- {tool}: {about}"));
        }
        Some(mcp_tools::clamp(&answer, self.max_output))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_depth_is_zero_when_unset_and_too_deep_when_garbled() {
        assert_eq!(parse_depth(None), 0);
        assert_eq!(parse_depth(Some(" ")), 0);
        assert_eq!(parse_depth(Some("2")), 2);
        assert_eq!(parse_depth(Some("two")), usize::MAX);
        assert!(!may_mount_subagents(usize::MAX, usize::MAX - 1));
        assert_eq!(child_depth(usize::MAX), usize::MAX.to_string());
        assert_eq!(child_depth(2), "3");
    }

    #[test]
    fn the_limit_stops_mounting_at_the_limit_and_serving_beyond_it() {
        assert!(may_mount_subagents(2, 3));
        assert!(!may_mount_subagents(3, 3));
        assert!(!may_mount_subagents(0, 0), "0 mounts no subagent at all");
        assert_eq!(depth_refusal(3, 3), None, "a hub at depth 2 may mount it");
        assert_eq!(
            depth_refusal(4, 3).unwrap(),
            "this agent is 4 levels deep (max_agent_depth = 3); it takes no task, \
             do the work yourself or ask the user"
        );
        assert_eq!(
            withheld_warning("helper", 3, 3),
            "subagent helper not mounted: this agent is already 3 levels deep (max_agent_depth = 3)"
        );
        assert!(withheld_warning("h", usize::MAX, 3).contains("is not a whole number"));
    }

    #[test]
    fn a_nanohermes_subagent_is_this_executable_or_nanohermes_started_with_serve() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("nh-build");
        std::fs::write(&exe, "").unwrap();
        let spec = |command: &str, args: &[&str]| StdioSpec {
            command: command.to_owned(),
            args: args.iter().map(|a| a.to_string()).collect(),
            ..StdioSpec::default()
        };
        let ours = exe.display().to_string();
        // The binary's parser decides what `serve` is (its own tests check
        // it with clap); here, a stand-in.
        let is_serve: ServeCommand = |args| args.first() == Some(&"serve");
        for (command, args, expected) in [
            ("nanohermes", &["serve", "--root", "."][..], true),
            (ours.as_str(), &["serve"][..], true),
            ("nanohermes", &["run", "serve"][..], false),
            ("python3", &["serve"][..], false),
        ] {
            assert_eq!(
                is_nanohermes_serve(&spec(command, args), &exe, is_serve),
                expected,
                "{command} {args:?}"
            );
        }
    }

    #[test]
    fn the_tally_names_the_subagent_and_speaks_only_when_every_call_failed() {
        let agents = Agents::default();
        assert_eq!(agents.note("rev", "fine".into()), "fine");
        assert_eq!(
            agents.note("rev", "ERROR: the model request failed: x".into()),
            "ERROR: subagent rev failed: the model request failed: x"
        );
        assert_eq!(agents.tally().all_failed_notice(), None, "one call worked");
        let failing = Agents::default();
        assert_eq!(
            failing.note("rev", "ERROR: server rev is not running (y)".into()),
            "ERROR: server rev is not running (y)"
        );
        let notice = failing.tally().all_failed_notice().unwrap();
        assert!(
            notice.starts_with("every subagent call failed (1 of 1)"),
            "{notice}"
        );
        assert!(notice.contains("server rev is not running (y)"), "{notice}");
        assert_eq!(Agents::default().tally().all_failed_notice(), None);
    }

    #[test]
    fn what_an_agent_is_for_is_one_line_and_capped() {
        assert_eq!(
            one_line("Reviews\n  Rust code.\n\nCarefully"),
            "Reviews Rust code. Carefully"
        );
        let long = "é".repeat(ABOUT_CHARS + 5);
        let cut = one_line(&long);
        assert_eq!(cut.chars().count(), ABOUT_CHARS + 1);
        assert!(cut.ends_with('…'));
    }
}
