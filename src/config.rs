//! The TOML configuration: defaults, lookup, validation with errors that name key and line.
//!
//! Lookup order: `--config FILE`, then `$HANDOFF_CONFIG`, then `config.toml` in the XDG
//! config directory, then the built-in defaults. API keys never live in the file: a model
//! section names the environment variable (`api_key_env`) that holds the key, and the key is
//! read from there at the moment a client is built, so it cannot reach a log or the screen
//! through the config.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

mod checkpoints;
mod overrides;
mod policy;
pub(crate) mod protected;
mod validate;

pub use checkpoints::CheckpointsConfig;
pub use overrides::Override;
pub use policy::{HandoffMode, PolicyConfig, QuestionWriter, RouteMode, ThresholdKind};

/// The documented example, also written by `handoff init`.
pub const EXAMPLE: &str = include_str!("../config.example.toml");

/// Why a configuration could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Syntax errors, unknown keys and wrong types: toml's message already names line and key.
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    #[error("{path}:{line}: `{key}` {expected}")]
    Invalid {
        path: String,
        line: usize,
        key: String,
        expected: String,
    },
    /// A `-c key=value` or `HANDOFF_*` setting that cannot be applied or does not validate.
    #[error("{origin}: {message}")]
    Override { origin: String, message: String },
    /// Not a regular file of at most [`MAX_CONFIG_BYTES`]: a FIFO would block the start
    /// until something writes to it, a device would be read without end.
    #[error("config {0}")]
    File(#[source] crate::infile::InputFileError),
    #[error("config file {0} already exists; not overwriting it")]
    Exists(PathBuf),
    #[error("no home directory found to place the config in")]
    NoHome,
}

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub junior: ModelConfig,
    pub senior: ModelConfig,
    pub costs: Costs,
    pub policy: PolicyConfig,
    pub agent: AgentConfig,
    pub prompts: PromptsConfig,
    pub checkpoints: CheckpointsConfig,
}

/// One OpenAI-compatible endpoint and how to talk to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    pub base_url: String,
    pub model: String,
    /// Name of the environment variable holding the API key; `None` sends no key.
    pub api_key_env: Option<String>,
    /// How many alternatives per token to ask for (0–20); 0 still asks for the chosen
    /// token's logprob.
    pub top_logprobs: u8,
    /// Ask for logprobs at all. Servers without them degrade the judge to step evidence.
    pub logprobs: bool,
    pub temperature: f32,
    pub max_tokens: Option<u32>,
    /// US dollars per million input tokens.
    pub price_input_per_mtok: f64,
    /// US dollars per million output tokens.
    pub price_output_per_mtok: f64,
    pub connect_timeout_s: f64,
    /// Longest silence allowed between two chunks of a stream.
    pub idle_timeout_s: f64,
    pub max_retries: u32,
    /// How tool calls travel between handoff and this model (see [`ToolProtocol`]).
    pub tool_protocol: ToolProtocol,
    /// Tokens the server's context holds (prompt + reply), as the server was started with
    /// (`llama-server -c`, Ollama's `num_ctx`); `None` = unknown, history is not trimmed.
    pub context_window: Option<u32>,
    /// Extra fields merged into every request body (e.g. `repetition_penalty` for vLLM).
    pub extra: toml::Table,
    /// `[senior]` only: the steps a takeover may take, counted from the hand-off (the
    /// senior's own budget, not the junior's remainder); `None` = `agent.max_steps`. The
    /// old lane's `rest` takeovers shared the junior's 12-step cap and had 3–11 steps left
    /// (docs/results/2026-12-02-cascade-real.md).
    pub max_steps: Option<u32>,
    /// `[senior]` only: output tokens a takeover may write; `None` = `agent.token_budget`.
    pub token_budget: Option<u64>,
}

/// How a model is offered tools and how its calls are read.
///
/// Small local models (Qwen2.5-Coder 0.5B/1.5B on llama.cpp) answer a `tools` request with
/// the call written as JSON text in `content` rather than a native `tool_calls` delta, so
/// the default reads either.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolProtocol {
    /// Send the OpenAI `tools` field; when a reply carries no native call, look for one in
    /// its text.
    #[default]
    Auto,
    /// Send the OpenAI `tools` field and read native calls only.
    Native,
    /// Send no `tools` field: the tool list and one example call go into the system prompt
    /// and the call is read from the text. On llama.cpp this keeps logprobs on every token,
    /// the call's own tokens included (it refuses logprobs together with tools).
    Text,
    /// As `text`, and the request also carries `response_format` with a JSON schema that
    /// admits exactly one call of an offered tool (see [`crate::llm::callschema`]), so a
    /// server with constrained decoding (llama.cpp, vLLM, Ollama, LM Studio, OpenAI) can
    /// only sample a well-formed call. Logprobs stay on every token, streaming included.
    JsonSchema,
    /// For small juniors: no tools at all. The first message shows the files the task is
    /// about; a reply is prose and fenced code blocks, placed into files by definition name
    /// (or SEARCH/REPLACE), and the harness runs `agent.check` after every edit and ends the
    /// work when it passes (see [`crate::code`]). Code is never escaped inside JSON, no
    /// grammar constrains the reply, and every token of the code carries its logprob.
    Code,
}

impl ToolProtocol {
    pub fn name(self) -> &'static str {
        match self {
            ToolProtocol::Auto => "auto",
            ToolProtocol::Native => "native",
            ToolProtocol::Text => "text",
            ToolProtocol::JsonSchema => "json_schema",
            ToolProtocol::Code => "code",
        }
    }

    /// Whether requests carry the OpenAI `tools` field.
    pub fn sends_tools(self) -> bool {
        matches!(self, ToolProtocol::Auto | ToolProtocol::Native)
    }

    /// Whether the tools travel as text: listed in the system prompt, no `tools` field,
    /// history without native calls, the call read from the reply's text (`text` and
    /// `json_schema`).
    pub fn uses_text(self) -> bool {
        matches!(self, ToolProtocol::Text | ToolProtocol::JsonSchema)
    }

    /// Whether requests carry a `response_format` schema that constrains the reply to one
    /// tool call.
    pub fn constrains_reply(self) -> bool {
        self == ToolProtocol::JsonSchema
    }

    /// Whether a reply's text is searched for a call.
    pub fn reads_text(self) -> bool {
        matches!(
            self,
            ToolProtocol::Auto | ToolProtocol::Text | ToolProtocol::JsonSchema
        )
    }

    /// Whether the model writes code instead of calling tools (`code`).
    pub fn writes_code(self) -> bool {
        self == ToolProtocol::Code
    }
}

/// The cost model of the stopping problem, in one unit of account (dollars by default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Costs {
    /// κ: cost of one junior output token.
    pub kappa: f64,
    /// γ for a senior takeover.
    pub gamma_senior: f64,
    /// γ for one operator question (the operator's time).
    pub gamma_operator: f64,
    /// L: cost of a wrong final result.
    pub loss: f64,
    /// Probability that the senior route ends in a correct result.
    pub p_senior: f64,
    /// Probability that the operator's answer unblocks the junior to a correct result.
    pub p_operator: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Approval {
    Never,
    OnWrite,
    Always,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoOperator {
    Senior,
    Fail,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    pub max_steps: u32,
    /// T: junior output tokens for the whole session.
    pub token_budget: u64,
    /// Shell command whose exit status labels the session (e.g. `cargo test`).
    pub check: Option<String>,
    pub approval: Approval,
    pub command_timeout_s: u64,
    /// Bytes of command output the model sees (the tail is kept).
    pub output_cap_bytes: usize,
    /// What happens to an operator question when nobody can answer.
    pub no_operator: NoOperator,
    /// Confine `run` commands (and the check) where the kernel supports it.
    pub sandbox: bool,
    /// Let commands use the network and local sockets.
    pub network: bool,
    /// Run `check` in the same sandbox as `run` (false: unconfined, with a warning).
    pub check_sandbox: bool,
    /// More directories commands may write beneath (`~` is the home directory).
    pub writable_roots: Vec<PathBuf>,
    /// `Some`: reads are limited to system directories, the repository, the writable
    /// roots and these; `None`: reads are not restricted.
    pub readable_roots: Option<Vec<PathBuf>>,
    /// Environment variables commands see on top of the built-in allow-list.
    pub env_pass: Vec<String>,
    /// Longest tool-call arguments, in bytes, that a tool accepts.
    pub max_argument_bytes: usize,
    /// Largest file one command may write, in MiB (0: no cap); checkpoints leave out
    /// untracked files this large. See `agent::sandbox::limits`.
    pub max_write_mib: u64,
    /// Most processes one command's tree may run at once (0: no cap).
    pub max_processes: u32,
    /// Most resident memory one command's tree may use, in MiB (0: no cap).
    pub max_memory_mib: u64,
    /// Most entries of the work tree scanned for planted git metadata around each command
    /// and the check. A tree larger than this cannot be verified, so the call fails and the
    /// session exits 5: a planted `.git` must not hide behind a million empty files.
    pub max_tree_entries: usize,
    /// Repair messages in a row for replies with no usable tool call (text only, broken
    /// JSON, an unknown tool, bad arguments); one more such reply counts as stuck.
    pub max_repairs: u32,
    /// Repeated moves on one work tree (a call or reply made there before, whichever it
    /// is, so a cycle of a few moves counts too: `competence::repeats`) after which the
    /// session hands off with reason `stuck`; 0 turns the rule off.
    pub stuck_after: u32,
    /// Globs of files no tool may change (the check's tests); `None`: the defaults of
    /// [`protected::DEFAULT_PROTECTED`] plus the files `check` names; `Some([])`: none.
    pub protected: Option<Vec<String>>,
    /// Under the `code` protocol: show the protected files the check runs (its tests) in
    /// the first message, read-only. Off by default: on the real lane (docs/guide.md, "The junior
    /// writes code") withholding them is what the single-shot reference does too.
    pub show_tests: bool,
    /// Under the `code` protocol: what the junior is sent after a failed check.
    pub retry: Retry,
    /// The sampling temperature of a `retry = "resample"` reply.
    pub retry_temperature: f32,
    /// Under the `code` protocol: how many candidates the junior's first reply is. Beyond
    /// the first (the endpoint's own sampling), each is drawn at `retry_temperature`; all
    /// run on the task's examples and inputs derived from them, in the sandbox, and the one
    /// the evidence ranks first is placed (`code::agreement`). 1 draws one reply, as before.
    pub candidates: u32,
    /// When the other candidates are drawn.
    pub candidates_when: CandidatesWhen,
}

/// When the junior's first reply is drawn as `agent.candidates` candidates.
///
/// Replayed on the 0.5B's HumanEval logs (docs/results/2026-12-08-candidates.md): drawing
/// only when the first reply fails one of its examples solved as many tasks as drawing
/// always, at about half the junior's tokens; a first reply that passes its examples was
/// almost never beaten by the candidates drawn after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CandidatesWhen {
    /// Only when the first reply fails an example the task states (or writes no code
    /// that can be placed); a first reply that passes them all, or a task with no example
    /// to run, keeps the one reply.
    FirstFails,
    /// Every session: the agreement is then a fact of every first reply.
    Always,
}

/// What the junior gets after its code failed the check (`code` protocol).
///
/// Measured on the real lane (docs/guide.md, "A failed check: a fresh sample, not the failure"):
/// shown its failing check at temperature 0, Qwen2.5-Coder 0.5B fixed 0 of 24 wrong
/// first replies; the first message answered again at temperature 0.8, three times, fixed
/// 5 of 16. A small model reads its own wrong code as the answer; a fresh sample is not
/// anchored on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Retry {
    /// The conversation goes back to the first message and the next reply is sampled at
    /// `retry_temperature`; the failed code stays in the tree until the new reply's
    /// definitions replace it.
    Resample,
    /// The check's command, status and output tail are the next message, at the
    /// endpoint's own temperature (what a strong model uses well).
    Feedback,
}

/// Paths that override the embedded system prompts, and the project instruction files
/// added to them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PromptsConfig {
    pub junior: Option<PathBuf>,
    pub senior: Option<PathBuf>,
    pub triage: Option<PathBuf>,
    /// The question writer's prompt for `policy.ask_first`.
    pub ask_first: Option<PathBuf>,
    pub handoff: Option<PathBuf>,
    /// The junior's prompt under `tool_protocol = "text"` (`{tools}`, `{example}` filled in).
    pub junior_text: Option<PathBuf>,
    /// The senior's prompt under `tool_protocol = "text"`.
    pub senior_text: Option<PathBuf>,
    /// The junior's prompt under `tool_protocol = "code"`.
    pub junior_code: Option<PathBuf>,
    /// File names looked for from the repository root down to the working directory and
    /// added, capped, to the junior's and the senior's system prompts
    /// ([`crate::instructions`]); `[]` reads none.
    pub instruction_files: Vec<String>,
}

impl Default for PromptsConfig {
    fn default() -> Self {
        PromptsConfig {
            junior: None,
            senior: None,
            triage: None,
            ask_first: None,
            handoff: None,
            junior_text: None,
            senior_text: None,
            junior_code: None,
            instruction_files: crate::instructions::DEFAULT_FILES
                .iter()
                .map(|n| (*n).to_string())
                .collect(),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            junior: ModelConfig {
                base_url: "http://127.0.0.1:8080/v1".into(),
                model: "qwen2.5-coder-1.5b-instruct".into(),
                api_key_env: None,
                top_logprobs: 5,
                logprobs: true,
                temperature: 0.2,
                max_tokens: Some(1024),
                price_input_per_mtok: 0.0,
                price_output_per_mtok: 0.0,
                connect_timeout_s: 5.0,
                idle_timeout_s: 60.0,
                max_retries: 3,
                tool_protocol: ToolProtocol::Auto,
                context_window: None,
                extra: toml::Table::new(),
                max_steps: None,
                token_budget: None,
            },
            senior: ModelConfig {
                base_url: "https://api.openai.com/v1".into(),
                model: "gpt-4.1".into(),
                api_key_env: Some("OPENAI_API_KEY".into()),
                top_logprobs: 0,
                logprobs: false,
                temperature: 0.2,
                max_tokens: Some(2048),
                price_input_per_mtok: 2.0,
                price_output_per_mtok: 8.0,
                connect_timeout_s: 10.0,
                idle_timeout_s: 120.0,
                max_retries: 3,
                tool_protocol: ToolProtocol::Auto,
                context_window: None,
                extra: toml::Table::new(),
                max_steps: None,
                token_budget: None,
            },
            costs: Costs::default(),
            policy: PolicyConfig::default(),
            agent: AgentConfig::default(),
            prompts: PromptsConfig::default(),
            checkpoints: CheckpointsConfig::default(),
        }
    }
}

impl Default for ModelConfig {
    fn default() -> Self {
        Config::default().junior
    }
}

impl Default for Costs {
    fn default() -> Self {
        Costs {
            kappa: 0.00001,
            gamma_senior: 0.35,
            gamma_operator: 0.5,
            loss: 1.0,
            p_senior: 0.9,
            p_operator: 0.85,
        }
    }
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            max_steps: 30,
            token_budget: 8192,
            check: None,
            approval: Approval::OnWrite,
            command_timeout_s: 120,
            output_cap_bytes: 16 * 1024,
            no_operator: NoOperator::Senior,
            sandbox: true,
            network: false,
            check_sandbox: true,
            writable_roots: Vec::new(),
            readable_roots: None,
            env_pass: Vec::new(),
            max_argument_bytes: 1024 * 1024,
            max_write_mib: 1024,
            max_processes: 512,
            max_memory_mib: 8192,
            max_tree_entries: 2_000_000,
            max_repairs: 2,
            stuck_after: 3,
            protected: None,
            show_tests: false,
            retry: Retry::Resample,
            retry_temperature: 0.8,
            candidates: 1,
            candidates_when: CandidatesWhen::FirstFails,
        }
    }
}

/// Where a configuration came from, for messages and the session header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    File(PathBuf),
    Defaults,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::File(p) => write!(f, "{}", p.display()),
            Source::Defaults => f.write_str("built-in defaults"),
        }
    }
}

impl Config {
    /// Parses and validates a config text; `path` only labels messages.
    pub fn parse(text: &str, path: &str) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_string(),
            message: e.to_string().trim_end().to_string(),
        })?;
        config.validate(text, path)?;
        Ok(config)
    }

    /// Reads a config file: a regular file of at most [`MAX_CONFIG_BYTES`], opened without
    /// blocking (see [`crate::infile`]).
    pub fn load_file(path: &Path) -> Result<Config, ConfigError> {
        let text = read_file(path)?;
        Config::parse(&text, &path.display().to_string())
    }

    /// Finds and loads the config: explicit path, `$HANDOFF_CONFIG`, XDG file, defaults.
    pub fn discover(explicit: Option<&Path>) -> Result<(Config, Source), ConfigError> {
        if let Some(p) = explicit {
            return Ok((Config::load_file(p)?, Source::File(p.to_path_buf())));
        }
        if let Some(p) = std::env::var_os("HANDOFF_CONFIG").filter(|v| !v.is_empty()) {
            let p = PathBuf::from(p);
            return Ok((Config::load_file(&p)?, Source::File(p)));
        }
        if let Some(p) = default_path().filter(|p| p.is_file()) {
            return Ok((Config::load_file(&p)?, Source::File(p)));
        }
        Ok((Config::default(), Source::Defaults))
    }

    /// SHA-256 of the effective configuration, written in every log header.
    ///
    /// Only key *names* are part of the config, never key values, so the digest is safe to log.
    pub fn digest(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        let hash = Sha256::digest(json.as_bytes());
        hash.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The largest config file read: the documented example is about 10 KB.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The text of the config file `path`, read once and bounded.
pub(crate) fn read_file(path: &Path) -> Result<String, ConfigError> {
    use crate::infile::InputFileError;
    crate::infile::read_text(path, MAX_CONFIG_BYTES, "a TOML file").map_err(|e| match e {
        InputFileError::Read { path, source } => ConfigError::Read { path, source },
        other => ConfigError::File(other),
    })
}

/// The XDG config file path (`~/.config/handoff/config.toml` on Linux).
pub fn default_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "handoff").map(|d| d.config_dir().join("config.toml"))
}

/// Where session logs go by default (`~/.local/share/handoff/sessions` on Linux).
pub fn sessions_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "handoff").map(|d| d.data_dir().join("sessions"))
}

/// Writes the documented example to `path`, refusing to overwrite anything.
pub fn init(path: &Path) -> Result<(), ConfigError> {
    init_with(path, EXAMPLE)
}

/// Writes `text` (the example, or a preset's config) to `path`, refusing to overwrite
/// anything.
pub fn init_with(path: &Path, text: &str) -> Result<(), ConfigError> {
    if path.exists() {
        return Err(ConfigError::Exists(path.to_path_buf()));
    }
    let io = |source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => ConfigError::Exists(path.to_path_buf()),
            _ => io(e),
        })?;
    std::io::Write::write_all(&mut file, text.as_bytes()).map_err(io)
}

/// `~/x` as the home directory's `x`; other paths as they are (the `~/...` form of
/// `agent.writable_roots` and `agent.readable_roots`).
pub fn expand_home(path: &std::path::Path) -> PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests;
