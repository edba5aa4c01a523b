//! Matched `[junior]`/`[senior]` sections for the servers people run, as data, so
//! `handoff init --preset NAME` writes a config that works without hand-editing.
//!
//! Every local preset is local-only: both endpoints on this machine, no key, zero prices,
//! so nothing needs a cloud account (not even `exec --shadow`). The junior is the small
//! model the judge watches (logprobs on where the server has them); the senior is a bigger
//! model of the same family on the same kind of server. Each endpoint names its
//! `tool_protocol` (how tool calls are read: `auto`, `native`, `text`, `json_schema`, or
//! `code` for a small junior that writes code instead of calls) and its
//! `context_window` in tokens, so the history is kept within what the server really holds.

/// The judge fitted on the reference lane's 0.5B junior (`tools/real-models/refit`: the
/// feature model, 5-fold by task, on its loop sessions of the code protocol), carried in
/// the binary so `init --preset real-models` can write it beside the config: the lane then
/// starts from the measured judge, not the hand-set prior, wherever it is run from.
pub const REAL_MODELS_CALIBRATION: &str =
    include_str!("../data/calibrations/qwen2.5-coder-0.5b-instruct.llamacpp.top5.json");

/// The file name that calibration is written under, beside the config.
pub const REAL_MODELS_CALIBRATION_FILE: &str = "qwen2.5-coder-0.5b-instruct.llamacpp.top5.json";

/// The constant τ the fitted judge runs at: the operating point measured live
/// (docs/results/2026-12-06-cascade-code.md; `tools/real-models/serve` writes the same). A
/// feature model has no per-token law for the default optimal schedule.
pub const REAL_MODELS_TAU: f64 = 0.3;

/// A known server flavour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    LlamaCpp,
    Ollama,
    Vllm,
    LmStudio,
    OpenAi,
    /// The reproducible reference lane of `tools/real-models/` (Qwen2.5-Coder 0.5B/1.5B
    /// on two llama.cpp servers).
    RealModels,
}

/// One endpoint of a preset.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointPreset {
    pub base_url: &'static str,
    pub model: &'static str,
    pub api_key_env: Option<&'static str>,
    pub logprobs: bool,
    pub top_logprobs: u8,
    pub price_input_per_mtok: f64,
    pub price_output_per_mtok: f64,
    pub tool_protocol: &'static str,
    pub context_window: u32,
    /// Comment lines written above the section (how to start the server to match).
    pub note: &'static str,
}

impl Preset {
    pub const ALL: [Preset; 6] = [
        Preset::LlamaCpp,
        Preset::Ollama,
        Preset::Vllm,
        Preset::LmStudio,
        Preset::OpenAi,
        Preset::RealModels,
    ];

    /// The name `--preset` takes.
    pub fn name(self) -> &'static str {
        match self {
            Preset::LlamaCpp => "llamacpp",
            Preset::Ollama => "ollama",
            Preset::Vllm => "vllm",
            Preset::LmStudio => "lmstudio",
            Preset::OpenAi => "openai",
            Preset::RealModels => "real-models",
        }
    }

    /// The preset called `name`, or `None` (the caller lists [`Preset::ALL`] names).
    pub fn from_name(name: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Whether both endpoints are on this machine and need no key.
    pub fn local_only(self) -> bool {
        self != Preset::OpenAi
    }

    /// The junior's and the senior's settings.
    pub fn endpoints(self) -> (EndpointPreset, EndpointPreset) {
        let local =
            |base_url, model, logprobs, tool_protocol, context_window, note| EndpointPreset {
                base_url,
                model,
                api_key_env: None,
                logprobs,
                top_logprobs: if logprobs { 5 } else { 0 },
                price_input_per_mtok: 0.0,
                price_output_per_mtok: 0.0,
                tool_protocol,
                context_window,
                note,
            };
        match self {
            Preset::LlamaCpp => (
                local(
                    "http://127.0.0.1:8080/v1",
                    "qwen2.5-coder-1.5b-instruct",
                    true,
                    "code",
                    16384,
                    "llama-server --jinja -c 16384 --port 8080 -m <junior.gguf> --alias qwen2.5-coder-1.5b-instruct",
                ),
                local(
                    "http://127.0.0.1:8081/v1",
                    "qwen2.5-coder-7b-instruct",
                    false,
                    "auto",
                    16384,
                    "llama-server --jinja -c 16384 --port 8081 -m <senior.gguf> --alias qwen2.5-coder-7b-instruct",
                ),
            ),
            Preset::Ollama => (
                local(
                    "http://127.0.0.1:11434/v1",
                    "qwen2.5-coder:1.5b",
                    true,
                    "code",
                    8192,
                    "Ollama keeps only its default context (a few thousand tokens) and drops the \
                     rest silently: start it with OLLAMA_CONTEXT_LENGTH=8192 ollama serve",
                ),
                local(
                    "http://127.0.0.1:11434/v1",
                    "qwen2.5-coder:7b",
                    false,
                    "auto",
                    8192,
                    "ollama pull qwen2.5-coder:1.5b && ollama pull qwen2.5-coder:7b",
                ),
            ),
            Preset::Vllm => (
                local(
                    "http://127.0.0.1:8000/v1",
                    "Qwen/Qwen2.5-Coder-1.5B-Instruct",
                    true,
                    "code",
                    32768,
                    "vllm serve Qwen/Qwen2.5-Coder-1.5B-Instruct --port 8000 \
                     --enable-auto-tool-choice --tool-call-parser hermes",
                ),
                local(
                    "http://127.0.0.1:8001/v1",
                    "Qwen/Qwen2.5-Coder-7B-Instruct",
                    false,
                    "native",
                    32768,
                    "vllm serve Qwen/Qwen2.5-Coder-7B-Instruct --port 8001 \
                     --enable-auto-tool-choice --tool-call-parser hermes",
                ),
            ),
            Preset::LmStudio => (
                local(
                    "http://127.0.0.1:1234/v1",
                    "qwen2.5-coder-1.5b-instruct",
                    // LM Studio sends no logprobs: the judge uses step evidence only.
                    false,
                    "code",
                    8192,
                    "LM Studio: load the model with a context length of 8192 or more and start \
                     the local server (lms server start); it sends no logprobs",
                ),
                local(
                    "http://127.0.0.1:1234/v1",
                    "qwen2.5-coder-7b-instruct",
                    false,
                    "auto",
                    8192,
                    "lms load qwen2.5-coder-7b-instruct",
                ),
            ),
            Preset::OpenAi => (
                EndpointPreset {
                    base_url: "https://api.openai.com/v1",
                    // A non-reasoning model: reasoning models return no logprobs.
                    model: "gpt-4.1-nano",
                    api_key_env: Some("OPENAI_API_KEY"),
                    logprobs: true,
                    top_logprobs: 5,
                    price_input_per_mtok: 0.1,
                    price_output_per_mtok: 0.4,
                    tool_protocol: "native",
                    context_window: 1_047_576,
                    note: "export OPENAI_API_KEY=<your key>; prices are USD per million tokens \
                           and yours to check",
                },
                EndpointPreset {
                    base_url: "https://api.openai.com/v1",
                    model: "gpt-4.1",
                    api_key_env: Some("OPENAI_API_KEY"),
                    logprobs: false,
                    top_logprobs: 0,
                    price_input_per_mtok: 2.0,
                    price_output_per_mtok: 8.0,
                    tool_protocol: "native",
                    context_window: 1_047_576,
                    note: "the senior is not judged, so it needs no logprobs",
                },
            ),
            Preset::RealModels => (
                local(
                    "http://127.0.0.1:8090/v1",
                    "qwen2.5-coder-0.5b-instruct",
                    true,
                    "code",
                    16384,
                    "tools/real-models/serve starts both servers (llama.cpp, CPU) and stops \
                     with tools/real-models/stop; the junior writes code (tool_protocol = \"code\"), every token with its logprob",
                ),
                local(
                    "http://127.0.0.1:8091/v1",
                    "qwen2.5-coder-1.5b-instruct",
                    false,
                    "code",
                    16384,
                    "Qwen2.5-Coder-1.5B-Instruct Q4_K_M; a takeover writes code too (the \
                     handoff note ends with the files)",
                ),
            ),
        }
    }

    /// The two sections as TOML text, commented.
    pub fn sections(self) -> String {
        let (junior, senior) = self.endpoints();
        let mut out = format!(
            "# Preset `{}`{}.\n",
            self.name(),
            if self.local_only() {
                ": both models on this machine, no key, no cost"
            } else {
                ""
            }
        );
        out.push_str(&section("junior", &junior));
        out.push('\n');
        out.push_str(&section("senior", &senior));
        out
    }

    /// A whole config: this preset's sections, then the rest of the documented example
    /// (costs, policy, agent, prompts) as `handoff init` writes it.
    pub fn config_text(self) -> String {
        let example = crate::config::EXAMPLE;
        let rest = example.find(REST_MARKER).map_or("", |at| &example[at..]);
        format!(
            "# handoff configuration, written by `handoff init --preset {}`.\n\
             # API keys never go in this file: `api_key_env` names the variable that holds one.\n\n{}\n{rest}",
            self.name(),
            self.sections()
        )
    }
}

impl Preset {
    /// The calibration this preset's judge runs with, as (file name, JSON): only the
    /// reference lane has one.
    pub fn calibration(self) -> Option<(&'static str, &'static str)> {
        (self == Preset::RealModels)
            .then_some((REAL_MODELS_CALIBRATION_FILE, REAL_MODELS_CALIBRATION))
    }

    /// [`Preset::config_text`] with `[policy]` pointed at `calibration` (the file
    /// [`Preset::calibration`] was written to) at constant τ [`REAL_MODELS_TAU`].
    pub fn config_text_with(self, calibration: Option<&std::path::Path>) -> String {
        let text = self.config_text();
        let Some(path) = calibration else {
            return text;
        };
        let setting = format!(
            "calibration = {}   # the fitted judge of this preset (tools/real-models/refit)",
            quoted(&path.display().to_string())
        );
        text.replacen("threshold = \"optimal\"", "threshold = \"constant\"", 1)
            .replacen(
                "constant = 0.5 ",
                &format!("constant = {REAL_MODELS_TAU}"),
                1,
            )
            .replacen(
                "# calibration = \"calibration.json\"",
                &format!("{setting}\n#"),
                1,
            )
    }
}

/// Where the endpoint-independent part of the example config starts.
const REST_MARKER: &str = "# The cost model of the stopping problem";

fn section(role: &str, e: &EndpointPreset) -> String {
    let mut out = String::new();
    for line in e.note.split(". ") {
        out.push_str(&format!("# {}\n", line.trim()));
    }
    out.push_str(&format!("[{role}]\n"));
    out.push_str(&format!("base_url = {}\n", quoted(e.base_url)));
    out.push_str(&format!("model = {}\n", quoted(e.model)));
    if let Some(var) = e.api_key_env {
        out.push_str(&format!("api_key_env = {}\n", quoted(var)));
    }
    out.push_str(&format!("logprobs = {}\n", e.logprobs));
    out.push_str(&format!("top_logprobs = {}\n", e.top_logprobs));
    out.push_str(&format!(
        "price_input_per_mtok = {:?}\n",
        e.price_input_per_mtok
    ));
    out.push_str(&format!(
        "price_output_per_mtok = {:?}\n",
        e.price_output_per_mtok
    ));
    out.push_str(&format!("tool_protocol = {}\n", quoted(e.tool_protocol)));
    out.push_str(&format!("context_window = {}\n", e.context_window));
    out
}

/// A TOML basic string (the values here are plain ASCII, but quote properly anyway).
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

#[cfg(test)]
#[path = "presets_tests.rs"]
mod tests;
