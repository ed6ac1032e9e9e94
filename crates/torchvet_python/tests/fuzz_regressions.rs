//! Inputs that crashed the front end during the AFL campaign (fuzz/afl, target
//! `python_front_end`), replayed through the same steps: decode, notebook JSON, parse, positions.
//! The first byte selects notebook (odd) or Python source (even).

use std::path::{Path, PathBuf};
use torchvet_python::{Ranged, SourceFile, SourceKind};

fn front_end(data: &[u8]) -> Option<usize> {
    let (&sel, rest) = data.split_first()?;
    let nb = sel & 1 == 1;
    let path = PathBuf::from(if nb { "fuzz.ipynb" } else { "fuzz.py" });
    let src = SourceFile::from_bytes(path, rest.to_vec(), nb).ok()?;
    let parsed = src.parse();
    for stmt in &parsed.syntax().body {
        let _ = src.position(stmt.range().start());
        let _ = src.line_text(stmt.range().start());
    }
    for e in parsed.errors() {
        let _ = src.position(e.range().start());
    }
    if let SourceKind::Notebook(n) = &src.kind {
        let _ = n.to_json();
    }
    Some(parsed.errors().len())
}

#[test]
fn saved_crash_inputs_parse_without_panicking() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let data = std::fs::read(&p).unwrap();
        // Each is a notebook with a syntax error the parser used to panic on: now it is
        // reported as syntax errors.
        let errors = front_end(&data).expect("a readable notebook");
        assert!(errors > 0, "{}", p.display());
        n += 1;
    }
    assert!(n >= 4);
}
