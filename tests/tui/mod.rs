//! TUI behaviour through a real terminal.

mod tmux_approval;
mod tmux_demo;
mod tmux_run;
