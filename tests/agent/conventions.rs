//! The conventions a command-line tool is expected to keep, through the real binary:
//! completions and a man page from the argument definitions, `-C DIR`, `-c key=value` over
//! `HANDOFF_*` over the file, `--config` before or after the command, the task from stdin
//! with `-`, `run` without a terminal, error causes printed once, a bad key's own line, the
//! instruction files `[prompts] instruction_files` names.

use std::ffi::OsStr;

use handoff::demo::server::Script;

use super::support::{FILES, bin, config, finish, read_log, repo, servers, write_config};

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

#[tokio::test]
async fn completions_and_the_man_page_describe_the_commands() {
    let home = tempfile::tempdir().expect("tempdir");
    for shell in ["bash", "zsh", "fish"] {
        let out = bin(home.path(), &[os("completions"), os(shell)], None, &[]).await;
        assert_eq!(out.code, Some(0), "{shell}: {}", out.stderr);
        assert!(
            out.stdout.contains("restore"),
            "{shell}: no `restore` in the script"
        );
    }
    let man = bin(home.path(), &[os("man")], None, &[]).await;
    assert_eq!(man.code, Some(0), "{}", man.stderr);
    assert!(
        man.stdout.starts_with(".ie") || man.stdout.contains(".TH handoff"),
        "{}",
        &man.stdout[..200.min(man.stdout.len())]
    );
    assert!(man.stdout.contains("doctor"), "lists the commands");
}

/// Where `--config FILE` stands on the command line.
#[derive(Clone, Copy)]
enum ConfigAt {
    /// `handoff doctor --config FILE` (as a command's option).
    AfterCommand,
    /// `handoff --config FILE doctor` (as a global option).
    BeforeCommand,
}

/// The junior model `doctor` reports, with these settings (an unreachable port, so it
/// answers at once).
async fn doctor_model(
    home: &std::path::Path,
    cfg: &std::path::Path,
    set: &[&str],
    env: &[(&str, &str)],
) -> String {
    doctor_model_at(ConfigAt::AfterCommand, home, cfg, set, env).await
}

async fn doctor_model_at(
    at: ConfigAt,
    home: &std::path::Path,
    cfg: &std::path::Path,
    set: &[&str],
    env: &[(&str, &str)],
) -> String {
    let mut args = match at {
        ConfigAt::AfterCommand => vec![os("doctor"), os("--json"), os("--config"), cfg.as_os_str()],
        ConfigAt::BeforeCommand => {
            vec![os("--config"), cfg.as_os_str(), os("doctor"), os("--json")]
        }
    };
    for s in set {
        args.push(os("-c"));
        args.push(os(s));
    }
    let out = bin(home, &args, None, env).await;
    let doc: serde_json::Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor --json: {e}: {}\n{}", out.stdout, out.stderr));
    doc["endpoints"][0]["model"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A config whose junior model is `from-file`, on a port nothing listens on.
fn unreachable_config(home: &std::path::Path) -> std::path::PathBuf {
    let cfg = home.join("c.toml");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    std::fs::write(
        &cfg,
        format!(
            "[junior]\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"from-file\"\nmax_retries = 0\n\
             [senior]\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmax_retries = 0\n"
        ),
    )
    .expect("write");
    cfg
}

#[tokio::test]
async fn c_beats_handoff_variables_which_beat_the_file() {
    let home = tempfile::tempdir().expect("tempdir");
    let cfg = unreachable_config(home.path());
    let h = home.path();
    assert_eq!(doctor_model(h, &cfg, &[], &[]).await, "from-file");
    let env = [("HANDOFF_JUNIOR__MODEL", "from-env")];
    assert_eq!(doctor_model(h, &cfg, &[], &env).await, "from-env");
    assert_eq!(
        doctor_model(h, &cfg, &["junior.model=from-flag"], &env).await,
        "from-flag"
    );
    // A setting that does not validate is named by where it came from; exit 4.
    let bad = bin(
        h,
        &[
            os("doctor"),
            os("--config"),
            cfg.as_os_str(),
            os("-c"),
            os("agent.max_steps=lots"),
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(bad.code, Some(4), "{}", bad.stderr);
    assert!(
        bad.stderr.contains("-c agent.max_steps=lots"),
        "{}",
        bad.stderr
    );
}

#[tokio::test]
async fn minus_c_dir_and_a_task_from_stdin() {
    let (j, s) = servers(Script::new(vec![finish()]), Script::new(vec![])).await;
    let home = tempfile::tempdir().expect("tempdir");
    let dir = repo(&FILES);
    let cfg = write_config(home.path(), &config(&j, &s));
    let log = home.path().join("s.jsonl");
    let out = bin(
        home.path(),
        &[
            os("-C"),
            dir.path().as_os_str(),
            os("exec"),
            os("--config"),
            cfg.as_os_str(),
            os("--log"),
            log.as_os_str(),
            os("-"),
        ],
        Some("a task\nfrom a pipe\n"),
        &[],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let events = read_log(&log);
    let started = events
        .iter()
        .find_map(|e| match e {
            handoff::protocol::Event::SessionStarted { task, repo, .. } => {
                Some((task.clone(), repo.clone()))
            }
            _ => None,
        })
        .expect("session_started");
    assert_eq!(started.0, "a task\nfrom a pipe");
    let want = dir.path().canonicalize().expect("canonical");
    assert_eq!(
        std::path::PathBuf::from(started.1),
        want,
        "--repo . under -C DIR"
    );
}

#[tokio::test]
async fn run_without_a_terminal_points_to_exec() {
    let home = tempfile::tempdir().expect("tempdir");
    let out = bin(home.path(), &[os("run"), os("do it")], None, &[]).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("use `handoff exec`"), "{}", out.stderr);
}

/// The junior's system prompt in the first request of an `exec` in a repository of
/// `files`, under the test config edited by `edit`.
async fn junior_system_prompt(
    files: &[(&str, &str)],
    edit: impl FnOnce(&mut handoff::config::Config),
) -> String {
    let (j, s) = servers(Script::new(vec![finish()]), Script::new(vec![])).await;
    let home = tempfile::tempdir().expect("tempdir");
    let dir = repo(files);
    let mut cfg = config(&j, &s);
    edit(&mut cfg);
    let cfg = write_config(home.path(), &cfg);
    let out = bin(
        home.path(),
        &[
            os("exec"),
            os("--repo"),
            dir.path().as_os_str(),
            os("--config"),
            cfg.as_os_str(),
            os("look"),
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let body = j.bodies().into_iter().next().expect("one request");
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn agents_md_reaches_the_junior_s_system_prompt() {
    let files = [
        ("notes.txt", "hello\n"),
        ("AGENTS.md", "Run `make lint` before finishing.\n"),
    ];
    let system = junior_system_prompt(&files, |_| {}).await;
    assert!(
        system.contains("# Project instructions from AGENTS.md"),
        "{system}"
    );
    assert!(
        system.contains("Run `make lint` before finishing."),
        "{system}"
    );
}

#[tokio::test]
async fn config_is_a_global_option_with_the_same_precedence() {
    let home = tempfile::tempdir().expect("tempdir");
    let cfg = unreachable_config(home.path());
    let h = home.path();
    let before = ConfigAt::BeforeCommand;
    assert_eq!(
        doctor_model_at(before, h, &cfg, &[], &[]).await,
        "from-file"
    );
    let env = [("HANDOFF_JUNIOR__MODEL", "from-env")];
    assert_eq!(
        doctor_model_at(before, h, &cfg, &[], &env).await,
        "from-env"
    );
    assert_eq!(
        doctor_model_at(before, h, &cfg, &["junior.model=from-flag"], &env).await,
        "from-flag"
    );
    // --config beats $HANDOFF_CONFIG in either place.
    let other = home.path().join("other.toml");
    std::fs::write(&other, "[junior]\nmodel = \"from-variable\"\n").expect("write");
    let other = other.display().to_string();
    let env = [("HANDOFF_CONFIG", other.as_str())];
    assert_eq!(
        doctor_model_at(before, h, &cfg, &[], &env).await,
        "from-file"
    );
}

#[tokio::test]
async fn a_missing_config_prints_the_os_error_once() {
    let home = tempfile::tempdir().expect("tempdir");
    let missing = home.path().join("nowhere.toml");
    let out = bin(
        home.path(),
        &[os("--config"), missing.as_os_str(), os("doctor")],
        None,
        &[],
    )
    .await;
    assert_eq!(out.code, Some(4), "{}", out.stderr);
    assert_eq!(
        out.stderr.matches("(os error 2)").count(),
        1,
        "the cause once: {}",
        out.stderr
    );
    assert!(
        out.stderr.contains(&missing.display().to_string()),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn a_bad_dotted_key_is_named_with_its_own_line() {
    let home = tempfile::tempdir().expect("tempdir");
    let cases = [
        // A wrong type, as a dotted key at the top level (line 7).
        (
            "# a comment\n\n\n\n\n\njunior.max_tokens = \"x\"\n",
            ":7",
            "max_tokens",
        ),
        // A value that parses but makes no sense, dotted (line 4).
        ("\n\n\njunior.max_tokens = 0\n", ":4", "junior.max_tokens"),
        // The same inside a [junior] table, below other keys (line 5).
        (
            "[senior]\nmodel = \"s\"\n[junior]\nmodel = \"j\"\nmax_tokens = 0\n",
            ":5",
            "junior.max_tokens",
        ),
    ];
    for (text, line, key) in cases {
        let cfg = home.path().join("bad.toml");
        std::fs::write(&cfg, text).expect("write");
        let out = bin(
            home.path(),
            &[os("doctor"), os("--config"), cfg.as_os_str()],
            None,
            &[],
        )
        .await;
        assert_eq!(out.code, Some(4), "{text}: {}", out.stderr);
        let named = format!("bad.toml{line}");
        let toml_style = format!("line {}", &line[1..]);
        assert!(
            (out.stderr.contains(&named) || out.stderr.contains(&toml_style))
                && out.stderr.contains(key),
            "{text:?} should name {key} at {line}: {}",
            out.stderr
        );
    }
}

#[tokio::test]
async fn configured_instruction_files_reach_the_junior_s_prompt() {
    let files = [
        ("notes.txt", "hello\n"),
        ("AGENTS.md", "Not read: the list below leaves it out.\n"),
        ("CONVENTIONS.md", "Prefer small functions.\n"),
        (".github/copilot-instructions.md", "Write tests first.\n"),
    ];
    let system = junior_system_prompt(&files, |c| {
        c.prompts.instruction_files = vec![
            "CONVENTIONS.md".into(),
            ".github/copilot-instructions.md".into(),
        ];
    })
    .await;
    assert!(
        system.contains("# Project instructions from CONVENTIONS.md\n\nPrefer small functions.")
            && system.contains(
                "# Project instructions from .github/copilot-instructions.md\n\nWrite tests first."
            ),
        "{system}"
    );
    assert!(!system.contains("Not read"), "{system}");
    // A path that leaves the repository is refused, with its line.
    let home = tempfile::tempdir().expect("tempdir");
    let bad = home.path().join("bad.toml");
    std::fs::write(&bad, "[prompts]\ninstruction_files = [\"../secret.md\"]\n").expect("write");
    let out = bin(
        home.path(),
        &[os("--config"), bad.as_os_str(), os("doctor")],
        None,
        &[],
    )
    .await;
    assert_eq!(out.code, Some(4), "{}", out.stderr);
    assert!(
        out.stderr.contains("bad.toml:2") && out.stderr.contains("prompts.instruction_files"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn init_writes_where_the_global_config_points() {
    let home = tempfile::tempdir().expect("tempdir");
    let cfg = home.path().join("mine.toml");
    let out = bin(
        home.path(),
        &[
            os("--config"),
            cfg.as_os_str(),
            os("init"),
            os("--preset"),
            os("llamacpp"),
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let text = std::fs::read_to_string(&cfg).expect("written at --config");
    assert!(text.contains("qwen2.5-coder-1.5b-instruct"), "{text}");
    assert!(
        !home.path().join("config/handoff/config.toml").exists(),
        "not at the XDG path"
    );
}
