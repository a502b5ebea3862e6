//! How a server is reached: in-process, a child over stdio, or Streamable
//! HTTP; and which protocol era each connection speaks.
//!
//! Era rule for a server whose era is not known: probe with
//! `server/discover` for at most [`PROBE_TIMEOUT`](super::era::PROBE_TIMEOUT)
//! (rmcp's `Auto` lifecycle, which falls back on the same connection when
//! the server answers with a legacy error); a server that stays silent is
//! legacy, and is started again for a plain `initialize`. The answer is
//! remembered ([`EraCache`]), so the next start uses the right handshake at
//! once; a remembered era that turns out wrong (the server was upgraded or
//! downgraded) is probed again. Our own built-ins are known to be modern.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;

use anyhow::Context as _;
use mcp_tools::ToolContext;
use mcp_tools::spawn::{self, EnvPolicy, ProcessTree, Signal};
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt as _};
use rmcp::transport::TokioChildProcess;

use super::connection::{Client, StderrTail};
use super::era::{Era, EraCache, PROBE_TIMEOUT};
use super::handler::client_config;
use super::input::SharedElicitor;
use nanohermes_builtins::{Builtin, BuiltinOptions, Hosted as _};

/// One live link to a server (one MCP session): the client, its era and,
/// for a child process, the tree it leads, killed when the link is
/// replaced, shut down or dropped. A [`Connection`](super::connection::Connection)
/// holds one at a time and replaces it on a restart.
pub(crate) struct Link {
    pub(crate) client: Client,
    pub(crate) tree: Option<ProcessTree>,
    pub(crate) era: Era,
}

impl Link {
    /// Closes the session (a child gets EOF on stdin, then SIGTERM, then
    /// SIGKILL: rmcp's graceful shutdown of the leader), then kills what is
    /// left of its tree (grandchildren, daemons that left the group).
    pub(crate) async fn close(self) {
        let _ = self.client.cancel().await;
        if let Some(tree) = self.tree {
            tree.signal_group(Signal::SIGTERM);
            tree.kill();
        }
    }
}

/// A child process to start over stdio.
#[derive(Debug, Clone)]
pub(crate) struct ChildSpec {
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<String>,
    pub(crate) env: EnvPolicy,
    pub(crate) cwd: PathBuf,
}

/// A Streamable HTTP endpoint with its headers resolved.
#[derive(Debug, Clone)]
pub(crate) struct HttpTarget {
    pub(crate) url: String,
    /// Sent as `Authorization: Bearer …`.
    pub(crate) bearer: Option<String>,
    pub(crate) headers: Vec<(String, String)>,
    /// OAuth, for a server with no static token: the stored credentials,
    /// and what to do when the server asks for authorization (http.rs).
    pub(crate) oauth: Option<crate::auth::Authorizer>,
    /// Whether a refusal starts an authorization (the probe) instead of
    /// failing with "run `nanohermes mcp login NAME`".
    pub(crate) may_authorize: bool,
}

/// What is known about a server's era before connecting.
#[derive(Clone)]
pub(crate) enum EraHint {
    /// Ours, or pinned by the spec: speaks 2026-07-28 (`server/discover`).
    Modern,
    /// Pinned by the spec: speaks 2025-11-25 (`initialize`), no probe.
    Legacy,
    /// Look it up under this key, probe if unknown, remember the answer.
    Cached(Arc<EraCache>, String),
}

/// How to (re)start a server.
pub(crate) enum Launch {
    /// In-process, confined to the context's workspace.
    InProcess(Builtin, ToolContext, BuiltinOptions),
    /// A child process over stdio.
    Child(ChildSpec, EraHint),
    /// A Streamable HTTP endpoint.
    Http(HttpTarget, EraHint),
}

fn modern() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    }
}

fn auto() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    }
}

/// A `server/discover` answered with a JSON-RPC error: the server is not
/// modern (rmcp's `Discover` mode does not fall back by itself).
fn says_legacy(error: &anyhow::Error) -> bool {
    matches!(
        error.downcast_ref::<ClientInitializeError>(),
        Some(ClientInitializeError::JsonRpcError(_))
    )
}

impl Launch {
    /// The tools this server lists, when they are known without starting
    /// it: a built-in in this process ([`Builtin::listed_tools`]). A
    /// listing that does not parse is logged and the server starts as any
    /// other.
    pub(crate) fn listed_tools(&self) -> Option<Vec<rmcp::model::Tool>> {
        let Launch::InProcess(builtin, _, _) = self else {
            return None;
        };
        builtin
            .listed_tools()
            .inspect_err(|e| tracing::warn!("{e:#}; starting {} now", builtin.name()))
            .ok()
    }

    /// Starts the server and completes its handshake.
    /// `elicitor` answers the server's elicitations (input.rs).
    pub(crate) async fn connect(
        &self,
        name: &str,
        stderr: &Arc<StderrTail>,
        elicitor: Option<&SharedElicitor>,
    ) -> anyhow::Result<Link> {
        match self {
            Launch::InProcess(builtin, ctx, options) => {
                let client = builtin
                    .connect(ctx.clone(), options.clone(), client_config(None))
                    .await?;
                let era = era_of(&client);
                Ok(Link {
                    client,
                    tree: None,
                    era,
                })
            }
            Launch::Child(child, hint) => {
                let start = |mode| async move {
                    let (transport, tree) = spawn_child(name, child, stderr)?;
                    // A failed handshake drops the tree: nothing is left running.
                    let client = client_config(elicitor)
                        .serve_with_lifecycle(transport, mode)
                        .await?;
                    let era = era_of(&client);
                    anyhow::Ok(Link {
                        client,
                        tree: Some(tree),
                        era,
                    })
                };
                match hint {
                    EraHint::Modern => start(modern()).await,
                    EraHint::Legacy => start(ClientLifecycleMode::Initialize).await,
                    EraHint::Cached(cache, key) => {
                        let link = match cache.get(key) {
                            Some(Era::Modern) => match start(modern()).await {
                                Err(e) if says_legacy(&e) => start(auto()).await?,
                                other => other?,
                            },
                            Some(Era::Legacy) => match start(ClientLifecycleMode::Initialize).await
                            {
                                // It may have become modern-only: probe afresh.
                                Err(e) if says_legacy(&e) => start(auto()).await?,
                                other => other?,
                            },
                            None => {
                                match tokio::time::timeout(PROBE_TIMEOUT, start(auto())).await {
                                    Ok(started) => started?,
                                    // Silent on the probe: a legacy server that
                                    // ignores unknown methods. Start it again for
                                    // `initialize` (the old child is killed with
                                    // its dropped tree).
                                    Err(_) => {
                                        stderr.clear();
                                        start(ClientLifecycleMode::Initialize).await?
                                    }
                                }
                            }
                        };
                        cache.remember(key, link.era);
                        Ok(link)
                    }
                }
            }
            Launch::Http(target, hint) => {
                let start = |mode| async move {
                    let client = super::http::serve(target, client_config(elicitor), mode).await?;
                    let era = era_of(&client);
                    anyhow::Ok(Link {
                        client,
                        tree: None,
                        era,
                    })
                };
                // An HTTP server always answers, so `Auto` never waits for
                // a silent one; the cache only saves the probe round trip.
                let link = match hint {
                    EraHint::Modern => start(modern()).await?,
                    EraHint::Legacy => start(ClientLifecycleMode::Initialize).await?,
                    EraHint::Cached(cache, key) => {
                        let link = match cache.get(key) {
                            Some(Era::Legacy) => match start(ClientLifecycleMode::Initialize).await
                            {
                                Ok(c) => c,
                                Err(_) => start(auto()).await?,
                            },
                            _ => start(auto()).await?,
                        };
                        cache.remember(key, link.era);
                        link
                    }
                };
                Ok(link)
            }
        }
    }

    /// Where it runs, for `nanohermes mcp list`: `in-process`,
    /// `process: CMD ARGS`, `http: URL`.
    pub(crate) fn describe(&self) -> String {
        match self {
            Launch::InProcess(..) => "in-process".to_owned(),
            Launch::Child(child, _) => {
                let mut words = vec![shell_word(&child.program.display().to_string())];
                words.extend(child.args.iter().map(|a| shell_word(a)));
                format!("process: {}", words.join(" "))
            }
            Launch::Http(target, _) => format!("http: {}", target.url),
        }
    }
}

fn shell_word(word: &str) -> String {
    shlex::try_quote(word).map_or_else(|_| word.to_owned(), |q| q.into_owned())
}

pub(crate) fn era_of(client: &Client) -> Era {
    client
        .peer()
        .peer_info()
        .map_or(Era::Legacy, |info| super::era::of(&info.protocol_version))
}

/// Starts a child through the kit's spawn policy: its own process group,
/// the environment its policy gives (never the model's key), stdio piped
/// to rmcp.
fn spawn_child(
    name: &str,
    child: &ChildSpec,
    stderr: &Arc<StderrTail>,
) -> anyhow::Result<(TokioChildProcess, ProcessTree)> {
    let mut command = spawn::command(&child.program, &child.env);
    command.args(&child.args).current_dir(&child.cwd);
    // rmcp spawns the child itself (its builder sets stdin/stdout to pipes
    // and keeps `process_group(0)`): adopt the pid into a tree right after.
    let (command, marker) = command.into_command();
    // Its exit status is recorded when rmcp reaps it (crash.rs).
    let mut command = process_wrap::tokio::CommandWrap::from(command);
    command.wrap(stderr.recorder());
    let (transport, child_stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {:?}", child.program.display().to_string()))?;
    let pid = transport
        .id()
        .context("the server exited before it could be tracked")?;
    let tree = ProcessTree::adopt(pid, marker);
    if let Some(child_stderr) = child_stderr {
        stderr.follow(name.to_string(), pid, child_stderr);
    }
    Ok((transport, tree))
}
