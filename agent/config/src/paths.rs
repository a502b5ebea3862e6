//! Where NanoHermes keeps the user's own files: the one place that reads
//! `NANOHERMES_HOME` (and `HOME` for its default, `~/.nanohermes`).
//!
//! Every file of the user's lives under that one directory: the user
//! config, the trust digests, the remembered protocol eras, the OAuth
//! tokens, the memory database and `serve`'s task records. The process
//! reads the environment once ([`Paths::of_process`]); tests and callers
//! with their own layout build one with [`Paths::new`].

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The user's NanoHermes directory and the files in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    home: Option<PathBuf>,
}

impl Paths {
    /// Paths under `home` (`None`: there is no home, so none of the
    /// user's files exist and nothing is written for them).
    pub fn new(home: Option<PathBuf>) -> Paths {
        Paths { home }
    }

    /// This process's paths, from `NANOHERMES_HOME` and `HOME` as they were
    /// when first asked.
    pub fn of_process() -> &'static Paths {
        static PATHS: OnceLock<Paths> = OnceLock::new();
        PATHS.get_or_init(|| {
            let home = std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from);
            Paths::new(nanohermes_home(
                std::env::var_os("NANOHERMES_HOME").as_deref(),
                home.as_deref(),
            ))
        })
    }

    /// The directory itself: `$NANOHERMES_HOME`, else `~/.nanohermes`.
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// `mcp-eras.json`: the protocol era each configured server spoke.
    pub fn era_cache(&self) -> Option<PathBuf> {
        self.file("mcp-eras.json")
    }

    /// `credentials.json`: the OAuth tokens of HTTP servers.
    pub fn credentials(&self) -> Option<PathBuf> {
        self.file("credentials.json")
    }

    /// `memory.db`: long-term memory.
    pub fn memory_db(&self) -> Option<PathBuf> {
        self.file("memory.db")
    }

    /// `tasks/`: `serve`'s task records.
    pub fn tasks_dir(&self) -> Option<PathBuf> {
        self.file("tasks")
    }

    fn file(&self, name: &str) -> Option<PathBuf> {
        self.home.as_ref().map(|home| home.join(name))
    }
}

/// `$NANOHERMES_HOME` when set and non-empty, else `HOME/.nanohermes`.
pub fn nanohermes_home(env_value: Option<&OsStr>, home: Option<&Path>) -> Option<PathBuf> {
    match env_value {
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => home.map(|h| h.join(".nanohermes")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_nanohermes_home_means_the_default() {
        let home = Path::new("/home/u");
        assert_eq!(
            nanohermes_home(Some(OsStr::new("")), Some(home)),
            Some(PathBuf::from("/home/u/.nanohermes"))
        );
        assert_eq!(
            nanohermes_home(Some(OsStr::new("/x")), Some(home)),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(nanohermes_home(None, None), None);
        assert_eq!(Paths::new(None).memory_db(), None);
    }
}
