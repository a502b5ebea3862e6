//! Running the `git` CLI: one place that builds every git command line, so
//! each one gets the same environment, the same confinement and its
//! failures the same wording.
//!
//! Every command runs with the workspace root as its working directory, with
//! prompts off (`GIT_TERMINAL_PROMPT=0`), no pager, no colour, the C locale
//! (stable text to parse) and the editor disabled. Variables that would point
//! git at another repository (`GIT_DIR`, `GIT_WORK_TREE`, ...) or add a
//! configuration layer (`GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_KEY_n`) are
//! removed, so the root alone decides which repository is used; this
//! runner's own overrides go through `GIT_CONFIG_COUNT` ([`harden`]).
//!
//! Git is started through the kit's one spawn policy (`mcp_tools::spawn`):
//! its own process group (a terminal's Ctrl-C does not stop a commit half
//! way), no secrets in its environment or its hooks' (`ScrubSecrets`), and
//! its whole process tree killed when the command ends or times out, so a
//! hook cannot leave a `setsid` or double-forked process behind.
//!
//! Every git process runs in the kit's sandbox:
//! - a commit and its staging (which run hooks and filters) in the
//!   shell's policy: a hook cannot write outside the workspace, plant
//!   another hook or rewrite `.git/config`. The repository's own
//!   directories are writable when they lie outside the root (a root below
//!   the top of its repository, a worktree), their hooks and config
//!   protected the same way;
//! - everything else (the read-only tools, and the `rev-parse` and
//!   `config` questions this runner asks) in the read-only sandbox
//!   ([`Sandbox::reader`]): no write anywhere but a private temp directory,
//!   no network.
//!
//! Before a tool's commands run, [`Git::prepare`] asks where the repository
//! is and refuses one whose work tree or git directory points out of the
//! root ([`layout`]); the read-only commands after it are pinned to the
//! repository checked (`GIT_DIR`, `GIT_WORK_TREE`). A [`Git::read_only`] runner also runs nothing the
//! repository configures (see [`harden`]): the repository's `.git/config`
//! is written by whoever wrote the repository. A commit keeps the
//! repository's configuration: its hooks and filters run, as the user
//! asked for them.
//!
//! [`harden`]: crate::harden
//! [`layout`]: crate::layout

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use std::sync::Arc;

use mcp_tools::Workspace;
use mcp_tools::spawn::{self, Confined, EnvPolicy, Sandbox, SandboxMode};
use tokio::sync::OnceCell;

use crate::harden;
use crate::layout::{self, Layout};

/// How long one git command may run before it is killed. Commits run hooks,
/// which may run a test suite, hence the generous bound.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(600);

/// How long the pipes are still read after git exited and its tree was
/// killed (only an unattributable escapee can hold them longer).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Appends everything `pipe` yields to `buf` until end of file.
async fn read_all<R: tokio::io::AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut Vec<u8>,
) -> std::io::Result<()> {
    use tokio::io::AsyncReadExt;
    match pipe {
        Some(pipe) => pipe.read_to_end(buf).await.map(|_| ()),
        None => Ok(()),
    }
}

/// Environment variables that redirect git away from the working directory.
const REDIRECTING_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
];

/// A git executable bound to a workspace root.
#[derive(Debug, Clone)]
pub struct Git {
    binary: PathBuf,
    root: PathBuf,
    read_only: bool,
    sandbox: Sandbox,
    /// The sandbox of every command but a commit's: [`Sandbox::reader`].
    reader: Sandbox,
    /// The sandbox with the repository's directories, found once.
    confined: Arc<OnceCell<Sandbox>>,
    /// What is asked of git once per server ([`Facts`]).
    facts: Arc<OnceCell<Facts>>,
    /// Set by [`Git::prepare`]: the checked layout and the overrides.
    prepared: Option<Arc<Prepared>>,
    /// Read the user's system and global configuration (the one question
    /// that needs them: [`Facts`]).
    user_scope: bool,
}

/// What does not change while the server runs: asked of git once.
#[derive(Debug, Default)]
struct Facts {
    /// This git reads `GIT_ATTR_SOURCE` (2.40 and later).
    attr_source: bool,
    /// The user's settings the read-only tools keep
    /// ([`harden::carried_user_config`]).
    carried: Vec<(String, String)>,
}

/// A runner checked for one tool call: see [`Git::prepare`].
#[derive(Debug)]
struct Prepared {
    layout: Layout,
    /// Configuration overrides after the common and read-only ones.
    config: Vec<(String, String)>,
    /// Environment variables set for every command of the call.
    env: Vec<(&'static str, OsString)>,
}

/// What a finished git command left behind.
#[derive(Debug)]
pub struct GitOutput {
    /// The exit code (`-1` when killed by a signal).
    pub code: i32,
    /// Standard output, decoded lossily.
    pub stdout: String,
    /// Standard error, decoded lossily.
    pub stderr: String,
}

/// Why a git command gave no usable answer. The `Display` text is written
/// for the model: it says what happened and what to do next.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The git executable could not be started.
    #[error(
        "git is not installed (cannot run `{0}`: not found); install git or start the server with --git PATH"
    )]
    NotInstalled(String),
    /// The workspace root is not inside a git repository.
    #[error(
        "not a git repository: {0} (and none of its parents is one); run `git init` there first"
    )]
    NotARepository(String),
    /// Git ran and failed.
    #[error("`git {command}` failed (exit code {code}): {output}")]
    Failed {
        /// The git subcommand and its arguments, as text.
        command: String,
        /// Its exit code.
        code: i32,
        /// What it wrote, stderr first.
        output: String,
    },
    /// Git ran longer than [`COMMAND_TIMEOUT`] and was killed.
    #[error("`git {0}` did not finish within {secs} s and was killed", secs = COMMAND_TIMEOUT.as_secs())]
    TimedOut(String),
    /// Starting git failed for another reason.
    #[error("cannot run `{0}`: {1}")]
    Spawn(String, String),
    /// The sandbox refused to start git (it cannot be enforced here).
    #[error("{0}")]
    Sandbox(String),
    /// The repository points out of the workspace ([`layout`]); the text
    /// says what points where.
    #[error("{0}")]
    Refused(String),
}

impl Git {
    /// A runner for `binary` (a name looked up on `PATH`, or a path) acting
    /// on the repository that contains `root`; commands that may run hooks
    /// run in `sandbox`.
    pub fn new(binary: PathBuf, root: &Path, sandbox: Sandbox) -> Self {
        Self {
            binary,
            root: root.to_path_buf(),
            read_only: false,
            reader: sandbox.reader(),
            sandbox,
            confined: Arc::new(OnceCell::new()),
            facts: Arc::new(OnceCell::new()),
            prepared: None,
            user_scope: false,
        }
    }

    /// The sandbox for commands that may run hooks, with the repository's
    /// git directories (asked of git once, read-only).
    async fn hook_sandbox(&self) -> Sandbox {
        if self.sandbox.policy().mode == SandboxMode::DangerFullAccess {
            return self.sandbox.clone();
        }
        self.confined
            .get_or_init(|| async {
                let asked = self
                    .read_only()
                    .exec(
                        vec![
                            "rev-parse".into(),
                            "--absolute-git-dir".into(),
                            "--git-common-dir".into(),
                        ],
                        Vec::new(),
                        None,
                    )
                    .await;
                let dirs = match asked {
                    Ok(out) if out.code == 0 => out
                        .stdout
                        .lines()
                        .filter(|l| !l.is_empty())
                        .filter_map(|l| self.root.join(l).canonicalize().ok())
                        .collect(),
                    _ => Vec::new(),
                };
                self.sandbox.with_git_dirs(dirs).for_git_commit()
            })
            .await
            .clone()
    }

    /// The same git for read-only commands: nothing the repository
    /// configures is run (see the module doc).
    pub fn read_only(&self) -> Self {
        Self {
            read_only: true,
            ..self.clone()
        }
    }

    /// The same git, checked for one tool call: the repository's layout is
    /// asked and refused when it points out of the root ([`layout`]); a
    /// read-only runner also lists every filter driver any configuration
    /// source defines, to empty them all ([`harden::filter_overrides`]).
    /// Asked again for every call: a command may have changed either since.
    pub async fn prepare(&self) -> Result<Git, GitError> {
        let asked = self.ask(layout::REV_PARSE_ARGS).await?;
        let layout = Layout::parse(&self.root, asked.code, &asked.stdout, &asked.stderr)?;
        let mut prepared = Prepared {
            layout,
            config: Vec::new(),
            env: Vec::new(),
        };
        if self.read_only {
            // From here on git uses the repository just checked, without
            // looking for one again: a `.git` made meanwhile is not used.
            prepared.env.extend([
                ("GIT_DIR", prepared.layout.git_dir.clone().into_os_string()),
                (
                    "GIT_WORK_TREE",
                    prepared.layout.top.clone().into_os_string(),
                ),
            ]);
            let facts = self.facts().await;
            let pinned = Self {
                prepared: Some(Arc::new(Prepared {
                    layout: prepared.layout.clone(),
                    config: Vec::new(),
                    env: prepared.env.clone(),
                })),
                ..self.clone()
            };
            let list = pinned
                .exec(
                    ["config", "-z", "--list"].map(OsString::from).to_vec(),
                    Vec::new(),
                    None,
                )
                .await?;
            if list.code != 0 {
                return Err(failed("config -z --list".to_owned(), &list));
            }
            prepared.config.extend(facts.carried.iter().cloned());
            prepared
                .config
                .extend(harden::filter_overrides(&list.stdout));
            if let Some(tree) = harden::empty_tree(&prepared.layout.object_format)
                && facts.attr_source
            {
                prepared.env.push(("GIT_ATTR_SOURCE", tree.into()));
            }
        }
        Ok(Self {
            prepared: Some(Arc::new(prepared)),
            ..self.clone()
        })
    }

    /// The layout [`prepare`](Self::prepare) found (`None` before it).
    pub fn layout(&self) -> Option<&Layout> {
        self.prepared.as_deref().map(|p| &p.layout)
    }

    /// Runs one of this runner's own questions (`rev-parse`, `config`) in
    /// the read-only sandbox with the read-only environment.
    async fn ask(&self, args: &[&str]) -> Result<GitOutput, GitError> {
        let asker = Self {
            read_only: true,
            prepared: None,
            ..self.clone()
        };
        let args = args.iter().map(OsString::from).collect();
        asker.exec(args, Vec::new(), None).await
    }

    /// [`Facts`], asked the first time.
    async fn facts(&self) -> &Facts {
        self.facts
            .get_or_init(|| async {
                let version = self.ask(&["version"]).await;
                let attr_source = version
                    .as_ref()
                    .is_ok_and(|v| v.code == 0 && harden::reads_attr_source(&v.stdout));
                let user = Self {
                    user_scope: true,
                    ..self.clone()
                };
                let carried = user
                    .ask(&[
                        "config",
                        "--show-scope",
                        "-z",
                        "--get-regexp",
                        harden::CARRIED_USER_CONFIG,
                    ])
                    .await
                    .map(|out| harden::carried_user_config(&out.stdout))
                    .unwrap_or_default();
                Facts {
                    attr_source,
                    carried,
                }
            })
            .await
    }

    /// Runs `git ARGS` and returns its output whatever its exit code, except
    /// for the failures every caller treats alike: git missing, no
    /// repository, a repository refused by [`prepare`](Self::prepare)
    /// (which runs first when this runner is not prepared yet).
    pub async fn run<I, S>(&self, args: I) -> Result<GitOutput, GitError>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        if self.prepared.is_none() {
            return Box::pin(self.prepare().await?.run(args)).await;
        }
        let mut args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        if self.read_only {
            let sub = args.first().and_then(|a| a.to_str()).unwrap_or("");
            let mut options: Vec<OsString> = Vec::new();
            if sub == "diff" || sub == "log" {
                options.extend(["--no-ext-diff".into(), "--no-textconv".into()]);
            }
            if sub == "diff" || sub == "status" {
                options.push("--ignore-submodules=all".into());
            }
            args.splice(1..1, options);
        }
        let sandbox = if self.read_only {
            None
        } else {
            Some(self.hook_sandbox().await)
        };
        self.exec(args, Vec::new(), sandbox).await
    }

    /// Runs git with `global` options and `args`, in `sandbox` (a commit's),
    /// or when `None` in the read-only [`Sandbox::reader`].
    async fn exec(
        &self,
        args: Vec<OsString>,
        global: Vec<OsString>,
        sandbox: Option<Sandbox>,
    ) -> Result<GitOutput, GitError> {
        let shown = shown_command(&args);
        let mut command = spawn::command(&self.binary, &EnvPolicy::ScrubSecrets);
        command
            .current_dir(&self.root)
            .arg("--no-pager")
            .args(&global)
            .args(&args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_PAGER", "cat")
            .env("PAGER", "cat")
            .env("GIT_EDITOR", ":")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("LC_ALL", "C")
            .env("LANGUAGE", "C")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        self.harden(&mut command);
        let reader = sandbox.is_none();
        let sandbox = sandbox.unwrap_or_else(|| self.reader.clone());
        let mut warning = None;
        match sandbox.confine(&mut command) {
            Ok(Confined::Fully) => {}
            // The user chose no sandbox: what the kernel lacks is no news.
            Ok(Confined::Partly(_))
                if reader && self.sandbox.policy().mode == SandboxMode::DangerFullAccess => {}
            Ok(Confined::Partly(w)) => warning = Some(w),
            Err(refusal) => return Err(GitError::Sandbox(refusal)),
        }
        // The tree is killed when this function returns, however it does:
        // nothing git or a hook started outlives the command.
        let (mut child, tree) = command.spawn().map_err(|e| {
            let binary = self.binary.display().to_string();
            if e.kind() == std::io::ErrorKind::NotFound {
                GitError::NotInstalled(binary)
            } else {
                GitError::Spawn(binary, e.to_string())
            }
        })?;
        // The spawn itself may have found the namespaces missing.
        if let Some(w) = command.sandbox_warning()
            && !(reader && self.sandbox.policy().mode == SandboxMode::DangerFullAccess)
        {
            warning = Some(w.to_owned());
        }
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let (mut out_pipe, mut err_pipe) = (child.stdout.take(), child.stderr.take());
        let status = tokio::time::timeout(COMMAND_TIMEOUT, async {
            // Read while git runs (a full pipe would stall it); once git has
            // exited, its tree is killed, so a process a hook left holding
            // the pipes cannot keep the read open.
            let read_both = async {
                let (a, b) = tokio::join!(
                    read_all(&mut out_pipe, &mut stdout),
                    read_all(&mut err_pipe, &mut stderr)
                );
                a.and(b)
            };
            let mut read_both = std::pin::pin!(read_both);
            tokio::select! {
                read = &mut read_both => { read?; child.wait().await }
                status = child.wait() => {
                    tree.kill();
                    let _ = tokio::time::timeout(DRAIN_GRACE, read_both).await;
                    status
                }
            }
        })
        .await
        .map_err(|_| GitError::TimedOut(shown.clone()))?
        .map_err(|e| GitError::Spawn(self.binary.display().to_string(), e.to_string()))?;
        drop(tree);
        let mut out = GitOutput {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        };
        // The reader's denials are not the user's to widen: no note.
        let said = format!("{}{}", out.stderr, out.stdout);
        if !reader && let Some(note) = sandbox.explain_failure(out.code == 0, &said) {
            out.stderr.push_str(&format!("\n{note}"));
        }
        if let Some(warning) = warning {
            out.stderr = format!("{warning}\n{}", out.stderr);
        }
        if out.code != 0
            && out
                .stderr
                .to_ascii_lowercase()
                .contains("not a git repository")
        {
            return Err(GitError::NotARepository(self.root.display().to_string()));
        }
        Ok(out)
    }

    /// The environment of [`harden`] for this runner: inherited
    /// configuration layers and redirections removed, the overrides set
    /// through `GIT_CONFIG_COUNT`, and for a read-only runner everything
    /// that would start a program or reach the network switched off.
    fn harden(&self, command: &mut spawn::SpawnCommand) {
        for name in REDIRECTING_ENV {
            command.env_remove(name);
        }
        for (name, _) in std::env::vars_os() {
            if harden::is_inherited_config_var(&name.to_string_lossy()) {
                command.env_remove(name);
            }
        }
        let mut config: Vec<(String, String)> = harden::COMMON_CONFIG
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        if self.read_only {
            for name in harden::READ_ONLY_REMOVED_ENV {
                command.env_remove(name);
            }
            if !self.user_scope {
                command.env("GIT_CONFIG_NOSYSTEM", "1");
                command.env("GIT_CONFIG_GLOBAL", "/dev/null");
            }
            for (name, value) in harden::read_only_env() {
                command.env(name, value);
            }
            config.extend(
                harden::READ_ONLY_CONFIG
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
            );
        }
        if let Some(prepared) = &self.prepared {
            config.extend(prepared.config.iter().cloned());
            for (name, value) in &prepared.env {
                command.env(name, value);
            }
        }
        command.envs(harden::config_env(&config));
    }

    /// Runs `git ARGS` and returns its stdout, or [`GitError::Failed`] when
    /// it exits non-zero.
    pub async fn run_ok<I, S>(&self, args: I) -> Result<String, GitError>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        let shown = shown_command(&args);
        let out = self.run(args).await?;
        if out.code == 0 {
            Ok(out.stdout)
        } else {
            Err(failed(shown, &out))
        }
    }
}

/// The [`GitError::Failed`] for `out`, with stderr (then stdout) trimmed.
pub fn failed(command: String, out: &GitOutput) -> GitError {
    let mut output = out.stderr.trim().to_string();
    let stdout = out.stdout.trim();
    if !stdout.is_empty() {
        if !output.is_empty() {
            output.push('\n');
        }
        output.push_str(stdout);
    }
    if output.is_empty() {
        output = "(no output)".to_string();
    }
    GitError::Failed {
        command,
        code: out.code,
        output,
    }
}

/// Turns a model-given path into a literal git pathspec relative to the
/// root, refusing paths outside the workspace. The `:(literal)` magic keeps
/// `*`, `?` and a leading `:` from being read as patterns or magic, without
/// setting `GIT_LITERAL_PATHSPECS` (which hooks would inherit).
pub fn pathspec(workspace: &Workspace, path: &str) -> Result<String, String> {
    let resolved = workspace.resolve(path).map_err(|e| e.to_string())?;
    Ok(format!(":(literal){}", workspace.display(&resolved)))
}

fn shown_command(args: &[OsString]) -> String {
    args.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}
