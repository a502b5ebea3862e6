//! The grep and glob tools over real MCP (in-process client) on generated
//! trees in real temp directories.

use std::fs;
use std::path::Path;

use mcp_tools::ToolContext;
use mcp_tools::schema::{check_schema_file, tools_document};
use nanohermes_grep::GrepServer;
use serde_json::{Value, json};

/// A tree with ignored, hidden, binary and Unicode files. Not a git
/// repository: .gitignore must still be honoured.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let write = |path: &str, text: &[u8]| {
        let path = root.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    };
    write(".gitignore", b"ignored/\n*.log\n");
    write("src/nested/.ignore", b"skipped.rs\n");
    write("src/main.rs", b"fn main() {\n    needle();\n}\n");
    write("src/nested/lib.rs", b"// needle in lib\npub fn f() {}\n");
    write("src/nested/skipped.rs", b"needle in a file .ignore skips\n");
    write("b.txt", b"needle b\n");
    write("a.txt", b"needle a\n");
    write("ignored/secret.txt", b"needle in an ignored dir\n");
    write("debug.log", b"needle in an ignored file\n");
    write(".hidden/h.txt", b"needle in a hidden dir\n");
    write(".env", b"needle in a hidden file\n");
    write("data.bin", b"needle\x00\x01\x02 binary\n");
    write(
        "unicode.txt",
        "naïve café needle 日本語\nÜNÏCÖDÉ line\nplain\n".as_bytes(),
    );
    dir
}

async fn call(ctx: ToolContext, tool: &str, args: Value) -> (String, bool) {
    let client = mcp_tools::in_process::connect(GrepServer::new(ctx))
        .await
        .unwrap();
    let (is_error, text) = mcp_tools::testing::call_text(&client, tool, args).await;
    let _ = client.cancel().await;
    (text, is_error)
}

async fn grep(root: &Path, args: Value) -> (String, bool) {
    call(ToolContext::new(root).unwrap(), "grep", args).await
}

async fn glob(root: &Path, args: Value) -> (String, bool) {
    call(ToolContext::new(root).unwrap(), "glob", args).await
}

#[tokio::test]
async fn matches_are_listed_as_path_line_text_sorted_by_path() {
    let dir = tree();
    let (text, is_error) = grep(dir.path(), json!({"pattern": "needle"})).await;
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        "a.txt:1:needle a\n\
         b.txt:1:needle b\n\
         src/main.rs:2:    needle();\n\
         src/nested/lib.rs:1:// needle in lib\n\
         unicode.txt:1:naïve café needle 日本語\n"
    );
}

#[tokio::test]
async fn gitignored_hidden_and_binary_files_are_not_searched() {
    let dir = tree();
    let (text, _) = grep(dir.path(), json!({"pattern": "needle"})).await;
    for absent in [
        "ignored/",
        "debug.log",
        ".hidden",
        ".env",
        "data.bin",
        "skipped.rs",
    ] {
        assert!(!text.contains(absent), "{absent} in\n{text}");
    }
}

#[tokio::test]
async fn case_insensitive_matches_unicode_letters() {
    let dir = tree();
    let (text, _) = grep(
        dir.path(),
        json!({"pattern": "ünïcödé", "case_insensitive": true}),
    )
    .await;
    assert_eq!(text, "unicode.txt:2:ÜNÏCÖDÉ line\n");
    let (text, _) = grep(dir.path(), json!({"pattern": "ünïcödé"})).await;
    assert_eq!(text, "No matches for `ünïcödé`.");
}

#[tokio::test]
async fn fixed_strings_search_literal_text() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("f.txt"), "a.b(c\naxb(c\n").unwrap();
    let (text, is_error) = grep(
        dir.path(),
        json!({"pattern": "a.b(c", "fixed_strings": true}),
    )
    .await;
    assert!(!is_error);
    assert_eq!(text, "f.txt:1:a.b(c\n");
}

#[tokio::test]
async fn context_lines_surround_matches_and_gaps_are_marked() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (1..=20).map(|n| format!("line {n}\n")).collect();
    fs::write(dir.path().join("f.txt"), lines).unwrap();
    let (text, _) = grep(
        dir.path(),
        json!({"pattern": "^line (5|15)$", "context_lines": 1}),
    )
    .await;
    assert_eq!(
        text,
        "f.txt-4-line 4\nf.txt:5:line 5\nf.txt-6-line 6\n--\nf.txt-14-line 14\nf.txt:15:line 15\nf.txt-16-line 16\n"
    );
}

#[tokio::test]
async fn output_is_bounded_and_says_how_many_matches_were_not_shown() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (1..=300).map(|n| format!("hit {n}\n")).collect();
    fs::write(dir.path().join("a.txt"), &lines).unwrap();
    fs::write(dir.path().join("b.txt"), &lines).unwrap();
    let (text, is_error) = grep(dir.path(), json!({"pattern": "hit"})).await;
    assert!(!is_error);
    let shown: Vec<&str> = text.lines().filter(|l| l.contains(":hit ")).collect();
    assert_eq!(shown.len(), 200);
    assert_eq!(shown[0], "a.txt:1:hit 1");
    assert_eq!(shown[199], "a.txt:200:hit 200");
    assert!(
        text.ends_with("[400 more matches not shown (600 matches in 2 files); narrow the pattern, path or glob, or raise max_results]"),
        "{text}"
    );
    let (text, _) = grep(dir.path(), json!({"pattern": "hit", "max_results": 3})).await;
    assert_eq!(
        text.lines().next_back().unwrap(),
        "[597 more matches not shown (600 matches in 2 files); narrow the pattern, path or glob, or raise max_results]"
    );
}

#[tokio::test]
async fn the_output_cap_cuts_at_a_line_and_keeps_the_footer() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (1..=100)
        .map(|n| format!("hit {n:03} {}\n", "z".repeat(40)))
        .collect();
    fs::write(dir.path().join("a.txt"), &lines).unwrap();
    let mut ctx = ToolContext::new(dir.path()).unwrap();
    ctx.max_output = 1_000;
    let (text, _) = call(ctx, "grep", json!({"pattern": "hit"})).await;
    assert!(text.len() <= 1_000, "{} bytes", text.len());
    let shown = text.lines().filter(|l| l.starts_with("a.txt:")).count();
    assert!(shown > 5, "{text}");
    assert!(
        text.ends_with(&format!(
            "[{} more matches not shown (100 matches in 1 files); narrow the pattern, path or glob, or raise max_results]",
            100 - shown
        )),
        "{text}"
    );
}

#[tokio::test]
async fn the_bound_holds_across_many_files_searched_in_parallel() {
    let dir = tempfile::tempdir().unwrap();
    for n in 0..400 {
        fs::write(dir.path().join(format!("f{n:03}.txt")), "x\nx\n").unwrap();
    }
    let (text, _) = grep(dir.path(), json!({"pattern": "x", "max_results": 50})).await;
    let shown: Vec<&str> = text.lines().filter(|l| l.ends_with(":x")).collect();
    assert_eq!(shown.len(), 50);
    // The first 50 matches by path, whatever thread found them.
    assert_eq!(shown[0], "f000.txt:1:x");
    assert_eq!(shown[49], "f024.txt:2:x");
    assert!(text.contains("[750 more matches not shown (800 matches in 400 files)"));
}

#[tokio::test]
async fn a_minified_line_is_cut_around_the_match() {
    let dir = tempfile::tempdir().unwrap();
    let line = format!("{}needle{}\n", "x".repeat(50_000), "y".repeat(50_000));
    fs::write(dir.path().join("min.js"), line).unwrap();
    let (text, _) = grep(dir.path(), json!({"pattern": "needle"})).await;
    assert!(text.starts_with("min.js:1:…"), "{text}");
    assert!(text.contains("needle"));
    assert!(text.ends_with("… [line cut: 100006 bytes]\n"), "{text}");
    assert!(text.len() < 500);
}

#[tokio::test]
async fn an_invalid_regex_is_an_error_quoting_the_pattern() {
    let dir = tree();
    let (text, is_error) = grep(dir.path(), json!({"pattern": "fn (main"})).await;
    assert!(is_error);
    assert!(text.starts_with("invalid regex `fn (main`"), "{text}");
}

#[tokio::test]
async fn a_path_outside_the_workspace_is_refused() {
    let dir = tree();
    let (text, is_error) = grep(dir.path(), json!({"pattern": "x", "path": "../"})).await;
    assert!(is_error);
    assert!(
        text.starts_with("path escapes the workspace root"),
        "{text}"
    );
    let (text, is_error) = glob(dir.path(), json!({"pattern": "*", "path": "/etc"})).await;
    assert!(is_error);
    assert!(
        text.starts_with("path escapes the workspace root"),
        "{text}"
    );
}

#[tokio::test]
async fn symlinks_out_of_the_workspace_are_not_followed() {
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.txt"), "needle outside\n").unwrap();
    let dir = tree();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        dir.path().join("file-link.txt"),
    )
    .unwrap();
    let (text, _) = grep(dir.path(), json!({"pattern": "outside"})).await;
    assert_eq!(text, "No matches for `outside`.");
}

#[tokio::test]
async fn path_and_glob_narrow_the_search() {
    let dir = tree();
    let (text, _) = grep(dir.path(), json!({"pattern": "needle", "path": "src"})).await;
    assert_eq!(
        text,
        "src/main.rs:2:    needle();\nsrc/nested/lib.rs:1:// needle in lib\n"
    );
    let (text, _) = grep(dir.path(), json!({"pattern": "needle", "glob": "*.txt"})).await;
    assert_eq!(
        text,
        "a.txt:1:needle a\nb.txt:1:needle b\nunicode.txt:1:naïve café needle 日本語\n"
    );
    let (text, _) = grep(
        dir.path(),
        json!({"pattern": "needle", "glob": "!*.txt", "path": "."}),
    )
    .await;
    assert_eq!(
        text,
        "src/main.rs:2:    needle();\nsrc/nested/lib.rs:1:// needle in lib\n"
    );
    let (text, _) = grep(
        dir.path(),
        json!({"pattern": "needle", "path": "src/main.rs"}),
    )
    .await;
    assert_eq!(text, "src/main.rs:2:    needle();\n");
}

#[tokio::test]
async fn a_missing_path_is_an_error_naming_it() {
    let dir = tree();
    let (text, is_error) = grep(dir.path(), json!({"pattern": "x", "path": "nope"})).await;
    assert!(is_error);
    assert!(
        text.starts_with("no such file or directory: nope"),
        "{text}"
    );
}

#[tokio::test]
async fn glob_lists_matching_files_sorted_without_ignored_ones() {
    let dir = tree();
    let (text, is_error) = glob(dir.path(), json!({"pattern": "*.rs"})).await;
    assert!(!is_error);
    assert_eq!(text, "src/main.rs\nsrc/nested/lib.rs\n");
    let (text, _) = glob(dir.path(), json!({"pattern": "src/*.rs"})).await;
    assert_eq!(text, "src/main.rs\n");
    let (text, _) = glob(dir.path(), json!({"pattern": "*.{txt,log}"})).await;
    assert_eq!(text, "a.txt\nb.txt\nunicode.txt\n");
    let (text, _) = glob(
        dir.path(),
        json!({"pattern": "**/*.rs", "path": "src/nested"}),
    )
    .await;
    assert_eq!(text, "src/nested/lib.rs\n");
    let (text, _) = glob(dir.path(), json!({"pattern": "*.zig"})).await;
    assert_eq!(text, "No files match `*.zig`.");
}

#[tokio::test]
async fn glob_output_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    for n in 0..600 {
        fs::write(dir.path().join(format!("f{n:03}.txt")), "").unwrap();
    }
    let (text, _) = glob(dir.path(), json!({"pattern": "*.txt"})).await;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 501);
    assert_eq!(lines[0], "f000.txt");
    assert_eq!(lines[499], "f499.txt");
    assert_eq!(
        lines[500],
        "[100 more files not shown (600 in all); narrow the pattern or path]"
    );
}

#[tokio::test]
async fn an_invalid_glob_is_an_error_quoting_it() {
    let dir = tree();
    let (text, is_error) = glob(dir.path(), json!({"pattern": "src/[a"})).await;
    assert!(is_error);
    assert!(text.starts_with("invalid glob `src/[a`"), "{text}");
    let (text, is_error) = grep(dir.path(), json!({"pattern": "x", "glob": "[z"})).await;
    assert!(is_error);
    assert!(text.starts_with("invalid glob `[z`"), "{text}");
}

#[tokio::test]
async fn both_tools_are_annotated_read_only() {
    let dir = tree();
    let client =
        mcp_tools::in_process::connect(GrepServer::new(ToolContext::new(dir.path()).unwrap()))
            .await
            .unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["glob", "grep"]);
    for tool in &tools {
        let annotations = tool.annotations.as_ref().unwrap();
        assert_eq!(annotations.read_only_hint, Some(true), "{}", tool.name);
        assert_eq!(annotations.destructive_hint, Some(false), "{}", tool.name);
        assert_eq!(annotations.open_world_hint, Some(false), "{}", tool.name);
    }
    let _ = client.cancel().await;
}

#[tokio::test]
async fn schema_file_matches_the_code() {
    let dir = tempfile::tempdir().unwrap();
    let doc = tools_document(
        "grep",
        GrepServer::new(ToolContext::new(dir.path()).unwrap()),
    )
    .await
    .unwrap();
    check_schema_file(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/grep.json"),
        &doc,
    )
    .unwrap();
}
