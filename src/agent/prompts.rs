//! System prompts: embedded defaults from `prompts/`, each overridable by a file in config.
//!
//! Prompts are plain text so they can be read, diffed and replaced without a rebuild; the
//! embedded copy means a fresh install works with no files beside the binary.

use std::path::Path;

use crate::config::{PromptsConfig, ToolProtocol};
use crate::llm::textprompt;

/// The four prompts a session uses.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompts {
    pub junior: String,
    pub senior: String,
    pub triage: String,
    /// The handoff note template with `{placeholders}` (see `context`).
    pub handoff: String,
    /// The junior's prompt under `tool_protocol = "text"`, with `{tools}` and `{example}`.
    pub junior_text: String,
    /// The senior's prompt under `tool_protocol = "text"`, with `{tools}` and `{example}`.
    pub senior_text: String,
    /// The junior's prompt under `tool_protocol = "code"` (no tools: code in fenced blocks).
    pub junior_code: String,
    /// The senior's system prompt when it starts over (`handoff = "restart"`): the junior's
    /// prompt under the senior's tool protocol, so a restart is the senior alone on the task.
    pub restart: String,
    /// The question writer's prompt for `policy.ask_first`.
    pub ask_first: String,
}

/// Why a prompt override could not be used.
#[derive(Debug, thiserror::Error)]
#[error("cannot read prompt file {path} (prompts.{key}): {source}")]
pub struct PromptError {
    pub key: &'static str,
    pub path: String,
    pub source: std::io::Error,
}

impl Default for Prompts {
    fn default() -> Self {
        Prompts {
            junior: include_str!("../../prompts/junior.txt").to_string(),
            senior: include_str!("../../prompts/senior.txt").to_string(),
            triage: include_str!("../../prompts/triage.txt").to_string(),
            handoff: include_str!("../../prompts/handoff.txt").to_string(),
            junior_text: include_str!("../../prompts/junior_text.txt").to_string(),
            senior_text: include_str!("../../prompts/senior_text.txt").to_string(),
            junior_code: include_str!("../../prompts/junior_code.txt").to_string(),
            restart: include_str!("../../prompts/junior.txt").to_string(),
            ask_first: include_str!("../../prompts/ask_first.txt").to_string(),
        }
    }
}

impl Prompts {
    /// Embedded defaults with the configured overrides read from disk.
    pub fn load(cfg: &PromptsConfig) -> Result<Prompts, PromptError> {
        let mut p = Prompts::default();
        for (key, path, slot) in [
            ("junior", &cfg.junior, &mut p.junior),
            ("senior", &cfg.senior, &mut p.senior),
            ("triage", &cfg.triage, &mut p.triage),
            ("ask_first", &cfg.ask_first, &mut p.ask_first),
            ("handoff", &cfg.handoff, &mut p.handoff),
            ("junior_text", &cfg.junior_text, &mut p.junior_text),
            ("senior_text", &cfg.senior_text, &mut p.senior_text),
            ("junior_code", &cfg.junior_code, &mut p.junior_code),
        ] {
            if let Some(path) = path {
                *slot = read(key, path)?;
            }
        }
        p.restart.clone_from(&p.junior);
        Ok(p)
    }

    /// The prompts a session sends, given each endpoint's tool protocol: under `text` and
    /// `json_schema` the model is offered no `tools` field, so its system prompt becomes the
    /// text variant with the tool list and one example call filled in.
    pub fn for_protocols(
        mut self,
        junior: ToolProtocol,
        senior: ToolProtocol,
        tools: &[crate::llm::ToolSpec],
    ) -> Prompts {
        self.restart = if senior.uses_text() {
            textprompt::system_prompt(&self.junior_text, tools)
        } else {
            self.junior.clone()
        };
        if junior.uses_text() {
            self.junior = textprompt::system_prompt(&self.junior_text, tools);
        }
        if junior.writes_code() {
            self.junior.clone_from(&self.junior_code);
        }
        if senior.uses_text() {
            self.senior = textprompt::system_prompt(&self.senior_text, tools);
        }
        // A senior that writes code takes over as a junior of the code protocol would
        // start: the bare prompt, the handoff note as its first message.
        if senior.writes_code() {
            self.senior.clone_from(&self.junior_code);
            self.restart.clone_from(&self.junior_code);
        }
        self
    }
}

fn read(key: &'static str, path: &Path) -> Result<String, PromptError> {
    std::fs::read_to_string(path).map_err(|source| PromptError {
        key,
        path: path.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_override_replaces_only_its_prompt() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("j.txt");
        std::fs::write(&file, "be brief").expect("write");
        let cfg = PromptsConfig {
            junior: Some(file),
            ..PromptsConfig::default()
        };
        let p = Prompts::load(&cfg).expect("load");
        assert_eq!(p.junior, "be brief");
        assert_eq!(p.senior, Prompts::default().senior);
    }

    #[test]
    fn the_text_protocol_gets_the_tool_list_and_an_example_call() {
        let tools = crate::agent::tools::spec::specs();
        let native =
            Prompts::default().for_protocols(ToolProtocol::Auto, ToolProtocol::Native, &tools);
        assert_eq!(native, Prompts::default());
        let text = Prompts::default().for_protocols(ToolProtocol::Text, ToolProtocol::Text, &tools);
        for prompt in [&text.junior, &text.senior] {
            assert!(
                !prompt.contains("{tools}") && !prompt.contains("{example}"),
                "{prompt}"
            );
            // The prompt shows a call in exactly the form the parser reads.
            let shown = prompt
                .lines()
                .filter(|l| crate::llm::textcall::parse_call(l, &tools).is_ok())
                .count();
            assert!(shown >= 1, "{prompt}");
            assert!(
                prompt.contains("- read_file(path, start_line?, end_line?): Read a text file with numbered lines."),
                "{prompt}"
            );
            for name in crate::agent::tools::spec::TOOL_NAMES {
                assert!(prompt.contains(&format!("- {name}(")), "{name}: {prompt}");
            }
        }
        // The example the prompt shows is a call the parser reads.
        let example = textprompt::example_call(&tools);
        let call = crate::llm::textcall::parse_call(&example, &tools).expect("example parses");
        assert_eq!(call.name, "read_file");
    }

    #[test]
    fn a_missing_override_names_key_and_path() {
        let cfg = PromptsConfig {
            triage: Some("no/such/file.txt".into()),
            ..PromptsConfig::default()
        };
        let err = Prompts::load(&cfg).expect_err("missing file");
        let msg = err.to_string();
        assert!(
            msg.contains("prompts.triage") && msg.contains("no/such/file.txt"),
            "{msg}"
        );
    }

    #[test]
    fn the_handoff_template_has_every_placeholder() {
        let t = Prompts::default().handoff;
        for key in [
            "{reason}",
            "{belief}",
            "{threshold}",
            "{why}",
            "{diff}",
            "{check}",
            "{brief}",
        ] {
            assert!(t.contains(key), "{key}");
        }
    }
}
