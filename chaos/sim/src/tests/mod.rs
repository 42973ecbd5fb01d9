//! Tests of the simulator through its public API, as a user of the crate
//! writes them (`use sim::…`, see `extern crate self` in `lib.rs`): the demo
//! recording, the fabric model, the simulated switch over gNMI, and pygnmi
//! against that switch. They were integration-test binaries of their own;
//! as unit tests they link into the crate's one test binary instead. Keep
//! them to the public API all the same.

mod demo;
mod ecmp;
mod fabric;
mod switch;
mod switch_interop;
