//! Path escapes (issue 10): one table, every case through the real executor.

use std::os::unix::fs::symlink;
use std::path::Path;

use handoff::agent::tools::OutcomeKind;
use serde_json::json;

use super::{workspace, write};

const SECRET: &str = "TOPSECRET-42";

/// What must hold after a case.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// Refused by confinement (nothing read or written).
    Refused,
    /// Any outcome, as long as nothing outside leaks or changes.
    NoLeak,
}

struct Fixture {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    root: std::path::PathBuf,
    outside: std::path::PathBuf,
}

fn fixture() -> Fixture {
    let repo = tempfile::tempdir().expect("repo");
    let out = tempfile::tempdir().expect("outside");
    let root = repo.path().canonicalize().expect("canon");
    let outside = out.path().canonicalize().expect("canon");
    write(&outside, "secret.txt", SECRET);
    write(&root, ".git/config", "[core]\n");
    write(&root, "src/lib.rs", "pub fn f() {}\n");
    symlink(&outside, root.join("link_out")).expect("symlink dir");
    symlink(outside.join("secret.txt"), root.join("link_file")).expect("symlink file");
    symlink(outside.join("absent.txt"), root.join("dangling")).expect("dangling");
    symlink(root.join("loop_b"), root.join("loop_a")).expect("loop a");
    symlink(root.join("loop_a"), root.join("loop_b")).expect("loop b");
    symlink(root.join(".git"), root.join("link_git")).expect("link git");
    symlink("../../", root.join("src/up")).expect("relative up");
    write(&outside, "shared.txt", "shared\n");
    std::fs::hard_link(outside.join("shared.txt"), root.join("hardlink")).expect("hard link");
    Fixture {
        _dirs: (repo, out),
        root,
        outside,
    }
}

fn snapshot(dir: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = walk(dir)
        .into_iter()
        .map(|p| {
            let content = std::fs::read_to_string(&p).unwrap_or_default();
            (p.display().to_string(), content)
        })
        .collect();
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(walk(&p));
            }
            out.push(p);
        }
    }
    out
}

fn patch_for(path: &str) -> String {
    format!("--- /dev/null\n+++ {path}\n@@ -0,0 +1 @@\n+pwned\n")
}

type Case = (&'static str, &'static str, serde_json::Value, Expect);

/// The escape table: (label, tool, arguments, expectation).
#[rustfmt::skip]
fn cases(fx: &Fixture) -> Vec<Case> {
    let root = fx.root.display().to_string();
    let outside = fx.outside.display().to_string();
    let outside_name = fx.outside.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let long = "a/".repeat(2100);
    let long_name = "n".repeat(300);
    use Expect::{NoLeak, Refused};
    vec![
        ("dotdot", "read_file", json!({"path": "../secret.txt"}), Refused),
        ("dotdot into outside", "read_file", json!({"path": format!("../{outside_name}/secret.txt")}), Refused),
        ("nested dotdot", "read_file", json!({"path": "src/../../x"}), Refused),
        ("curdir dotdot", "read_file", json!({"path": "./.././x"}), Refused),
        ("absolute outside", "read_file", json!({"path": format!("{outside}/secret.txt")}), Refused),
        ("absolute etc", "read_file", json!({"path": "/etc/passwd"}), Refused),
        ("absolute root then dotdot", "write_file", json!({"path": format!("{root}/../pwned"), "content": "x"}), Refused),
        ("symlinked dir out", "read_file", json!({"path": "link_out/secret.txt"}), Refused),
        ("symlinked file out", "read_file", json!({"path": "link_file"}), Refused),
        ("relative symlink up", "read_file", json!({"path": "src/up/etc/passwd"}), Refused),
        ("write through dir link", "write_file", json!({"path": "link_out/new.txt", "content": "x"}), Refused),
        ("overwrite through file link", "write_file", json!({"path": "link_file", "content": "x"}), Refused),
        ("dangling link out", "write_file", json!({"path": "dangling", "content": "x"}), Refused),
        ("symlink loop read", "read_file", json!({"path": "loop_a"}), Refused),
        ("symlink loop write", "write_file", json!({"path": "loop_a/x", "content": "x"}), Refused),
        ("write .git", "write_file", json!({"path": ".git/config", "content": "x"}), Refused),
        ("write .GIT", "write_file", json!({"path": ".GIT/hooks/pre-commit", "content": "x"}), Refused),
        ("write ./.git", "write_file", json!({"path": "./.git/HEAD", "content": "x"}), Refused),
        ("write sub/../.git", "write_file", json!({"path": "src/../.git/config", "content": "x"}), Refused),
        ("write .git.", "write_file", json!({"path": ".git./config", "content": "x"}), Refused),
        ("write nested .Git", "write_file", json!({"path": "vendor/dep/.Git/config", "content": "x"}), Refused),
        ("write via link to .git", "write_file", json!({"path": "link_git/config", "content": "x"}), Refused),
        ("NUL byte", "read_file", json!({"path": "src/lib.rs\u{0}.txt"}), Refused),
        ("newline", "write_file", json!({"path": "a\nb", "content": "x"}), Refused),
        ("escape char", "read_file", json!({"path": "\u{1b}[2Jsrc/lib.rs"}), Refused),
        ("bidi override", "write_file", json!({"path": "src/\u{202e}sr.exe", "content": "x"}), Refused),
        ("very long path", "read_file", json!({"path": long}), Refused),
        ("very long name", "write_file", json!({"path": long_name, "content": "x"}), Refused),
        ("empty path", "read_file", json!({"path": ""}), Refused),
        ("list dotdot", "list_files", json!({"path": ".."}), Refused),
        ("list through link", "list_files", json!({"path": "link_out"}), Refused),
        ("search dotdot", "search", json!({"pattern": "TOPSECRET", "path": ".."}), Refused),
        ("search through link", "search", json!({"pattern": "TOPSECRET", "path": "link_out"}), Refused),
        ("patch dotdot", "apply_patch", json!({"patch": patch_for("b/../pwned")}), Refused),
        ("patch absolute", "apply_patch", json!({"patch": patch_for(&format!("{outside}/pwned"))}), Refused),
        ("patch into .git", "apply_patch", json!({"patch": patch_for("b/.git/hooks/post-checkout")}), Refused),
        ("patch through link", "apply_patch", json!({"patch": patch_for("b/link_out/pwned")}), Refused),
        ("patch deletes outside", "apply_patch", json!({"patch": format!("--- a/link_file\n+++ /dev/null\n@@ -1 +0,0 @@\n-{SECRET}\n")}), Refused),
        ("search whole repo does not follow links", "search", json!({"pattern": "TOPSECRET"}), NoLeak),
        ("list whole repo does not follow links", "list_files", json!({"depth": 6}), NoLeak),
        ("fullwidth dots stay a name", "write_file", json!({"path": "\u{ff0e}\u{ff0e}\u{ff0f}pwned", "content": "x"}), NoLeak),
        ("backslashes stay a name", "write_file", json!({"path": "..\\..\\pwned", "content": "x"}), NoLeak),
        ("a hard link is replaced, not written through", "write_file", json!({"path": "hardlink", "content": "x"}), NoLeak),
        ("patching a hard link replaces it too", "apply_patch", json!({"patch": "--- a/hardlink\n+++ b/hardlink\n@@ -1 +1 @@\n-x\n+y\n"}), NoLeak),
    ]
}

#[tokio::test]
async fn every_escape_is_refused_and_nothing_outside_changes() {
    let fx = fixture();
    let cases = cases(&fx);
    assert!(cases.iter().filter(|c| c.3 == Expect::Refused).count() >= 20);
    let ws = workspace(&fx.root);
    let outside_before = snapshot(&fx.outside);
    let git_before = snapshot(&fx.root.join(".git"));
    let parent_before = snapshot_names(fx.root.parent().expect("parent"));
    for (label, tool, args, expect) in &cases {
        let out = ws.execute(tool, &args.to_string()).await;
        assert!(
            !out.output.contains(SECRET),
            "{label}: leaked: {}",
            out.output
        );
        if *expect == Expect::Refused {
            assert_eq!(out.kind, OutcomeKind::Refused, "{label}: {out:?}");
            assert!(!out.ok, "{label}");
            assert!(
                out.output.starts_with("error: refused: "),
                "{label}: {}",
                out.output
            );
        }
        assert_eq!(
            snapshot(&fx.outside),
            outside_before,
            "{label} changed the outside"
        );
        assert_eq!(
            snapshot(&fx.root.join(".git")),
            git_before,
            "{label} changed .git"
        );
        assert_eq!(
            snapshot_names(fx.root.parent().expect("parent")),
            parent_before,
            "{label}"
        );
    }
    // The look-alike names were created inside the repository, as plain names.
    assert!(fx.root.join("\u{ff0e}\u{ff0e}\u{ff0f}pwned").is_file());
    assert!(fx.root.join("..\\..\\pwned").is_file());
    assert_eq!(
        std::fs::read_to_string(fx.root.join("hardlink")).expect("read"),
        "y\n"
    );
    assert_eq!(
        std::fs::read_to_string(fx.outside.join("shared.txt")).expect("read"),
        "shared\n"
    );
}

/// Names directly inside `dir` (to see that nothing was created next to the repository).
fn snapshot_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains("pwned"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn paths_inside_are_fine_in_every_spelling() {
    let fx = fixture();
    let ws = workspace(&fx.root);
    let abs = fx.root.join("src/lib.rs").display().to_string();
    for path in [
        "src/lib.rs",
        "./src/lib.rs",
        "src/./lib.rs",
        "src/../src/lib.rs",
        abs.as_str(),
    ] {
        let out = ws
            .execute("read_file", &json!({"path": path}).to_string())
            .await;
        assert!(out.ok, "{path}: {out:?}");
        assert!(out.output.contains("pub fn f()"), "{path}");
    }
    // Reading .git is allowed (only writes are refused).
    let out = ws
        .execute("read_file", &json!({"path": ".git/config"}).to_string())
        .await;
    assert!(out.ok, "{out:?}");
}
