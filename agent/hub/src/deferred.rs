//! Deferred tools: when the declarations would pass a budget, the tools of
//! servers nobody pinned are kept out of the request and found through
//! the `tool_search` meta-tool, with any chat-completions model.
//!
//! Rules, applied at every rebuild of the hub's declarations (after the
//! policy narrowed them, so a tool the policy refuses is never deferred,
//! searched or surfaced):
//! - **The budget.** When the narrowed declarations, serialised as the
//!   request's `tools` array, pass [`DeferConfig::max_bytes`] (default
//!   [`DEFAULT_MAX_BYTES`]) or number more than [`DeferConfig::max_tools`]
//!   (default [`DEFAULT_MAX_TOOLS`]), every tool that is not pinned is
//!   deferred. Exactly at the budget nothing is.
//! - **Pinned** (never deferred): built-ins; every tool of a server with
//!   `always_load = true` or mounted with `--agent`; every subagent's
//!   `run_task`; tools matching `always_load_tools`; tools named without
//!   `*` in `allow`; tools a server's `enabled_tools` names; the hub's
//!   meta-tools.
//! - **Never taken back.** A tool declared once stays declared: deferral
//!   only ever holds back tools the model has not been shown, so a server
//!   that arrives late or a tool list that grows does not hide tools the
//!   model already uses.
//! - **Late servers** (`late.rs`): the tools of a server that
//!   finished connecting after the first request join the deferred set
//!   (unless pinned), whatever the budget.
//! - **`tool_search {query, limit?}`** is declared exactly while something
//!   is deferred. It ranks the deferred tools ([`super::search`], BM25 over
//!   name, server, title and description) and answers each match's name,
//!   server and one-line description. A match — and a deferred tool the
//!   model calls by name, which works when the policy allows it — is
//!   *surfaced*: declared from the next step on for the rest of the
//!   session. The surfaced set ([`Surfaced`]) is shared with the session
//!   keeper, which writes it to the session file, and seeded from it on
//!   resume.

use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

use super::declarations::Declarations;
use super::search::{Fields, Index};
use super::{Hub, ToolInfo};
use nanohermes_core::policy::pattern;
use nanohermes_core::toolbox::ToolFacts;

pub use nanohermes_core::toolbox::{TOOL_SEARCH, counts_text};

/// The default budget of declaration bytes (the request's `tools` array).
pub const DEFAULT_MAX_BYTES: usize = 16_000;

/// The default budget of declared tools.
pub const DEFAULT_MAX_TOOLS: usize = 40;

/// Matches `tool_search` returns when the model gives no `limit`.
pub const DEFAULT_LIMIT: usize = 5;

/// The most matches one `tool_search` returns.
pub const MAX_LIMIT: usize = 20;

/// The longest description a match shows, in characters.
const ABOUT_CHARS: usize = 160;

/// What the policy knows about `tool_search`: it only reads.
pub const FACTS: ToolFacts = super::resources::FACTS;

/// When tools are deferred (`tool_search`, `tool_budget_bytes`,
/// `tool_budget_count`, `always_load_tools` in the config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeferConfig {
    /// Defer at all [default: true].
    pub enabled: bool,
    /// Defer when the declarations pass this many bytes.
    pub max_bytes: usize,
    /// Defer when more than this many tools would be declared.
    pub max_tools: usize,
    /// Tools never deferred (`allow` patterns: `SERVER__TOOL`,
    /// `mcp__SERVER__TOOL`, `*` globs).
    pub always_load_tools: Vec<String>,
}

impl Default for DeferConfig {
    fn default() -> Self {
        DeferConfig {
            enabled: true,
            max_bytes: DEFAULT_MAX_BYTES,
            max_tools: DEFAULT_MAX_TOOLS,
            always_load_tools: Vec::new(),
        }
    }
}

/// The tools surfaced this session (found by `tool_search` or called by
/// name): declared from the next step on. A cheap handle: clones share
/// one set, so the session keeper reads what the hub adds.
#[derive(Debug, Clone, Default)]
pub struct Surfaced {
    inner: Arc<Mutex<SurfacedSet>>,
}

#[derive(Debug, Default)]
struct SurfacedSet {
    names: BTreeSet<String>,
    /// Something was added since the hub last rebuilt its declarations.
    changed: bool,
}

impl Surfaced {
    /// Every surfaced name, sorted.
    pub fn names(&self) -> Vec<String> {
        self.lock().names.iter().cloned().collect()
    }

    /// Adds `names` (a resumed session's); they are declared from the
    /// next step on.
    pub fn extend(&self, names: impl IntoIterator<Item = String>) {
        let mut set = self.lock();
        for name in names {
            set.changed |= set.names.insert(name);
        }
    }

    fn contains(&self, name: &str) -> bool {
        self.lock().names.contains(name)
    }

    /// Whether names were added since the last call, clearing the flag.
    pub(crate) fn take_changed(&self) -> bool {
        std::mem::take(&mut self.lock().changed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SurfacedSet> {
        // A panic elsewhere never leaves the set half-written.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One tool held back from the declarations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeferredTool {
    /// The name the model calls.
    pub name: String,
    /// The server that offers it.
    pub server: String,
    /// Its description on one line, cut at 160 characters.
    pub about: String,
}

/// The hub's deferral state.
#[derive(Debug, Default)]
pub(crate) struct Deferral {
    pub(crate) config: DeferConfig,
    /// Servers with `always_load = true`.
    pub(crate) pinned_servers: Vec<String>,
    /// Servers that finished connecting after the first request.
    pub(crate) late_servers: Vec<String>,
    pub(crate) surfaced: Surfaced,
    /// Every tool a split declared so far (never taken back).
    shown: HashSet<String>,
    deferred: Vec<DeferredTool>,
    index: Index,
}

impl Deferral {
    /// Deferral by `config`, never deferring `pinned_servers`' tools.
    pub(crate) fn new(config: DeferConfig, pinned_servers: Vec<String>) -> Deferral {
        Deferral {
            config,
            pinned_servers,
            ..Deferral::default()
        }
    }

    /// Whether `tool_search` is declared.
    pub(crate) fn active(&self) -> bool {
        !self.deferred.is_empty()
    }

    /// Splits `declarations` (already narrowed by the policy): the
    /// deferred ones leave, `tool_search` joins when any did. `tool`
    /// looks a declared name up (`None` for meta-tools, never deferred);
    /// `pinned` says whether the user's configuration pins a tool. The
    /// budget is measured on the declarations' encodings, which the first
    /// request then sends as they are when nothing was deferred.
    pub(crate) fn split<'a>(
        &mut self,
        declarations: &mut Declarations,
        tool: impl Fn(&str) -> Option<&'a ToolInfo>,
        pinned: impl Fn(&ToolInfo) -> bool,
        search_allowed: bool,
    ) {
        // As `serde_json::to_string` of the array: `[a,b,…]`.
        let encoded = declarations.encoded();
        let bytes = encoded.iter().map(|d| d.get().len()).sum::<usize>()
            + encoded.len().saturating_sub(1)
            + 2;
        let over = bytes > self.config.max_bytes || declarations.len() > self.config.max_tools;
        let hold = |name: &str| {
            self.config.enabled
                && search_allowed
                && tool(name).is_some_and(|info| {
                    !info.builtin
                        && !self.pinned_servers.contains(&info.server)
                        && !pinned(info)
                        && !self.shown.contains(name)
                        && !self.surfaced.contains(name)
                        && (over || self.late_servers.contains(&info.server))
                })
        };
        let holds: Vec<bool> = declarations
            .iter()
            .map(|declaration| hold(super::declarations::name(declaration)))
            .collect();
        for (declaration, &hold) in declarations.iter().zip(&holds) {
            let name = super::declarations::name(declaration);
            if !hold && tool(name).is_some() {
                self.shown.insert(name.to_owned());
            }
        }
        // Only when something leaves are the declarations (and so their
        // encodings) touched.
        let mut deferred = Vec::new();
        let mut kept = Vec::new();
        if holds.contains(&true) {
            for (declaration, hold) in declarations.drain(..).zip(holds) {
                match tool(super::declarations::name(&declaration)) {
                    Some(info) if hold => deferred.push((info, declaration)),
                    _ => kept.push(declaration),
                }
            }
        }
        self.index = Index::new(deferred.iter().map(|(info, declaration)| {
            Fields {
                name: &info.name,
                server: &info.server,
                title: declaration["function"]["title"]
                    .as_str()
                    .unwrap_or_default(),
                description: &info.description,
            }
        }));
        self.deferred = deferred
            .into_iter()
            .map(|(info, _)| DeferredTool {
                name: info.name.clone(),
                server: info.server.clone(),
                about: one_line(&info.description),
            })
            .collect();
        if self.active() {
            kept.push(self.declaration());
            **declarations = kept;
        }
    }

    /// The deferred tools, in tool order.
    pub(crate) fn deferred(&self) -> &[DeferredTool] {
        &self.deferred
    }

    /// How many tools each server has deferred, in tool order.
    pub(crate) fn counts(&self) -> Vec<(String, usize)> {
        let mut counts: Vec<(String, usize)> = Vec::new();
        for tool in &self.deferred {
            match counts.last_mut() {
                Some((server, n)) if *server == tool.server => *n += 1,
                _ => counts.push((tool.server.clone(), 1)),
            }
        }
        counts
    }

    /// Surfaces `name` when it is deferred (the model called it by name).
    pub(crate) fn note_called(&self, name: &str) {
        if self.deferred.iter().any(|t| t.name == name) {
            self.surfaced.extend([name.to_owned()]);
        }
    }

    /// Answers a `tool_search` call; `allowed` may refuse a match (a
    /// task's own policy in `serve`). Matches are surfaced.
    pub(crate) fn search(
        &self,
        arguments: &Map<String, Value>,
        allowed: impl Fn(&str) -> bool,
    ) -> String {
        let Some(query) = arguments
            .get("query")
            .and_then(Value::as_str)
            .filter(|q| !q.trim().is_empty())
        else {
            return format!(
                "ERROR: {TOOL_SEARCH} needs `query`: a few words saying what you want to do, or a tool's name"
            );
        };
        let limit = arguments
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_LIMIT, |n| (n as usize).clamp(1, MAX_LIMIT));
        let hits = self
            .index
            .search(query, limit, |doc| allowed(&self.deferred[doc].name));
        if hits.is_empty() {
            return format!(
                "No deferred tool matches {query:?}; try other words. Deferred: {}",
                counts_text(&self.counts())
            );
        }
        let found: Vec<&DeferredTool> = hits.iter().map(|(doc, _)| &self.deferred[*doc]).collect();
        self.surfaced
            .extend(found.iter().map(|tool| tool.name.clone()));
        let mut answer = format!(
            "{} matching tools; each is declared from your next step on, call it by name:",
            found.len()
        );
        for tool in found {
            answer.push_str(&format!(
                "\n- {} (server {}): {}",
                tool.name, tool.server, tool.about
            ));
        }
        answer
    }

    fn declaration(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": TOOL_SEARCH,
                "description": format!(
                    "Find tools that are not declared yet ({}). Give a few words saying what you \
                     want to do; each match is declared from your next step on",
                    counts_text(&self.counts())
                ),
                "parameters": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "What you want to do, or a tool's name"},
                        "limit": {"type": "integer", "description": "How many matches, 1 to 20 (default 5)"},
                    },
                    "required": ["query"],
                },
            }
        })
    }
}

/// `text` on one line, cut at [`ABOUT_CHARS`] characters with `…`.
fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(ABOUT_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

impl Hub {
    /// Whether the user's configuration pins `tool` (see the module docs;
    /// built-ins and `always_load` servers are checked by the split).
    fn pinned_by_config(&self, tool: &ToolInfo, always_load_tools: &[String]) -> bool {
        // A subagent's `run_task` is what `agent_list` names.
        if !tool.builtin && tool.raw_name == super::RUN_TASK {
            return true;
        }
        let facts = tool.facts();
        if always_load_tools
            .iter()
            .any(|p| pattern::matches(p, &tool.name, &facts))
        {
            return true;
        }
        // A tool named in `allow`: no `*`, and not Claude Code's
        // server-wide `mcp__SERVER`.
        let names_a_tool = |p: &str| {
            let p = p.trim();
            !p.contains('*')
                && p.strip_prefix("mcp__")
                    .is_none_or(|rest| rest.contains("__"))
        };
        let allow = self.catalog.offered.as_ref().and_then(|p| p.allow_list());
        if allow
            .into_iter()
            .flatten()
            .any(|p| names_a_tool(p) && pattern::matches(p, &tool.name, &facts))
        {
            return true;
        }
        self.by_name.get(&tool.name).is_some_and(|(_, server)| {
            self.filters[*server]
                .enabled
                .as_ref()
                .is_some_and(|named| named.contains(&tool.raw_name))
        })
    }

    /// Moves the deferred declarations out and adds `tool_search` (called
    /// by `rebuild` after the policy narrowed them).
    pub(super) fn split_deferred(&mut self) {
        let mut deferral = std::mem::take(&mut self.deferral);
        let mut declarations = std::mem::take(&mut self.declarations);
        let always_load_tools = deferral.config.always_load_tools.clone();
        let search_allowed = self
            .catalog
            .offered
            .as_ref()
            .is_none_or(|policy| policy.allows(TOOL_SEARCH, &FACTS));
        deferral.split(
            &mut declarations,
            |name| self.tool(name),
            |tool| self.pinned_by_config(tool, &always_load_tools),
            search_allowed,
        );
        self.declarations = declarations;
        self.deferral = deferral;
    }

    /// Answers `tool_search` when it is declared.
    pub(super) fn call_tool_search(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
    ) -> Option<String> {
        (name == TOOL_SEARCH && self.deferral.active())
            .then(|| mcp_tools::clamp(&self.deferral.search(arguments, |_| true), self.max_output))
    }

    /// `tool_search` for a caller with its own `allowed` rule (a `serve`
    /// task's policy): a match it refuses is neither shown nor surfaced.
    pub fn search_tools(
        &self,
        arguments: &Map<String, Value>,
        allowed: impl Fn(&str, &ToolFacts) -> bool,
    ) -> String {
        let answer = self.deferral.search(arguments, |name| {
            self.tool(name)
                .is_some_and(|tool| allowed(name, &tool.facts()))
        });
        mcp_tools::clamp(&answer, self.max_output)
    }

    /// The tools held back from the declarations now, in tool order.
    pub fn deferred(&self) -> &[DeferredTool] {
        self.deferral.deferred()
    }

    /// How many tools each server has deferred now.
    pub fn deferred_counts(&self) -> Vec<(String, usize)> {
        self.deferral.counts()
    }

    /// The session's surfaced tools (shared: the session keeper writes
    /// them, a resumed session seeds them).
    pub fn surfaced(&self) -> Surfaced {
        self.deferral.surfaced.clone()
    }

    /// Declares `names` (a resumed session's surfaced tools) from now on.
    pub fn surface(&mut self, names: impl IntoIterator<Item = String>) {
        self.deferral.surfaced.extend(names);
        if self.deferral.surfaced.take_changed() {
            self.rebuild();
        }
    }
}
