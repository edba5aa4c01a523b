//! One integration-test binary, one module per area (links faster than many binaries).

mod tools;
