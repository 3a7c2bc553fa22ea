//! The `fuzz_differential` target: the production ledger against the model, in lockstep.
//! Its logic and checks are `libloader_fuzz::differential`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| libloader_fuzz::differential::run(data));
