//! `handoff man`: the man page (roff) on stdout, from the argument definitions, so it
//! lists exactly the commands and options this binary has.

use anyhow::Context;

use crate::exit::Exit;

pub fn run() -> anyhow::Result<Exit> {
    let mut out = Vec::new();
    clap_mangen::Man::new(super::command())
        .render(&mut out)
        .context("rendering the man page")?;
    std::io::Write::write_all(&mut std::io::stdout(), &out).context("writing the man page")?;
    Ok(Exit::Success)
}
