//! `handoff simulate`: the synthetic study and the simulated session logs.

mod logs;
