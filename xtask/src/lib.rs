//! Repository checks for the NanoHermes workspace, run as
//! `cargo run -p xtask -- tidy` and by `cargo test -p xtask`.
//!
//! `tidy` fails on a forbidden crate edge ([`layers`], read from `cargo
//! metadata`) or a stale path or crate name in ARCHITECTURE.md ([`docs`]),
//! and prints, without failing, the product files and functions over the
//! size limits ([`sizes`]).

pub mod docs;
pub mod layers;
pub mod metadata;
pub mod sizes;

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

/// Everything `tidy` found.
#[derive(Clone, Debug)]
pub struct Tidy {
    /// The layering check.
    pub layers: layers::LayerReport,
    /// The ARCHITECTURE.md claim check.
    pub docs: docs::DocReport,
    /// The size report (never a failure).
    pub sizes: sizes::SizeReport,
    /// Packages in the workspace.
    pub packages: usize,
}

impl Tidy {
    /// Whether a check failed (the size report never fails).
    pub fn failed(&self) -> bool {
        !self.layers.violations.is_empty() || !self.docs.bad.is_empty()
    }

    /// The report as printed by `cargo run -p xtask -- tidy`.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let l = &self.layers;
        // Writing to a String cannot fail.
        let _ = writeln!(
            s,
            "layers: {} packages, {} internal edges checked, {} violation(s)",
            self.packages,
            l.edges_checked,
            l.violations.len()
        );
        for v in &l.violations {
            let _ = writeln!(s, "  FAIL {v}");
        }
        if !l.absent.is_empty() {
            let _ = writeln!(s, "  not in the workspace yet: {}", l.absent.join(", "));
        }
        let d = &self.docs;
        let _ = writeln!(
            s,
            "ARCHITECTURE.md: {} path and {} crate claim(s), {} stale",
            d.paths,
            d.crates,
            d.bad.len()
        );
        for b in &d.bad {
            let _ = writeln!(s, "  FAIL {b}");
        }
        let z = &self.sizes;
        let _ = writeln!(
            s,
            "sizes (report only; functions found by an approximate scan): {} product files, {} over {} lines, {} function(s) over {} lines",
            z.files,
            z.long_files.len(),
            sizes::FILE_LINES,
            z.long_fns.len(),
            sizes::FN_LINES
        );
        for f in &z.long_files {
            let _ = writeln!(s, "  {:>5}  {}", f.lines, f.path.display());
        }
        for f in &z.long_fns {
            let _ = writeln!(
                s,
                "  {:>5}  {}:{} fn {}",
                f.lines,
                f.path.display(),
                f.line,
                f.name
            );
        }
        let _ = writeln!(s, "tidy: {}", if self.failed() { "FAILED" } else { "ok" });
        s
    }
}

/// Runs every check on the workspace containing `dir`.
pub fn tidy(dir: &Path) -> Result<Tidy> {
    let ws = metadata::load(dir)?;
    let layers = layers::check(&ws, layers::RULES);
    let doc_path = ws.root.join("ARCHITECTURE.md");
    let doc = std::fs::read_to_string(&doc_path)
        .with_context(|| format!("reading {}", doc_path.display()))?;
    let docs = docs::check(&doc, &docs::tree(&ws.root)?, &ws);
    let sizes = sizes::report(&ws)?;
    Ok(Tidy {
        layers,
        docs,
        sizes,
        packages: ws.packages.len(),
    })
}
