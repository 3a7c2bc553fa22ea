//! The `fuzz_abi` target: bytes as calls to the exported C functions, each result checked.
//! Its logic and checks are `libloader_fuzz::abi`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| libloader_fuzz::abi::run(data));
