//! `handoff simulate`: the synthetic study and the simulated session logs.

mod falsification;
mod logs;
mod study;
mod time_calibration;
