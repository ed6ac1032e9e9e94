//! Shared harness code of the AFL targets.

use std::path::PathBuf;
use torchvet_python::{Ranged, SourceFile, SourceKind, TextSize};

/// The Python/notebook front end: the first byte chooses notebook (odd) or Python source
/// (even); everything a linter run touches must work without panicking on any input.
pub fn python_front_end(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let nb = sel & 1 == 1;
    let path = PathBuf::from(if nb { "fuzz.ipynb" } else { "fuzz.py" });
    let Ok(src) = SourceFile::from_bytes(path, rest.to_vec(), nb) else {
        return;
    };
    let parsed = src.parse();
    let text_len = src.text.len() as u32;
    for stmt in parsed.syntax().body.iter().take(64) {
        let r = stmt.range();
        let _ = src.position(r.start());
        let _ = src.line_text(r.start());
        let _ = src.position(r.end());
    }
    for e in parsed.errors().iter().take(16) {
        let _ = src.position(e.range().start());
    }
    let _ = src.position(TextSize::from(text_len));
    if let SourceKind::Notebook(nb) = &src.kind {
        let _ = nb.to_json();
    }
    if let Some(cells) = src.cells() {
        for row in 0..cells.len().min(32) {
            let _ = cells.cell_row(row);
        }
    }
}
