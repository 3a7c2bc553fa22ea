//! The `fuzz_loader` target: the loader driven through its simulated host by the input.
//! Its logic and checks are `libloader_fuzz::simulation`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| libloader_fuzz::simulation::run(data));
