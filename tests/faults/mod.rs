//! The fault matrix (issue 10): every way an endpoint can fail, each a test that ends in a
//! defined state — retried, handed to another route, or stopped as `aborted` — with the log
//! intact. Sessions run as `exec` runs them (`app::wiring::prepare` + `app::headless::run_headless`) against
//! scripted servers on loopback; `kill` SIGKILLs the real binary mid-session.

mod common;

mod kill;
mod matrix_model;
mod matrix_network;
mod matrix_route;
