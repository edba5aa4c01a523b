//! Issue 50, the third red-team pass: what handoff itself reads or runs of the model's tree
//! outside the sandbox (instruction files, `eval`'s re-check and hidden tests), the files
//! the user names on the command line, and what a hostile model or server can make
//! handoff's own process do (a deeply nested code block, oversized `top_logprobs`). Each
//! through the real binary.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use handoff::demo::server::{RawChunk, Reply, Script, ScriptedServer, StreamEnd};

use crate::agent::support::{config, mkfifo, one_command, repo, servers, write_config};

/// What one run of the binary left: exit code, stdout, stderr.
struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs the binary with `args` in `home`, stdin closed; panics when it has not ended
/// within `limit` (what a FIFO or an endless read would do).
async fn handoff(home: &Path, args: &[&OsStr], limit: Duration) -> Out {
    handoff_as(home, args, limit, None).await
}

/// As [`handoff`], as the user `uid` when given (`home` must be theirs).
async fn handoff_as(home: &Path, args: &[&OsStr], limit: Duration, uid: Option<u32>) -> Out {
    let bin = match uid {
        Some(_) => super::binary_for_others(),
        None => PathBuf::from(env!("CARGO_BIN_EXE_handoff")),
    };
    let mut cmd = tokio::process::Command::new(bin);
    if let Some(uid) = uid {
        cmd.uid(uid).gid(uid);
    }
    let run = cmd
        .args(args)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("HOME", home)
        .env_remove("HANDOFF_CONFIG")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(limit, run)
        .await
        .unwrap_or_else(|_| panic!("handoff {args:?} did not end within {limit:?}"))
        .expect("run handoff");
    Out {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `handoff exec` on `dir` with `cfg`, its log beside the config; (exit, log text).
async fn exec(dir: &Path, cfg: &handoff::config::Config, envs: &[(&str, &str)]) -> (Out, String) {
    exec_limited(dir, cfg, envs, None).await
}

/// As [`exec`], with at most `cpu_s` seconds of CPU time for handoff when given
/// (`RLIMIT_CPU`: the kernel stops it with `SIGXCPU` past it). CPU time, not wall time,
/// so a busy machine does not move it.
async fn exec_limited(
    dir: &Path,
    cfg: &handoff::config::Config,
    envs: &[(&str, &str)],
    cpu_s: Option<u64>,
) -> (Out, String) {
    use std::os::unix::process::CommandExt as _;
    let work = tempfile::tempdir().expect("tempdir");
    let cfg_path = write_config(work.path(), cfg);
    let log = work.path().join("s.jsonl");
    let mut cmd = super::exec_command(dir, &cfg_path, &log, "look around");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    if let Some(cpu_s) = cpu_s {
        // SAFETY: one setrlimit call between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let cap = libc::rlimit {
                    rlim_cur: cpu_s,
                    rlim_max: cpu_s,
                };
                if libc::setrlimit(libc::RLIMIT_CPU, &cap) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::from(cmd)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("handoff exec ended")
    .expect("handoff exec ran");
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    (
        Out {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        },
        log,
    )
}

/// Item 3: `AGENTS.md` linked to a key outside the repository, another name linked to
/// `/proc/self/environ` and to `/dev/zero`, a FIFO under a configured name. None of them
/// reaches the model's prompt or hangs the start; each is named in a warning; a regular
/// instruction file is still read.
#[tokio::test]
async fn instruction_files_are_read_only_as_regular_files_inside_the_repository() {
    let outside = tempfile::tempdir().expect("tempdir");
    let key = outside.path().join("id_rsa");
    std::fs::write(&key, "KEY-MARKER-50 private key\n").expect("write key");
    let dir = repo(&[("notes.txt", "hi\n"), ("RULES.md", "Use tabs, always.\n")]);
    std::os::unix::fs::symlink(&key, dir.path().join("AGENTS.md")).expect("symlink");
    std::os::unix::fs::symlink("/proc/self/environ", dir.path().join("ENV.md")).expect("symlink");
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("ZERO.md")).expect("symlink");
    mkfifo(&dir.path().join("FIFO.md"));
    let (j, s) = servers(one_command("echo ran"), Script::new(vec![])).await;
    let mut cfg = config(&j, &s);
    cfg.prompts.instruction_files = ["AGENTS.md", "ENV.md", "ZERO.md", "FIFO.md", "RULES.md"]
        .map(String::from)
        .to_vec();
    let (out, log) = exec(dir.path(), &cfg, &[("ENVIRON_MARKER_50", "ENV-MARKER-50")]).await;
    assert_eq!(out.code, Some(0), "{}\n{log}", out.stderr);
    let bodies: String = j.bodies().iter().map(|b| b.to_string()).collect();
    assert!(bodies.contains("Use tabs, always."), "RULES.md is read");
    for marker in ["KEY-MARKER-50", "ENV-MARKER-50", "\\u0000\\u0000"] {
        assert!(!bodies.contains(marker), "{marker} reached the prompt");
    }
    for (name, why) in [
        ("AGENTS.md", "a symbolic link"),
        ("ENV.md", "a symbolic link"),
        ("ZERO.md", "a symbolic link"),
        ("FIFO.md", "not a regular file"),
    ] {
        assert!(
            out.stderr
                .lines()
                .any(|l| l.contains("warning") && l.contains(name) && l.contains(why)),
            "{name}: {}",
            out.stderr
        );
    }
}

/// Item 12: every file argument gets `--config`'s rule. A FIFO, `/dev/zero` or a
/// directory as `exec --answers`, `eval matcher`, `eval merge`, `replay --policy
/// steps=FILE` or `replay --calibration` is refused at once with the kind named, exit 4;
/// a regular file past the cap is refused with the cap named, without reading it.
#[tokio::test]
async fn every_file_argument_is_read_only_when_regular_and_bounded() {
    let home = tempfile::tempdir().expect("tempdir");
    let fifo = home.path().join("input.jsonl");
    mkfifo(&fifo);
    let huge = home.path().join("huge.jsonl");
    std::fs::File::create(&huge)
        .and_then(|f| f.set_len(300 << 20))
        .expect("a sparse 300 MiB file");
    let dir = repo(&[("notes.txt", "hi\n")]);
    let (j, s) = servers(Script::new(vec![]), Script::new(vec![])).await;
    let cfg = write_config(home.path(), &config(&j, &s));
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/demo_v1.jsonl");
    let out = home.path().join("merged");
    let log = home.path().join("s.jsonl");
    type Args = fn(&Path, &Path, &Path, &Path, &Path, &Path) -> Vec<std::ffi::OsString>;
    let cases: [(&str, Args); 5] = [
        ("exec --answers", |f, cfg, dir, _, _, log| {
            let mut a: Vec<std::ffi::OsString> =
                ["exec", "--repo"].iter().map(Into::into).collect();
            a.extend([dir.into(), "--config".into(), cfg.into(), "--log".into()]);
            a.extend([log.into(), "--answers".into(), f.into(), "task".into()]);
            a
        }),
        ("eval matcher", |f, _, _, _, _, _| {
            vec!["eval".into(), "matcher".into(), f.into()]
        }),
        ("eval merge", |f, _, _, _, out, _| {
            vec![
                "eval".into(),
                "merge".into(),
                f.into(),
                "--out".into(),
                out.into(),
            ]
        }),
        ("replay --policy steps=", |f, _, _, golden, _, _| {
            let mut policy = std::ffi::OsString::from("steps=");
            policy.push(f);
            vec![
                "replay".into(),
                golden.into(),
                "--headless".into(),
                "--policy".into(),
                policy,
            ]
        }),
        ("replay --calibration", |f, _, _, golden, _, _| {
            vec![
                "replay".into(),
                golden.into(),
                "--headless".into(),
                "--calibration".into(),
                f.into(),
            ]
        }),
    ];
    for (name, args) in cases {
        for (input, expected) in [
            (fifo.as_path(), "(a FIFO)"),
            (Path::new("/dev/zero"), "(a device)"),
            // `eval merge` takes a shard's directory and reads its results.json.
            (
                home.path(),
                if name == "eval merge" {
                    "results.json: No such file"
                } else {
                    "(a directory)"
                },
            ),
            (huge.as_path(), "more than"),
        ] {
            let _ = std::fs::remove_file(&log);
            let argv = args(input, &cfg, dir.path(), &golden, &out, &log);
            let argv: Vec<&OsStr> = argv.iter().map(|a| a.as_os_str()).collect();
            let ran = handoff(home.path(), &argv, Duration::from_secs(30)).await;
            let case = format!("{name} {}", input.display());
            assert_eq!(ran.code, Some(4), "{case}: {}", ran.stderr);
            assert!(
                ran.stderr.contains(expected) && ran.stderr.contains(&*input.to_string_lossy()),
                "{case}: the file and its kind are named: {}",
                ran.stderr
            );
        }
    }
    assert!(
        j.bodies().is_empty(),
        "no session started on a bad answers file"
    );
}

/// Item 10: a code block of 50,000 nested parentheses from a `code` junior overflowed the
/// stack in the syntax walk (exit 134, no summary, the log cut). It is now an edit like
/// any other: the session ends with its summary and a whole log.
#[tokio::test]
async fn a_deeply_nested_code_block_does_not_crash_handoff() {
    use handoff::demo::script::{confident, reply};
    let deep = 50_000;
    let nested = format!(
        "mathx.py\n```python\ndef double(x):\n    return {}x{}\n```\n",
        "(".repeat(deep),
        ")".repeat(deep)
    );
    let unclosed = format!(
        "mathx.py\n```python\ndef double(x):\n    return {}x\n```\n",
        "(".repeat(deep)
    );
    let junior = Script::new(vec![
        reply(confident(&unclosed), None),
        reply(confident(&nested), None),
    ]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&[
        (
            "mathx.py",
            "def double(x):\n    raise NotImplementedError\n",
        ),
        ("check.sh", "grep -q 'x)' mathx.py\n"),
    ]);
    let mut cfg = config(&j, &s);
    cfg.junior.tool_protocol = handoff::config::ToolProtocol::Code;
    cfg.agent.check = Some("sh check.sh".into());
    cfg.agent.max_steps = 2;
    cfg.policy.constant = 0.01;
    let (out, log) = exec(dir.path(), &cfg, &[]).await;
    assert!(
        matches!(out.code, Some(0 | 1 | 3)),
        "a clean end, not a signal: {:?} {}",
        out.code,
        out.stderr
    );
    assert!(
        log.lines()
            .last()
            .is_some_and(|l| l.contains("session_ended")),
        "the log ends whole"
    );
    assert!(out.stdout.contains("steps"), "the summary: {}", out.stdout);
    let bodies = j.bodies();
    assert_eq!(bodies.len(), 2, "the refused block went back to the junior");
    let feedback = bodies[1]["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(
        feedback.to_lowercase().contains("syntax") || feedback.contains("parse"),
        "the unclosed block is refused as a syntax error: {}",
        &feedback[..feedback.len().min(400)]
    );
    let text = std::fs::read_to_string(dir.path().join("mathx.py")).expect("read");
    assert!(
        text.contains(&"(".repeat(deep)),
        "the balanced block was placed"
    );
}

/// Item 11: a server that sends 20,000 alternatives with each of 40 tokens (asked for 3).
/// Sorting and de-duplicating every alternative cost about a second of CPU per token
/// (quadratic); now the reply is read within a 20-second CPU cap, the log keeps the 3
/// asked for per token, and handoff ends on its own.
#[tokio::test]
async fn oversized_top_logprobs_are_cut_before_any_work() {
    let top: Vec<serde_json::Value> = (0..20_000)
        .map(|i| serde_json::json!({"token": format!("alt{i}"), "logprob": -1.0 - f64::from(i) / 1e4}))
        .collect();
    let token = |text: &str| {
        let chunk = serde_json::json!({"choices": [{"index": 0, "delta": {"content": text},
            "logprobs": {"content": [{"token": text, "logprob": -0.01, "top_logprobs": top}]}}]});
        RawChunk::new(format!("data: {chunk}\n\n"))
    };
    let mut chunks: Vec<RawChunk> = (0..40).map(|i| token(&format!("w{i} "))).collect();
    let call = serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
        "id": "c1", "type": "function", "function": {"name": "finish",
        "arguments": "{\"summary\": \"nothing\"}"}}]}, "finish_reason": "tool_calls"}]});
    chunks.push(RawChunk::new(format!("data: {call}\n\n")));
    chunks.push(RawChunk::new("data: [DONE]\n\n"));
    let junior = Script::new(vec![Reply::Sse {
        chunks,
        end: StreamEnd::Close,
    }]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&[("notes.txt", "hi\n")]);
    let mut cfg = config(&j, &s);
    cfg.junior.top_logprobs = 3;
    cfg.policy.constant = 0.01;
    let (out, log) = exec_limited(dir.path(), &cfg, &[], Some(20)).await;
    assert_eq!(
        out.code,
        Some(0),
        "ended by itself, within the CPU cap: {}",
        out.stderr
    );
    let tokens: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "token")
        .collect();
    assert_eq!(tokens.len(), 40, "{}", &log[..log.len().min(2000)]);
    for t in &tokens {
        let kept: Vec<&str> = t["top"]
            .as_array()
            .expect("alternatives")
            .iter()
            .filter_map(|a| a["token"].as_str())
            .collect();
        assert_eq!(kept, ["alt0", "alt1", "alt2"], "{t}");
    }
    drop(j);
}

/// A one-task suite in `dir`: template `repos/t` whose check runs every `t_*.sh` the
/// model leaves and then the hidden `tests/hidden.sh` (which fails, so the session fails
/// and `eval` checks the tree again itself).
fn evil_suite(dir: &Path) {
    std::fs::create_dir_all(dir.join("repos/t")).expect("mkdir");
    std::fs::create_dir_all(dir.join("hidden/t/tests")).expect("mkdir");
    std::fs::write(
        dir.join("t.toml"),
        "task = \"Make the check pass.\"\nrepo = \"repos/t\"\ncheck = \"sh check.sh\"\n\
         hidden = \"hidden/t\"\n\n[budget]\nmax_steps = 4\ncommand_timeout_s = 60\n",
    )
    .expect("task");
    std::fs::write(
        dir.join("repos/t/check.sh"),
        "for f in t_*.sh; do [ -f \"$f\" ] && sh \"$f\"; done\nsh tests/hidden.sh\n",
    )
    .expect("check");
    std::fs::write(dir.join("repos/t/notes.txt"), "hi\n").expect("notes");
    std::fs::write(dir.join("hidden/t/tests/hidden.sh"), "exit 1\n").expect("hidden");
}

/// `handoff eval` of [`evil_suite`] whose junior runs `command` once, as `user` when
/// given (everything it needs handed to it); the run's record and the session's log.
async fn eval_one(home: &Path, command: &str, user: Option<u32>) -> (serde_json::Value, String) {
    let suite = home.join("suite");
    evil_suite(&suite);
    let j = ScriptedServer::start(one_command(command))
        .await
        .expect("junior");
    let s = ScriptedServer::start(Script::new(vec![]))
        .await
        .expect("senior");
    let mut cfg = config(&j, &s);
    cfg.agent.sandbox = true;
    let cfg = write_config(home, &cfg);
    let out = home.join("out");
    if user.is_some() {
        super::hostile::give_to_nobody(home);
    }
    let ran = handoff_as(
        home,
        &[
            OsStr::new("eval"),
            suite.as_os_str(),
            OsStr::new("--config"),
            cfg.as_os_str(),
            OsStr::new("--policy"),
            OsStr::new("junior-only"),
            OsStr::new("--out"),
            out.as_os_str(),
            OsStr::new("--json"),
        ],
        Duration::from_secs(300),
        user,
    )
    .await;
    let report: serde_json::Value = serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("eval --json: {e}: {}\n{}", ran.stdout, ran.stderr));
    let log = std::fs::read_to_string(out.join("logs/junior-only/t.jsonl")).unwrap_or_default();
    (report["runs"][0].clone(), log)
}

/// Items 1 and 2: `eval` re-checks a failed session's tree in the sandbox, and lays the
/// hidden tests without following a planted link. A `t_evil.sh` the model wrote, run by
/// the re-check, cannot write outside; a `tests -> outside` link does not receive the
/// hidden test. As root and as `nobody` (whose sandbox is made in a user namespace).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eval_rechecks_the_models_tree_in_the_sandbox_and_lays_hidden_tests_beneath() {
    let plan = handoff::agent::sandbox::namespace::plan();
    if !(plan.pid && plan.world) {
        eprintln!("skipped: needs the sandbox's namespaces");
        return;
    }
    for user in super::hostile::users() {
        eval_escapes_stay_inside(user).await;
    }
}

/// [`eval_rechecks_the_models_tree_in_the_sandbox_and_lays_hidden_tests_beneath`] as `user`.
async fn eval_escapes_stay_inside(user: Option<u32>) {
    let who = super::hostile::who(user);
    // Directories outside the repository the user could write to, were it not sandboxed.
    let outside = |home: &Path| {
        let dir = home.join("outside");
        std::fs::create_dir_all(&dir).expect("outside");
        dir
    };
    // Item 1: the model's script writes outside when the check runs it.
    let home = tempfile::tempdir().expect("home");
    let outside_dir = outside(home.path());
    let marker = outside_dir.join("marker");
    let command = format!(
        "printf 'echo pwned > {}\\n' > t_evil.sh && echo planted",
        marker.display()
    );
    let (run, log) = eval_one(home.path(), &command, user).await;
    assert_eq!(run["passed"], false, "{who}: {run}");
    assert!(
        log.contains("planted"),
        "{who}: the junior's command ran: {log}"
    );
    assert!(
        log.contains("\"check_ran\""),
        "{who}: the session's check ran the script: {log}"
    );
    assert!(
        !marker.exists(),
        "{who}: a script the model wrote wrote outside the repository during eval's check"
    );

    // Item 2: a link where the hidden tests go.
    let home = tempfile::tempdir().expect("home");
    let outside_dir = outside(home.path());
    let command = format!("ln -s {} tests && echo linked", outside_dir.display());
    let (run, log) = eval_one(home.path(), &command, user).await;
    assert!(
        log.contains("linked"),
        "{who}: the junior's command ran: {log}"
    );
    assert_eq!(run["passed"], false, "{who}: {run}");
    let written: Vec<PathBuf> = std::fs::read_dir(&outside_dir)
        .expect("outside")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    assert!(
        written.is_empty(),
        "{who}: eval wrote through the planted link: {written:?}"
    );
}

/// Item 9 (handoff's own reads): a command leaves a FIFO `.gitignore`, a `.gitignore`
/// linked to `/dev/zero` and a nested `.git` whose `packed-refs` is a FIFO. The scan
/// after the call, the checkpoint and the end of the session read none of them: the
/// session ends (planted `.git` removed, exit 5) instead of hanging or filling memory.
#[tokio::test]
async fn fifo_and_dev_zero_ignore_files_and_packed_refs_do_not_hang_handoff() {
    let dir = repo(&[("notes.txt", "hi\n")]);
    let command = "mkdir -p a b src/.git/refs && mkfifo a/.gitignore && \
                   ln -s /dev/zero b/.gitignore && mkfifo src/.git/packed-refs && \
                   echo 'ref: refs/heads/main' > src/.git/HEAD && echo planted";
    let (j, s) = servers(
        {
            use handoff::demo::script::{confident, reply};
            Script::new(vec![
                reply(
                    confident("Running it."),
                    Some(("c1", "run", serde_json::json!({ "command": command }))),
                ),
                reply(
                    confident("Listing."),
                    Some(("c2", "list_files", serde_json::json!({}))),
                ),
                reply(
                    confident("Done."),
                    Some(("c3", "finish", serde_json::json!({"summary": "ran it"}))),
                ),
            ])
        },
        Script::new(vec![]),
    )
    .await;
    let mut cfg = config(&j, &s);
    cfg.policy.constant = 0.01;
    let (out, log) = exec(dir.path(), &cfg, &[]).await;
    assert!(log.contains("planted"), "the command ran: {log}");
    assert_eq!(out.code, Some(5), "{}\n{log}", out.stderr);
    assert!(
        !dir.path().join("src/.git").exists(),
        "the planted .git is removed"
    );
    let listed = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["type"] == "tool_resulted" && e["name"] == "list_files")
        .expect("list_files ran");
    assert!(
        listed["output"]
            .as_str()
            .is_some_and(|o| o.contains("notes.txt")),
        "{listed}"
    );
    assert!(
        log.lines()
            .last()
            .is_some_and(|l| l.contains("session_ended")),
        "the log ends whole"
    );
}

/// Item 16: a `unittest/` package the model plants in the repository replaced the runner
/// of a `python3 -m unittest` check, which exited 0 without running a test (labelled
/// `success`). The check now runs the installed runner, which runs the protected test
/// (and fails it); an honest fix still passes, its module imported from the tree.
#[tokio::test]
async fn a_planted_unittest_package_does_not_make_the_check_pass() {
    let safe_path = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)",
        ])
        .status()
        .is_ok_and(|s| s.success());
    if !safe_path {
        eprintln!("skipped: needs python3 3.11 or later (PYTHONSAFEPATH)");
        return;
    }
    let test = "import unittest\nfrom conf import f\n\n\nclass T(unittest.TestCase):\n    \
                def test_f(self):\n        self.assertEqual(f(), 2)\n";
    let plant = "mkdir -p unittest && printf 'import sys\\nsys.exit(0)\\n' > unittest/__main__.py \
                 && touch unittest/__init__.py && echo planted";
    let fix = "printf 'def f():\\n    return 2\\n' > conf.py && echo fixed";
    for (command, code) in [(plant, 1), (fix, 0)] {
        let dir = repo(&[
            ("conf.py", "def f():\n    return 1\n"),
            ("test_conf.py", test),
        ]);
        let (j, s) = servers(one_command(command), Script::new(vec![])).await;
        let mut cfg = config(&j, &s);
        cfg.agent.check = Some("python3 -m unittest -q".into());
        let (out, log) = exec(dir.path(), &cfg, &[]).await;
        assert!(
            log.contains("planted") || log.contains("fixed"),
            "{command}: the command ran: {log}"
        );
        assert_eq!(out.code, Some(code), "{command}: {}\n{log}", out.stdout);
        let check = log
            .lines()
            .find(|l| l.contains("\"check_ran\""))
            .unwrap_or_default();
        assert_eq!(
            check.contains("\"passed\":true"),
            code == 0,
            "{command}: {check}"
        );
    }
}

/// Item 4: the check runs the model's code, so it is watched as `run` is. A module the
/// junior wrote plants `sub/.git` with `core.fsmonitor` when the check imports it: the
/// entry is removed, the check does not pass, and the session exits 5.
#[tokio::test]
async fn git_metadata_planted_during_the_check_is_removed_and_fails_it() {
    let plant = "printf 'import os\\nos.makedirs(\"sub/.git\", exist_ok=True)\\nopen(\"sub/.git/config\", \"w\").write(\"[core]\\\\n\\\\tfsmonitor = touch /tmp/handoff-pwned\\\\n\")\\nopen(\"sub/.git/HEAD\", \"w\").write(\"ref: refs/heads/main\\\\n\")\\n' > conf.py && echo written";
    let dir = repo(&[("conf.py", "x = 1\n")]);
    let (j, s) = servers(one_command(plant), Script::new(vec![])).await;
    let mut cfg = config(&j, &s);
    cfg.agent.check = Some("python3 -c 'import conf'".into());
    let (out, log) = exec(dir.path(), &cfg, &[]).await;
    assert!(log.contains("written"), "the command ran: {log}");
    assert!(
        !dir.path().join("sub/.git").exists(),
        "the planted entry is gone: {log}"
    );
    let check = log
        .lines()
        .find(|l| l.contains("\"check_ran\""))
        .unwrap_or_default();
    assert!(check.contains("\"passed\":false"), "{check}");
    assert!(check.contains("changed git metadata"), "{check}");
    assert!(
        log.lines()
            .any(|l| l.contains("\"protected_touched\"") && l.contains("sub/.git")),
        "{log}"
    );
    assert_eq!(out.code, Some(5), "{}\n{}\n{log}", out.stdout, out.stderr);
}

/// Item 5: a tree larger than the scan's cap cannot be verified, so the command that made
/// it fails and the session exits 5; a `.git` planted past the cap is not left unnoticed.
#[tokio::test]
async fn a_tree_too_large_to_scan_fails_the_call_and_exits_5() {
    let plant = "mkdir -p many && cd many && for i in $(seq 1 1500); do : > f$i; done && mkdir -p zz/.git && echo planted";
    let dir = repo(&[("a.txt", "x\n")]);
    let (j, s) = servers(one_command(plant), Script::new(vec![])).await;
    let mut cfg = config(&j, &s);
    cfg.agent.max_tree_entries = 1000;
    let (out, log) = exec(dir.path(), &cfg, &[]).await;
    assert!(log.contains("planted"), "the command ran: {log}");
    let result = log
        .lines()
        .find(|l| l.contains("\"tool_resulted\""))
        .unwrap_or_default();
    assert!(result.contains("\"ok\":false"), "{result}");
    assert!(
        result.contains("could not be checked whole for planted .git entries"),
        "{result}"
    );
    assert!(
        log.lines()
            .any(|l| l.contains("\"protected_touched\"") && l.contains("max_tree_entries")),
        "{log}"
    );
    assert_eq!(out.code, Some(5), "{}\n{}\n{log}", out.stdout, out.stderr);
    // With the cap above the tree, the same command is ordinary work.
    let dir = repo(&[("a.txt", "x\n")]);
    let honest =
        "mkdir -p many && cd many && for i in $(seq 1 1500); do : > f$i; done && echo made";
    let (j, s) = servers(one_command(honest), Script::new(vec![])).await;
    let cfg = config(&j, &s);
    let (out, log) = exec(dir.path(), &cfg, &[]).await;
    assert!(log.contains("made"), "{log}");
    assert!(!log.contains("max_tree_entries"), "{log}");
    assert_ne!(out.code, Some(5), "{}\n{}\n{log}", out.stdout, out.stderr);
}

/// Item 6: a `.git` that is a symlink into the work tree. The directory it leads to is
/// bound read-only (or, without a mount namespace, fingerprinted and put back), and a
/// command that retargets the link at a planted git directory has it put back: the
/// session exits 5 and the user's next `git status` runs nothing planted.
#[tokio::test]
async fn a_git_symlink_into_the_tree_protects_where_it_leads() {
    let dir = repo(&[("a.txt", "x\n")]);
    let root = dir.path();
    std::fs::rename(root.join(".git"), root.join("realgit")).expect("move .git");
    std::os::unix::fs::symlink("realgit", root.join(".git")).expect("link .git");
    let config_before = std::fs::read_to_string(root.join("realgit/config")).expect("config");
    let command = "printf '[core]\\n\\tfsmonitor = touch /tmp/handoff-pwned\\n' >> realgit/config; mkdir -p evil/hooks && cp realgit/HEAD evil/ && printf '[core]\\n\\tfsmonitor = touch /tmp/handoff-pwned\\n' > evil/config && rm .git && ln -s evil .git && echo retargeted";
    let (j, s) = servers(one_command(command), Script::new(vec![])).await;
    let cfg = config(&j, &s);
    let (out, log) = exec(root, &cfg, &[]).await;
    assert!(log.contains("retargeted"), "the command ran: {log}");
    assert_eq!(
        std::fs::read_link(root.join(".git")).expect(".git is a link"),
        PathBuf::from("realgit"),
        "{log}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("realgit/config")).expect("config"),
        config_before,
        "{log}"
    );
    assert!(
        log.lines()
            .any(|l| l.contains("\"protected_touched\"") && l.contains(".git was changed")),
        "{log}"
    );
    assert_eq!(out.code, Some(5), "{}\n{}\n{log}", out.stdout, out.stderr);
}
