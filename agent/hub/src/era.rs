//! Which MCP protocol era a server speaks, and the file that remembers it.
//!
//! A 2026-07-28 server answers `server/discover`; a legacy one (2025-11-25
//! and before) needs `initialize`. A legacy stdio server may simply ignore
//! the probe, so the first start probes briefly ([`PROBE_TIMEOUT`]) and the
//! answer is kept per server configuration (a hash of its transport) in a
//! small JSON file, so later starts go straight to the right handshake.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rmcp::model::ProtocolVersion;
use serde::{Deserialize, Serialize};

use super::names::fnv1a_32;

/// How long a first start waits for an answer to `server/discover` before
/// treating the server as legacy (the spec's fallback on a timeout). Short,
/// because a legacy server that ignores the probe would otherwise cost this
/// on every start; it is paid once per configuration.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(1500);

pub use nanohermes_config::Era;

/// The era of a negotiated protocol version.
pub fn of(version: &ProtocolVersion) -> Era {
    if version.has_initialize() {
        Era::Legacy
    } else {
        Era::Modern
    }
}

/// The file's shape: `{"servers": {"HASH": "2025-11-25", ...}}`.
#[derive(Debug, Default, Serialize, Deserialize)]
struct CacheFile {
    #[serde(default)]
    servers: BTreeMap<String, Era>,
}

/// The remembered eras, loaded once at hub start and written (atomically)
/// whenever an era is learnt or changes. A missing or unreadable file is an
/// empty cache: the cost is one probe, never a failure.
#[derive(Debug, Default)]
pub(crate) struct EraCache {
    path: Option<PathBuf>,
    servers: Mutex<BTreeMap<String, Era>>,
}

impl EraCache {
    /// Reads `path` (when given).
    pub(crate) fn load(path: Option<PathBuf>) -> EraCache {
        let servers = path
            .as_deref()
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|bytes| serde_json::from_slice::<CacheFile>(&bytes).ok())
            .map(|file| file.servers)
            .unwrap_or_default();
        EraCache {
            path,
            servers: Mutex::new(servers),
        }
    }

    /// The era remembered for configuration `key`.
    pub(crate) fn get(&self, key: &str) -> Option<Era> {
        self.lock().get(key).copied()
    }

    /// Remembers `era` for `key`; writes the file when that changed it.
    pub(crate) fn remember(&self, key: &str, era: Era) {
        let snapshot = {
            let mut servers = self.lock();
            if servers.get(key) == Some(&era) {
                return;
            }
            servers.insert(key.to_owned(), era);
            CacheFile {
                servers: servers.clone(),
            }
        };
        if let Some(path) = &self.path
            && let Err(e) = write(path, &snapshot)
        {
            // Losing the cache costs one probe on the next start, no more.
            tracing::debug!("cannot write the MCP era cache {}: {e}", path.display());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Era>> {
        self.servers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn write(path: &Path, file: &CacheFile) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let bytes = serde_json::to_vec_pretty(file).map_err(std::io::Error::other)?;
    mcp_tools::atomic::write_atomic(path, &bytes, mcp_tools::DEFAULT_FILE_MODE)
}

/// The key of one server configuration: the hub's one FNV-1a hash
/// ([`fnv1a_32`], the one that shortens tool names) of what decides what
/// runs (program, arguments, environment, directory, URL), so an edited
/// entry is probed again. Keys were 64-bit (16 hex digits) before
/// 2026-12; an entry under an old key is simply never found, so that
/// server is probed once more and remembered under its new key.
/// A collision between two configurations costs no more than a wrong
/// first handshake, which is probed again (connect.rs).
pub(crate) fn config_key(description: &str) -> String {
    format!("{:08x}", fnv1a_32(description.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_survives_a_reload_and_ignores_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("eras.json");
        let cache = EraCache::load(Some(path.clone()));
        assert_eq!(cache.get("k"), None);
        cache.remember("k", Era::Legacy);
        let again = EraCache::load(Some(path.clone()));
        assert_eq!(again.get("k"), Some(Era::Legacy));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"2025-11-25\""), "{text}");
        std::fs::write(&path, "not json").unwrap();
        assert_eq!(EraCache::load(Some(path)).get("k"), None);
    }

    #[test]
    fn keys_differ_per_configuration() {
        assert_ne!(config_key("a b"), config_key("a  b"));
        assert_eq!(config_key("x").len(), 8);
    }
}
