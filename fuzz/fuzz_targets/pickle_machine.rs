//! Fuzz the symbolic pickle machine: any bytes must finish within the limits, without panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use torchvet_checkpoint::pickle::{Limits, Machine};

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_ops: 100_000,
        max_nodes: 100_000,
        ..Limits::default()
    };
    let mut m = Machine::new(data, 0, limits);
    let out = m.run();
    if let Some(root) = out.root {
        let _ = m.resolve(root);
    }
    assert!(out.end <= data.len());
});
