//! The workspace as `cargo metadata --no-deps` describes it: its packages,
//! where they live and the dependencies each one declares.
//!
//! `--no-deps` is enough for the layering check: it still lists every
//! declared dependency (name, kind, target) of each workspace package, which
//! covers internal edges and direct external ones such as `rmcp`, and it
//! resolves nothing, so it needs no network and takes milliseconds.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// How a package uses one of its dependencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DepKind {
    /// `[dependencies]` (including target-specific ones).
    Normal,
    /// `[build-dependencies]`: compiled into the build script, so it is an
    /// edge of the product as much as a normal dependency.
    Build,
    /// `[dev-dependencies]`: tests, examples and benches only.
    Dev,
}

impl std::fmt::Display for DepKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DepKind::Normal => "dependency",
            DepKind::Build => "build-dependency",
            DepKind::Dev => "dev-dependency",
        })
    }
}

/// One declared dependency of a workspace package.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dep {
    /// The depended-on package's name (not its `rename`d alias).
    pub name: String,
    /// Which table of the manifest declares it.
    pub kind: DepKind,
}

/// One workspace member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Package {
    /// The package name (`nanohermes-core`, `mcp-tools`, …).
    pub name: String,
    /// The directory holding its `Cargo.toml`.
    pub dir: PathBuf,
    /// Every dependency its manifest declares.
    pub deps: Vec<Dep>,
}

/// The workspace: its root and its member packages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workspace {
    /// The directory of the root `Cargo.toml`.
    pub root: PathBuf,
    /// The member packages, in metadata order.
    pub packages: Vec<Package>,
}

impl Workspace {
    /// The member named `name`, if the workspace has one.
    pub fn package(&self, name: &str) -> Option<&Package> {
        self.packages.iter().find(|p| p.name == name)
    }

    /// Whether `name` is a workspace member (an internal crate).
    pub fn has(&self, name: &str) -> bool {
        self.package(name).is_some()
    }
}

/// Runs `cargo metadata --format-version 1 --no-deps --offline` for the
/// workspace containing `dir` and parses it.
pub fn load(dir: &Path) -> Result<Workspace> {
    // `$CARGO` is the cargo that runs us (under `cargo run` or `cargo
    // test`), so the toolchain matches the one building the workspace.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(dir)
        .output()
        .context("running cargo metadata")?;
    if !out.status.success() {
        bail!(
            "cargo metadata failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    parse(&String::from_utf8(out.stdout).context("cargo metadata printed non-UTF-8")?)
}

/// Parses `cargo metadata --format-version 1` output (with or without
/// `--no-deps`); only workspace members are kept.
pub fn parse(json: &str) -> Result<Workspace> {
    let v: Value = serde_json::from_str(json).context("cargo metadata output is not JSON")?;
    let root = v["workspace_root"]
        .as_str()
        .context("metadata has no workspace_root")?;
    let members: Vec<&str> = v["workspace_members"]
        .as_array()
        .context("metadata has no workspace_members")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut packages = Vec::new();
    for p in v["packages"]
        .as_array()
        .context("metadata has no packages")?
    {
        let id = p["id"].as_str().context("package without an id")?;
        if !members.contains(&id) {
            continue;
        }
        let name = p["name"].as_str().context("package without a name")?;
        let manifest = p["manifest_path"]
            .as_str()
            .with_context(|| format!("{name} has no manifest_path"))?;
        let dir = Path::new(manifest)
            .parent()
            .with_context(|| format!("{name}'s manifest_path has no parent"))?
            .to_path_buf();
        let mut deps = Vec::new();
        for d in p["dependencies"].as_array().into_iter().flatten() {
            let dep_name = d["name"]
                .as_str()
                .with_context(|| format!("a dependency of {name} has no name"))?;
            let kind = match d["kind"].as_str() {
                None => DepKind::Normal,
                Some("build") => DepKind::Build,
                Some("dev") => DepKind::Dev,
                Some(other) => bail!("{name} → {dep_name}: unknown dependency kind {other:?}"),
            };
            deps.push(Dep {
                name: dep_name.to_owned(),
                kind,
            });
        }
        packages.push(Package {
            name: name.to_owned(),
            dir,
            deps,
        });
    }
    Ok(Workspace {
        root: PathBuf::from(root),
        packages,
    })
}
