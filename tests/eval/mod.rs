//! `handoff eval`: suites against scripted models, Ask-F1 over blockers, shards, import.

mod asks;
mod cascade;
mod fake;
mod hidden;
mod humaneval;
mod judge;
mod runs;
mod schedule;
mod shard;
