//! The streaming client against the scripted server over loopback.

mod cancel;
mod common;
mod quirks;
