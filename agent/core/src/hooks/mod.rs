//! Lifecycle hooks in the `hooks.json` shape Claude Code, Codex and goose
//! share: `{"hooks": {"PreToolUse": [{"matcher": "REGEX", "hooks":
//! [{"type": "command", "command": "...", "timeout": 30}]}]}}`.
//!
//! Each hook is `sh -c COMMAND` started through the spawn policy (secrets
//! scrubbed from its environment, its own process group, the shell's
//! sandbox: [`mcp_tools::spawn::Sandbox`]), run in the
//! workspace with the event as one JSON object on stdin (`hook_event_name`
//! and goose's `event`, `session_id`, `cwd`, `permission_mode`, and per
//! event `tool_name`, `tool_input`, `tool_use_id`, `tool_response`,
//! `prompt`, `source`). A hook still running at its timeout (default 60 s)
//! has its whole tree killed. Hooks of one event run one after another, in
//! layer and file order.
//!
//! What each event may do:
//! - `PreToolUse` (matcher over the tool name) runs after the permission
//!   and argument gates, before dispatch. Any non-zero exit blocks, exit 2
//!   included, and so do `{"decision":"block","reason":…}` and Claude
//!   Code's `hookSpecificOutput.permissionDecision: "deny"`; the hook's
//!   words become the model's `ERROR: blocked by a PreToolUse hook: …`. A
//!   timeout blocks too: a guard that cannot answer has not approved, and
//!   failing open would let a hung or slow hook switch the policy off.
//! - `PostToolUse` may append a note to the result, the way Claude Code
//!   feeds one to its model: `hookSpecificOutput.additionalContext`, a
//!   block decision's `reason`, or stderr on exit 2. Plain stdout is not
//!   shown to the model (Claude Code keeps it to the transcript).
//! - `UserPromptSubmit` blocks the prompt on exit 2 or a block decision
//!   (the user sees why); `SessionStart` (the first run of an agent) and
//!   `UserPromptSubmit` add plain stdout or `additionalContext` to the
//!   prompt, as Claude Code does.
//! - `Stop` runs when a run ends; it is told, it cannot keep the run going.
//!
//! A failure that cannot block (another exit code, a timeout) is a notice
//! for the user, never text for the model.

mod process;
mod verdict;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use regex::Regex;
use serde_json::{Map, Value, json};

use crate::events::RunEvents;
use crate::toolbox::ToolFacts;
use nanohermes_config::{HookEvent, HookGroup, Mode};
use nanohermes_llm::ToolCall;
use verdict::Verdict;

/// Seconds a hook may run when its `timeout` is not set.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// One command of a group.
#[derive(Debug, Clone)]
struct Command {
    command: String,
    timeout_secs: u64,
}

/// A group with its matcher compiled; `None` matches everything.
#[derive(Debug, Clone)]
struct Group {
    matcher: Option<Regex>,
    commands: Vec<Command>,
}

/// The configured hooks and what every event JSON carries.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    groups: BTreeMap<HookEvent, Vec<Group>>,
    cwd: PathBuf,
    session_id: String,
    permission_mode: String,
    session_started: bool,
    sandbox: Option<mcp_tools::spawn::Sandbox>,
}

impl Hooks {
    /// Compiles `config` (every layer's hooks, in order). `cwd` is the
    /// workspace; `permission_mode` is reported to hooks as is. A matcher
    /// that is not a regular expression is refused here, before any run.
    /// Hooks run in the default sandbox until [`Hooks::with_sandbox`].
    pub fn new(
        config: &BTreeMap<HookEvent, Vec<HookGroup>>,
        cwd: &Path,
        permission_mode: &str,
    ) -> anyhow::Result<Hooks> {
        let mut groups = BTreeMap::new();
        for (event, list) in config {
            let mut compiled = Vec::with_capacity(list.len());
            for group in list {
                let matcher = match group.matcher.as_deref().map(str::trim) {
                    None | Some("" | "*") => None,
                    Some(pattern) => Some(Regex::new(pattern).with_context(|| {
                        format!(
                            "hooks.{event:?}: matcher {pattern:?} is not a regular expression; fix it or use \"*\" for every tool"
                        )
                    })?),
                };
                let commands = group
                    .hooks
                    .iter()
                    .map(|h| Command {
                        command: h.command.clone(),
                        timeout_secs: h.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS),
                    })
                    .collect();
                compiled.push(Group { matcher, commands });
            }
            groups.insert(*event, compiled);
        }
        Ok(Hooks {
            groups,
            cwd: cwd.to_path_buf(),
            session_id: new_session_id(),
            permission_mode: permission_mode.to_owned(),
            session_started: false,
            sandbox: None,
        })
    }

    /// The same hooks, run under `policy` (the shell's).
    pub fn with_sandbox(self, policy: mcp_tools::spawn::SandboxPolicy) -> Hooks {
        let sandbox = mcp_tools::spawn::Sandbox::new(policy, &self.cwd);
        Hooks {
            sandbox: Some(sandbox),
            ..self
        }
    }

    /// The id every event of this agent carries.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Runs `dispatch` (the tool call) between the `PreToolUse` and
    /// `PostToolUse` hooks that match the tool: a block is the result
    /// instead of the call, a note is appended to the result.
    pub async fn around_tool<F, Fut>(
        &self,
        call: &ToolCall,
        facts: &ToolFacts,
        arguments: Map<String, Value>,
        dispatch: F,
    ) -> String
    where
        F: FnOnce(Map<String, Value>) -> Fut,
        Fut: Future<Output = String>,
    {
        let names = tool_names(&call.name, facts);
        let pre = self.matching(HookEvent::PreToolUse, &names);
        let post = self.matching(HookEvent::PostToolUse, &names);
        if pre.is_empty() && post.is_empty() {
            return dispatch(arguments).await;
        }
        let mut event = self.event(HookEvent::PreToolUse);
        event.insert("tool_name".into(), call.name.clone().into());
        event.insert("tool_input".into(), Value::Object(arguments.clone()));
        event.insert("tool_use_id".into(), call.id.clone().into());
        for command in pre {
            match self.run(command, &event).await {
                Verdict::Proceed { .. } => {}
                Verdict::Block(reason) | Verdict::Failed(reason) => {
                    return format!(
                        "ERROR: blocked by a PreToolUse hook: {reason}; the call was not run"
                    );
                }
            }
        }
        let mut result = dispatch(arguments).await;
        if post.is_empty() {
            return result;
        }
        set_event_name(&mut event, HookEvent::PostToolUse);
        event.insert("tool_response".into(), result.clone().into());
        for command in post {
            match self.run(command, &event).await {
                Verdict::Proceed {
                    context: Some(note),
                    ..
                }
                | Verdict::Block(note) => {
                    result.push_str("\n\nNote from a PostToolUse hook: ");
                    result.push_str(&note);
                }
                Verdict::Proceed { context: None, .. } => {}
                Verdict::Failed(why) => tracing::warn!("PostToolUse hook failed: {why}"),
            }
        }
        result
    }

    /// Runs `SessionStart` (first call only) and `UserPromptSubmit` for
    /// `prompt`. Returns the text to send (the prompt plus what the hooks
    /// added), or why a hook blocked it.
    pub async fn before_prompt(
        &mut self,
        prompt: &str,
        ui: &mut dyn RunEvents,
    ) -> Result<String, String> {
        let mut context = Vec::new();
        if !self.session_started {
            self.session_started = true;
            let mut event = self.event(HookEvent::SessionStart);
            event.insert("source".into(), "startup".into());
            for command in self.matching(HookEvent::SessionStart, &["startup".into()]) {
                match self.run(command, &event).await {
                    Verdict::Proceed { context: c, stdout } => context.extend(added(c, stdout)),
                    Verdict::Block(why) | Verdict::Failed(why) => {
                        ui.notice(&format!("SessionStart hook: {why}"));
                    }
                }
            }
        }
        let mut event = self.event(HookEvent::UserPromptSubmit);
        event.insert("prompt".into(), prompt.into());
        for command in self.matching(HookEvent::UserPromptSubmit, &[]) {
            match self.run(command, &event).await {
                Verdict::Proceed { context: c, stdout } => context.extend(added(c, stdout)),
                Verdict::Block(why) => return Err(why),
                Verdict::Failed(why) => ui.notice(&format!("UserPromptSubmit hook: {why}")),
            }
        }
        if context.is_empty() {
            return Ok(prompt.to_owned());
        }
        Ok(format!("{prompt}\n\n{}", context.join("\n\n")))
    }

    /// Runs the `Stop` hooks; their failures become notices.
    pub async fn after_run(&self, ui: &mut dyn RunEvents) {
        let mut event = self.event(HookEvent::Stop);
        event.insert("stop_hook_active".into(), false.into());
        for command in self.matching(HookEvent::Stop, &[]) {
            if let Verdict::Failed(why) | Verdict::Block(why) = self.run(command, &event).await {
                ui.notice(&format!("Stop hook: {why}"));
            }
        }
    }

    /// The commands of `event` whose group matches one of `subjects`
    /// (every group when `subjects` is empty: the event has no matcher).
    fn matching(&self, event: HookEvent, subjects: &[String]) -> Vec<&Command> {
        self.groups
            .get(&event)
            .into_iter()
            .flatten()
            .filter(|g| match &g.matcher {
                None => true,
                Some(re) => subjects.is_empty() || subjects.iter().any(|s| re.is_match(s)),
            })
            .flat_map(|g| &g.commands)
            .collect()
    }

    fn event(&self, name: HookEvent) -> Map<String, Value> {
        let mut event = Map::new();
        set_event_name(&mut event, name);
        event.insert("session_id".into(), self.session_id.clone().into());
        event.insert("cwd".into(), self.cwd.display().to_string().into());
        event.insert(
            "permission_mode".into(),
            self.permission_mode.clone().into(),
        );
        event
    }

    async fn run(&self, command: &Command, event: &Map<String, Value>) -> Verdict {
        let input = serde_json::to_vec(event).unwrap_or_default();
        let default;
        let sandbox = match &self.sandbox {
            Some(sandbox) => sandbox,
            None => {
                default = mcp_tools::spawn::Sandbox::new(Default::default(), &self.cwd);
                &default
            }
        };
        let finished = process::run(
            &command.command,
            &input,
            &self.cwd,
            Duration::from_secs(command.timeout_secs),
            sandbox,
        )
        .await;
        verdict::read(finished, &command.command, command.timeout_secs)
    }
}

/// The `permission_mode` hooks are told, spelled as Claude Code spells
/// it (`acceptEdits`), so a hook that checks the mode carries over.
pub fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::AcceptEdits => "acceptEdits",
        other => other.name(),
    }
}

/// The names a matcher is tried on: the merged name, `SERVER__TOOL` (a
/// built-in's tools are declared without the prefix) and the
/// `mcp__SERVER__TOOL` spelling Claude Code and Codex rules use.
fn tool_names(name: &str, facts: &ToolFacts) -> Vec<String> {
    let mut names = vec![name.to_owned()];
    let qualified = if !facts.server.is_empty() && !facts.raw_name.is_empty() {
        format!("{}__{}", facts.server, facts.raw_name)
    } else {
        name.to_owned()
    };
    if qualified != name {
        names.push(qualified.clone());
    }
    if qualified.contains("__") && !qualified.starts_with("mcp__") {
        names.push(format!("mcp__{qualified}"));
    }
    names
}

fn set_event_name(event: &mut Map<String, Value>, name: HookEvent) {
    let name = json!(name);
    event.insert("hook_event_name".into(), name.clone());
    // goose names the field `event`.
    event.insert("event".into(), name);
}

fn added(context: Option<String>, stdout: String) -> Option<String> {
    context.or_else(|| Some(stdout.trim().to_owned()).filter(|s| !s.is_empty()))
}

/// Unique enough among this machine's sessions: the time and the pid.
fn new_session_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{nanos:x}-{:x}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_tools_are_also_matched_as_mcp_server_tool() {
        let facts = |server: &str, raw: &str| ToolFacts {
            read_only: false,
            destructive: true,
            builtin: server == "files",
            server: server.to_owned(),
            raw_name: raw.to_owned(),
        };
        assert_eq!(tool_names("todo_x", &facts("", "")), ["todo_x"]);
        assert_eq!(
            tool_names("write_file", &facts("files", "write_file")),
            ["write_file", "files__write_file", "mcp__files__write_file"]
        );
        assert_eq!(
            tool_names("gh__create_issue", &facts("gh", "create_issue")),
            ["gh__create_issue", "mcp__gh__create_issue"]
        );
        let config: BTreeMap<HookEvent, Vec<HookGroup>> = serde_json::from_value(json!({
            "PreToolUse": [
                {"matcher": "^mcp__gh__", "hooks": [{"type": "command", "command": "a"}]},
                {"matcher": "*", "hooks": [{"type": "command", "command": "b", "timeout": 3}]},
                {"matcher": "write_file|edit", "hooks": [{"type": "command", "command": "c"}]}
            ]
        }))
        .unwrap();
        let hooks = Hooks::new(&config, Path::new("/"), "default").unwrap();
        let names = |tool| {
            hooks
                .matching(
                    HookEvent::PreToolUse,
                    &tool_names(tool, &ToolFacts::default()),
                )
                .iter()
                .map(|c| (c.command.as_str(), c.timeout_secs))
                .collect::<Vec<_>>()
        };
        assert_eq!(names("gh__create_issue"), [("a", 60), ("b", 3)]);
        assert_eq!(names("write_file"), [("b", 3), ("c", 60)]);
        assert_eq!(names("read_file"), [("b", 3)]);
    }

    #[test]
    fn a_bad_matcher_is_refused_before_any_run() {
        let config: BTreeMap<HookEvent, Vec<HookGroup>> = serde_json::from_value(json!({
            "PostToolUse": [{"matcher": "(", "hooks": [{"type": "command", "command": "a"}]}]
        }))
        .unwrap();
        let e = Hooks::new(&config, Path::new("/"), "default").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("hooks.PostToolUse: matcher \"(\" is not a regular expression"),
            "{e}"
        );
    }
}
