//! TUI behaviour through a real terminal.

mod tmux_demo;
