//! The `handoff` binary. Every command lives in `handoff::cli`, one file each.

fn main() -> std::process::ExitCode {
    handoff::cli::main()
}
