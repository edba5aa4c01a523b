//! TUI behaviour through a real terminal.

mod pty_quit;
mod tmux_approval;
mod tmux_demo;
mod tmux_run;
