mod damage;
mod fixtures;
mod report;
mod round_trip;
