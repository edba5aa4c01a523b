//! `apply_patch`: tolerant placement, all-or-nothing, reasons for rejected hunks.

use handoff::agent::tools::OutcomeKind;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{call, read, workspace, write};

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn a_patch_with_wrong_line_numbers_and_counts_applies_where_its_context_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "f.txt", &numbered(30));
    let ws = workspace(dir.path());
    // Header claims line 3 with bogus counts; the context is really at line 20.
    let patch =
        "--- a/f.txt\n+++ b/f.txt\n@@ -3,99 +3,1 @@\n line 19\n-line 20\n+line twenty\n line 21\n";
    let out = call(&ws, "apply_patch", json!({"patch": patch})).await;
    assert!(out.ok, "{out:?}");
    assert_eq!(out.output, "patched f.txt (1 hunk, +1 -1)");
    let expected = numbered(30).replace("line 20\n", "line twenty\n");
    assert_eq!(read(dir.path(), "f.txt"), expected);
}

#[tokio::test]
async fn two_hunks_apply_in_order_and_blank_context_without_its_space_is_accepted() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "a.rs",
        "fn a() {\n    1\n}\n\nfn b() {\n    2\n}\n",
    );
    let ws = workspace(dir.path());
    let patch = "--- a.rs\n+++ a.rs\n@@ -1,3 +1,3 @@\n fn a() {\n-    1\n+    10\n }\n\n@@ -5,3 +5,3 @@\n fn b() {\n-    2\n+    20\n }\n";
    let out = call(&ws, "apply_patch", json!({"patch": patch})).await;
    assert!(out.ok, "{out:?}");
    assert_eq!(
        read(dir.path(), "a.rs"),
        "fn a() {\n    10\n}\n\nfn b() {\n    20\n}\n"
    );
}

#[tokio::test]
async fn a_rejected_hunk_changes_nothing_and_says_which_line_differs() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "f.txt", &numbered(10));
    write(dir.path(), "g.txt", "keep\n");
    let ws = workspace(dir.path());
    let patch = "--- a/g.txt\n+++ b/g.txt\n@@ -1 +1 @@\n-keep\n+changed\n--- a/f.txt\n+++ b/f.txt\n@@ -4,3 +4,3 @@\n line 4\n-line five\n+line 5!\n line 6\n";
    let out = call(&ws, "apply_patch", json!({"patch": patch})).await;
    assert_eq!(out.kind, OutcomeKind::PatchRejected, "{out:?}");
    assert!(!out.writes);
    assert!(out.output.contains("nothing was changed"), "{}", out.output);
    assert!(
        out.output.contains("f.txt: hunk 1 (@@ -4,3 +4,3 @@)"),
        "{}",
        out.output
    );
    assert!(
        out.output
            .contains("line 5 reads `line 5` where the patch expects `line five`"),
        "{}",
        out.output
    );
    // The first file would have applied, but the patch is all or nothing.
    assert_eq!(read(dir.path(), "g.txt"), "keep\n");
    assert_eq!(read(dir.path(), "f.txt"), numbered(10));
}

#[tokio::test]
async fn unparseable_patches_and_missing_files_are_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    let out = call(&ws, "apply_patch", json!({"patch": "please change line 3"})).await;
    assert_eq!(out.kind, OutcomeKind::PatchRejected);
    assert!(out.output.contains("cannot parse"), "{}", out.output);
    let missing = "--- a/nope.txt\n+++ b/nope.txt\n@@ -1 +1 @@\n-a\n+b\n";
    let out = call(&ws, "apply_patch", json!({"patch": missing})).await;
    assert!(
        out.output.contains("`nope.txt` does not exist"),
        "{}",
        out.output
    );
}

#[tokio::test]
async fn create_delete_and_rename() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "old.txt", "one\ntwo\n");
    write(dir.path(), "gone.txt", "bye\n");
    let ws = workspace(dir.path());
    let patch = "--- /dev/null\n+++ b/new/made.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n\
--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n\
--- a/old.txt\n+++ b/moved.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n";
    let out = call(&ws, "apply_patch", json!({"patch": patch})).await;
    assert!(out.ok, "{out:?}");
    assert_eq!(
        out.output,
        "created new/made.txt (+2 -0)\ndeleted gone.txt\nrenamed old.txt to moved.txt (+1 -1)"
    );
    assert_eq!(read(dir.path(), "new/made.txt"), "hello\nworld\n");
    assert!(!dir.path().join("gone.txt").exists());
    assert!(!dir.path().join("old.txt").exists());
    assert_eq!(read(dir.path(), "moved.txt"), "one\n2\n");
    // Creating over an existing file is refused.
    let again = "--- /dev/null\n+++ b/moved.txt\n@@ -0,0 +1 @@\n+x\n";
    let out = call(&ws, "apply_patch", json!({"patch": again})).await;
    assert!(out.output.contains("already exists"), "{}", out.output);
}

#[tokio::test]
async fn line_endings_and_missing_final_newline_are_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "crlf.txt", "a\r\nb\r\nc\r\n");
    write(dir.path(), "mixed.txt", "a\r\nb\nc\r\nd\r\n");
    write(dir.path(), "nonl.txt", "x\ny");
    let ws = workspace(dir.path());
    let patch = "--- a/crlf.txt\n+++ b/crlf.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n\
--- a/mixed.txt\n+++ b/mixed.txt\n@@ -2,2 +2,3 @@\n b\n+new\n-c\n+C\n\
--- a/nonl.txt\n+++ b/nonl.txt\n@@ -1,2 +1,2 @@\n-x\n+X\n y\n\\ No newline at end of file\n";
    let out = call(&ws, "apply_patch", json!({"patch": patch})).await;
    assert!(out.ok, "{out:?}");
    assert_eq!(read(dir.path(), "crlf.txt"), "a\r\nB\r\nc\r\n");
    assert_eq!(read(dir.path(), "nonl.txt"), "X\ny");
    // Untouched lines keep their own endings; added lines take the dominant one (CRLF).
    assert_eq!(read(dir.path(), "mixed.txt"), "a\r\nb\nnew\r\nC\r\nd\r\n");
}

#[tokio::test]
async fn trailing_whitespace_in_context_is_forgiven_but_not_rewritten() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "w.txt", "keep   \nold\n");
    let ws = workspace(dir.path());
    let patch = "--- a/w.txt\n+++ b/w.txt\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n";
    let out = call(&ws, "apply_patch", json!({"patch": patch})).await;
    assert!(out.ok, "{out:?}");
    assert_eq!(read(dir.path(), "w.txt"), "keep   \nnew\n");
}
