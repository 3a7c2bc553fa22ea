#![no_main]
//! See `libloader_fuzz::abi`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| libloader_fuzz::abi::run(data));
