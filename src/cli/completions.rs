//! `handoff completions SHELL`: a completion script on stdout, generated from the same
//! argument definitions the binary parses, so it can never describe another version.

use crate::exit::Exit;

#[derive(clap::Args)]
pub struct Args {
    /// bash, zsh, fish, elvish or powershell.
    shell: clap_complete::Shell,
}

pub fn run(args: Args) -> anyhow::Result<Exit> {
    let mut cmd = super::command();
    clap_complete::generate(args.shell, &mut cmd, "handoff", &mut std::io::stdout());
    Ok(Exit::Success)
}
