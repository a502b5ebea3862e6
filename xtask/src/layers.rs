//! The crate layering: which workspace crates each crate may depend on.
//!
//! The table is an allow-list: every internal crate names the internal
//! crates it may use, so an edge nobody thought to forbid still fails, and a
//! workspace package missing from the table fails too (a new crate must be
//! classified before it can be used). A crate in the table that is not in
//! the workspace yet is only reported as absent, so the check passes at
//! every step of a split and applies to each crate as soon as it exists.
//!
//! Dev-dependencies are held to the same list. A lower crate's test that
//! needs a higher crate is testing the higher crate's composition and
//! belongs in that crate's `tests/`; and cargo allows such a dev-dependency
//! cycle, but the test then links two copies of the lower crate whose types
//! do not unify. `dev_extra` exists for the exception a test truly needs;
//! no crate needs one today.

use std::fmt;

use crate::metadata::{DepKind, Workspace};

/// The seven tool servers: each is its own process and its own crate, built
/// on the `mcp-tools` kit only.
pub const SERVERS: &[&str] = &[
    "nanohermes-files",
    "nanohermes-grep",
    "nanohermes-shell",
    "nanohermes-git",
    "nanohermes-todo",
    "nanohermes-memory",
    "nanohermes-web",
];

/// What one workspace crate may depend on.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    /// The package name.
    pub package: &'static str,
    /// The internal crates it may depend on (normal, build and dev).
    pub may_use: &'static [&'static str],
    /// Further internal crates its tests alone may use (dev-dependencies).
    pub dev_extra: &'static [&'static str],
    /// External crates it must not name directly, whatever the kind.
    pub never_external: &'static [&'static str],
    /// Why: the layer's reason, quoted in every violation message.
    pub why: &'static str,
}

const LIBS_BELOW_BINARY: &[&str] = &[
    "nanohermes-llm",
    "nanohermes-config",
    "nanohermes-core",
    "nanohermes-session",
    "nanohermes-hub",
    "nanohermes-builtins",
    "nanohermes-files",
    "nanohermes-grep",
    "nanohermes-shell",
    "nanohermes-git",
    "nanohermes-todo",
    "nanohermes-memory",
    "nanohermes-web",
    "mcp-tools",
];

const SERVER_WHY: &str = "a tool server is a standalone process built on the mcp-tools kit: it depends on no agent crate and on no other server";

/// The layering of the workspace, lowest layer first.
pub const RULES: &[Rule] = &[
    Rule {
        package: "mcp-tools",
        may_use: &[],
        dev_extra: &[],
        never_external: &[],
        why: "the tool-server kit and process supervisor is the bottom layer",
    },
    Rule {
        package: "nanohermes-llm",
        may_use: &["mcp-tools"],
        dev_extra: &[],
        never_external: &[],
        why: "the model wire client sits below every agent crate",
    },
    Rule {
        package: "nanohermes-config",
        may_use: &["mcp-tools"],
        dev_extra: &[],
        never_external: &[],
        why: "config files, trust and paths sit below every agent crate",
    },
    Rule {
        package: "nanohermes-core",
        may_use: &["nanohermes-llm", "nanohermes-config", "mcp-tools"],
        dev_extra: &[],
        never_external: &["rmcp"],
        why: "the loop reaches tools through the ToolBox trait: not through the hub, rmcp or a server",
    },
    Rule {
        package: "nanohermes-session",
        may_use: &[
            "nanohermes-core",
            "nanohermes-llm",
            "nanohermes-config",
            "mcp-tools",
        ],
        dev_extra: &[],
        never_external: &[],
        why: "sessions are saved and resumed through core's transcript, without the MCP hub",
    },
    Rule {
        package: "nanohermes-hub",
        may_use: &[
            "nanohermes-core",
            "nanohermes-config",
            "nanohermes-llm",
            "nanohermes-builtins",
            "mcp-tools",
        ],
        dev_extra: &[],
        never_external: &[],
        why: "the MCP client implements core's ToolBox and connects to the built-ins the builtins crate hosts",
    },
    Rule {
        package: "nanohermes-builtins",
        may_use: &[
            "nanohermes-config",
            "mcp-tools",
            "nanohermes-files",
            "nanohermes-grep",
            "nanohermes-shell",
            "nanohermes-git",
            "nanohermes-todo",
            "nanohermes-memory",
            "nanohermes-web",
        ],
        dev_extra: &[],
        never_external: &[],
        why: "the built-in servers are hosted below the MCP client, which connects to them through a handler it passes in",
    },
    Rule {
        package: "nanohermes",
        may_use: LIBS_BELOW_BINARY,
        dev_extra: &[],
        never_external: &[],
        why: "the binary is the composition root: it may use every library, and nothing uses it",
    },
    Rule {
        package: "nanohermes-files",
        may_use: &["mcp-tools"],
        dev_extra: &[],
        never_external: &[],
        why: SERVER_WHY,
    },
    Rule {
        package: "nanohermes-grep",
        may_use: &["mcp-tools"],
        dev_extra: &[],
        never_external: &[],
        why: SERVER_WHY,
    },
    Rule {
        package: "nanohermes-shell",
        may_use: &["mcp-tools"],
        dev_extra: &[],
        never_external: &[],
        why: SERVER_WHY,
    },
    Rule {
        package: "nanohermes-git",
        may_use: &["mcp-tools"],
        dev_extra: &[],
        never_external: &[],
        why: SERVER_WHY,
    },
    Rule {
        package: "nanohermes-todo",
        may_use: &["mcp-tools"],
        dev_extra: &[],
        never_external: &[],
        why: SERVER_WHY,
    },
    Rule {
        package: "nanohermes-memory",
        may_use: &["mcp-tools"],
        dev_extra: &[],
        never_external: &[],
        why: SERVER_WHY,
    },
    Rule {
        package: "nanohermes-web",
        may_use: &["mcp-tools"],
        dev_extra: &[],
        never_external: &[],
        why: SERVER_WHY,
    },
    Rule {
        package: "nanohermes-bench",
        may_use: LIBS_BELOW_BINARY,
        dev_extra: &[],
        never_external: &[],
        why: "the harness measures the libraries and runs the binary as a process, never links it",
    },
    Rule {
        package: "nanohermes-conformance",
        may_use: &["mcp-tools"],
        dev_extra: &[],
        never_external: &[],
        why: "the conformance fixture server tests the mcp-tools kit alone",
    },
    Rule {
        package: "xtask",
        may_use: &[],
        dev_extra: &[],
        never_external: &[],
        why: "the repository checks read cargo metadata and files, never link the product",
    },
];

/// One failure of the layering check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// A dependency the table does not allow.
    Edge {
        /// The depending package.
        from: String,
        /// The depended-on package.
        to: String,
        /// Which manifest table declares it.
        kind: DepKind,
        /// The rule's reason.
        why: &'static str,
        /// What `from` may use, for the message.
        allowed: Vec<&'static str>,
        /// Whether `to` is a workspace crate (else an external crate the
        /// rule names in `never_external`).
        internal: bool,
    },
    /// A workspace package missing from the table.
    Unclassified {
        /// Its name.
        package: String,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Edge {
                from,
                to,
                kind,
                why,
                allowed: _,
                internal: false,
            } => write!(
                f,
                "forbidden edge {from} → {to} ({kind}): {from} must not use the external crate {to} directly; rule: {why}"
            ),
            Violation::Edge {
                from,
                to,
                kind,
                why,
                allowed,
                internal: true,
            } => {
                let allowed = if allowed.is_empty() {
                    "no workspace crate".to_owned()
                } else {
                    format!("{} only", allowed.join(", "))
                };
                write!(
                    f,
                    "forbidden edge {from} → {to} ({kind}): {from} may depend on {allowed}; rule: {why}"
                )
            }
            Violation::Unclassified { package } => write!(
                f,
                "workspace package {package} is not in the layering table (xtask/src/layers.rs): classify it with the crates it may depend on"
            ),
        }
    }
}

/// The outcome of the layering check.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LayerReport {
    /// Everything that fails the check.
    pub violations: Vec<Violation>,
    /// Table entries with no workspace package yet.
    pub absent: Vec<&'static str>,
    /// Internal edges checked (all kinds).
    pub edges_checked: usize,
}

/// Checks every declared dependency of every workspace package against
/// `rules`. Pure: the workspace is already parsed.
pub fn check(ws: &Workspace, rules: &[Rule]) -> LayerReport {
    let mut report = LayerReport {
        absent: rules
            .iter()
            .map(|r| r.package)
            .filter(|name| !ws.has(name))
            .collect(),
        ..LayerReport::default()
    };
    for pkg in &ws.packages {
        let Some(rule) = rules.iter().find(|r| r.package == pkg.name) else {
            report.violations.push(Violation::Unclassified {
                package: pkg.name.clone(),
            });
            continue;
        };
        for dep in &pkg.deps {
            let is_dev_extra = dep.kind == DepKind::Dev && rule.dev_extra.contains(&&*dep.name);
            let internal = ws.has(&dep.name);
            let allowed = if internal {
                report.edges_checked += 1;
                rule.may_use.contains(&&*dep.name) || is_dev_extra
            } else {
                !rule.never_external.contains(&&*dep.name) || is_dev_extra
            };
            if allowed {
                continue;
            }
            let mut allowed: Vec<&'static str> = rule.may_use.to_vec();
            if dep.kind == DepKind::Dev {
                allowed.extend(rule.dev_extra);
            }
            report.violations.push(Violation::Edge {
                from: pkg.name.clone(),
                to: dep.name.clone(),
                kind: dep.kind,
                why: rule.why,
                allowed,
                internal,
            });
        }
    }
    report
}
