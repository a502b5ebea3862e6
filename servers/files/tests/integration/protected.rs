//! Paths that decide what runs later, through the real `nanohermes-files`
//! binary over stdio, in a real git repository: each write is refused
//! without the protected-write grant in the call's `_meta` (nothing in the
//! workspace changes) and goes through with it; reads stay allowed.

use std::path::Path;
use std::process::Command;

use mcp_tools::CallGrants;
use rmcp::model::{CallToolRequestParams, MetaObject, RequestMetaObject};
use rmcp::service::{RoleClient, RunningService, ServiceExt};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};

use crate::support::snapshot;

const BIN: &str = env!("CARGO_BIN_EXE_nanohermes-files");

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// A repository with a nested one, the agent's files, and two aliases.
fn workspace(root: &Path) {
    git(root, &["init", "-q"]);
    std::fs::create_dir_all(root.join("sub")).unwrap();
    git(&root.join("sub"), &["init", "-q"]);
    std::fs::create_dir_all(root.join(".nanohermes")).unwrap();
    std::fs::write(root.join(".nanohermes/config.toml"), "model = \"m\"\n").unwrap();
    std::fs::create_dir_all(root.join("pkg")).unwrap();
    std::fs::write(root.join("pkg/hooks.json"), "{}\n").unwrap();
    std::fs::write(root.join(".mcp.json"), "{}\n").unwrap();
    std::fs::write(root.join("notes.txt"), "note\n").unwrap();
    std::os::unix::fs::symlink(".git", root.join("alias")).unwrap();
    std::os::unix::fs::symlink(".mcp.json", root.join("servers.json")).unwrap();
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &str,
    args: Value,
    granted: bool,
) -> (bool, String) {
    let Value::Object(args) = args else {
        unreachable!()
    };
    let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
    if granted {
        let grants = CallGrants {
            protected_write: true,
            ..CallGrants::none()
        };
        params.meta = Some(RequestMetaObject(MetaObject(grants.to_meta())));
    }
    let result = client.call_tool(params).await.unwrap();
    let text = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    (result.is_error.unwrap_or(false), text)
}

/// (tool, arguments, the file that must hold "PLANTED" once granted)
fn attacks() -> Vec<(&'static str, Value, &'static str)> {
    let create = |path: &str| format!("--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+PLANTED\n");
    vec![
        (
            "write_file",
            json!({"path": ".git/config", "content": "PLANTED"}),
            ".git/config",
        ),
        (
            "write_file",
            json!({"path": ".git/hooks/pre-commit", "content": "PLANTED"}),
            ".git/hooks/pre-commit",
        ),
        (
            "write_file",
            json!({"path": "sub/.git/config", "content": "PLANTED"}),
            "sub/.git/config",
        ),
        (
            "write_file",
            json!({"path": ".mcp.json", "content": "PLANTED"}),
            ".mcp.json",
        ),
        (
            "write_file",
            json!({"path": ".nanohermes/config.toml", "content": "PLANTED"}),
            ".nanohermes/config.toml",
        ),
        (
            "write_file",
            json!({"path": "pkg/hooks.json", "content": "PLANTED"}),
            "pkg/hooks.json",
        ),
        (
            "write_file",
            json!({"path": "deep/new/.nanohermes/x.toml", "content": "PLANTED"}),
            "deep/new/.nanohermes/x.toml",
        ),
        // Aliases: the resolved target is what counts.
        (
            "write_file",
            json!({"path": "alias/config", "content": "PLANTED"}),
            ".git/config",
        ),
        (
            "write_file",
            json!({"path": "servers.json", "content": "PLANTED"}),
            ".mcp.json",
        ),
        (
            "edit_file",
            json!({"path": ".mcp.json", "old_string": "{}", "new_string": "PLANTED"}),
            ".mcp.json",
        ),
        (
            "apply_patch",
            json!({"patch": create(".git/hooks/post-checkout")}),
            ".git/hooks/post-checkout",
        ),
        (
            "apply_patch",
            json!({"patch": create("alias/hooks/post-merge")}),
            ".git/hooks/post-merge",
        ),
        (
            "apply_patch",
            json!({"patch": format!("{}{}", create("fine.txt"), create("pkg/.mcp.json"))}),
            "pkg/.mcp.json",
        ),
        (
            "apply_patch",
            json!({"patch": "--- a/notes.txt\n+++ b/.git/info/attributes\n@@ -1 +1 @@\n-note\n+PLANTED\n"}),
            ".git/info/attributes",
        ),
    ]
}

#[tokio::test]
async fn protected_writes_are_refused_without_the_grant_and_run_with_it() {
    for (tool, args, target) in attacks() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        workspace(&root);
        let command = tokio::process::Command::new(BIN).configure(|c| {
            c.arg("--root").arg(&root);
        });
        let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();

        let before = snapshot(&root);
        let (is_error, text) = call(&client, tool, args.clone(), false).await;
        assert!(is_error, "{tool} {args}: not refused: {text}");
        assert!(
            text.contains("is a protected path")
                && text.contains("decides what runs later")
                && text.contains("explicit approval"),
            "{tool} {args}: {text}"
        );
        assert_eq!(
            snapshot(&root),
            before,
            "{tool} {args}: the workspace changed"
        );
        assert!(!root.join("deep").exists(), "no directory was created");

        let (is_error, text) = call(&client, tool, args.clone(), true).await;
        assert!(!is_error, "{tool} {args}: refused with the grant: {text}");
        let written = std::fs::read_to_string(root.join(target)).unwrap();
        assert!(
            written.contains("PLANTED"),
            "{tool} {args}: {target} holds {written:?}"
        );
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn protected_paths_stay_readable_and_other_writes_need_no_grant() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    workspace(&root);
    let command = tokio::process::Command::new(BIN).configure(|c| {
        c.arg("--root").arg(&root);
    });
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let (is_error, text) = call(&client, "read_file", json!({"path": ".mcp.json"}), false).await;
    assert_eq!((is_error, text.as_str()), (false, "     1\t{}\n"));
    let (is_error, _) = call(&client, "read_file", json!({"path": "alias/HEAD"}), false).await;
    assert!(!is_error);
    let (is_error, text) = call(
        &client,
        "write_file",
        json!({"path": ".github/workflows/ci.yml", "content": "x"}),
        false,
    )
    .await;
    assert!(!is_error, "{text}");
    // Deleting a link that points into .git removes the link, not .git.
    let patch =
        "diff --git a/alias b/alias\ndeleted file mode 120000\n--- a/alias\n+++ /dev/null\n";
    let (is_error, text) = call(&client, "apply_patch", json!({"patch": patch}), false).await;
    assert!(!is_error, "{text}");
    assert!(root.join(".git/HEAD").is_file());
    client.cancel().await.unwrap();
}
