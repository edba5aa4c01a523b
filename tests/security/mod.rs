//! Untrusted input and secrets: parsers that must not panic on what a server or a disk
//! hands them, configs that must say what is wrong and where, keys that must never show,
//! and what a hostile command does to the process around it (escapes, signals, survivors).

pub mod invariants;

mod bounds;
mod configs;
mod escape;
mod frontends;
mod hostile;
mod keys;
mod parsers;
mod planted;
mod signals;
mod streams;
mod through_binary;
