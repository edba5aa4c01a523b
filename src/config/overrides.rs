//! Settings given outside the file: `HANDOFF_<SECTION>__<KEY>` environment variables and
//! `-c key=value` on the command line, applied on top of the file in that order.
//!
//! Precedence, highest first: `-c` > `HANDOFF_*` > the config file > built-in defaults.
//! A value is read as TOML when it is one (`5`, `false`, `0.3`, `["a"]`), else as a string,
//! so `-c junior.model=qwen2.5-coder:7b` needs no quotes. The merged config is validated
//! like a file, and the file itself is validated first, so a mistake in the file is still
//! named by its own line.

use std::path::Path;

use super::{Config, ConfigError, Source};

/// One setting from outside the file, and where it came from (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    /// Dotted key, as in the file: `junior.base_url`, `agent.max_steps`.
    pub key: String,
    pub value: String,
    /// `-c junior.model=…` or `HANDOFF_JUNIOR__MODEL`.
    pub origin: String,
}

impl Override {
    /// Parses `key=value` as `-c` takes it.
    pub fn from_arg(arg: &str) -> Result<Override, ConfigError> {
        let (key, value) = arg.split_once('=').ok_or_else(|| ConfigError::Override {
            origin: format!("-c {arg}"),
            message: "expected key=value, e.g. -c junior.model=qwen2.5-coder:7b".into(),
        })?;
        Ok(Override {
            key: key.trim().to_string(),
            value: value.to_string(),
            origin: format!("-c {arg}"),
        })
    }

    /// The `HANDOFF_<SECTION>__<KEY>` variables among `vars`: `__` separates the levels of
    /// the key (single `_` is part of a name), so `HANDOFF_AGENT__MAX_STEPS=5` sets
    /// `agent.max_steps`. Variables without `__` (such as `HANDOFF_CONFIG`) are not
    /// settings. Sorted by name, so the order never depends on the environment's.
    pub fn from_env(vars: impl IntoIterator<Item = (String, String)>) -> Vec<Override> {
        let mut out: Vec<Override> = vars
            .into_iter()
            .filter_map(|(name, value)| {
                let rest = name.strip_prefix("HANDOFF_")?;
                rest.contains("__").then(|| Override {
                    key: rest.to_lowercase().replace("__", "."),
                    value,
                    origin: name.clone(),
                })
            })
            .collect();
        out.sort_by(|a, b| a.origin.cmp(&b.origin));
        out
    }

    /// Sets this value in `table`, creating sections on the way.
    pub fn apply(&self, table: &mut toml::Table) -> Result<(), ConfigError> {
        let fail = |message: String| ConfigError::Override {
            origin: self.origin.clone(),
            message,
        };
        let parts: Vec<&str> = self.key.split('.').collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(fail(format!("`{}` is not a key", self.key)));
        }
        let (last, sections) = parts.split_last().ok_or_else(|| fail("empty key".into()))?;
        let mut here = table;
        for s in sections {
            let entry = here
                .entry((*s).to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            here = entry
                .as_table_mut()
                .ok_or_else(|| fail(format!("`{s}` is a value, not a section")))?;
        }
        here.insert((*last).to_string(), value_of(&self.value));
        Ok(())
    }
}

impl super::Config {
    /// Like [`Config::discover`], with settings from outside the file applied on top, in
    /// order (later wins): the `HANDOFF_*` variables, then `-c` (see [`Override`]).
    pub fn discover_with(
        explicit: Option<&Path>,
        overrides: &[Override],
    ) -> Result<(Config, Source), ConfigError> {
        let (config, source) = Config::discover(explicit)?;
        if overrides.is_empty() {
            return Ok((config, source));
        }
        let text = match &source {
            Source::File(p) => super::read_file(p)?,
            Source::Defaults => String::new(),
        };
        let mut table: toml::Table =
            text.parse()
                .map_err(|e: toml::de::Error| ConfigError::Parse {
                    path: source.to_string(),
                    message: e.to_string(),
                })?;
        for o in overrides {
            o.apply(&mut table)?;
        }
        let merged = toml::to_string(&table).map_err(|e| ConfigError::Override {
            origin: "overrides".into(),
            message: e.to_string(),
        })?;
        let origins: Vec<&str> = overrides.iter().map(|o| o.origin.as_str()).collect();
        let label = format!("{source} with {}", origins.join(", "));
        let config = Config::parse(&merged, &label)?;
        Ok((config, source))
    }
}

/// `raw` as a TOML value when it parses as one, else as a string.
fn value_of(raw: &str) -> toml::Value {
    format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_names_map_to_dotted_keys_and_values_keep_their_types() {
        let vars = [
            ("HANDOFF_CONFIG".to_string(), "x.toml".to_string()),
            ("HANDOFF_AGENT__MAX_STEPS".to_string(), "5".to_string()),
            (
                "HANDOFF_JUNIOR__MODEL".to_string(),
                "qwen2.5-coder:7b".to_string(),
            ),
            ("PATH".to_string(), "/bin".to_string()),
        ];
        let o = Override::from_env(vars);
        let keys: Vec<&str> = o.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(keys, ["agent.max_steps", "junior.model"]);
        let mut t = toml::Table::new();
        for x in &o {
            x.apply(&mut t).expect("apply");
        }
        assert_eq!(t["agent"]["max_steps"].as_integer(), Some(5));
        assert_eq!(t["junior"]["model"].as_str(), Some("qwen2.5-coder:7b"));
    }

    #[test]
    fn a_c_argument_needs_an_equals_sign_and_a_key() {
        assert!(Override::from_arg("junior.model").is_err());
        let o = Override::from_arg("agent.sandbox=false").expect("ok");
        let mut t = toml::Table::new();
        o.apply(&mut t).expect("apply");
        assert_eq!(t["agent"]["sandbox"].as_bool(), Some(false));
        let bad = Override::from_arg("junior..model=x").expect("parsed");
        assert!(bad.apply(&mut toml::Table::new()).is_err());
    }
}
