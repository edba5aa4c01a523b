//! Checks of values that parse but make no sense, with the key and line they came from.

use super::{Config, ConfigError};

/// Longest timeout accepted, in seconds (a day); larger values are typos, and very large
/// ones cannot be represented as a duration at all.
const MAX_SECONDS: f64 = 86_400.0;
/// Highest price per million tokens accepted, in dollars.
const MAX_PRICE: f64 = 1_000_000.0;
/// Highest cost (κ, γ, L) accepted, in the config's unit of account.
const MAX_COST: f64 = 1e12;
/// Largest byte cap accepted (output, arguments).
const MAX_BYTES: usize = 256 * 1024 * 1024;
/// Candidates of a first reply: each is a full reply on a small model's CPU time.
const MAX_CANDIDATES: u32 = 8;

impl Config {
    pub(super) fn validate(&self, text: &str, path: &str) -> Result<(), ConfigError> {
        let invalid = |section: &str, key: &str, expected: &str| ConfigError::Invalid {
            path: path.to_string(),
            line: line_of(text, section, key),
            key: format!("{section}.{key}"),
            expected: expected.to_string(),
        };
        let unit = |v: f64| (0.0..=1.0).contains(&v);
        for (section, m) in [("junior", &self.junior), ("senior", &self.senior)] {
            if !(m.base_url.starts_with("http://") || m.base_url.starts_with("https://")) {
                return Err(invalid(
                    section,
                    "base_url",
                    "must start with http:// or https://",
                ));
            }
            // A URL that only looks right would fail at the first request, mid-session.
            let has_host = reqwest::Url::parse(&m.base_url)
                .ok()
                .is_some_and(|u| u.host_str().is_some_and(|h| !h.is_empty()));
            if !has_host {
                return Err(invalid(
                    section,
                    "base_url",
                    "must be a URL with a host, e.g. http://127.0.0.1:8080/v1",
                ));
            }
            if m.max_tokens == Some(0) {
                return Err(invalid(
                    section,
                    "max_tokens",
                    "must be at least 1 (leave it out for the server's default)",
                ));
            }
            if m.model.trim().is_empty() {
                return Err(invalid(section, "model", "must name a model"));
            }
            if m.top_logprobs > 20 {
                return Err(invalid(section, "top_logprobs", "must be between 0 and 20"));
            }
            if !(0.0..=2.0).contains(&m.temperature) {
                return Err(invalid(section, "temperature", "must be between 0 and 2"));
            }
            for (key, v) in [
                ("price_input_per_mtok", m.price_input_per_mtok),
                ("price_output_per_mtok", m.price_output_per_mtok),
            ] {
                if !(v.is_finite() && (0.0..=MAX_PRICE).contains(&v)) {
                    return Err(invalid(
                        section,
                        key,
                        &format!("must be a number between 0 and {MAX_PRICE}"),
                    ));
                }
            }
            for (key, v) in [
                ("connect_timeout_s", m.connect_timeout_s),
                ("idle_timeout_s", m.idle_timeout_s),
            ] {
                if !(v.is_finite() && v > 0.0 && v <= MAX_SECONDS) {
                    return Err(invalid(
                        section,
                        key,
                        &format!("must be a positive number of seconds, at most {MAX_SECONDS}"),
                    ));
                }
            }
            if let Some(window) = m.context_window {
                if window < 512 {
                    return Err(invalid(
                        section,
                        "context_window",
                        "must be at least 512 tokens (leave it out when unknown)",
                    ));
                }
                if m.max_tokens.is_some_and(|max| max >= window) {
                    return Err(invalid(
                        section,
                        "max_tokens",
                        &format!(
                            "must be smaller than context_window ({window}): the reply and the \
                             prompt share the window"
                        ),
                    ));
                }
            }
            // A takeover's budget belongs to the seat that takes over.
            if section == "junior" {
                for (key, set) in [
                    ("max_steps", m.max_steps.is_some()),
                    ("token_budget", m.token_budget.is_some()),
                ] {
                    if set {
                        return Err(invalid(
                            section,
                            key,
                            &format!(
                                "must be left out: it is the senior's budget for a takeover \
                                 ([senior]); the junior's is agent.{key}"
                            ),
                        ));
                    }
                }
            }
            if m.max_steps == Some(0) {
                return Err(invalid(section, "max_steps", "must be at least 1"));
            }
            // The schema is what makes json_schema work; an `extra` one would silently win.
            if m.tool_protocol.constrains_reply() && m.extra.contains_key("response_format") {
                return Err(invalid(
                    &format!("{section}.extra"),
                    "response_format",
                    "must be left out under tool_protocol = \"json_schema\", which builds \
                     response_format from the offered tools",
                ));
            }
            if let Some(env) = &m.api_key_env
                && (env.is_empty() || env.contains('='))
            {
                return Err(invalid(
                    section,
                    "api_key_env",
                    "must be the name of an environment variable (the key itself never goes in the file)",
                ));
            }
        }
        let c = &self.costs;
        for (key, v) in [
            ("kappa", c.kappa),
            ("gamma_senior", c.gamma_senior),
            ("gamma_operator", c.gamma_operator),
        ] {
            if !(v.is_finite() && (0.0..=MAX_COST).contains(&v)) {
                return Err(invalid(
                    "costs",
                    key,
                    &format!("must be a number between 0 and {MAX_COST:e}"),
                ));
            }
        }
        if !(c.loss.is_finite() && c.loss > 0.0 && c.loss <= MAX_COST) {
            return Err(invalid(
                "costs",
                "loss",
                &format!("must be a positive number, at most {MAX_COST:e}"),
            ));
        }
        for (key, v) in [("p_senior", c.p_senior), ("p_operator", c.p_operator)] {
            if !unit(v) {
                return Err(invalid("costs", key, "must be a probability in [0, 1]"));
            }
        }
        if !unit(self.policy.constant) {
            return Err(invalid(
                "policy",
                "constant",
                "must be a probability in [0, 1]",
            ));
        }
        for (key, path) in [
            ("calibration", &self.policy.calibration),
            (
                "calibration_without_check",
                &self.policy.calibration_without_check,
            ),
        ] {
            if path.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
                return Err(invalid(
                    "policy",
                    key,
                    "must name a calibration file (leave it out for the built-in prior)",
                ));
            }
        }
        if !(0.0..1.0).contains(&self.policy.explore) {
            return Err(invalid(
                "policy",
                "explore",
                "must be a probability in [0, 1) (0 turns exploration off)",
            ));
        }
        if self.policy.schedule_stride == 0 {
            return Err(invalid("policy", "schedule_stride", "must be at least 1"));
        }
        let a = &self.agent;
        if a.max_steps == 0 {
            return Err(invalid("agent", "max_steps", "must be at least 1"));
        }
        if a.token_budget == 0 {
            return Err(invalid("agent", "token_budget", "must be at least 1"));
        }
        if !(0.0..=2.0).contains(&a.retry_temperature) {
            return Err(invalid(
                "agent",
                "retry_temperature",
                "must be between 0 and 2",
            ));
        }
        if !(1..=MAX_CANDIDATES).contains(&a.candidates) {
            return Err(invalid(
                "agent",
                "candidates",
                &format!("must be between 1 and {MAX_CANDIDATES}"),
            ));
        }
        if a.command_timeout_s == 0 || a.command_timeout_s as f64 > MAX_SECONDS {
            return Err(invalid(
                "agent",
                "command_timeout_s",
                &format!("must be between 1 and {MAX_SECONDS} seconds"),
            ));
        }
        if a.check.as_ref().is_some_and(|c| c.trim().is_empty()) {
            return Err(invalid(
                "agent",
                "check",
                "must be a shell command (leave it out for unlabelled sessions)",
            ));
        }
        if !(256..=MAX_BYTES).contains(&a.output_cap_bytes) {
            return Err(invalid(
                "agent",
                "output_cap_bytes",
                &format!("must be between 256 and {MAX_BYTES}"),
            ));
        }
        if !(1024..=MAX_BYTES).contains(&a.max_argument_bytes) {
            return Err(invalid(
                "agent",
                "max_argument_bytes",
                &format!("must be between 1024 and {MAX_BYTES}"),
            ));
        }
        if a.max_processes != 0 && !(4..=1_000_000).contains(&a.max_processes) {
            return Err(invalid(
                "agent",
                "max_processes",
                "must be 0 (no cap) or between 4 and 1000000",
            ));
        }
        for (key, value) in [
            ("max_write_mib", a.max_write_mib),
            ("max_memory_mib", a.max_memory_mib),
        ] {
            if value > 1 << 30 {
                return Err(invalid(
                    "agent",
                    key,
                    "must be at most 1073741824 MiB (0: no cap)",
                ));
            }
        }
        if !(1_000..=100_000_000).contains(&a.max_tree_entries) {
            return Err(invalid(
                "agent",
                "max_tree_entries",
                "must be between 1000 and 100000000",
            ));
        }
        for (key, roots) in [
            ("writable_roots", Some(&a.writable_roots)),
            ("readable_roots", a.readable_roots.as_ref()),
        ] {
            for root in roots.into_iter().flatten() {
                if !(root.is_absolute() || root.starts_with("~")) {
                    return Err(invalid(
                        "agent",
                        key,
                        &format!(
                            "must hold absolute paths (or ~/...), not `{}`",
                            root.display()
                        ),
                    ));
                }
            }
        }
        // A reading root that does not exist grants nothing; a typo there would leave the
        // command unable to read what the user meant to allow, without a word.
        for root in a.readable_roots.iter().flatten() {
            if !super::expand_home(root).exists() {
                return Err(invalid(
                    "agent",
                    "readable_roots",
                    &format!("names `{}`, which does not exist", root.display()),
                ));
            }
        }
        if let Some(patterns) = &a.protected {
            super::protected::validate(patterns)
                .map_err(|e| invalid("agent", "protected", &e.to_string()))?;
        }
        let keys: Vec<&String> = [&self.junior.api_key_env, &self.senior.api_key_env]
            .into_iter()
            .flatten()
            .collect();
        for name in &a.env_pass {
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(invalid("agent", "env_pass", "must hold variable names"));
            }
            if keys.contains(&name) {
                return Err(invalid(
                    "agent",
                    "env_pass",
                    &format!("must not pass `{name}`: it holds a model's API key"),
                ));
            }
        }
        // Names are joined to each directory from the root down; an absolute path or `..`
        // could read a file outside the repository into a prompt.
        let inside = |n: &str| {
            let p = std::path::Path::new(n);
            !n.is_empty()
                && !n.contains('\0')
                && p.components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)))
        };
        if !self.prompts.instruction_files.iter().all(|n| inside(n)) {
            return Err(invalid(
                "prompts",
                "instruction_files",
                "must hold relative file names such as \"AGENTS.md\" or \".github/copilot-instructions.md\" (no `..`, not absolute)",
            ));
        }
        Ok(())
    }
}

/// 1-based line of `key` inside `section` (dotted for a nested table, `junior.extra`; or
/// of the section, or 1), for messages about values that parsed but make no sense. The
/// line comes from the TOML parser's spans, so a key is found however it is written:
/// under a `[section]` header, as a dotted key (`section.key = …` at the top level) or
/// inside an inline table.
pub(super) fn line_of(text: &str, section: &str, key: &str) -> usize {
    let Ok(doc) = toml::de::DeTable::parse(text) else {
        return 1;
    };
    let mut table = doc.get_ref();
    let mut offset = None;
    for part in section.split('.') {
        match table.get(part) {
            Some(value) => {
                offset = Some(value.span().start);
                match value.get_ref() {
                    toml::de::DeValue::Table(t) => table = t,
                    _ => return line_at(text, value.span().start),
                }
            }
            None => return offset.map_or(1, |o| line_at(text, o)),
        }
    }
    let at = table
        .get_key_value(key)
        .map(|(k, _)| k.span().start)
        .or(offset);
    at.map_or(1, |o| line_at(text, o))
}

/// 1-based line of byte `offset` in `text`.
pub(super) fn line_at(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}
