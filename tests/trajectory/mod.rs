mod calibrate;
mod damage;
mod fixtures;
mod golden;
mod replay;
mod report;
mod round_trip;
mod synthetic;
