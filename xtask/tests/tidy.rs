//! The tidy checks on the real workspace, and each check shown to fail on a
//! planted violation (real metadata with one forbidden edge added), so a
//! passing run means the tree is clean and not that the check is blind.

use std::path::{Path, PathBuf};
use std::process::Command;

use xtask::docs;
use xtask::layers::{self, RULES, Violation};
use xtask::metadata::{self, Dep, DepKind, Package, Workspace};

fn workspace() -> Workspace {
    metadata::load(Path::new(env!("CARGO_MANIFEST_DIR"))).expect("cargo metadata")
}

fn add_dep(ws: &mut Workspace, from: &str, to: &str, kind: DepKind) {
    ws.packages
        .iter_mut()
        .find(|p| p.name == from)
        .unwrap_or_else(|| panic!("{from} is not in the workspace"))
        .deps
        .push(Dep {
            name: to.to_owned(),
            kind,
        });
}

fn add_package(ws: &mut Workspace, name: &str, deps: &[&str]) {
    ws.packages.push(Package {
        name: name.to_owned(),
        dir: ws.root.join("planted").join(name),
        deps: deps
            .iter()
            .map(|d| Dep {
                name: (*d).to_owned(),
                kind: DepKind::Normal,
            })
            .collect(),
    });
}

fn messages(ws: &Workspace) -> Vec<String> {
    layers::check(ws, RULES)
        .violations
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn the_workspace_layering_holds() {
    let ws = workspace();
    // Not vacuous: the servers and the kit are there, with their edges.
    assert!(ws.has("mcp-tools") && ws.has("nanohermes-git") && ws.has("xtask"));
    let report = layers::check(&ws, RULES);
    assert!(report.edges_checked >= 7, "{report:?}");
    let failures: Vec<String> = report.violations.iter().map(ToString::to_string).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn architecture_md_claims_hold() {
    let ws = workspace();
    let doc = std::fs::read_to_string(ws.root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let report = docs::check(&doc, &docs::tree(&ws.root).expect("tree"), &ws);
    assert!(
        report.paths >= 10 && report.crates >= 5,
        "the pattern reads the document's paths: {report:?}"
    );
    let bad: Vec<String> = report.bad.iter().map(ToString::to_string).collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn a_server_using_another_server_is_reported() {
    let mut ws = workspace();
    add_dep(
        &mut ws,
        "nanohermes-git",
        "nanohermes-shell",
        DepKind::Normal,
    );
    let found = messages(&ws);
    assert_eq!(found.len(), 1, "{found:?}");
    let m = &found[0];
    assert!(
        m.contains("nanohermes-git → nanohermes-shell (dependency)"),
        "{m}"
    );
    assert!(m.contains("may depend on mcp-tools only"), "{m}");
    assert!(
        m.contains("rule: a tool server is a standalone process"),
        "{m}"
    );
}

#[test]
fn depending_on_the_binary_package_is_reported() {
    let mut ws = workspace();
    add_dep(
        &mut ws,
        "nanohermes-conformance",
        "nanohermes",
        DepKind::Normal,
    );
    let found = messages(&ws);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("nanohermes-conformance → nanohermes (dependency)"),
        "{found:?}"
    );
}

#[test]
fn core_using_the_hub_rmcp_or_a_server_is_reported_once_core_exists() {
    let mut ws = workspace();
    add_package(&mut ws, "nanohermes-hub", &["nanohermes-core", "mcp-tools"]);
    add_package(
        &mut ws,
        "nanohermes-core",
        &[
            "nanohermes-llm",
            "nanohermes-hub",
            "rmcp",
            "nanohermes-files",
            "serde",
        ],
    );
    add_package(&mut ws, "nanohermes-llm", &[]);
    let found = messages(&ws);
    let core: Vec<&String> = found
        .iter()
        .filter(|m| m.starts_with("forbidden edge nanohermes-core"))
        .collect();
    assert_eq!(core.len(), 3, "{found:#?}");
    assert!(
        core[0].contains("nanohermes-core → nanohermes-hub"),
        "{core:?}"
    );
    assert!(
        core[1].contains("must not use the external crate rmcp"),
        "{core:?}"
    );
    assert!(
        core[2].contains("nanohermes-core → nanohermes-files"),
        "{core:?}"
    );
    for m in &core {
        assert!(
            m.contains("rule: the loop reaches tools through the ToolBox trait"),
            "{m}"
        );
    }
}

#[test]
fn an_edge_to_a_higher_layer_from_a_test_is_reported_too() {
    let mut ws = workspace();
    add_dep(&mut ws, "mcp-tools", "nanohermes-files", DepKind::Dev);
    add_package(&mut ws, "nanohermes-config", &[]);
    add_dep(
        &mut ws,
        "nanohermes-config",
        "nanohermes-memory",
        DepKind::Build,
    );
    let found = messages(&ws);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found.iter().any(|m| m.contains(
        "mcp-tools → nanohermes-files (dev-dependency): mcp-tools may depend on no workspace crate;"
    )));
    assert!(
        found
            .iter()
            .any(|m| m.contains("nanohermes-config → nanohermes-memory (build-dependency)"))
    );
}

#[test]
fn a_crate_missing_from_the_table_is_reported() {
    let mut ws = workspace();
    add_package(&mut ws, "nanohermes-extra", &["mcp-tools"]);
    let report = layers::check(&ws, RULES);
    assert_eq!(
        report.violations,
        [Violation::Unclassified {
            package: "nanohermes-extra".to_owned()
        }]
    );
    assert!(
        report.violations[0]
            .to_string()
            .contains("nanohermes-extra is not in the layering table")
    );
}

#[test]
fn metadata_names_the_package_not_its_alias() {
    let json = r#"{
        "workspace_root": "/w",
        "workspace_members": ["path+file:///w/a#a@0.1.0", "path+file:///w/b#b@0.1.0"],
        "packages": [
            {"id": "path+file:///w/a#a@0.1.0", "name": "a", "manifest_path": "/w/a/Cargo.toml",
             "dependencies": [
                {"name": "b", "rename": "alias", "kind": null},
                {"name": "b", "kind": "build"},
                {"name": "serde", "kind": "dev"}
             ]},
            {"id": "path+file:///w/b#b@0.1.0", "name": "b", "manifest_path": "/w/b/Cargo.toml",
             "dependencies": []},
            {"id": "registry+x#serde@1.0.0", "name": "serde", "manifest_path": "/r/Cargo.toml",
             "dependencies": []}
        ]
    }"#;
    let ws = metadata::parse(json).expect("parse");
    assert_eq!(ws.root, PathBuf::from("/w"));
    assert_eq!(ws.packages.len(), 2, "only workspace members");
    let kinds: Vec<(&str, DepKind)> = ws.packages[0]
        .deps
        .iter()
        .map(|d| (d.name.as_str(), d.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("b", DepKind::Normal),
            ("b", DepKind::Build),
            ("serde", DepKind::Dev)
        ]
    );
}

#[test]
fn a_stale_path_or_crate_name_in_the_document_is_reported() {
    let ws = workspace();
    let tree = docs::tree(&ws.root).expect("tree");
    let doc = "\
The kit is `mcp-tools/src/lib.rs`, its tests `mcp-tools/tests/spawn*.rs`; see `servers/<name>/`.
Gone: `mcp-tools/src/gone.rs` and `tests/it/no_such_test.rs`, and the crate `nanohermes-gone`.
Fine: `nanohermes-git`, `tools/list`, `.nanohermes/`, `src/lib.rs`.
```
`agent/src/in_a_fence.rs`
```
";
    let report = docs::check(doc, &tree, &ws);
    let bad: Vec<(usize, &str)> = report
        .bad
        .iter()
        .map(|b| (b.line, b.claim.as_str()))
        .collect();
    assert_eq!(
        bad,
        [
            (2, "mcp-tools/src/gone.rs"),
            (2, "tests/it/no_such_test.rs"),
            (2, "nanohermes-gone"),
        ]
    );
    assert_eq!((report.paths, report.crates), (6, 2));
}

/// The command itself: a throwaway workspace where one server uses another
/// makes `xtask tidy` exit non-zero and name the edge.
#[test]
fn the_command_exits_non_zero_on_a_violation() {
    let dir = std::env::temp_dir().join(format!("xtask-tidy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let manifest = |name: &str, deps: &str| {
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[dependencies]\n{deps}"
        )
    };
    let write = |rel: &str, text: &str| {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(
        "Cargo.toml",
        "[workspace]\nresolver = \"3\"\nmembers = [\"servers/*\"]\n",
    );
    write("ARCHITECTURE.md", "The `servers/git/src/lib.rs` server.\n");
    write(
        "servers/git/Cargo.toml",
        &manifest(
            "nanohermes-git",
            "nanohermes-shell = { path = \"../shell\" }\n",
        ),
    );
    write("servers/git/src/lib.rs", "//! git\n");
    write(
        "servers/shell/Cargo.toml",
        &manifest("nanohermes-shell", ""),
    );
    write("servers/shell/src/lib.rs", "//! shell\n");
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("tidy")
        .current_dir(&dir)
        .output()
        .expect("run xtask");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("FAIL forbidden edge nanohermes-git → nanohermes-shell"),
        "{stdout}"
    );
    assert!(
        stdout.contains("ARCHITECTURE.md: 1 path and 0 crate claim(s), 0 stale"),
        "{stdout}"
    );
}
