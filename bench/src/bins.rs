//! The binaries under test: the ones built next to this harness (same
//! target directory and profile), or another agent binary beside them
//! (`--baseline`).

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
#[derive(Clone)]
pub struct Bins {
    dir: PathBuf,
    /// An agent other than the one in `dir`.
    agent: Option<PathBuf>,
}

impl Bins {
    /// The directory of this executable; fails when `nanohermes` is not built there.
    pub fn beside_me() -> anyhow::Result<Bins> {
        let exe = std::env::current_exe()?;
        let dir = exe
            .parent()
            .ok_or_else(|| anyhow::anyhow!("{} has no directory", exe.display()))?
            .to_path_buf();
        let bins = Bins { dir, agent: None };
        anyhow::ensure!(
            bins.agent().exists(),
            "{} is missing; build every binary first: scripts/bench (or cargo build --release --workspace --bins)",
            bins.agent().display()
        );
        Ok(bins)
    }

    /// The same binaries with `agent` as the agent; fails when it is missing.
    pub fn with_agent(&self, agent: PathBuf) -> anyhow::Result<Bins> {
        anyhow::ensure!(agent.is_file(), "{} is not a file", agent.display());
        Ok(Bins {
            agent: Some(agent),
            ..self.clone()
        })
    }

    /// The agent.
    pub fn agent(&self) -> PathBuf {
        self.agent
            .clone()
            .unwrap_or_else(|| self.dir.join("nanohermes"))
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
