//! Replays saved fuzz inputs (crashes found by the AFL campaign, and a sample of its corpus)
//! through the same harness functions the fuzz targets run (see fuzz/README.md).

use std::path::Path;
use torchvet_checkpoint::testing::{fuzz_pickle_machine, fuzz_zip_reader};

fn replay(dir: &str, f: fn(&[u8])) -> usize {
    let d = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz_regressions")
        .join(dir);
    let mut n = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_none_or(|e| e != "md"))
        .collect();
    entries.sort();
    for p in entries {
        let data = std::fs::read(&p).unwrap();
        let r = std::panic::catch_unwind(|| f(&data));
        assert!(r.is_ok(), "{} panics again", p.display());
        n += 1;
    }
    n
}

#[test]
fn pickle_machine_inputs() {
    assert!(replay("pickle_machine", fuzz_pickle_machine) > 0);
}

#[test]
fn zip_reader_inputs() {
    assert!(replay("zip_reader", fuzz_zip_reader) > 0);
}
