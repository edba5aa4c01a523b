//! `handoff simulate`: the synthetic study and the simulated session logs.

mod logs;
mod study;
mod time_calibration;
