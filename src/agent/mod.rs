//! The agent: the step loop, the tools over a confined workspace, and the handoff.

pub(crate) mod check_run;
pub mod confine;
pub(crate) mod context;
pub mod emitter;
pub(crate) mod examples;
pub(crate) mod gitguard;
pub(crate) mod gitnest;
pub(crate) mod handoff;
pub(crate) mod history;
pub(crate) mod inbox;
pub(crate) mod overlay;
pub(crate) mod proctree;
pub mod prompts;
pub(crate) mod protect;
pub(crate) mod reply;
pub(crate) mod retry;
pub mod sandbox;
pub mod session;
pub(crate) mod step;
pub mod tools;
pub(crate) mod turn;
