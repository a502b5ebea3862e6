//! Every tool, its good path and its error paths.

use serde_json::json;

use crate::support::Fixture;

#[tokio::test]
async fn tools_are_listed_in_a_stable_order_with_honest_annotations() {
    let fx = Fixture::new().await;
    let tools = fx.client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "apply_patch",
            "edit_file",
            "list_dir",
            "read_file",
            "write_file"
        ]
    );
    for tool in &tools {
        let a = tool.annotations.as_ref().expect("every tool is annotated");
        let read_only = matches!(tool.name.as_ref(), "read_file" | "list_dir");
        assert_eq!(a.read_only_hint, Some(read_only), "{}", tool.name);
        assert_eq!(a.destructive_hint, Some(!read_only), "{}", tool.name);
        assert_eq!(a.open_world_hint, Some(false), "{}", tool.name);
        let props = tool.input_schema["properties"].as_object().unwrap();
        for (field, schema) in props {
            assert!(
                schema.get("description").is_some(),
                "{}.{field} has no description",
                tool.name
            );
        }
    }
}

#[tokio::test]
async fn read_file_numbers_lines_and_pages_with_offset_and_limit() {
    let fx = Fixture::new().await;
    fx.write("a.txt", "one\ntwo\nthree\nfour\n");
    let all = fx.call("read_file", json!({"path": "a.txt"})).await.ok();
    assert_eq!(
        all,
        "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n"
    );
    let part = fx
        .call(
            "read_file",
            json!({"path": "a.txt", "offset": 2, "limit": 2}),
        )
        .await
        .ok();
    assert_eq!(
        part,
        "     2\ttwo\n     3\tthree\n[showing lines 2-3; more follow, continue with offset=4]\n"
    );
}

#[tokio::test]
async fn read_file_refuses_binary_files_directories_and_missing_files() {
    let fx = Fixture::new().await;
    std::fs::write(fx.root().join("bin.dat"), [0u8, 1, 2, 3, 0, 255]).unwrap();
    assert!(
        fx.call("read_file", json!({"path": "bin.dat"}))
            .await
            .err()
            .contains("binary file")
    );
    std::fs::create_dir(fx.root().join("dir")).unwrap();
    assert!(
        fx.call("read_file", json!({"path": "dir"}))
            .await
            .err()
            .contains("use list_dir")
    );
    let missing = fx
        .call("read_file", json!({"path": "nope.txt"}))
        .await
        .err();
    assert_eq!(
        missing,
        "nope.txt does not exist; check the path with list_dir"
    );
    fx.write("short.txt", "a\n");
    let past = fx
        .call("read_file", json!({"path": "short.txt", "offset": 5}))
        .await
        .err();
    assert!(past.contains("past the end"), "{past}");
    assert!(
        fx.call("read_file", json!({"path": "short.txt", "offset": 0}))
            .await
            .err()
            .contains("1-based")
    );
}

#[tokio::test]
async fn read_file_over_the_hard_cap_asks_for_offset_and_limit() {
    let fx = Fixture::new().await;
    let line = "x".repeat(99) + "\n";
    fx.write("big.txt", &line.repeat(50_000)); // 5 MB
    let err = fx.call("read_file", json!({"path": "big.txt"})).await.err();
    assert!(
        err.contains("over the 4 MB read cap") && err.contains("offset and limit"),
        "{err}"
    );
    let part = fx
        .call(
            "read_file",
            json!({"path": "big.txt", "offset": 49_999, "limit": 5}),
        )
        .await
        .ok();
    assert!(
        part.starts_with(" 49999\t") && part.contains(" 50000\t"),
        "{part}"
    );
}

#[tokio::test]
async fn read_file_output_is_capped_with_a_way_to_continue() {
    let fx = Fixture::with_max_output(100).await;
    fx.write("a.txt", &"0123456789\n".repeat(50));
    let out = fx.call("read_file", json!({"path": "a.txt"})).await.ok();
    assert!(out.len() < 250, "{out}");
    assert!(out.contains("continue with offset="), "{out}");
}

#[tokio::test]
async fn read_file_handles_unicode_and_cuts_very_long_lines() {
    let fx = Fixture::new().await;
    fx.write("u.txt", &format!("héllo 世界\n{}\n", "é".repeat(3000)));
    let out = fx.call("read_file", json!({"path": "u.txt"})).await.ok();
    assert!(out.starts_with("     1\théllo 世界\n"), "{out}");
    assert!(out.contains("[line cut: 2000 more bytes]"), "{out}");
}

#[tokio::test]
async fn write_file_creates_parents_and_overwrites_atomically() {
    let fx = Fixture::new().await;
    let out = fx
        .call(
            "write_file",
            json!({"path": "deep/er/f.txt", "content": "hi"}),
        )
        .await
        .ok();
    assert_eq!(out, "created deep/er/f.txt (2 bytes)");
    assert_eq!(fx.read("deep/er/f.txt"), "hi");
    let out = fx
        .call(
            "write_file",
            json!({"path": "deep/er/f.txt", "content": "bye"}),
        )
        .await
        .ok();
    assert_eq!(out, "overwrote deep/er/f.txt (3 bytes)");
    assert_eq!(fx.read("deep/er/f.txt"), "bye");
    // No temp files are left behind.
    let names: Vec<_> = std::fs::read_dir(fx.root().join("deep/er"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["f.txt"]);
}

#[tokio::test]
async fn write_file_keeps_the_mode_of_an_existing_file() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new().await;
    fx.write("run.sh", "#!/bin/sh\n");
    std::fs::set_permissions(
        fx.root().join("run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    fx.call(
        "write_file",
        json!({"path": "run.sh", "content": "#!/bin/sh\necho\n"}),
    )
    .await
    .ok();
    let mode = std::fs::metadata(fx.root().join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
}

#[tokio::test]
async fn write_file_refuses_a_directory() {
    let fx = Fixture::new().await;
    std::fs::create_dir(fx.root().join("d")).unwrap();
    assert!(
        fx.call("write_file", json!({"path": "d", "content": "x"}))
            .await
            .err()
            .contains("is a directory")
    );
}

#[tokio::test]
async fn edit_file_replaces_a_unique_match() {
    let fx = Fixture::new().await;
    fx.write("m.rs", "fn a() {}\nfn b() {}\n");
    let out = fx
        .call("edit_file", json!({"path": "m.rs", "old_string": "fn b() {}", "new_string": "fn b() {\n    a();\n}"}))
        .await
        .ok();
    assert_eq!(
        out,
        "edited m.rs: replaced 1 occurrence (first at lines 2-4)"
    );
    assert_eq!(fx.read("m.rs"), "fn a() {}\nfn b() {\n    a();\n}\n");
}

#[tokio::test]
async fn edit_file_errors_name_the_fix() {
    let fx = Fixture::new().await;
    fx.write("m.txt", "x y x\n");
    let none = fx
        .call(
            "edit_file",
            json!({"path": "m.txt", "old_string": "zz", "new_string": "q"}),
        )
        .await
        .err();
    assert!(
        none.starts_with("old_string not found in m.txt") && none.contains("read the file"),
        "{none}"
    );
    let many = fx
        .call(
            "edit_file",
            json!({"path": "m.txt", "old_string": "x", "new_string": "q"}),
        )
        .await
        .err();
    assert_eq!(
        many,
        "old_string occurs 2 times in m.txt; pass replace_all=true or add surrounding context to make it unique"
    );
    assert_eq!(fx.read("m.txt"), "x y x\n", "a failed edit changes nothing");
    let all = fx
        .call(
            "edit_file",
            json!({"path": "m.txt", "old_string": "x", "new_string": "q", "replace_all": true}),
        )
        .await
        .ok();
    assert!(all.contains("replaced 2 occurrences"), "{all}");
    assert_eq!(fx.read("m.txt"), "q y q\n");
    let missing = fx
        .call(
            "edit_file",
            json!({"path": "no.txt", "old_string": "a", "new_string": "b"}),
        )
        .await
        .err();
    assert!(missing.contains("does not exist"), "{missing}");
}

#[tokio::test]
async fn apply_patch_modifies_creates_and_deletes_files() {
    let fx = Fixture::new().await;
    fx.write("src/lib.rs", "fn one() {}\nfn two() {}\nfn three() {}\n");
    fx.write("old.txt", "bye\n");
    let patch = "\
diff --git a/src/lib.rs b/src/lib.rs
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,3 +1,3 @@
 fn one() {}
-fn two() {}
+fn two() { one() }
 fn three() {}
diff --git a/new/file.txt b/new/file.txt
new file mode 100644
--- /dev/null
+++ b/new/file.txt
@@ -0,0 +1,2 @@
+hello
+world
diff --git a/old.txt b/old.txt
deleted file mode 100644
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
";
    let out = fx.call("apply_patch", json!({"patch": patch})).await.ok();
    assert_eq!(
        out,
        "applied patch:\nM src/lib.rs\nA new/file.txt\nD old.txt"
    );
    assert_eq!(
        fx.read("src/lib.rs"),
        "fn one() {}\nfn two() { one() }\nfn three() {}\n"
    );
    assert_eq!(fx.read("new/file.txt"), "hello\nworld\n");
    assert!(!fx.root().join("old.txt").exists());
}

#[tokio::test]
async fn apply_patch_is_all_or_nothing() {
    let fx = Fixture::new().await;
    fx.write("a.txt", "a\n");
    fx.write("b.txt", "b\n");
    let patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n--- /dev/null\n+++ b/c.txt\n@@ -0,0 +1 @@\n+c\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-not there\n+B\n";
    let err = fx.call("apply_patch", json!({"patch": patch})).await.err();
    assert!(
        err.starts_with("hunk 1 (`@@ -1 +1 @@`) of b.txt does not apply"),
        "{err}"
    );
    assert_eq!(fx.read("a.txt"), "a\n");
    assert_eq!(fx.read("b.txt"), "b\n");
    assert!(!fx.root().join("c.txt").exists());
}

#[tokio::test]
async fn apply_patch_renames_and_refuses_to_create_over_a_file() {
    let fx = Fixture::new().await;
    fx.write("x.txt", "same\n");
    let rename =
        "diff --git a/x.txt b/y.txt\nsimilarity index 100%\nrename from x.txt\nrename to y.txt\n";
    assert_eq!(
        fx.call("apply_patch", json!({"patch": rename})).await.ok(),
        "applied patch:\nA y.txt\nD x.txt"
    );
    assert_eq!(fx.read("y.txt"), "same\n");
    let create = "--- /dev/null\n+++ b/y.txt\n@@ -0,0 +1 @@\n+new\n";
    assert!(
        fx.call("apply_patch", json!({"patch": create}))
            .await
            .err()
            .contains("already exists")
    );
    assert!(
        fx.call("apply_patch", json!({"patch": "not a diff"}))
            .await
            .err()
            .contains("no file changes")
    );
}

#[tokio::test]
async fn list_dir_is_sorted_marks_directories_and_respects_gitignore() {
    let fx = Fixture::new().await;
    fx.write(".gitignore", "target/\n*.log\n");
    fx.write("src/main.rs", "");
    fx.write("b.txt", "");
    fx.write("a.log", "");
    fx.write("target/debug/x", "");
    fx.write(".git/HEAD", "ref: refs/heads/main\n");
    let out = fx.call("list_dir", json!({})).await.ok();
    assert_eq!(out, ".gitignore\nb.txt\nsrc/\nsrc/main.rs\n");
    let all = fx
        .call("list_dir", json!({"include_ignored": true, "depth": 1}))
        .await
        .ok();
    assert_eq!(all, ".gitignore\na.log\nb.txt\nsrc/\ntarget/\n");
    let sub = fx.call("list_dir", json!({"path": "src"})).await.ok();
    assert_eq!(sub, "main.rs\n");
}

#[tokio::test]
async fn list_dir_is_bounded_with_a_note() {
    let fx = Fixture::new().await;
    for i in 0..600 {
        fx.write(&format!("f{i:04}.txt"), "");
    }
    let out = fx.call("list_dir", json!({})).await.ok();
    assert_eq!(out.lines().count(), 501);
    assert!(
        out.ends_with(
            "[... 100 more entries not shown; list a subdirectory or use a smaller depth]\n"
        ),
        "{out}"
    );
}

#[tokio::test]
async fn list_dir_errors_are_clear() {
    let fx = Fixture::new().await;
    fx.write("f.txt", "");
    assert!(
        fx.call("list_dir", json!({"path": "f.txt"}))
            .await
            .err()
            .contains("not a directory")
    );
    assert!(
        fx.call("list_dir", json!({"path": "nope"}))
            .await
            .err()
            .contains("does not exist")
    );
    assert!(
        fx.call("list_dir", json!({"depth": 0}))
            .await
            .err()
            .contains("between 1 and 10")
    );
}

#[tokio::test]
async fn bad_arguments_and_unknown_tools_follow_the_mcp_spec() {
    let fx = Fixture::new().await;
    // Arguments that do not fit the schema: an in-band error the model can read.
    let bad = fx.call("read_file", json!({"path": 42})).await.err();
    assert!(bad.contains("failed to deserialize parameters"), "{bad}");
    // An unknown tool: a JSON-RPC error.
    let params = rmcp::model::CallToolRequestParams::new("no_such_tool")
        .with_arguments(serde_json::Map::new());
    assert!(fx.client.call_tool(params).await.is_err());
    // The server is still up.
    fx.write("a.txt", "x\n");
    fx.call("read_file", json!({"path": "a.txt"})).await.ok();
}

/// A patch `git diff` wrote for unusual names: git quotes them, with octal
/// bytes and C escapes; the files land under their real names.
#[tokio::test]
async fn apply_patch_reads_git_quoted_paths() {
    let fx = Fixture::new().await;
    fx.write("tab\tname.txt", "old\n");
    let patch = concat!(
        "diff --git \"a/dir/na\\303\\257ve.txt\" \"b/dir/na\\303\\257ve.txt\"\n",
        "new file mode 100644\n",
        "index 0000000..e69de29\n",
        "--- /dev/null\n",
        "+++ \"b/dir/na\\303\\257ve.txt\"\n",
        "@@ -0,0 +1 @@\n",
        "+caf\\303\\251 stays text\n",
        "diff --git \"a/tab\\tname.txt\" \"b/tab\\tname.txt\"\n",
        "--- \"a/tab\\tname.txt\"\n",
        "+++ \"b/tab\\tname.txt\"\n",
        "@@ -1 +1 @@\n",
        "-old\n",
        "+new\n",
    );
    let out = fx.call("apply_patch", json!({"patch": patch})).await.ok();
    assert_eq!(out, "applied patch:\nA dir/naïve.txt\nM tab\tname.txt");
    assert_eq!(fx.read("dir/naïve.txt"), "caf\\303\\251 stays text\n");
    assert_eq!(fx.read("tab\tname.txt"), "new\n");
    assert!(!fx.root().join("\"b").exists());
}
