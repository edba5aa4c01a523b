//! Clocks, rounds and the printed table.

use std::time::Duration;

/// One line of the table: a figure, what it is compared with, and the goal.
pub struct Row {
    pub figure: &'static str,
    pub measured: String,
    pub baseline: String,
    /// The ratio the goal is stated in (subject / baseline, or measured / goal).
    pub ratio: String,
    pub goal: &'static str,
    pub pass: bool,
}

impl Row {
    pub fn line(&self) -> String {
        format!(
            "{}: {} vs {} → {} (goal {}) {}",
            self.figure,
            self.measured,
            self.baseline,
            self.ratio,
            self.goal,
            verdict(self.pass)
        )
    }
}

fn verdict(pass: bool) -> &'static str {
    if pass { "ok" } else { "MISS" }
}

/// The rows as a Markdown table (docs/results/2026-12-01-performance.md is this output).
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| figure | measured | baseline (same run) | ratio | goal | |\n| --- | --- | --- | --- | --- | --- |\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            r.figure,
            r.measured,
            r.baseline,
            r.ratio,
            r.goal,
            verdict(r.pass)
        ));
    }
    out
}

/// CPU time this thread has used. Work figures are CPU time, not wall time: the machine
/// these run on is shared, and a compile next door should not make the judge look slow.
pub fn cpu_now() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec it is given.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// CPU time of this thread spent in `f`.
pub fn cpu_of(f: impl FnOnce()) -> Duration {
    let t0 = cpu_now();
    f();
    cpu_now().saturating_sub(t0)
}

/// CPU time of one call of `f`, averaged over `n` calls.
pub fn per_call(n: u32, mut f: impl FnMut()) -> Duration {
    cpu_of(|| {
        for _ in 0..n {
            f();
        }
    }) / n.max(1)
}

/// Alternates `a` and `b` for `rounds` rounds and keeps the fastest of each: the least
/// disturbed round is the best estimate of the work itself on a shared machine.
pub fn best_of_interleaved(
    rounds: usize,
    mut a: impl FnMut() -> Duration,
    mut b: impl FnMut() -> Duration,
) -> (Duration, Duration) {
    let mut best = (Duration::MAX, Duration::MAX);
    for _ in 0..rounds.max(1) {
        best.0 = best.0.min(a());
        best.1 = best.1.min(b());
    }
    best
}

/// Fastest of `rounds` runs of `f`.
pub fn best_of(rounds: usize, mut f: impl FnMut() -> Duration) -> Duration {
    (0..rounds.max(1)).map(|_| f()).min().unwrap_or_default()
}

/// A duration in the unit that reads best.
pub fn show(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns < 10_000 {
        format!("{ns} ns")
    } else if ns < 10_000_000 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else if ns < 10_000_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else {
        format!("{:.2} s", d.as_secs_f64())
    }
}

/// Median of some durations (upper median for an even count).
pub fn median(mut ds: Vec<Duration>) -> Duration {
    ds.sort();
    ds.get(ds.len() / 2).copied().unwrap_or_default()
}
