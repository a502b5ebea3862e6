//! The workspaces `nanohermes serve` may work in, and what each needs: its
//! configuration (loaded the way every command loads it, trust rules
//! included), one hub of tool servers shared by its tasks, one model client.
//!
//! A workspace is set up on its first task and kept for the server's life.
//! Workspaces never wait for each other: each has its own slot, the map of
//! slots is locked only to find one, and the file reading of a setup
//! (config layers, `.mcp.json`, guidance) runs on the blocking pool, so a
//! workspace whose files block (a FIFO, a hung network mount) holds one
//! blocking thread, never a runtime worker that other tasks need.
//! A requested workspace must lie inside one of the `--root` directories,
//! checked on canonical paths, so a symlink or `..` cannot leave them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::{Mutex, OnceCell, RwLock};

use crate::app::load;
use crate::config::{Config, Options};
use nanohermes_core::prompt::Guidance;
use nanohermes_hub::{Hub, HubConfig};
use nanohermes_llm::Client;

/// One workspace, ready for tasks.
pub struct Runtime {
    /// Its configuration.
    pub config: Config,
    /// The tool servers its tasks share.
    pub hub: Arc<RwLock<Hub>>,
    /// The model client (cloned per task, with a task's model if it names one).
    pub client: Client,
    /// AGENTS.md, NANOHERMES.md and skills, read when the workspace was set up.
    pub guidance: Guidance,
}

type Slot = Arc<OnceCell<Result<Arc<Runtime>, String>>>;

/// The roots and the workspaces set up so far.
pub struct Workspaces {
    roots: Vec<PathBuf>,
    options: Options,
    ready: Mutex<HashMap<PathBuf, Slot>>,
}

impl Workspaces {
    /// `roots` (canonicalised; each must be a directory) with the flags
    /// every workspace's configuration is loaded with.
    pub fn new(roots: &[PathBuf], options: Options) -> anyhow::Result<Workspaces> {
        let mut canonical = Vec::new();
        for root in roots {
            let dir = root
                .canonicalize()
                .map_err(|e| anyhow::anyhow!("--root {}: {e}", root.display()))?;
            if !dir.is_dir() {
                anyhow::bail!("--root {} is not a directory", root.display());
            }
            canonical.push(dir);
        }
        if canonical.is_empty() {
            canonical.push(std::env::current_dir()?.canonicalize()?);
        }
        Ok(Workspaces {
            roots: canonical,
            options,
            ready: Mutex::default(),
        })
    }

    /// The roots, canonical.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The canonical workspace a task asked for (relative paths are taken
    /// from the first root), or why it may not be used.
    pub fn resolve(&self, requested: Option<&str>) -> Result<PathBuf, String> {
        let Some(requested) = requested.filter(|r| !r.trim().is_empty()) else {
            return Ok(self.roots[0].clone());
        };
        let path = self.roots[0].join(requested);
        let canonical = path
            .canonicalize()
            .map_err(|e| format!("workspace {requested:?} cannot be used: {e}"))?;
        if !canonical.is_dir() {
            return Err(format!("workspace {requested:?} is not a directory"));
        }
        if self.roots.iter().any(|root| canonical.starts_with(root)) {
            Ok(canonical)
        } else {
            Err(format!(
                "workspace {requested:?} is outside the directories this server may work in ({}); pass one of them or a directory inside",
                self.roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        }
    }

    /// The runtime of `workspace` (from [`Workspaces::resolve`]), set up on
    /// first use; concurrent first tasks wait for one setup.
    pub async fn runtime(&self, workspace: &Path) -> Result<Arc<Runtime>, String> {
        let slot = self
            .ready
            .lock()
            .await
            .entry(workspace.to_owned())
            .or_default()
            .clone();
        slot.get_or_init(|| async { self.set_up(workspace).await.map(Arc::new) })
            .await
            .clone()
    }

    async fn set_up(&self, workspace: &Path) -> Result<Runtime, String> {
        let options = Options {
            workspace: Some(workspace.to_owned()),
            ..self.options.clone()
        };
        let files = tokio::task::spawn_blocking(move || {
            let config = load(&options, true).map_err(|e| format!("{e:#}"))?.config;
            let guidance = nanohermes_core::prompt::load(&config.workspace, &config.guidance);
            Ok::<_, String>((config, guidance))
        });
        let (config, guidance) = files.await.map_err(|e| e.to_string())??;
        let settings = config.model.clone();
        let client = tokio::task::spawn_blocking(move || Client::new(settings));
        let hub = Hub::start(HubConfig {
            skills: guidance.skills.clone(),
            ..config.hub.clone()
        })
        .await
        .map_err(|e| format!("{e:#}"))?;
        for warning in hub.warnings().iter().chain(&guidance.warnings) {
            tracing::warn!("{}: {warning}", workspace.display());
        }
        let client = client
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        Ok(Runtime {
            config,
            hub: Arc::new(RwLock::new(hub)),
            client,
            guidance,
        })
    }

    /// Shuts down the servers of every workspace no task holds any more
    /// (the process exit kills whatever is left: `kill_all_spawned`).
    pub async fn shutdown(&self) {
        let slots: Vec<Slot> = self.ready.lock().await.drain().map(|(_, s)| s).collect();
        for slot in slots {
            let hub = Arc::try_unwrap(slot)
                .ok()
                .and_then(OnceCell::into_inner)
                .and_then(Result::ok)
                .and_then(|runtime| Arc::try_unwrap(runtime).ok())
                .and_then(|runtime| Arc::try_unwrap(runtime.hub).ok());
            if let Some(hub) = hub {
                hub.into_inner().shutdown().await;
            }
        }
    }
}
