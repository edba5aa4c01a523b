//! Owning the terminal: raw mode and the alternate screen, always given back.
//!
//! The guard restores on drop (normal exit and errors), the panic hook restores before the
//! panic message is printed (so it is readable), and the run loop restores on a stop (the
//! caller's shutdown future: SIGINT, SIGTERM, SIGHUP and SIGQUIT) by returning, which drops the
//! guard.

use std::io::{self, Write};
use std::sync::Once;

use crossterm::cursor::{Hide, Show};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};

/// Raw mode and the alternate screen for as long as this lives.
#[derive(Debug)]
pub struct TerminalGuard {
    _private: (),
}

impl TerminalGuard {
    /// Enters raw mode and the alternate screen; installs the panic hook once per process.
    pub fn enter() -> io::Result<TerminalGuard> {
        install_panic_hook();
        enable_raw_mode()?;
        if let Err(e) = execute!(io::stdout(), EnterAlternateScreen, Hide) {
            restore();
            return Err(e);
        }
        Ok(TerminalGuard { _private: () })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Leaves the alternate screen and raw mode and shows the cursor. Safe to call twice and
/// when nothing was entered; errors are ignored because there is nowhere left to report
/// them.
pub fn restore() {
    let mut out = io::stdout();
    let _ = execute!(out, LeaveAlternateScreen, Show);
    let _ = disable_raw_mode();
    let _ = out.flush();
}

/// Chains a hook that restores the terminal in front of the existing panic hook.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}
