//! The judge: signals → belief B_t → threshold τ_t. Pure: no I/O, no async, no clocks.

pub mod evidence;
