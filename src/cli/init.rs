//! `handoff init [--preset NAME]`: write a config where `discover` will find it: the
//! documented example, or with a preset matched `[junior]`/`[senior]` sections for one kind
//! of server (local presets need no key), so the first `doctor` and `exec` work unedited.

use std::path::PathBuf;

use anyhow::Context;

use super::args::Globals;
use crate::exit::Exit;
use crate::presets::Preset;

#[derive(clap::Args)]
pub struct Args {
    /// Write here instead of the XDG config path.
    #[arg(long)]
    path: Option<PathBuf>,
    /// Matched junior and senior sections for one server: llamacpp, ollama, vllm,
    /// lmstudio, openai or real-models.
    #[arg(long, value_name = "NAME", value_parser = preset_names())]
    preset: Option<String>,
}

fn preset_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(Preset::ALL.map(Preset::name))
}

pub fn run(args: Args, globals: &Globals) -> anyhow::Result<Exit> {
    let path = match args.path.or_else(|| globals.config_path().map(Into::into)) {
        Some(p) => p,
        None => crate::config::default_path().context("cannot find the XDG config directory")?,
    };
    let preset = args.preset.as_deref().and_then(Preset::from_name);
    // A preset with a fitted judge writes it beside the config (never over a file).
    let mut calibration = None;
    if path.exists() {
        return Err(crate::config::ConfigError::Exists(path).into());
    }
    if let Some((name, json)) = preset.and_then(Preset::calibration) {
        let file = path.with_file_name(name);
        // The same calibration from an earlier init is kept; a different file is not touched.
        if std::fs::read_to_string(&file).ok().as_deref() != Some(json) {
            crate::config::init_with(&file, json)
                .with_context(|| format!("writing the calibration to {}", file.display()))?;
            println!("wrote {}", file.display());
        }
        calibration = Some(std::path::absolute(&file).unwrap_or(file));
    }
    let text = preset.map_or_else(
        || crate::config::EXAMPLE.to_string(),
        |p| p.config_text_with(calibration.as_deref()),
    );
    crate::config::init_with(&path, &text)
        .with_context(|| format!("writing the config to {}", path.display()))?;
    println!("wrote {}", path.display());
    if let Some(p) = preset {
        let (junior, senior) = p.endpoints();
        println!("junior  {}  model {}", junior.base_url, junior.model);
        println!("senior  {}  model {}", senior.base_url, senior.model);
        if let Some(var) = junior.api_key_env.or(senior.api_key_env) {
            println!("needs   export {var}=<your key>");
        }
        println!("next    handoff doctor, then handoff exec --repo DIR \"TASK\"");
    }
    Ok(Exit::Success)
}
