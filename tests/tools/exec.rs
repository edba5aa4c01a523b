//! The executor: argument handling, the read-only tools and write_file.

use handoff::agent::tools::{OutcomeKind, is_write};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{call, read, workspace, workspace_with, write};

#[tokio::test]
async fn bad_arguments_are_an_outcome_the_model_sees() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    for (name, args) in [
        ("read_file", "{\"path\": "),
        ("read_file", "{}"),
        ("read_file", "{\"path\": 7}"),
        ("write_file", "{\"path\": \"a\"}"),
        ("list_files", "[\"a\"]"),
        ("search", "{\"pattern\": \"(\"}"),
        ("run", "{\"command\": \"\"}"),
        ("run", "{\"command\": \"ls\", \"timeout_s\": -1}"),
        ("apply_patch", "{\"patch\": null}"),
    ] {
        let out = ws.execute(name, args).await;
        assert_eq!(
            out.kind,
            OutcomeKind::BadArguments,
            "{name} {args}: {out:?}"
        );
        assert!(!out.ok);
        assert!(out.output.starts_with("error: "), "{}", out.output);
    }
    let unknown = ws.execute("delete_everything", "{}").await;
    assert_eq!(unknown.kind, OutcomeKind::ToolError);
    assert!(unknown.output.contains("read_file"), "{}", unknown.output);
    let finish = ws.execute("finish", "{\"summary\":\"done\"}").await;
    assert_eq!(finish.kind, OutcomeKind::ToolError);
}

#[test]
fn writes_are_the_three_mutating_tools() {
    let writes: Vec<&str> = handoff::agent::tools::TOOL_NAMES
        .into_iter()
        .filter(|n| is_write(n, "{}"))
        .collect();
    assert_eq!(writes, vec!["apply_patch", "write_file", "run"]);
}

#[tokio::test]
async fn read_file_numbers_lines_and_honours_the_range() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    write(dir.path(), "src/a.txt", &text);
    let ws = workspace(dir.path());
    let out = call(
        &ws,
        "read_file",
        json!({"path": "src/a.txt", "start_line": 9, "end_line": 10}),
    )
    .await;
    assert!(out.ok, "{out:?}");
    assert_eq!(
        out.output,
        "src/a.txt (lines 9-10 of 12)\n 9  line 9\n10  line 10\n"
    );
    let past = call(
        &ws,
        "read_file",
        json!({"path": "src/a.txt", "start_line": 13}),
    )
    .await;
    assert_eq!(past.kind, OutcomeKind::ToolError);
    let missing = call(&ws, "read_file", json!({"path": "nope.txt"})).await;
    assert!(
        missing.output.contains("does not exist"),
        "{}",
        missing.output
    );
    let dir_out = call(&ws, "read_file", json!({"path": "src"})).await;
    assert!(dir_out.output.contains("list_files"), "{}", dir_out.output);
}

#[tokio::test]
async fn read_file_cuts_at_the_cap_and_says_where_to_read_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text: String = (1..=400)
        .map(|i| format!("{i:04} {}\n", "x".repeat(40)))
        .collect();
    write(dir.path(), "big.txt", &text);
    let ws = workspace_with(dir.path(), |c| c.output_cap_bytes = 1024);
    let out = call(&ws, "read_file", json!({"path": "big.txt"})).await;
    assert!(out.ok);
    assert!(out.output.len() < 1024 + 200, "{}", out.output.len());
    let shown = out.output.lines().filter(|l| l.contains(" xxxx")).count();
    let hint = format!("start_line={}", shown + 1);
    assert!(out.output.contains(&hint), "{}", out.output);
    let next = call(
        &ws,
        "read_file",
        json!({"path": "big.txt", "start_line": shown + 1}),
    )
    .await;
    assert!(
        next.output.contains(&format!("{:04} ", shown + 1)),
        "{}",
        next.output
    );
}

#[tokio::test]
async fn binary_files_are_not_dumped() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.bin"), [0u8, 1, 2, 3]).expect("write");
    let out = call(
        &workspace(dir.path()),
        "read_file",
        json!({"path": "a.bin"}),
    )
    .await;
    assert!(out.output.contains("binary"), "{}", out.output);
}

#[tokio::test]
async fn list_files_respects_gitignore_depth_and_skips_git() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, ".gitignore", "target/\n*.log\n");
    write(root, ".git/HEAD", "ref: refs/heads/main\n");
    write(root, "src/lib.rs", "");
    write(root, "src/deep/er/x.rs", "");
    write(root, "target/debug/junk", "");
    write(root, "run.log", "");
    write(root, ".github/ci.yml", "");
    let ws = workspace(root);
    let out = call(&ws, "list_files", json!({})).await;
    assert_eq!(
        out.output,
        ".github/\n.github/ci.yml\n.gitignore\nsrc/\nsrc/deep/\nsrc/lib.rs"
    );
    let deep = call(&ws, "list_files", json!({"path": "src/deep", "depth": 5})).await;
    assert_eq!(deep.output, "src/deep/er/\nsrc/deep/er/x.rs");
}

#[tokio::test]
async fn gitignore_of_the_root_applies_when_listing_a_subdirectory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, ".gitignore", "*.tmp\n");
    write(root, "src/keep.rs", "");
    write(root, "src/drop.tmp", "");
    let out = call(&workspace(root), "list_files", json!({"path": "src"})).await;
    assert_eq!(out.output, "src/keep.rs");
}

#[tokio::test]
async fn search_finds_lines_skips_ignored_files_and_caps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, ".gitignore", "vendor/\n");
    write(root, "src/a.rs", "fn alpha() {}\nfn beta() {}\n");
    write(root, "src/b.rs", "// alpha here too\n");
    write(root, "vendor/c.rs", "fn alpha() {}\n");
    let ws = workspace(root);
    let out = call(&ws, "search", json!({"pattern": "alpha"})).await;
    assert_eq!(
        out.output,
        "src/a.rs:1: fn alpha() {}\nsrc/b.rs:1: // alpha here too\n"
    );
    let scoped = call(&ws, "search", json!({"pattern": "^fn", "path": "src/a.rs"})).await;
    assert_eq!(
        scoped.output,
        "src/a.rs:1: fn alpha() {}\nsrc/a.rs:2: fn beta() {}\n"
    );
    let none = call(&ws, "search", json!({"pattern": "gamma"})).await;
    assert!(
        none.ok && none.output.starts_with("no matches"),
        "{}",
        none.output
    );

    let many: String = (0..300).map(|i| format!("hit {i}\n")).collect();
    write(root, "many.txt", &many);
    let capped = call(&ws, "search", json!({"pattern": "hit", "path": "many.txt"})).await;
    assert_eq!(
        capped
            .output
            .lines()
            .filter(|l| l.starts_with("many.txt:"))
            .count(),
        100
    );
    assert!(
        capped.output.contains("200 more matches"),
        "{}",
        capped.output
    );
}

#[tokio::test]
async fn write_file_creates_parents_and_reports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    let out = call(
        &ws,
        "write_file",
        json!({"path": "a/b/c.txt", "content": "hi\n"}),
    )
    .await;
    assert!(out.ok && out.writes, "{out:?}");
    assert_eq!(out.output, "created a/b/c.txt (3 bytes)");
    assert_eq!(read(dir.path(), "a/b/c.txt"), "hi\n");
    let again = call(
        &ws,
        "write_file",
        json!({"path": "a/b/c.txt", "content": "yo"}),
    )
    .await;
    assert_eq!(again.output, "replaced a/b/c.txt (2 bytes)");
    let onto_dir = call(&ws, "write_file", json!({"path": "a/b", "content": "x"})).await;
    assert_eq!(onto_dir.kind, OutcomeKind::ToolError);
}

#[tokio::test]
async fn overwriting_keeps_permissions_and_leaves_no_temp_files() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "tool.sh", "#!/bin/sh\n");
    std::fs::set_permissions(
        dir.path().join("tool.sh"),
        std::fs::Permissions::from_mode(0o750),
    )
    .expect("chmod");
    let ws = workspace(dir.path());
    let out = call(
        &ws,
        "write_file",
        json!({"path": "tool.sh", "content": "#!/bin/sh\necho hi\n"}),
    )
    .await;
    assert!(out.ok, "{out:?}");
    let mode = std::fs::metadata(dir.path().join("tool.sh"))
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o750);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("ls")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["tool.sh".to_string()]);
}

#[tokio::test]
async fn a_far_too_broad_search_stops_counting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let many: String = (0..12_000).map(|i| format!("{i}\n")).collect();
    write(dir.path(), "a.txt", &many);
    write(dir.path(), "b.txt", &many);
    let out = call(&workspace(dir.path()), "search", json!({"pattern": "."})).await;
    assert!(out.ok);
    assert!(
        out.output
            .contains("[at least 10000 more matches not shown; the search stopped there"),
        "{}",
        out.output
    );
}
