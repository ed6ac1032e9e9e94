//! Fuzz the whole scanner (format sniffing, containers, nested pickles).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let r = torchvet_checkpoint::scan_bytes("fuzz.pt", data);
    assert!(!r.format.is_empty());
});
