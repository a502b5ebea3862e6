//! The binaries under test: the ones built next to this harness (same
//! target directory and profile).

use std::path::PathBuf;

/// The server binaries, by crate.
pub const SERVERS: [&str; 7] = [
    "nanohermes-files",
    "nanohermes-grep",
    "nanohermes-shell",
    "nanohermes-git",
    "nanohermes-todo",
    "nanohermes-memory",
    "nanohermes-web",
];

/// Where the binaries are.
pub struct Bins {
    dir: PathBuf,
}

impl Bins {
    /// The directory of this executable; fails when `nanohermes` is not built there.
    pub fn beside_me() -> anyhow::Result<Bins> {
        let exe = std::env::current_exe()?;
        let dir = exe
            .parent()
            .ok_or_else(|| anyhow::anyhow!("{} has no directory", exe.display()))?
            .to_path_buf();
        let bins = Bins { dir };
        anyhow::ensure!(
            bins.agent().exists(),
            "{} is missing; build every binary first: scripts/bench (or cargo build --release --workspace --bins)",
            bins.agent().display()
        );
        Ok(bins)
    }

    /// The agent.
    pub fn agent(&self) -> PathBuf {
        self.dir.join("nanohermes")
    }

    /// A binary of this build by name.
    pub fn named(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The profile directory's name (`release`, `dist`, ...).
    pub fn profile(&self) -> String {
        self.dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}
