//! The agent: the step loop, the tools over a confined workspace, and the handoff.

pub mod confine;
pub mod context;
pub mod emitter;
pub mod gitguard;
pub mod gitnest;
pub mod handoff;
pub mod history;
pub mod inbox;
pub mod overlay;
pub mod proctree;
pub mod prompts;
pub mod protect;
pub mod reply;
pub mod retry;
pub mod sandbox;
pub mod session;
pub mod step;
pub mod tools;
pub mod turn;
