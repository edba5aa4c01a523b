//! `handoff demo`: a real session against scripted models, with no network, key or config.
//!
//! Everything is real except the two models: the sample project is copied to a temporary
//! git repository, the junior and senior are OpenAI-compatible servers on loopback speaking
//! SSE with logprobs, the judge and router are the production ones, the tools really edit
//! files, and the check really runs `cargo test` on the sample.

use std::path::{Path, PathBuf};

use crate::config::{Approval, Config, HandoffMode, RouteMode, ThresholdKind};

use super::script;
use super::server::ScriptedServer;

/// The task the demo gives the junior.
pub const TASK: &str = "parse_duration(\"1h30m\") should return 5400 seconds, but the `h` unit is \
                        not supported; make the test suite pass.";

/// The banner the screen shows, so nobody mistakes the demo for real models.
pub const BANNER: &str = "demo: scripted models";

#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("cannot prepare the sample repository in {path}: {source}")]
    Sample {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot make the sample a git repository: {0}")]
    Git(#[from] git2::Error),
    #[error("cannot start the scripted model servers on loopback: {0}")]
    Server(std::io::Error),
}

/// A prepared demo: the sample repository, both servers and the config pointing at them.
pub struct Demo {
    /// Kept alive for the session; the directory is removed when the demo ends.
    pub dir: tempfile::TempDir,
    pub repo: PathBuf,
    pub junior: ScriptedServer,
    pub senior: ScriptedServer,
    pub config: Config,
}

const SAMPLE: [(&str, &str); 5] = [
    ("Cargo.toml", include_str!("sample/Cargo.toml.txt")),
    ("src/lib.rs", include_str!("sample/lib.rs.txt")),
    ("README.md", include_str!("sample/README.md.txt")),
    (".gitignore", include_str!("sample/gitignore.txt")),
    ("Cargo.lock", include_str!("sample/Cargo.lock.txt")),
];

/// Copies the sample, commits it, and starts the servers.
pub async fn prepare() -> Result<Demo, DemoError> {
    let dir = tempfile::Builder::new()
        .prefix("handoff-demo-")
        .tempdir()
        .map_err(|source| DemoError::Sample {
            path: std::env::temp_dir(),
            source,
        })?;
    let repo = dir.path().join("durations");
    write_sample(&repo)?;
    commit_all(&repo)?;
    let junior = ScriptedServer::start(script::junior())
        .await
        .map_err(DemoError::Server)?;
    let senior = ScriptedServer::start(script::senior())
        .await
        .map_err(DemoError::Server)?;
    let config = config(&junior.base_url(), &senior.base_url());
    Ok(Demo {
        dir,
        repo,
        junior,
        senior,
        config,
    })
}

/// The demo's configuration: the defaults, pointed at the scripted servers.
pub fn config(junior_url: &str, senior_url: &str) -> Config {
    let mut c = Config::default();
    c.junior.base_url = junior_url.to_string();
    c.junior.model = "scripted-junior".into();
    c.junior.price_input_per_mtok = 0.1;
    c.junior.price_output_per_mtok = 0.4;
    c.senior.base_url = senior_url.to_string();
    c.senior.model = "scripted-senior".into();
    c.senior.api_key_env = None;
    c.policy.threshold = ThresholdKind::Optimal;
    c.policy.route = RouteMode::Triage;
    c.policy.handoff = HandoffMode::Step;
    c.policy.cooldown_steps = 0;
    c.agent.check = Some("cargo test --quiet".into());
    c.agent.approval = Approval::Never;
    c.agent.max_steps = 12;
    c
}

fn write_sample(root: &Path) -> Result<(), DemoError> {
    for (name, text) in SAMPLE {
        let path = root.join(name);
        let io = |source| DemoError::Sample {
            path: path.clone(),
            source,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::write(&path, text).map_err(io)?;
    }
    Ok(())
}

fn commit_all(root: &Path) -> Result<(), git2::Error> {
    let repo = git2::Repository::init(root)?;
    let mut index = repo.index()?;
    index.add_all(["*"].iter(), git2::IndexAddOption::DEFAULT, None)?;
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let sig = git2::Signature::now("handoff demo", "demo@handoff.invalid")?;
    repo.commit(Some("HEAD"), &sig, &sig, "sample project", &tree, &[])?;
    Ok(())
}

/// The answer the headless demo gives to the operator question (a person types it in the TUI).
const HEADLESS_ANSWER: &str = "stay an error";

/// Runs the demo; headless returns the summary, the TUI shows everything itself.
///
/// The log goes to `log`, else to the sessions directory, so the demo can be replayed.
pub async fn demo(
    headless: bool,
    log: Option<PathBuf>,
) -> Result<Option<crate::app::headless::Summary>, DemoRunError> {
    let demo = prepare().await?;
    let approvals = if headless {
        crate::agent::session::Approvals::Granted
    } else {
        crate::agent::session::Approvals::Interactive
    };
    let named = log.is_some();
    let fallback = demo.dir.path().join("demo.jsonl");
    let log = log.unwrap_or_else(|| fallback.clone());
    let mut prepared =
        crate::app::wiring::prepare(demo.config.clone(), &demo.repo, TASK, approvals, Some(log))?;
    if !named {
        // The log is named after the session it holds, as every other session's is.
        // The fallback, already created in the demo's temporary directory, goes with it.
        let id = &prepared.setup.session_id;
        if let Some(named) =
            crate::config::sessions_dir().map(|d| d.join(format!("demo-{id}.jsonl")))
        {
            prepared.log = crate::log::LogWriter::create(&named, prepared.setup.config.digest())
                .map_err(crate::app::wiring::ExecError::Log)?;
            prepared.log_path = named;
        }
    }
    if headless {
        let answers = std::collections::VecDeque::from([crate::app::operator::PreparedAnswer {
            answer: HEADLESS_ANSWER.into(),
            needed: Some(true),
        }]);
        let stop =
            crate::app::stop::Stop::on_signals().map_err(crate::app::wiring::ExecError::Signals)?;
        let summary = crate::app::headless::run_headless(
            prepared,
            crate::app::operator::Answerer::Prepared(answers),
            false,
            stop,
        )
        .await?;
        let mut summary = summary;
        // The demo's repository is temporary and gone when the demo ends: no command can
        // diff or undo it afterwards, so none is offered.
        if let Some(c) = summary.changes.as_mut() {
            c.diff_command.clear();
            c.undo_command.clear();
        }
        return Ok(Some(summary));
    }
    crate::app::interactive::run_tui(prepared, Some(BANNER.to_string())).await?;
    Ok(None)
}

/// Why the demo could not run.
#[derive(Debug, thiserror::Error)]
pub enum DemoRunError {
    #[error(transparent)]
    Setup(#[from] DemoError),
    #[error(transparent)]
    Session(#[from] crate::app::wiring::ExecError),
    #[error(transparent)]
    Ui(#[from] crate::app::interactive::InteractiveError),
}
