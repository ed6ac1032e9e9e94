//! Jupyter notebooks: code cells joined into one text, with a map back to cells.
use ruff_text_size::{TextRange, TextSize};
use serde_json::Value;

/// Cell magics whose body is still Python (the magic line itself is blanked).
const PYTHON_CELL_MAGICS: &[&str] = &[
    "time", "timeit", "capture", "prun", "debug", "python", "python3",
];

/// Where each analysed code cell starts in the joined text.
#[derive(Debug, Clone, Default)]
pub struct CellMap {
    /// (1-based notebook cell number, 0-based first line in the joined text), in order.
    starts: Vec<(usize, usize)>,
}

impl CellMap {
    /// Map a 1-based row of the joined text to (cell number, 1-based row inside the cell).
    pub fn cell_row(&self, row: usize) -> (usize, usize) {
        let line = row.saturating_sub(1);
        let i = match self.starts.binary_search_by(|(_, start)| start.cmp(&line)) {
            Ok(i) => i,
            Err(0) => return (self.starts.first().map(|c| c.0).unwrap_or(1), row),
            Err(i) => i - 1,
        };
        let (cell, start) = self.starts[i];
        (cell, line - start + 1)
    }

    /// Number of analysed cells.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// No analysed cells.
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }
}

/// A parsed notebook.
#[derive(Debug, Clone)]
pub struct Notebook {
    source: String,
    ranges: Vec<TextRange>,
    map: CellMap,
    /// For each analysed cell: its index in the notebook's `cells` array.
    pub cell_indices: Vec<usize>,
}

fn cell_source(cell: &Value) -> Result<String, String> {
    match cell.get("source") {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut s = String::new();
            for p in parts {
                match p {
                    Value::String(line) => s.push_str(line),
                    _ => return Err("a cell's `source` list holds a non-string".into()),
                }
            }
            Ok(s)
        }
        Some(_) => Err("a cell's `source` is neither a string nor a list of strings".into()),
    }
}

fn is_python(nb: &Value) -> bool {
    let meta = nb.get("metadata");
    let lang = meta
        .and_then(|m| m.get("language_info"))
        .and_then(|l| l.get("name"))
        .and_then(Value::as_str)
        .or_else(|| {
            meta.and_then(|m| m.get("kernelspec"))
                .and_then(|k| k.get("language"))
                .and_then(Value::as_str)
        });
    lang.is_none_or(|l| l.eq_ignore_ascii_case("python"))
}

/// Prepare one code cell's text: `None` when the whole cell is not Python (e.g. `%%bash`).
fn prepare_cell(src: &str) -> Option<String> {
    let text = src.replace("\r\n", "\n");
    let trimmed = text.trim_start();
    if let Some(rest) = trimmed.strip_prefix("%%") {
        let name = rest.split(|c: char| c.is_whitespace()).next().unwrap_or("");
        if !PYTHON_CELL_MAGICS.contains(&name) {
            return None;
        }
        // Blank the magic line, keep line numbers.
        let first_nl = text.find('\n').unwrap_or(text.len());
        let mut out = String::with_capacity(text.len());
        out.push_str(&text[first_nl..]);
        return Some(out);
    }
    Some(text)
}

impl Notebook {
    /// Parse nbformat JSON.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let nb: Value = serde_json::from_str(raw).map_err(|e| format!("invalid JSON: {e}"))?;
        let cells = nb
            .get("cells")
            .and_then(Value::as_array)
            .ok_or_else(|| "no `cells` list (not an nbformat 4 notebook)".to_string())?;
        let mut source = String::new();
        let mut ranges = Vec::new();
        let mut starts = Vec::new();
        let mut cell_indices = Vec::new();
        let mut line = 0usize;
        if is_python(&nb) {
            for (i, cell) in cells.iter().enumerate() {
                if !cell.is_object() {
                    return Err(format!("cell {} is not an object", i + 1));
                }
                if cell.get("cell_type").and_then(Value::as_str) != Some("code") {
                    continue;
                }
                let src = cell_source(cell).map_err(|e| format!("cell {}: {e}", i + 1))?;
                let Some(mut text) = prepare_cell(&src) else {
                    continue;
                };
                if text.ends_with('\n') {
                    text.pop();
                }
                if !ranges.is_empty() {
                    source.push('\n');
                }
                let start = source.len();
                source.push_str(&text);
                let end = source.len();
                ranges.push(TextRange::new(
                    TextSize::try_from(start).map_err(|_| "notebook too large".to_string())?,
                    TextSize::try_from(end).map_err(|_| "notebook too large".to_string())?,
                ));
                starts.push((i + 1, line));
                cell_indices.push(i);
                line += text.bytes().filter(|&b| b == b'\n').count() + 1;
            }
        }
        if !ranges.is_empty() {
            source.push('\n');
        }
        Ok(Self {
            source,
            ranges,
            map: CellMap { starts },
            cell_indices,
        })
    }

    /// The joined code.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Byte range of each analysed cell in the joined code.
    pub fn cell_ranges(&self) -> Vec<TextRange> {
        self.ranges.clone()
    }

    /// The cell map.
    pub fn cell_map(&self) -> &CellMap {
        &self.map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_code_cells_and_maps_rows() {
        let raw = r##"{"cells": [
            {"cell_type": "markdown", "source": ["# title"]},
            {"cell_type": "code", "source": ["import torch\n", "x = 1\n"]},
            {"cell_type": "code", "source": "%%bash\nls"},
            {"cell_type": "code", "source": "!pip install x\ny = 2"}
        ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}"##;
        let nb = Notebook::parse(raw).unwrap();
        assert_eq!(nb.source(), "import torch\nx = 1\n!pip install x\ny = 2\n");
        assert_eq!(nb.cell_map().cell_row(1), (2, 1));
        assert_eq!(nb.cell_map().cell_row(2), (2, 2));
        assert_eq!(nb.cell_map().cell_row(4), (4, 2));
    }

    #[test]
    fn broken_notebooks_are_errors() {
        assert!(Notebook::parse("{").is_err());
        assert!(Notebook::parse("[]").is_err());
        assert!(Notebook::parse(r#"{"cells": [{"cell_type": "code", "source": 3}]}"#).is_err());
    }
}
