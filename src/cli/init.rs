//! `handoff init`: write the documented example config where `discover` will find it.

use std::path::PathBuf;

use anyhow::Context;

use crate::exit::Exit;

#[derive(clap::Args)]
pub struct Args {
    /// Write here instead of the XDG config path.
    #[arg(long)]
    path: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<Exit> {
    let path = match args.path {
        Some(p) => p,
        None => crate::config::default_path().context("cannot find the XDG config directory")?,
    };
    crate::config::init(&path)
        .with_context(|| format!("writing the example config to {}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(Exit::Success)
}
