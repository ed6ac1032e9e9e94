//! Fuzz the zip reader: directory parsing and member reads of arbitrary bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use torchvet_checkpoint::zip::{read_entry, ZipArchive};

fuzz_target!(|data: &[u8]| {
    if let Ok(a) = ZipArchive::open(data) {
        for e in a.entries.iter().take(16) {
            let _ = read_entry(data, e, 1 << 20);
        }
        let _ = a.record("data.pkl");
    }
});
