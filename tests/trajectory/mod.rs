mod calibrate;
mod damage;
mod fixtures;
mod replay;
mod report;
mod round_trip;
mod synthetic;
