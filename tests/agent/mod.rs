//! The agent loop end to end: a real session against scripted junior and senior servers on
//! loopback (real HTTP, real SSE with logprobs), real tools on a temporary git repository.

pub mod support;

mod calibration_fit;
mod checkpoint_cli;
mod code_protocol;
mod control;
mod conventions;
mod examples_evidence;
mod exec_binary;
mod exit_codes;
mod local_only;
mod loop_cases;
mod onboarding;
mod protect;
mod protocol;
mod sandbox_denial;
mod step_schedule;
mod writer_reply;
