//! `cargo bench --bench perf`: the performance budget of issue 9, one table.
//!
//! Every figure is measured against its own baseline in the same run (interleaved rounds,
//! best round kept), so a busy machine slows both sides alike and the ratio stays
//! meaningful. Figures with no natural baseline (the DP, handoff latency, a TUI frame) are
//! given as a ratio to their goal. Pass `--quick` for fewer rounds (a smoke run), or a
//! figure's key (`token`, `stream`, `dp`, `replay`, `handoff`, `tui`) to run only those.
//!
//! Nothing here asserts a time: a slow machine prints a slow table, it does not fail CI.

mod handoff;
mod judge;
mod replay;
mod stream;
mod timing;
mod tui;

use timing::Row;

/// What the command line asked for.
pub struct Options {
    /// Fewer rounds and smaller repeats: checks that the bench runs, not what it measures.
    pub quick: bool,
    only: Vec<String>,
}

impl Options {
    fn from_args() -> Options {
        let mut quick = false;
        let mut only = Vec::new();
        for a in std::env::args().skip(1) {
            match a.as_str() {
                "--quick" => quick = true,
                // cargo passes `--bench` to every bench binary.
                s if s.starts_with('-') => {}
                s => only.push(s.to_string()),
            }
        }
        Options { quick, only }
    }

    fn wants(&self, key: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == key)
    }

    /// `full` rounds normally, `quick` with `--quick`.
    pub fn rounds(&self, full: usize, quick: usize) -> usize {
        if self.quick { quick } else { full }
    }
}

/// One part of the table: measures and returns its rows.
type Section = fn(&Options) -> Vec<Row>;

fn main() {
    // The replay bench measures peak memory in a child process running this binary.
    if let Some(code) = replay::child_main() {
        std::process::exit(code);
    }
    let opts = Options::from_args();
    let mut rows: Vec<Row> = Vec::new();
    let sections: [(&str, Section); 6] = [
        ("token", judge::run),
        ("stream", stream::run),
        ("dp", judge::run_dp),
        ("replay", replay::run),
        ("handoff", handoff::run),
        ("tui", tui::run),
    ];
    for (key, section) in sections {
        if opts.wants(key) {
            eprintln!("perf: measuring {key} …");
            let new = section(&opts);
            for r in &new {
                eprintln!("  {}", r.line());
            }
            rows.extend(new);
        }
    }
    println!("{}", timing::table(&rows));
}
