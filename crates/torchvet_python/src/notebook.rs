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
    /// The notebook as read, for writing fixed cells back.
    raw: Value,
    /// Per analysed cell: the cell-magic line that was blanked (`%%time`), or "".
    prefixes: Vec<String>,
    /// Per analysed cell: its source ended with a newline.
    trailing_newline: Vec<bool>,
    /// JSON indentation of the file (Jupyter writes 1).
    indent: usize,
    /// The file ended with a newline.
    final_newline: bool,
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
        let mut prefixes = Vec::new();
        let mut trailing_newline = Vec::new();
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
                let normalised = src.replace("\r\n", "\n");
                prefixes.push(normalised[..normalised.len() - text.len()].to_string());
                trailing_newline.push(text.ends_with('\n'));
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
        let indent = raw
            .lines()
            .nth(1)
            .map(|l| l.len() - l.trim_start_matches(' ').len())
            .unwrap_or(1);
        Ok(Self {
            source,
            ranges,
            map: CellMap { starts },
            cell_indices,
            raw: nb,
            prefixes,
            trailing_newline,
            indent,
            final_newline: raw.ends_with('\n'),
        })
    }

    /// The same notebook with new joined code and new cell ranges (after fixes).
    pub fn rebuilt(&self, source: String, ranges: Vec<TextRange>) -> Self {
        let mut starts = Vec::with_capacity(ranges.len());
        let mut line = 0usize;
        for (k, r) in ranges.iter().enumerate() {
            let cell = self.map.starts.get(k).map(|c| c.0).unwrap_or(k + 1);
            starts.push((cell, line));
            let text = source
                .get(r.start().to_usize()..r.end().to_usize())
                .unwrap_or("");
            line += text.bytes().filter(|&b| b == b'\n').count() + 1;
        }
        Self {
            source,
            ranges,
            map: CellMap { starts },
            cell_indices: self.cell_indices.clone(),
            raw: self.raw.clone(),
            prefixes: self.prefixes.clone(),
            trailing_newline: self.trailing_newline.clone(),
            indent: self.indent,
            final_newline: self.final_newline,
        }
    }

    /// The notebook's JSON with every analysed cell's source taken from the joined code.
    /// Cells whose code did not change keep their JSON exactly; key order is kept.
    pub fn to_json(&self) -> Result<String, String> {
        let mut nb = self.raw.clone();
        let cells = nb
            .get_mut("cells")
            .and_then(Value::as_array_mut)
            .ok_or_else(|| "no `cells` list".to_string())?;
        for (k, r) in self.ranges.iter().enumerate() {
            let index = self.cell_indices[k];
            let code = self
                .source
                .get(r.start().to_usize()..r.end().to_usize())
                .ok_or_else(|| "cell range outside the code".to_string())?;
            let mut full = String::with_capacity(code.len() + 16);
            full.push_str(&self.prefixes[k]);
            full.push_str(code);
            if self.trailing_newline[k] {
                full.push('\n');
            }
            let cell = cells
                .get_mut(index)
                .ok_or_else(|| "cell index out of range".to_string())?;
            let old = cell_source(cell)?.replace("\r\n", "\n");
            if old == full {
                continue;
            }
            let lines: Vec<Value> = full
                .split_inclusive('\n')
                .map(|l| Value::String(l.to_string()))
                .collect();
            cell["source"] = Value::Array(lines);
        }
        let indent = " ".repeat(self.indent.max(1));
        let mut out = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
        let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
        serde::Serialize::serialize(&nb, &mut ser).map_err(|e| e.to_string())?;
        let mut s = String::from_utf8(out).map_err(|e| e.to_string())?;
        if self.final_newline {
            s.push('\n');
        }
        Ok(s)
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
    fn writes_back_only_changed_cells_keeping_magics() {
        let raw = "{\n \"cells\": [\n  {\n   \"cell_type\": \"code\",\n   \"source\": [\"%%time\\n\", \"x = torch.load(p)\\n\"]\n  },\n  {\n   \"cell_type\": \"code\",\n   \"source\": \"y = 1\"\n  }\n ],\n \"metadata\": {},\n \"nbformat\": 4\n}\n";
        let nb = Notebook::parse(raw).unwrap();
        assert_eq!(nb.source(), "\nx = torch.load(p)\ny = 1\n");
        let new_source = "\nx = torch.load(p, weights_only=True)\ny = 1\n".to_string();
        let ranges = vec![
            TextRange::new(TextSize::new(0), TextSize::new(37)),
            TextRange::new(TextSize::new(38), TextSize::new(43)),
        ];
        let fixed = nb.rebuilt(new_source, ranges).to_json().unwrap();
        let v: Value = serde_json::from_str(&fixed).unwrap();
        assert_eq!(
            v["cells"][0]["source"],
            serde_json::json!(["%%time\n", "x = torch.load(p, weights_only=True)\n"])
        );
        assert_eq!(v["cells"][1]["source"], "y = 1");
        assert!(fixed.starts_with("{\n \"cells\""), "{fixed}");
        assert!(fixed.ends_with("}\n"));
    }

    #[test]
    fn broken_notebooks_are_errors() {
        assert!(Notebook::parse("{").is_err());
        assert!(Notebook::parse("[]").is_err());
        assert!(Notebook::parse(r#"{"cells": [{"cell_type": "code", "source": 3}]}"#).is_err());
    }
}
