//! TUI behaviour through a real terminal.

pub mod pty;
mod pty_injected_approval;
mod pty_quit;
mod tmux_approval;
mod tmux_demo;
mod tmux_run;
