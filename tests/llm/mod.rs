//! The streaming client against the scripted server over loopback.

mod cancel;
mod common;
mod doctor;
mod quirks;
mod retry;
mod split;
mod wire;
