#![no_main]
//! See `libloader_fuzz::simulation`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| libloader_fuzz::simulation::run(data));
