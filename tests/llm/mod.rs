//! The streaming client against the scripted server over loopback.

mod broken;
mod burst;
mod cancel;
mod common;
mod doctor;
mod doctor_fixes;
mod jsonschema;
mod llamacpp;
mod quirks;
mod retry;
mod split;
mod textcall;
mod tool_calls;
mod wire;
