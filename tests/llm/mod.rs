//! The streaming client against the scripted server over loopback.

mod broken;
mod cancel;
mod common;
mod doctor;
mod doctor_fixes;
mod quirks;
mod retry;
mod split;
mod tool_calls;
mod wire;
