//! The sandbox for commands: what a shell command, a background task, a
//! hook or a git hook may write and connect to, enforced by the kernel in
//! the child between fork and exec.
//!
//! Modes, named as Codex names them ([`SandboxMode`]):
//! - `workspace-write`: read everywhere; write only inside the workspace
//!   root, the system temp directory, a few devices (`/dev/null`, ttys,
//!   `/dev/shm`) and the configured extra paths; never what decides what
//!   runs later: the workspace's git directory (all of it), a nested
//!   repository's `.git`, the `core.hooksPath` directories, and every
//!   `.nanohermes/`, `hooks.json` and `.mcp.json` under the root. Only the
//!   git server's commit ([`Sandbox::for_git_commit`]) writes git's state;
//! - `read-only`: read everywhere; write only a private temp directory
//!   (also given as `TMPDIR`) and the devices ([`Sandbox::reader`] is this,
//!   network off, for git's read-only tools);
//! - `danger-full-access`: no sandbox.
//!
//! With `network` off, a command runs in a network namespace of its own:
//! nothing but a loopback that is down, so no TCP, UDP, DNS or raw socket
//! reaches anything; Landlock's TCP rules (ABI 4) stay as a second layer.
//! With an [`Allowlist`] (`sandbox_network = "allowlist"`) it is the same
//! namespace with its loopback up and one listener on it, the relay
//! (`relay.rs`) to a proxy this process serves for the command
//! ([`crate::net::proxy`]), which reaches the listed domains at public
//! addresses and nothing else; the command gets the proxy variables
//! (`HTTP_PROXY`, `HTTPS_PROXY`, cargo's, npm's, pip's, git's), and the
//! one TCP port Landlock lets it connect to is the relay's.
//! From ABI 6 a command also cannot signal processes outside its own
//! tree, nor connect to abstract unix sockets made outside it.
//!
//! Every sandboxed command is contained: it runs as pid 1 of a PID
//! namespace of its own, below a waiter that std spawned (`contain.rs`),
//! so everything it starts (`setsid`, `env -i`, double forks) dies with
//! it, with no environment marker involved.
//!
//! How: the Landlock ruleset and the protected paths are planned before
//! the fork ([`rules`], `protect.rs`, `scan.rs`); in the child only
//! async-signal-safe steps remain ([`child`]): a user namespace owning
//! mount, PID and (network off) network namespaces, the read-only bind
//! mounts, the split into waiter and pid 1, then `landlock_restrict_self`.
//! Landlock alone cannot protect paths inside the root: its rules only add
//! rights down a hierarchy, so a root that may create files lets every
//! directory below it create them too.
//!
//! Honest when unavailable: [`Support`] asks the kernel for Landlock once
//! per process, and learns whether namespaces work from the first
//! sandboxed command, whose child enters them before it execs (a failure
//! there means the command never started: the spawn refuses it, or runs it
//! again with Landlock only, [`SpawnCommand::spawn`]); what the policy asks
//! and the system cannot enforce is named by [`Sandbox::status`], and
//! [`Sandbox::confine`] either refuses the command or runs it with what is
//! there and a warning, as [`WhenUnavailable`] says. `NANOHERMES_SANDBOX_SIMULATE` (`no-landlock`,
//! `abi=N`, `no-namespaces`, comma-separated) makes a process believe its
//! kernel lacks them, for tests.
//!
//! Known limits (also in the README):
//! - protected paths are found when a command starts: a `hooks.json`,
//!   `.mcp.json`, `.nanohermes/` or nested repository the command itself
//!   creates is writable by it until the next command starts (trust bound
//!   to content is what stops a new one from running unasked); one that is
//!   a symlink is not protected; the walk stops after 100,000 directories
//!   (the command's result then says so);
//! - a nested repository's own `core.hooksPath` directory is not looked up
//!   (its `.git`, config included, is read-only);
//! - each directory on the way to a nested protected path is a mount point
//!   in the command's namespace: a `rename(2)` across it fails with `EXDEV`
//!   (`mv` copies instead);
//! - `core.hooksPath` is read with `git config`, outside the sandbox (it
//!   reads config files and runs nothing);
//! - in the commit's sandbox a `commondir`, `gitdir` or `config.worktree`
//!   that did not exist can be created (git creates files beside them);
//! - pathname unix sockets (an ssh agent, the docker socket) are reachable
//!   with the network off;
//! - the command sees its own PID namespace (`$$` is 1), and as pid 1 it
//!   ignores a signal it has no handler for when another process of its
//!   namespace sends it (`kill $$` from inside does nothing); a SIGTERM to
//!   its group from outside ends it and everything it started at once;
//! - `danger-full-access` confines and contains nothing: a process started
//!   with `setsid env -i` there can outlive the agent.
//! - the network allowlist judges the name a client asks for (the
//!   `CONNECT` line, the URL of a plain request) and the addresses it
//!   resolves to, on any port; inside a TLS tunnel it sees nothing, so a
//!   shared front end (a CDN) that routes by the encrypted `Host` can be
//!   asked for a site it also serves; a tool that ignores the proxy
//!   variables has no network at all;
//! - the proxy's socket is a pathname Unix socket in a private directory
//!   of the agent's user: a process of that user that finds it while the
//!   command runs (another command, with the network off) can use it, to
//!   the same listed domains.

pub(super) mod child;
mod contain;
mod denial;
mod protect;
mod relay;
mod rules;
mod scan;
mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::ValueEnum;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Directory names that decide what runs later (git's, NanoHermes's own):
/// read-only to commands at any depth, and written by the file tools only
/// with the user's yes to that call (`nanohermes-files`'s `protected.rs`
/// checks that it covers every name here).
pub const PROTECTED_DIRS: [&str; 2] = [".git", ".nanohermes"];

/// File names that decide what runs later (MCP server lists, hook lists),
/// protected as [`PROTECTED_DIRS`] are.
pub const PROTECTED_FILES: [&str; 2] = [".mcp.json", "hooks.json"];
pub use support::{SIMULATE_VAR, Support};

use super::SpawnCommand;
pub use crate::net::Allowlist;
use crate::net::{DomainList, Proxy, Resolve, SystemResolver};

/// How far a sandboxed command may write.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Read everywhere; write only in the workspace (never a git directory,
    /// `core.hooksPath`, `.nanohermes`, `hooks.json`, `.mcp.json`), the temp
    /// directory and `sandbox_writable`.
    #[default]
    WorkspaceWrite,
    /// Read everywhere; write only a private temp directory.
    ReadOnly,
    /// No sandbox: commands can write anywhere you can.
    DangerFullAccess,
}

impl SandboxMode {
    /// The name written in config files and flags.
    pub fn name(self) -> &'static str {
        match self {
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::DangerFullAccess => "danger-full-access",
        }
    }
}

/// What happens to a sandboxed command when the kernel cannot enforce
/// everything its policy asks.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum WhenUnavailable {
    /// Refuse the command, saying why and what to change.
    #[default]
    Refuse,
    /// Run it with what the kernel can enforce; its result starts with a warning.
    Warn,
}

impl WhenUnavailable {
    /// The name written in config files and flags.
    pub fn name(self) -> &'static str {
        match self {
            WhenUnavailable::Refuse => "refuse",
            WhenUnavailable::Warn => "warn",
        }
    }
}

/// The sandbox a server applies to every command it starts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SandboxPolicy {
    /// How far commands may write.
    pub mode: SandboxMode,
    /// Commands have the network (off: a network namespace of their own,
    /// no TCP, UDP, DNS or raw socket reaches anything).
    pub network: bool,
    /// With `network` off: reach these domains through the sandbox's
    /// proxy, and nothing else (`sandbox_network = "allowlist"`).
    pub allowlist: Option<Allowlist>,
    /// Extra paths commands may write (workspace-write only), absolute.
    pub writable: Vec<PathBuf>,
    /// Refuse or warn when the kernel cannot enforce the policy.
    pub when_unavailable: WhenUnavailable,
    /// The temp directory commands may write in workspace-write; `None`
    /// is the system's ([`std::env::temp_dir`]). Tests point it at a
    /// directory of their own: a checkout (and so every test directory)
    /// may itself lie under `/tmp`.
    pub temp_dir: Option<PathBuf>,
}

impl SandboxPolicy {
    /// No sandbox at all (`danger-full-access`).
    pub fn full_access() -> SandboxPolicy {
        SandboxPolicy {
            mode: SandboxMode::DangerFullAccess,
            network: true,
            ..SandboxPolicy::default()
        }
    }

    /// The same policy narrowed to `read-only` (Plan and Debug modes):
    /// writes only to a private temp directory, whatever the mode was.
    pub fn narrowed_to_read_only(&self) -> SandboxPolicy {
        SandboxPolicy {
            mode: SandboxMode::ReadOnly,
            writable: Vec::new(),
            ..self.clone()
        }
    }

    /// "workspace-write, network off", as the user configured it.
    pub fn describe(&self) -> String {
        match self.mode {
            SandboxMode::DangerFullAccess => "danger-full-access (no sandbox)".to_owned(),
            mode => format!("{}, network {}", mode.name(), self.network_mode()),
        }
    }

    /// The network mode in words: `on`, `off`, or `allowlist (N domains)`
    /// with `private addresses allowed` when they are.
    pub fn network_mode(&self) -> String {
        match (&self.allowlist, self.network) {
            (_, true) => "on".to_owned(),
            (None, false) => "off".to_owned(),
            (Some(list), false) => {
                let n = list.domains.entries().len();
                format!(
                    "allowlist ({n} domain{}{})",
                    if n == 1 { "" } else { "s" },
                    if list.allow_private_network {
                        ", private addresses allowed"
                    } else {
                        ""
                    }
                )
            }
        }
    }

    /// The allowlist commands reach the network through, when they do.
    pub fn proxied(&self) -> Option<&Allowlist> {
        self.allowlist.as_ref().filter(|_| !self.network)
    }

    /// The flags that give a built-in server run as a child process
    /// (`--sandbox …`) this policy; see [`SandboxArgs`].
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec!["--sandbox".to_owned(), self.mode.name().to_owned()];
        if self.network {
            args.push("--sandbox-network".to_owned());
        }
        if let Some(list) = self.proxied() {
            args.push("--sandbox-allowlist".to_owned());
            for domain in list.domains.entries() {
                args.push("--sandbox-allowed-domain".to_owned());
                args.push(domain);
            }
            if list.allow_private_network {
                args.push("--sandbox-allow-private-network".to_owned());
            }
        }
        for path in &self.writable {
            args.push("--sandbox-writable".to_owned());
            args.push(path.display().to_string());
        }
        args.push("--sandbox-unavailable".to_owned());
        args.push(self.when_unavailable.name().to_owned());
        args
    }
}

/// The sandbox flags of the shell and git servers (and `nanohermes
/// builtin shell|git`). Flatten into a server's `clap::Parser`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SandboxArgs {
    /// How far commands may write: workspace-write, read-only or danger-full-access.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = SandboxMode::WorkspaceWrite)]
    pub sandbox: SandboxMode,
    /// Give commands the network (off: no TCP, UDP or DNS at all).
    #[arg(long)]
    pub sandbox_network: bool,
    /// Give commands only the domains of --sandbox-allowed-domain, through
    /// a local proxy (no other TCP, UDP or DNS).
    #[arg(long, conflicts_with = "sandbox_network")]
    pub sandbox_allowlist: bool,
    /// A domain commands may reach with --sandbox-allowlist (`crates.io`, or
    /// `*.crates.io` for the names below it). Repeatable.
    #[arg(long, value_name = "DOMAIN", requires = "sandbox_allowlist", value_parser = domain_entry)]
    pub sandbox_allowed_domain: Vec<String>,
    /// With --sandbox-allowlist: let listed names resolve to loopback,
    /// private and link-local addresses.
    #[arg(long, requires = "sandbox_allowlist")]
    pub sandbox_allow_private_network: bool,
    /// One more path commands may write (workspace-write). Repeatable.
    #[arg(long, value_name = "PATH")]
    pub sandbox_writable: Vec<PathBuf>,
    /// When the kernel cannot enforce the sandbox: refuse commands, or warn and run them.
    #[arg(long, value_enum, value_name = "WHAT", default_value_t = WhenUnavailable::Refuse)]
    pub sandbox_unavailable: WhenUnavailable,
}

impl SandboxArgs {
    /// The policy these flags describe.
    pub fn policy(&self) -> SandboxPolicy {
        let allowlist = self.sandbox_allowlist.then(|| Allowlist {
            // Each entry was checked by clap ([`domain_entry`]); were one
            // bad, the list would allow nothing rather than more.
            domains: DomainList::parse(&self.sandbox_allowed_domain).unwrap_or_default(),
            allow_private_network: self.sandbox_allow_private_network,
        });
        SandboxPolicy {
            mode: self.sandbox,
            network: self.sandbox_network,
            allowlist,
            writable: self.sandbox_writable.clone(),
            when_unavailable: self.sandbox_unavailable,
            temp_dir: None,
        }
    }
}

/// Checks one `--sandbox-allowed-domain` entry.
fn domain_entry(text: &str) -> Result<String, String> {
    DomainList::parse(&[text]).map(|_| text.to_owned())
}

/// A policy bound to a workspace root and to what this system supports:
/// the one object every spawner of commands holds. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Sandbox {
    policy: SandboxPolicy,
    root: PathBuf,
    /// `None`: this system's, as known at each use ([`Support::known`]).
    support: Option<Support>,
    /// read-only's private temp directory, removed with the last clone.
    private_tmp: Option<Arc<tempfile::TempDir>>,
    /// The repository's directories outside `root/.git`: protected like
    /// it (writable only to a commit's sandbox, and then in part).
    git_dirs: Vec<PathBuf>,
    /// What commands may do to the git directories ([`Sandbox::for_git_commit`]).
    git_access: protect::GitAccess,
    /// The last walk for protected paths, shared by clones.
    walked: Arc<std::sync::Mutex<scan::Cache>>,
    /// How the allowlist's proxy resolves names.
    resolver: Arc<dyn Resolve>,
}

/// What a command runs under, once [`Sandbox::confine`] has set it up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confined {
    /// Everything the policy asks is enforced (or the policy asks nothing).
    Fully,
    /// Only part of it, or nothing (`sandbox_unavailable = "warn"`): the
    /// warning belongs at the head of the command's result.
    Partly(String),
}

impl Sandbox {
    /// `policy` for commands in `root`, on this system ([`Support::known`]).
    pub fn new(policy: SandboxPolicy, root: &Path) -> Sandbox {
        Sandbox::build(policy, root, None)
    }

    /// `policy` for commands in `root` as if the system supported
    /// `support` (tests simulate an old kernel with it).
    pub fn with_support(policy: SandboxPolicy, root: &Path, support: Support) -> Sandbox {
        Sandbox::build(policy, root, Some(support))
    }

    fn build(policy: SandboxPolicy, root: &Path, support: Option<Support>) -> Sandbox {
        let private_tmp = (policy.mode == SandboxMode::ReadOnly)
            .then(|| {
                tempfile::Builder::new()
                    .prefix("nanohermes-ro-")
                    .tempdir()
                    .map_err(|e| {
                        tracing::warn!("cannot make the read-only sandbox's temp dir: {e}")
                    })
                    .ok()
            })
            .flatten()
            .map(Arc::new);
        Sandbox {
            policy,
            root: root.to_path_buf(),
            support,
            private_tmp,
            git_dirs: Vec::new(),
            git_access: protect::GitAccess::ReadOnly,
            walked: Arc::default(),
            resolver: Arc::new(SystemResolver),
        }
    }

    /// The same sandbox whose allowlist proxy resolves names with
    /// `resolver` (tests and the benchmark map their names to loopback;
    /// every configured sandbox uses the system's).
    pub fn with_resolver(&self, resolver: Arc<dyn Resolve>) -> Sandbox {
        Sandbox {
            resolver,
            ..self.clone()
        }
    }

    /// The same sandbox for a repository whose git directories are `dirs`
    /// (absolute; `git rev-parse --absolute-git-dir --git-common-dir`):
    /// in workspace-write they are protected like `root/.git` (read-only,
    /// or in a [`for_git_commit`](Self::for_git_commit) sandbox writable as
    /// a commit needs), so a root below the top of its repository, or a
    /// worktree, can still commit.
    pub fn with_git_dirs(&self, dirs: Vec<PathBuf>) -> Sandbox {
        Sandbox {
            git_dirs: dirs,
            ..self.clone()
        }
    }

    /// The sandbox of one `git commit` (and its staging and hooks): the
    /// same policy, but the git directories (`root/.git` and those of
    /// [`with_git_dirs`](Self::with_git_dirs)) are writable as a commit
    /// needs (objects, refs, logs, index, `HEAD`), while their hooks,
    /// config, `commondir`, `gitdir`, `config.worktree`, `info/` and
    /// `modules/`, the `core.hooksPath` directories and everything else
    /// protected stay read-only. Only the git server's commit uses it; a
    /// shell command never runs in it.
    pub fn for_git_commit(&self) -> Sandbox {
        Sandbox {
            git_access: protect::GitAccess::Commit,
            ..self.clone()
        }
    }

    /// The sandbox for git's read-only tools (status, diff, log, show):
    /// `read-only` (nothing writable but a private temp directory) with the
    /// network off, on the same system support. It confines even when this
    /// sandbox is `danger-full-access`: git reads a repository a command or
    /// a clone may have planted, and must not run what it plants outside.
    /// When the kernel cannot enforce it, the user's `sandbox_unavailable`
    /// applies, except that a `danger-full-access` user, who asked for no
    /// sandbox at all, gets `warn` (git runs with a warning) rather than a
    /// refusal. Each call makes a new private temp directory: make it once
    /// and keep it.
    pub fn reader(&self) -> Sandbox {
        let when_unavailable = match self.policy.mode {
            SandboxMode::DangerFullAccess => WhenUnavailable::Warn,
            _ => self.policy.when_unavailable,
        };
        let policy = SandboxPolicy {
            mode: SandboxMode::ReadOnly,
            network: false,
            allowlist: None,
            writable: Vec::new(),
            when_unavailable,
            temp_dir: self.policy.temp_dir.clone(),
        };
        let mut reader = Sandbox::build(policy, &self.root, self.support.clone());
        reader.git_dirs = self.git_dirs.clone();
        reader
    }

    /// No sandbox (`danger-full-access`), for callers that confine nothing.
    pub fn full_access(root: &Path) -> Sandbox {
        Sandbox::with_support(SandboxPolicy::full_access(), root, Support::none())
    }

    /// What the system supports: the one given, else what is known now
    /// (namespaces assumed until a command has tried them).
    fn support(&self) -> Support {
        self.support.clone().unwrap_or_else(Support::known)
    }

    /// The policy.
    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    /// What the policy asks that this system cannot enforce, one phrase
    /// each; empty when everything is enforced.
    pub fn missing(&self) -> Vec<String> {
        if self.policy.mode == SandboxMode::DangerFullAccess {
            return Vec::new();
        }
        let mut missing = Vec::new();
        let support = self.support();
        let abi = support.landlock_abi;
        if abi < rules::FS_ABI {
            missing.push(match abi {
                0 => "filesystem confinement (this kernel has no Landlock; Linux 6.2 or later with Landlock enabled is needed)".to_owned(),
                n => format!("filesystem confinement (this kernel has Landlock ABI {n}; ABI {} from Linux 6.2 is needed)", rules::FS_ABI),
            });
        }
        if let Err(why) = &support.namespaces {
            if self.policy.proxied().is_some() {
                missing.push(format!(
                    "the network allowlist (commands reach the proxy only from a network \
                     namespace of their own: {why}; without it they run with {})",
                    if abi >= rules::NET_ABI {
                        "no TCP (Landlock), but UDP and DNS are not refused"
                    } else {
                        "the whole network: this kernel's Landlock cannot refuse TCP either"
                    }
                ));
            } else if !self.policy.network {
                missing.push(format!(
                    "network off for every protocol (a network namespace: {why}; {})",
                    if abi >= rules::NET_ABI {
                        "only TCP is refused, by Landlock: UDP, DNS and raw sockets are not"
                    } else {
                        "nor does this kernel's Landlock refuse TCP (ABI 4 from Linux 6.7)"
                    }
                ));
            }
            if self.policy.mode == SandboxMode::WorkspaceWrite {
                missing.push(format!(
                    "write protection of the git directory, .nanohermes, hooks.json and .mcp.json ({why})"
                ));
            }
            missing.push(format!(
                "containment of the command's processes in a PID namespace ({why})"
            ));
        }
        if self.policy.mode == SandboxMode::ReadOnly && self.private_tmp.is_none() {
            missing.push(
                "the read-only sandbox's private temp directory (it could not be made)".to_owned(),
            );
        }
        missing
    }

    /// One line for the user and the model: the policy and whether it is
    /// enforced, e.g. `workspace-write, network off: enforced (Landlock ABI 6)`.
    pub fn status(&self) -> String {
        let described = self.policy.describe();
        if self.policy.mode == SandboxMode::DangerFullAccess {
            return described;
        }
        let missing = self.missing();
        if missing.is_empty() {
            let abi = self.support().landlock_abi;
            return format!(
                "{described}: enforced by the kernel (Landlock ABI {abi}{})",
                if abi >= rules::SCOPE_ABI {
                    ", signals and abstract sockets scoped"
                } else {
                    ""
                }
            );
        }
        let action = match self.policy.when_unavailable {
            WhenUnavailable::Refuse => "commands are refused (sandbox_unavailable = \"refuse\")",
            WhenUnavailable::Warn => {
                "commands run without it, with a warning (sandbox_unavailable = \"warn\")"
            }
        };
        format!(
            "{described}: NOT enforced: {}; {action}",
            missing.join("; ")
        )
    }

    /// The warning to show once at start, when something is known not to
    /// be enforced (the namespaces are known only once a command has
    /// tried them: a failure is said in that command's result).
    pub fn startup_warning(&self) -> Option<String> {
        (!self.missing().is_empty()).then(|| format!("sandbox: {}", self.status()))
    }

    /// Sets `command` up to run under the policy (call it after its
    /// `current_dir`). `Err` is the refusal for the model when the policy
    /// cannot be enforced and `sandbox_unavailable = "refuse"`.
    ///
    /// Before any command has tried the namespaces, this one does: when
    /// its child cannot enter them, [`SpawnCommand::spawn`] learns so and
    /// refuses, or spawns it again with Landlock only and keeps the
    /// warning for [`SpawnCommand::sandbox_warning`]. Callers read that
    /// after the spawn as they read [`Confined::Partly`] before it.
    pub fn confine(&self, command: &mut SpawnCommand) -> Result<Confined, String> {
        if self.policy.mode == SandboxMode::DangerFullAccess {
            return Ok(Confined::Fully);
        }
        let support = self.support();
        let mut missing = self.missing();
        if !missing.is_empty() && self.policy.when_unavailable == WhenUnavailable::Refuse {
            return Err(self.refusal(&missing));
        }
        // Fail closed: a command whose proxy cannot run is refused, or
        // (warn) runs with no network at all, never with more.
        let relay = match self.policy.proxied() {
            Some(allowlist) if support.namespaces.is_ok() => match self.leash(command, allowlist) {
                Ok(relay) => Some(relay),
                Err(why) if self.policy.when_unavailable == WhenUnavailable::Refuse => {
                    return Err(self.refusal(&[why]));
                }
                Err(why) => {
                    missing.push(why);
                    None
                }
            },
            _ => None,
        };
        let cwd = command
            .as_std()
            .get_current_dir()
            .map_or_else(|| self.root.clone(), Path::to_path_buf);
        let writable = self.writable_paths();
        let abi = support.landlock_abi;
        let relay_port = relay.as_ref().map(|_| crate::net::proxy::PORT);
        let network = self.policy.network || abi < rules::NET_ABI;
        // This command finds out whether namespaces work (only this system's
        // support is learned; a given one is what a test simulates). Only
        // such a first try can be spawned again without them, so only it
        // needs the ruleset without the relay's port.
        let first_try =
            support.namespaces.is_ok() && self.support.is_none() && !support::namespaces_learned();
        let (ruleset, offline) = if abi >= rules::FS_ABI {
            (
                Some(rules::ruleset(abi, &writable, network, relay_port)?),
                match relay_port {
                    Some(_) if first_try => Some(rules::ruleset(abi, &writable, network, None)?),
                    _ => None,
                },
            )
        } else {
            (None, None)
        };
        let mut truncated = false;
        let protect = support.namespaces.is_ok().then(|| {
            let mut protect = protect::isolate(&cwd, self.policy.network);
            if self.policy.mode == SandboxMode::WorkspaceWrite {
                truncated =
                    protect.workspace(&self.root, &self.git_dirs, self.git_access, &self.walked);
            }
            protect
        });
        if let Some(tmp) = &self.private_tmp {
            command.env("TMPDIR", tmp.path());
        }
        let skip_protect = Arc::new(AtomicBool::new(false));
        command.first_try = first_try.then(|| FirstTry {
            skip_protect: skip_protect.clone(),
            sandbox: self.clone(),
        });
        let mut steps = child::ChildSteps::new(protect, ruleset, skip_protect);
        if let Some(relay) = relay {
            steps = steps.with_relay(relay, offline);
        }
        child::install(command, steps);
        if missing.is_empty() && !truncated {
            Ok(Confined::Fully)
        } else if missing.is_empty() {
            Ok(Confined::Partly(format!(
                "WARNING: the workspace has more than {} directories; nested repositories, \
                 .nanohermes, hooks.json and .mcp.json beyond the first {} were not looked for, \
                 so the command could write those",
                scan::MAX_DIRS,
                scan::MAX_DIRS
            )))
        } else {
            Ok(Confined::Partly(self.partial_warning(&missing)))
        }
    }

    /// Starts the command's proxy and sets its variables; returns the
    /// relay for its child. `Err` says why the proxy cannot run.
    fn leash(
        &self,
        command: &mut SpawnCommand,
        allowlist: &Allowlist,
    ) -> Result<relay::Relay, String> {
        let why = |e: &dyn std::fmt::Display| {
            format!(
                "the network allowlist (its proxy cannot be started: {e}; without it commands have no network)"
            )
        };
        let proxy = Proxy::start(allowlist, self.resolver.clone()).map_err(|e| why(&e))?;
        let relay = relay::Relay::new(proxy.socket())
            .ok_or_else(|| why(&format!("{} is too long", proxy.socket().display())))?;
        proxy_env(command);
        command.proxy = Some(proxy);
        Ok(relay)
    }

    /// The refusal of a command whose policy misses `missing`.
    fn refusal(&self, missing: &[String]) -> String {
        format!(
            "the command was not run: the sandbox ({}) cannot be enforced on this system: {}. \
             Ask the user to set sandbox_unavailable = \"warn\" (run without it, with a warning) \
             or sandbox = \"danger-full-access\" in ~/.nanohermes/config.toml",
            self.policy.describe(),
            missing.join("; ")
        )
    }

    /// The warning of a command run without `missing` (`warn`).
    fn partial_warning(&self, missing: &[String]) -> String {
        format!(
            "WARNING: the sandbox ({}) is not fully enforced on this system: {}; the command ran without it (sandbox_unavailable = \"warn\")",
            self.policy.describe(),
            missing.join("; ")
        )
    }

    /// A note for the model when a finished command's output looks like
    /// the sandbox refused it (a non-zero exit with "Permission denied",
    /// "Read-only file system", a failed connection while the network is
    /// off …): which mode it runs in and how the user can widen it.
    pub fn explain_failure(&self, exit_ok: bool, output: &str) -> Option<String> {
        if exit_ok || self.policy.mode == SandboxMode::DangerFullAccess {
            return None;
        }
        denial::note(&self.policy, output)
    }

    /// The note for a command's result when the network allowlist refused
    /// it `refused` hosts ([`super::ProcessTree::refused_domains`]):
    /// which, and that the user decides; `None` when there were none.
    pub fn refused_note(refused: &[String]) -> Option<String> {
        (!refused.is_empty()).then(|| {
            format!(
                "note: the sandbox's network allowlist refused this command's connections to: {}. \
                 Do not retry or work around it: if the task needs them, ask the user to add them \
                 to sandbox_allowed_domains in ~/.nanohermes/config.toml",
                refused.join(", ")
            )
        })
    }

    /// The writable hierarchies: by mode, then the devices every program
    /// writes to.
    fn writable_paths(&self) -> Vec<PathBuf> {
        let mut paths = Vec::new();
        match self.policy.mode {
            SandboxMode::WorkspaceWrite => {
                paths.push(self.root.clone());
                paths.extend(self.git_dirs.iter().cloned());
                paths.push(
                    self.policy
                        .temp_dir
                        .clone()
                        .unwrap_or_else(std::env::temp_dir),
                );
                paths.extend(self.policy.writable.iter().cloned());
                paths.push(PathBuf::from("/dev/shm"));
            }
            SandboxMode::ReadOnly => {
                paths.extend(self.private_tmp.iter().map(|t| t.path().to_path_buf()))
            }
            SandboxMode::DangerFullAccess => {}
        }
        paths.extend(rules::DEVICES.iter().map(PathBuf::from));
        paths
    }
}

/// Points every common client at the relay: the standard variables in
/// both cases, and cargo's, npm's, pip's and git's own. `NO_PROXY` names
/// only loopback (the relay itself): a host of the user's `NO_PROXY`
/// would otherwise be tried directly, and fail.
fn proxy_env(command: &mut SpawnCommand) {
    let url = format!("http://127.0.0.1:{}", crate::net::proxy::PORT);
    for name in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "CARGO_HTTP_PROXY",
        "npm_config_proxy",
        "npm_config_https_proxy",
        "PIP_PROXY",
    ] {
        command.env(name, &url);
    }
    for name in ["NO_PROXY", "no_proxy"] {
        command.env(name, "localhost,127.0.0.1,::1");
    }
    // git reads http.proxy from GIT_CONFIG_KEY_n/VALUE_n after the
    // user's own pairs.
    let pairs: usize = command
        .as_std()
        .get_envs()
        .find(|(k, _)| *k == "GIT_CONFIG_COUNT")
        .and_then(|(_, v)| v?.to_str()?.parse().ok())
        .unwrap_or(0);
    command.env("GIT_CONFIG_COUNT", (pairs + 1).to_string());
    command.env(format!("GIT_CONFIG_KEY_{pairs}"), "http.proxy");
    command.env(format!("GIT_CONFIG_VALUE_{pairs}"), &url);
}

/// A command confined before anyone knew whether namespaces work: its
/// spawn is the test ([`SpawnCommand::spawn`]).
#[derive(Debug)]
pub(crate) struct FirstTry {
    /// Turns the child's namespace step off for a spawn again.
    skip_protect: Arc<AtomicBool>,
    /// The sandbox that confined it, for the refusal or the warning.
    sandbox: Sandbox,
}

impl FirstTry {
    /// The spawn succeeded: namespaces work.
    pub(crate) fn succeeded(self) {
        support::learn_namespaces(Ok(()));
    }

    /// The child could not enter the namespaces (`why`), so the command
    /// never started. Keeps the "no", then: `Err`, the refusal (or, when a
    /// command has meanwhile entered them, the failure itself: nothing is
    /// run with less than was found to work); `Ok`, the warning for a
    /// spawn again with Landlock only (`sandbox_unavailable = "warn"`).
    pub(crate) fn failed(self, why: String) -> Result<String, String> {
        if support::learn_namespaces(Err(why.clone())).is_ok() {
            return Err(format!(
                "the command was not run: its sandbox failed: {why}"
            ));
        }
        let missing = self.sandbox.missing();
        match self.sandbox.policy.when_unavailable {
            WhenUnavailable::Refuse => Err(self.sandbox.refusal(&missing)),
            WhenUnavailable::Warn => {
                self.skip_protect.store(true, Ordering::Relaxed);
                Ok(self.sandbox.partial_warning(&missing))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        sandbox: SandboxArgs,
    }

    /// What a built-in run as a child process is given is what the agent
    /// holds, the allowlist included.
    #[test]
    fn policies_survive_the_flags_of_a_child_server() {
        let allowlist = Allowlist {
            domains: DomainList::parse(&["crates.io", "*.crates.io"]).unwrap(),
            allow_private_network: true,
        };
        for policy in [
            SandboxPolicy::default(),
            SandboxPolicy {
                network: true,
                ..SandboxPolicy::default()
            },
            SandboxPolicy {
                allowlist: Some(allowlist.clone()),
                writable: vec![PathBuf::from("/w")],
                when_unavailable: WhenUnavailable::Warn,
                ..SandboxPolicy::default()
            },
            SandboxPolicy {
                allowlist: Some(Allowlist {
                    allow_private_network: false,
                    ..allowlist
                }),
                mode: SandboxMode::ReadOnly,
                ..SandboxPolicy::default()
            },
        ] {
            let args = std::iter::once("x".to_owned()).chain(policy.to_args());
            let parsed = Flags::try_parse_from(args).unwrap().sandbox.policy();
            assert_eq!(parsed, policy);
        }
        assert!(
            Flags::try_parse_from([
                "x",
                "--sandbox-allowlist",
                "--sandbox-allowed-domain",
                "a/b"
            ])
            .is_err()
        );
        assert_eq!(
            SandboxPolicy {
                allowlist: Some(Allowlist {
                    domains: DomainList::parse(&["crates.io"]).unwrap(),
                    allow_private_network: false,
                }),
                ..SandboxPolicy::default()
            }
            .describe(),
            "workspace-write, network allowlist (1 domain)"
        );
    }
}
