//! Running the `git` CLI: one place that builds every git command line, so
//! each one gets the same environment and its failures the same wording.
//!
//! Every command runs with the workspace root as its working directory, with
//! prompts off (`GIT_TERMINAL_PROMPT=0`), no pager, no colour, the C locale
//! (stable text to parse) and the editor disabled. Variables that would point
//! git at another repository (`GIT_DIR`, `GIT_WORK_TREE`, ...) are removed, so
//! the root alone decides which repository is used.
//!
//! Git is started through the kit's one spawn policy (`mcp_tools::spawn`):
//! its own process group (a terminal's Ctrl-C does not stop a commit half
//! way), no secrets in its environment or its hooks' (`ScrubSecrets`), and
//! its whole process tree killed when the command ends or times out, so a
//! hook cannot leave a `setsid` or double-forked process behind.
//!
//! Every other command (a commit and its staging, which run hooks and
//! filters) runs in the kit's sandbox, the same policy as the shell's
//! commands: a hook cannot write outside the workspace, plant another
//! hook or rewrite `.git/config`. The repository's own directories are
//! writable when they lie outside the root (a root below the top of its
//! repository, a worktree), their hooks and config protected the same way.
//!
//! A [`Git::read_only`] runner is for the read-only tools: the repository's
//! own `.git/config` is written by whoever wrote the repository, so every
//! setting that makes `status`, `diff` or `log` start a program is switched
//! off for them: `core.fsmonitor` (run by every index refresh), filter
//! drivers (`filter.NAME.clean`/`smudge`/`process`, run when a stat-dirty
//! file is hashed; each defined driver is emptied), external diff and
//! textconv drivers (`--no-ext-diff`, `--no-textconv`, `GIT_EXTERNAL_DIFF`
//! removed), hooks (`core.hooksPath=/dev/null`; `post-index-change` could run
//! on an index write), `log.showSignature` (runs gpg) and the pager
//! (`--no-pager`). A commit keeps the repository's configuration: its hooks
//! and filters run, as the user asked for them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use std::sync::Arc;

use mcp_tools::Workspace;
use mcp_tools::spawn::{self, Confined, EnvPolicy, Sandbox, SandboxMode};
use tokio::sync::OnceCell;

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

/// Settings that make read-only commands start programs, switched off.
const READ_ONLY_CONFIG: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "log.showSignature=false",
    "diff.external=",
];

/// A git executable bound to a workspace root.
#[derive(Debug, Clone)]
pub struct Git {
    binary: PathBuf,
    root: PathBuf,
    read_only: bool,
    sandbox: Sandbox,
    /// The sandbox with the repository's directories, found once.
    confined: Arc<OnceCell<Sandbox>>,
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
            sandbox,
            confined: Arc::new(OnceCell::new()),
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

    /// `-c` options emptying every filter driver the configuration defines:
    /// `git config` only reads files, it runs nothing.
    async fn disabled_filters(&self) -> Result<Vec<OsString>, GitError> {
        let args = [
            "config",
            "--name-only",
            "--get-regexp",
            r"^filter\..*\.(clean|smudge|process)$",
        ];
        let out = self
            .exec(args.iter().map(OsString::from).collect(), Vec::new(), None)
            .await?;
        let mut options = Vec::new();
        for name in out.stdout.lines().filter(|l| !l.is_empty()) {
            options.push(OsString::from("-c"));
            options.push(OsString::from(format!("{name}=")));
        }
        Ok(options)
    }

    /// Runs `git ARGS` and returns its output whatever its exit code, except
    /// for the failures every caller treats alike: git missing, no repository.
    pub async fn run<I, S>(&self, args: I) -> Result<GitOutput, GitError>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let mut args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        let mut hardening = Vec::new();
        if self.read_only {
            hardening = self.disabled_filters().await?;
            for option in READ_ONLY_CONFIG {
                hardening.push("-c".into());
                hardening.push((*option).into());
            }
            if args.first().is_some_and(|a| a == "diff" || a == "log") {
                args.splice(1..1, ["--no-ext-diff".into(), "--no-textconv".into()]);
            }
        }
        let sandbox = if self.read_only {
            None
        } else {
            Some(self.hook_sandbox().await)
        };
        self.exec(args, hardening, sandbox).await
    }

    /// Runs git with `args`; in `sandbox` when one is given.
    async fn exec(
        &self,
        args: Vec<OsString>,
        hardening: Vec<OsString>,
        sandbox: Option<Sandbox>,
    ) -> Result<GitOutput, GitError> {
        let shown = shown_command(&args);
        let mut command = spawn::command(&self.binary, &EnvPolicy::ScrubSecrets);
        command
            .current_dir(&self.root)
            .args([
                "--no-pager",
                "-c",
                "color.ui=never",
                "-c",
                "core.quotepath=false",
            ])
            .args(&hardening)
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
        for name in REDIRECTING_ENV {
            command.env_remove(name);
        }
        if self.read_only {
            command.env_remove("GIT_EXTERNAL_DIFF");
        }
        let mut warning = None;
        if let Some(sandbox) = &sandbox {
            match sandbox.confine(&mut command) {
                Ok(Confined::Fully) => {}
                Ok(Confined::Partly(w)) => warning = Some(w),
                Err(refusal) => return Err(GitError::Sandbox(refusal)),
            }
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
        if let Some(sandbox) = &sandbox {
            let said = format!("{}{}", out.stderr, out.stdout);
            if let Some(note) = sandbox.explain_failure(out.code == 0, &said) {
                out.stderr.push_str(&format!("\n{note}"));
            }
            if let Some(warning) = warning {
                out.stderr = format!("{warning}\n{}", out.stderr);
            }
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

    /// Fails with [`GitError::NotARepository`] unless the root is inside a
    /// work tree. `git diff` needs this check first: outside a repository it
    /// silently turns into `git diff --no-index`, which compares any files.
    pub async fn ensure_work_tree(&self) -> Result<(), GitError> {
        let out = self.run(["rev-parse", "--is-inside-work-tree"]).await?;
        if out.code == 0 && out.stdout.trim() == "true" {
            Ok(())
        } else {
            Err(GitError::NotARepository(self.root.display().to_string()))
        }
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
