//! Tests of the scenario files through the crate's public API, as a user of
//! the crate writes them (`use chaos::…`, see `extern crate self` in
//! `lib.rs`). They were an integration-test binary of their own; as unit
//! tests they link into the crate's one test binary instead. Keep them to
//! the public API all the same.

mod scenario;
