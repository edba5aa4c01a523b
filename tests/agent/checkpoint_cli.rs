//! Checkpoints a user can use, through the real binary: the end-of-session summary names
//! what changed and the commands to see or undo it; `diff`, `restore` and `sessions` do
//! what those commands promise; old sessions are pruned at a session start; outside git the
//! session warns that it keeps none.

use std::ffi::OsStr;
use std::path::Path;

use handoff::demo::server::Script;

use super::support::{FILES, bin, config, finish, repo, servers, write_config, write_done};

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

/// A junior that writes `content` to `path` with the file tool, then finishes.
fn writes(path: &str, content: &str) -> Script {
    use handoff::demo::script::{confident, reply};
    let write = reply(
        confident("Writing."),
        Some((
            "w1",
            "write_file",
            serde_json::json!({"path": path, "content": content}),
        )),
    );
    Script::new(vec![write, finish()])
}

/// Runs `exec` on `dir` against a junior that writes `done.txt` and finishes; returns the
/// run and the parsed `--json` summary when `json`.
async fn exec_writing_done(
    home: &Path,
    dir: &Path,
    extra: &[&OsStr],
) -> (super::support::Bin, Option<serde_json::Value>) {
    let (j, s) = servers(
        Script::new(vec![write_done(), finish()]),
        Script::new(vec![]),
    )
    .await;
    let cfg = write_config(home, &config(&j, &s));
    let log = home.join("s.jsonl");
    let mut args: Vec<&OsStr> = vec![
        os("exec"),
        os("--repo"),
        dir.as_os_str(),
        os("--config"),
        cfg.as_os_str(),
        os("--log"),
        log.as_os_str(),
    ];
    args.extend_from_slice(extra);
    args.push(os("write done.txt"));
    let out = bin(home, &args, None, &[]).await;
    let json = extra.contains(&os("--json")).then(|| {
        let last = out.stdout.lines().last().expect("a summary line");
        serde_json::from_str(last).expect("summary json")
    });
    (out, json)
}

#[tokio::test]
async fn a_session_can_be_diffed_listed_and_restored_from_its_summary() {
    let home = tempfile::tempdir().expect("tempdir");
    let dir = repo(&FILES);
    let root = dir.path();
    let (out, summary) = exec_writing_done(home.path(), root, &[os("--json")]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let summary = summary.expect("json");
    let session = summary["session"].as_str().expect("session id").to_string();
    assert_eq!(summary["finish"], "wrote done.txt");
    assert_eq!(summary["changes"]["files_changed"], 1, "{summary}");
    assert_eq!(summary["changes"]["insertions"], 1);
    let diff_cmd = summary["changes"]["diff_command"].as_str().expect("diff");
    assert!(
        diff_cmd.starts_with(&format!("handoff diff {session} --repo ")),
        "{diff_cmd}"
    );
    let undo = summary["changes"]["undo_command"].as_str().expect("undo");
    assert!(
        undo.starts_with(&format!("handoff restore {session} 0 --repo ")),
        "{undo}"
    );

    let r = root.as_os_str();
    let diff = bin(
        home.path(),
        &[os("diff"), os(&session), os("--repo"), r],
        None,
        &[],
    )
    .await;
    assert_eq!(diff.code, Some(0), "{}", diff.stderr);
    assert!(
        diff.stdout.contains("new file done.txt") || diff.stdout.contains("done.txt"),
        "{}",
        diff.stdout
    );
    assert!(diff.stdout.contains("+done"), "{}", diff.stdout);
    assert!(
        diff.stdout.contains("1 file changed, +1 -0"),
        "{}",
        diff.stdout
    );
    let stat = bin(
        home.path(),
        &[os("diff"), os("last"), os("--stat"), os("--repo"), r],
        None,
        &[],
    )
    .await;
    assert!(
        !stat.stdout.contains("+done"),
        "--stat prints no lines: {}",
        stat.stdout
    );

    let list = bin(
        home.path(),
        &[os("sessions"), os("list"), os("--repo"), r],
        None,
        &[],
    )
    .await;
    assert_eq!(list.code, Some(0), "{}", list.stderr);
    assert!(list.stdout.contains(&session), "{}", list.stdout);

    // The user edits after the session: a restore refuses (exit 4) and touches nothing.
    std::fs::write(root.join("notes.txt"), "mine\n").expect("edit");
    let refused = bin(
        home.path(),
        &[os("restore"), os(&session), os("0"), os("--repo"), r],
        None,
        &[],
    )
    .await;
    assert_eq!(refused.code, Some(4), "{}", refused.stderr);
    assert!(refused.stderr.contains("notes.txt"), "{}", refused.stderr);
    assert!(root.join("done.txt").exists());
    assert_eq!(
        std::fs::read_to_string(root.join("notes.txt")).expect("read"),
        "mine\n"
    );

    // Forced: back to the start, and the edit is kept under a name the output gives.
    let forced = bin(
        home.path(),
        &[
            os("restore"),
            os(&session),
            os("0"),
            os("--force"),
            os("--repo"),
            r,
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(forced.code, Some(0), "{}", forced.stderr);
    assert!(!root.join("done.txt").exists());
    assert_eq!(
        std::fs::read_to_string(root.join("notes.txt")).expect("read"),
        "hello\n"
    );
    let kept = forced
        .stdout
        .split('`')
        .nth(1)
        .expect("the kept name in backquotes")
        .to_string();
    assert!(kept.starts_with("before-restore-"), "{}", forced.stdout);
    let undo = bin(
        home.path(),
        &[os("restore"), os(&session), os(&kept), os("--repo"), r],
        None,
        &[],
    )
    .await;
    assert_eq!(undo.code, Some(0), "{}", undo.stderr);
    assert_eq!(
        std::fs::read_to_string(root.join("notes.txt")).expect("read"),
        "mine\n"
    );
    assert!(root.join("done.txt").exists());

    let missing = bin(
        home.path(),
        &[os("diff"), os("no-such-session"), os("--repo"), r],
        None,
        &[],
    )
    .await;
    assert_eq!(missing.code, Some(4), "{}", missing.stderr);
}

#[tokio::test]
async fn a_gitattributes_that_marks_files_binary_hides_no_edit_from_the_diff() {
    let home = tempfile::tempdir().expect("tempdir");
    let mut files = FILES.to_vec();
    files.push((".gitattributes", "* -diff\n"));
    let dir = repo(&files);
    let root = dir.path();
    let (out, summary) = exec_writing_done(home.path(), root, &[os("--json")]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let summary = summary.expect("json");
    assert_eq!(summary["changes"]["insertions"], 1, "{summary}");
    let session = summary["session"].as_str().expect("session id").to_string();
    let diff = bin(
        home.path(),
        &[os("diff"), os(&session), os("--repo"), root.as_os_str()],
        None,
        &[],
    )
    .await;
    assert_eq!(diff.code, Some(0), "{}", diff.stderr);
    assert!(diff.stdout.contains("+done"), "{}", diff.stdout);
    assert!(!diff.stdout.contains("Binary"), "{}", diff.stdout);
}

#[tokio::test]
async fn a_step_whose_tree_cannot_be_checkpointed_fails_its_call_and_exits_5() {
    let home = tempfile::tempdir().expect("tempdir");
    let dir = repo(&FILES);
    let root = dir.path();
    let (j, s) = servers(writes("GIT~1/x.txt", "planted\n"), Script::new(vec![])).await;
    let cfg = write_config(home.path(), &config(&j, &s));
    let log = home.path().join("s.jsonl");
    let out = bin(
        home.path(),
        &[
            os("exec"),
            os("--repo"),
            root.as_os_str(),
            os("--config"),
            cfg.as_os_str(),
            os("--log"),
            log.as_os_str(),
            os("plant"),
        ],
        None,
        &[],
    )
    .await;
    let events = super::support::log_events(&log);
    let warned = events
        .iter()
        .any(|e| e["type"] == "warning" && e["kind"] == "checkpoint_failed");
    assert!(root.join("GIT~1/x.txt").exists(), "the file tool wrote it");
    assert!(warned, "no warning: {}\n{}", out.stdout, out.stderr);
    // Issue 50, item 7: the call fails (the model is told why), the summary says the
    // changes it shows are incomplete (both steps: every later checkpoint fails too), and
    // the session exits 5, not 0.
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_resulted")
        .cloned()
        .unwrap_or_default();
    assert_eq!(result["ok"], false, "{result}");
    assert!(
        result["output"]
            .as_str()
            .is_some_and(|o| o.contains("could not checkpoint the work tree")),
        "{result}"
    );
    assert!(
        out.stdout
            .contains("unverified   2 step(s) could not be checkpointed"),
        "{}",
        out.stdout
    );
    assert_eq!(out.code, Some(5), "{}\n{}", out.stdout, out.stderr);
}

#[tokio::test]
async fn the_text_summary_shows_what_changed_and_o_writes_the_finish_summary() {
    let home = tempfile::tempdir().expect("tempdir");
    let dir = repo(&FILES);
    let last = home.path().join("last.txt");
    let (out, _) = exec_writing_done(home.path(), dir.path(), &[os("-o"), last.as_os_str()]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let text = &out.stdout;
    for want in [
        "outcome      unlabelled",
        "finish       wrote done.txt",
        "changes      1 file changed, +1 -0",
        "done.txt | +1 -0",
        "cost         $",
        "diff         handoff diff ",
        "undo         handoff restore ",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    assert_eq!(
        std::fs::read_to_string(&last).expect("-o file"),
        "wrote done.txt\n"
    );
}

#[tokio::test]
async fn old_sessions_are_pruned_when_a_session_starts() {
    let home = tempfile::tempdir().expect("tempdir");
    let dir = repo(&FILES);
    {
        // A session from 2020: a checkpoint commit dated then, under the namespace.
        let git = git2::Repository::open(dir.path()).expect("open");
        let head = git.head().expect("head").peel_to_commit().expect("commit");
        let old = git2::Signature::new(
            "handoff",
            "handoff@localhost",
            &git2::Time::new(1_577_836_800, 0),
        )
        .expect("sig");
        let id = git
            .commit(
                None,
                &old,
                &old,
                "old",
                &head.tree().expect("tree"),
                &[&head],
            )
            .expect("commit");
        git.reference("refs/handoff/1577836800-000000/0", id, true, "old")
            .expect("ref");
    }
    let (out, summary) = exec_writing_done(home.path(), dir.path(), &[os("--json")]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("removed the checkpoints of 1 old session"),
        "{}",
        out.stderr
    );
    let git = git2::Repository::open(dir.path()).expect("open");
    assert!(
        git.find_reference("refs/handoff/1577836800-000000/0")
            .is_err()
    );
    let session = summary.expect("json")["session"]
        .as_str()
        .expect("id")
        .to_string();
    assert!(
        git.find_reference(&format!("refs/handoff/{session}/0"))
            .is_ok()
    );
}

#[tokio::test]
async fn outside_git_the_session_warns_that_it_keeps_no_checkpoints() {
    let home = tempfile::tempdir().expect("tempdir");
    let plain = tempfile::tempdir().expect("tempdir");
    std::fs::write(plain.path().join("notes.txt"), "hello\n").expect("write");
    let (out, summary) = exec_writing_done(home.path(), plain.path(), &[os("--json")]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("not inside a git repository"),
        "{}",
        out.stderr
    );
    let summary = summary.expect("json");
    assert!(summary["changes"].is_null(), "{summary}");
    assert!(
        summary["no_checkpoints"]
            .as_str()
            .unwrap_or_default()
            .contains("git init"),
        "{summary}"
    );
    let diff = bin(
        home.path(),
        &[
            os("diff"),
            os("last"),
            os("--repo"),
            plain.path().as_os_str(),
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(diff.code, Some(4), "{}", diff.stderr);
    assert!(
        diff.stderr.contains("not inside a git repository"),
        "{}",
        diff.stderr
    );
}

/// Issue 50, item 8: a session that changes `.gitattributes` (here to `* -diff`, which
/// hides edits from git's own diff) is named in the summary, in the trace and in JSON.
#[tokio::test]
async fn a_changed_gitattributes_is_named_in_the_summary() {
    let home = tempfile::tempdir().expect("tempdir");
    let dir = repo(&FILES);
    let root = dir.path();
    for json in [false, true] {
        let (j, s) = servers(writes(".gitattributes", "* -diff\n"), Script::new(vec![])).await;
        let cfg = write_config(home.path(), &config(&j, &s));
        let mut args = vec![
            os("exec"),
            os("--repo"),
            root.as_os_str(),
            os("--config"),
            cfg.as_os_str(),
        ];
        if json {
            args.push(os("--json"));
        }
        args.push(os("set the attributes"));
        let out = bin(home.path(), &args, None, &[]).await;
        if json {
            let summary: serde_json::Value = out
                .stdout
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .find(|v| v.get("changes").is_some())
                .expect("a JSON summary");
            assert_eq!(
                summary["changes"]["attributes"],
                serde_json::json!([".gitattributes"]),
                "{summary}"
            );
        } else {
            let text = format!("{}{}", out.stdout, out.stderr);
            assert!(
                text.contains("attributes   changed .gitattributes"),
                "{text}"
            );
        }
        // The second run starts from the same tree.
        std::fs::remove_file(root.join(".gitattributes")).ok();
    }
}
