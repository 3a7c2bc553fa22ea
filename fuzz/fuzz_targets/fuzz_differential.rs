#![no_main]
//! See `libloader_fuzz::differential`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| libloader_fuzz::differential::run(data));
