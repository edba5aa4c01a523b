//! The front ends and what they share: one way to build a session ([`wiring`]), the
//! headless run ([`headless`], `exec`), the TUI run ([`interactive`], `run` and `demo`),
//! replay's feeder ([`replay`]), the headless operator ([`operator`]), stopping headless
//! runs on a signal ([`stop`]), and the one module that turns an event into words
//! ([`present`]).

pub mod headless;
pub(crate) mod interactive;
pub mod operator;
pub mod present;
pub(crate) mod replay;
pub mod stop;
pub(crate) mod summary;
pub mod wiring;
