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
    /// Per 0-based line of the joined text: how many leading bytes IPython's dedent removed
    /// from it (empty when no cell was indented as a whole).
    shifts: Vec<u32>,
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

    /// Bytes of indentation removed from the start of a 1-based row of the joined text (a cell
    /// indented as a whole is dedented, as IPython does): add it to a column to get the
    /// column in the cell as written.
    pub fn column_shift(&self, row: usize) -> usize {
        self.shifts
            .get(row.saturating_sub(1))
            .map_or(0, |&s| s as usize)
    }

    /// (1-based notebook cell number, 0-based first line in the joined text) of each analysed
    /// cell, in order.
    pub fn starts(&self) -> &[(usize, usize)] {
        &self.starts
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
    /// Per analysed cell: the indentation IPython removes from a cell indented as a whole
    /// (`None` when the cell is not indented).
    dedents: Vec<Option<Dedent>>,
    /// Per analysed cell: help lines rewritten for the parser, (rewritten, original).
    helps: Vec<Vec<(String, String)>>,
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
    if !lang.is_none_or(|l| l.eq_ignore_ascii_case("python")) {
        return false;
    }
    // Without a kernelspec, `language_info` may be an editor's default (VS Code writes
    // `"name": "python"` for a notebook whose kernel never ran): the code cells decide.
    let kernelspec = meta.and_then(|m| m.get("kernelspec")).is_some();
    kernelspec || !cells_in_another_language(nb)
}

/// Do the code cells of a notebook without a kernelspec read as JavaScript / TypeScript (a
/// tslab or IJavascript notebook) rather than Python? Some cell has a line only those
/// languages write (`import x from 'mod'`, `import * as x from "mod"`, `console.log(`,
/// `const x = ...;`) and no cell has a line only Python writes (`from x import y`, `def f(`,
/// `import x` alone, `print(`).
fn cells_in_another_language(nb: &Value) -> bool {
    let Some(cells) = nb.get("cells").and_then(Value::as_array) else {
        return false;
    };
    let mut script = false;
    for cell in cells {
        if cell.get("cell_type").and_then(Value::as_str) != Some("code") || cell_not_python(cell) {
            continue;
        }
        let Ok(src) = cell_source(cell) else {
            return false;
        };
        // A cell magic (`%%javascript`, `%%writefile app.js`) holds another language on
        // purpose, in a Python notebook.
        if src.trim_start().starts_with("%%") {
            continue;
        }
        for line in src.lines() {
            let l = line.trim();
            if python_only_line(l) {
                return false;
            }
            script |= script_only_line(l);
        }
    }
    script
}

/// A line that JavaScript / TypeScript write and Python cannot parse.
fn script_only_line(l: &str) -> bool {
    let quoted_tail = |rest: &str| {
        let rest = rest.trim_end().trim_end_matches(';').trim_end();
        rest.len() >= 2
            && ((rest.starts_with('\'') && rest.ends_with('\''))
                || (rest.starts_with('"') && rest.ends_with('"')))
    };
    if let Some(rest) = l.strip_prefix("import ") {
        // `import x from 'mod'`, `import {a, b} from "mod"`, `import 'mod';`
        return quoted_tail(rest)
            || rest
                .rsplit_once(" from ")
                .is_some_and(|(_, module)| quoted_tail(module));
    }
    if l.starts_with("console.log(") || l.starts_with("export ") {
        return true;
    }
    ["const ", "let ", "var "].iter().any(|k| {
        l.strip_prefix(k).is_some_and(|rest| {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
                .collect();
            !name.is_empty() && rest[name.len()..].trim_start().starts_with(['=', ':'])
        })
    })
}

/// A line that only Python writes.
fn python_only_line(l: &str) -> bool {
    if l.starts_with("def ") || l.starts_with("print(") || l.starts_with("async def ") {
        return true;
    }
    if let Some(rest) = l.strip_prefix("from ") {
        return rest.contains(" import ");
    }
    l.strip_prefix("import ").is_some_and(|rest| {
        !rest.contains(['\'', '"', '{', '*', ';'])
            && rest.split(',').all(|part| {
                let part = part.trim();
                let name = part.split(" as ").next().unwrap_or("").trim();
                !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
            })
            && !rest.contains(" from ")
    })
}

/// Does a code cell's own metadata say it holds another language than Python? VS Code writes
/// `metadata.vscode.languageId` (`"shellscript"`, `"plaintext"`, `"markdown"`, ...) when a
/// cell's language is switched; Polyglot / .NET Interactive notebooks write
/// `metadata.polyglot_notebook.kernelName` or `metadata.dotnet_interactive.language`. Such a
/// cell is skipped like a markdown cell.
fn cell_not_python(cell: &Value) -> bool {
    let Some(meta) = cell.get("metadata") else {
        return false;
    };
    let says = |outer: &str, key: &str| {
        meta.get(outer)
            .and_then(|m| m.get(key))
            .and_then(Value::as_str)
    };
    [
        says("vscode", "languageId"),
        says("polyglot_notebook", "kernelName"),
        says("dotnet_interactive", "language"),
    ]
    .into_iter()
    .flatten()
    .any(|lang| {
        let lang = lang.trim();
        !(lang.eq_ignore_ascii_case("python") || lang.eq_ignore_ascii_case("ipython"))
    })
}

/// A cell indented as a whole, dedented for analysis.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Dedent {
    /// The removed prefix (the first non-blank line's indentation).
    indent: String,
    /// 0-based lines (within the analysed cell text) the prefix was removed from.
    lines: Vec<usize>,
    /// Every non-blank line started with the prefix, so fixed code can be re-indented
    /// line by line when it is written back.
    uniform: bool,
}

/// One code cell ready for analysis.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Prepared {
    /// The Python text (magic line blanked, dedented).
    text: String,
    /// The blanked cell-magic line (`%%time\n` without the newline), or "".
    prefix: String,
    /// The dedent applied, if any.
    dedent: Option<Dedent>,
    /// Help lines rewritten by [`help_to_prefix`]: (rewritten, original).
    help: Vec<(String, String)>,
}

/// IPython's `leading_indent` transform: when the first non-blank line is indented, that
/// indentation is removed from every line that starts with it.
fn dedent(text: &str) -> (String, Option<Dedent>) {
    let Some(first) = text.lines().find(|l| !l.trim().is_empty()) else {
        return (text.to_string(), None);
    };
    let width = first.len() - first.trim_start_matches([' ', '\t']).len();
    if width == 0 {
        return (text.to_string(), None);
    }
    let indent = first[..width].to_string();
    let mut out = String::with_capacity(text.len());
    let mut lines = Vec::new();
    let mut uniform = true;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if let Some(rest) = line.strip_prefix(indent.as_str()) {
            out.push_str(rest);
            lines.push(i);
        } else {
            if !line.trim().is_empty() {
                uniform = false;
            }
            out.push_str(line);
        }
    }
    (
        out,
        Some(Dedent {
            indent,
            lines,
            uniform,
        }),
    )
}

/// IPython's help syntax at the end of a top-level line (`obj?`, `obj.attr??`,
/// `np.*load*?`, `f(x).method?`) rewritten as the same escape at the start of the line
/// (`?obj`, `??obj.attr`), which the parser's IPython mode reads as one escape command of any
/// text; automagic lines (`ls -l data`, `cd ..`, `pip install x`) commented out. Each line
/// keeps its length. Lines inside strings or brackets and comment text are left alone.
/// Returns the text and the (rewritten, original) lines, to undo it on write.
fn help_to_prefix(text: &str) -> (String, Vec<(String, String)>) {
    let mut out = String::with_capacity(text.len());
    let mut swaps = Vec::new();
    // Lexer state carried across lines: open triple-quoted string, bracket depth.
    let mut triple: Option<&str> = None;
    let mut depth: i32 = 0;
    for line in text.split_inclusive('\n') {
        let at_top = triple.is_none() && depth == 0;
        // Scan the line: find where code ends (comment start) and update the state.
        let bytes = line.as_bytes();
        let mut i = 0;
        let mut code_end = line.trim_end_matches(['\n', '\r']).len();
        while i < bytes.len() {
            if let Some(q) = triple {
                // Byte-wise: `i` may sit inside a multi-byte character of the string.
                if bytes[i..].starts_with(q.as_bytes()) {
                    triple = None;
                    i += 3;
                } else {
                    i += 1;
                }
                continue;
            }
            match bytes[i] {
                b'#' => {
                    code_end = code_end.min(i);
                    break;
                }
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                q @ (b'"' | b'\'') => {
                    let tq = if q == b'"' { "\"\"\"" } else { "\'\'\'" };
                    if bytes[i..].starts_with(tq.as_bytes()) {
                        triple = Some(tq);
                        i += 3;
                        continue;
                    }
                    // A one-line string: skip to its closing quote.
                    i += 1;
                    while i < bytes.len() && bytes[i] != q && bytes[i] != b'\n' {
                        if bytes[i] == b'\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        let code = line[..code_end].trim_end();
        let starts_plain = line
            .chars()
            .next()
            .is_some_and(|c| !c.is_whitespace() && !matches!(c, '?' | '%' | '!'));
        if at_top && triple.is_none() && depth == 0 && starts_plain && is_automagic(code) {
            // `ls -l data`, `cd ..`, `pip install x`: IPython runs the magic of that name
            // (automagic). Comment it out, same length.
            let first = line.chars().next().map_or(1, char::len_utf8);
            let new = format!("#{}{}", " ".repeat(first - 1), &line[first..]);
            swaps.push((
                new.trim_end_matches('\n').to_string(),
                line.trim_end_matches('\n').to_string(),
            ));
            out.push_str(&new);
            continue;
        }
        if at_top && triple.is_none() && depth == 0 && starts_plain && code.ends_with('?') {
            let body = code.trim_end_matches('?');
            let marks = &code[body.len()..];
            if marks.len() <= 2 && !body.trim().is_empty() {
                let rest = &line[code.len()..];
                let new = format!("{marks}{body}{rest}");
                swaps.push((
                    new.trim_end_matches('\n').to_string(),
                    line.trim_end_matches('\n').to_string(),
                ));
                out.push_str(&new);
                continue;
            }
        }
        out.push_str(line);
    }
    (out, swaps)
}

/// Line magics IPython runs without the `%` (automagic, on by default), and its shell aliases.
const AUTOMAGICS: &[&str] = &[
    "ls",
    "cd",
    "pwd",
    "pip",
    "conda",
    "mkdir",
    "rmdir",
    "rm",
    "cp",
    "mv",
    "cat",
    "less",
    "more",
    "man",
    "clear",
    "env",
    "history",
    "load_ext",
    "reload_ext",
    "unload_ext",
    "matplotlib",
    "pylab",
    "time",
    "timeit",
    "who",
    "whos",
    "who_ls",
    "run",
    "alias",
    "unalias",
    "autoreload",
    "aimport",
    "precision",
    "config",
    "reset",
    "pinfo",
    "pinfo2",
    "psource",
    "pdoc",
    "pfile",
    "pdef",
    "bookmark",
    "dhist",
    "pushd",
    "popd",
    "sx",
    "system",
    "lsmagic",
    "magic",
    "tensorboard",
    "load",
    "store",
    "xmode",
    "debug",
    "prun",
    "set_env",
    "mamba",
];

/// Is this top-level line an automagic call (`ls -l text.txt`): a magic's name, then
/// arguments that do not make it Python?
fn is_automagic(code: &str) -> bool {
    let Some((word, rest)) = code.split_once([' ', '\t']) else {
        return false;
    };
    if !AUTOMAGICS.contains(&word) || rest.trim().is_empty() {
        return false;
    }
    ruff_python_parser::parse_module(code).is_err()
}

/// Undo [`help_to_prefix`] on code about to be written back.
fn restore_help(code: &str, swaps: &[(String, String)]) -> String {
    if swaps.is_empty() {
        return code.to_string();
    }
    let mut out = String::with_capacity(code.len());
    for line in code.split_inclusive('\n') {
        let bare = line.trim_end_matches('\n');
        match swaps.iter().find(|(new, _)| new == bare) {
            Some((_, old)) => {
                out.push_str(old);
                out.push_str(&line[bare.len()..]);
            }
            None => out.push_str(line),
        }
    }
    out
}

/// Prepare one code cell's text as IPython would run it: `None` when the whole cell is not
/// Python (e.g. `%%bash`). A cell magic whose body is Python (`%%time`, `%%capture`) has
/// its magic line blanked; a cell indented as a whole is dedented. Line escapes (`!cmd`,
/// `%magic`, `obj?`, `obj??`, `?obj`) are left to the parser's IPython mode.
fn prepare_cell(src: &str) -> Option<Prepared> {
    let text = src.replace("\r\n", "\n");
    let trimmed = text.trim_start();
    let (body, prefix) = if let Some(rest) = trimmed.strip_prefix("%%") {
        let name = rest.split(|c: char| c.is_whitespace()).next().unwrap_or("");
        if !PYTHON_CELL_MAGICS.contains(&name) {
            return None;
        }
        // Blank the magic line, keep line numbers.
        let first_nl = text.find('\n').unwrap_or(text.len());
        (text[first_nl..].to_string(), text[..first_nl].to_string())
    } else {
        (text, String::new())
    };
    let (text, dedent) = dedent(&body);
    let (text, help) = help_to_prefix(&text);
    Some(Prepared {
        text,
        prefix,
        dedent,
        help,
    })
}

/// Put a dedented cell's indentation back on every non-blank line.
fn reindent(code: &str, indent: &str) -> String {
    let mut out = String::with_capacity(code.len() + code.len() / 8);
    for line in code.split_inclusive('\n') {
        if !line.trim().is_empty() {
            out.push_str(indent);
        }
        out.push_str(line);
    }
    out
}

impl Notebook {
    /// Parse nbformat JSON. An empty (or blank) file is a notebook without cells, as
    /// Jupyter editors open it: placeholder notebooks committed as 0-byte files are common.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let nb: Value = if raw.trim().is_empty() {
            serde_json::json!({ "cells": [] })
        } else {
            serde_json::from_str(raw).map_err(|e| format!("invalid JSON: {e}"))?
        };
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
        let mut dedents = Vec::new();
        let mut helps = Vec::new();
        let mut shifts: Vec<u32> = Vec::new();
        let mut line = 0usize;
        if is_python(&nb) {
            for (i, cell) in cells.iter().enumerate() {
                if !cell.is_object() {
                    return Err(format!("cell {} is not an object", i + 1));
                }
                if cell.get("cell_type").and_then(Value::as_str) != Some("code")
                    || cell_not_python(cell)
                {
                    continue;
                }
                let src = cell_source(cell).map_err(|e| format!("cell {}: {e}", i + 1))?;
                let Some(Prepared {
                    mut text,
                    prefix,
                    dedent,
                    help,
                }) = prepare_cell(&src)
                else {
                    continue;
                };
                prefixes.push(prefix);
                trailing_newline.push(text.ends_with('\n'));
                if let Some(d) = &dedent {
                    let width = u32::try_from(d.indent.len()).unwrap_or(u32::MAX);
                    for &l in &d.lines {
                        let global = line + l;
                        if shifts.len() <= global {
                            shifts.resize(global + 1, 0);
                        }
                        shifts[global] = width;
                    }
                }
                dedents.push(dedent);
                helps.push(help);
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
            map: CellMap { starts, shifts },
            cell_indices,
            raw: nb,
            prefixes,
            trailing_newline,
            dedents,
            helps,
            indent,
            final_newline: raw.ends_with('\n'),
        })
    }

    /// The same notebook with new joined code and new cell ranges (after fixes).
    pub fn rebuilt(&self, source: String, ranges: Vec<TextRange>) -> Self {
        let mut starts = Vec::with_capacity(ranges.len());
        let mut shifts: Vec<u32> = Vec::new();
        let mut line = 0usize;
        for (k, r) in ranges.iter().enumerate() {
            let cell = self.map.starts.get(k).map(|c| c.0).unwrap_or(k + 1);
            starts.push((cell, line));
            let text = source
                .get(r.start().to_usize()..r.end().to_usize())
                .unwrap_or("");
            let lines = text.bytes().filter(|&b| b == b'\n').count() + 1;
            // A dedented cell is re-indented line by line when written: every non-blank
            // line is shifted by the indentation.
            if let Some(Some(d)) = self.dedents.get(k) {
                let width = u32::try_from(d.indent.len()).unwrap_or(u32::MAX);
                for (i, l) in text.split('\n').enumerate() {
                    if !l.trim().is_empty() {
                        let global = line + i;
                        if shifts.len() <= global {
                            shifts.resize(global + 1, 0);
                        }
                        shifts[global] = width;
                    }
                }
            }
            line += lines;
        }
        Self {
            source,
            ranges,
            map: CellMap { starts, shifts },
            cell_indices: self.cell_indices.clone(),
            raw: self.raw.clone(),
            prefixes: self.prefixes.clone(),
            trailing_newline: self.trailing_newline.clone(),
            dedents: self.dedents.clone(),
            helps: self.helps.clone(),
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
            let cell = cells
                .get(index)
                .ok_or_else(|| "cell index out of range".to_string())?;
            let old = cell_source(cell)?.replace("\r\n", "\n");
            let unchanged = prepare_cell(&old).is_some_and(|p| {
                let mut t = p.text;
                if t.ends_with('\n') {
                    t.pop();
                }
                t == code
            });
            if unchanged {
                continue;
            }
            let code = restore_help(code, &self.helps[k]);
            let code = match &self.dedents[k] {
                None => code,
                Some(d) if d.uniform => reindent(&code, &d.indent),
                Some(_) => {
                    return Err(format!(
                        "cell {}: the cell is indented unevenly and was dedented for analysis; fixes to it are not written",
                        index + 1
                    ))
                }
            };
            let mut full = String::with_capacity(code.len() + 16);
            full.push_str(&self.prefixes[k]);
            full.push_str(&code);
            if self.trailing_newline[k] {
                full.push('\n');
            }
            let cell = cells
                .get_mut(index)
                .ok_or_else(|| "cell index out of range".to_string())?;
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
    fn multi_byte_characters_in_strings_and_magics() {
        // A docstring with `→` (3 bytes) scanned byte by byte; an automagic-looking line whose
        // first character is not ASCII.
        let cell = "class A:\n    \"\"\"Process one octave: response → NMS → top-K.\n    \"\"\"\n    x = 1\nécrire = 2\n";
        let (out, _) = help_to_prefix(cell);
        assert_eq!(out, cell);
        let (out, swaps) = help_to_prefix("ls -l données\n");
        assert_eq!(out.len(), "ls -l données\n".len());
        assert!(out.starts_with('#'));
        assert_eq!(swaps.len(), 1);
    }

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
    fn an_empty_file_is_a_notebook_without_cells() {
        for raw in ["", "\n", "  \r\n"] {
            let nb = Notebook::parse(raw).unwrap();
            assert_eq!(nb.source(), "", "{raw:?}");
        }
        assert!(Notebook::parse("{\"cells\": [").is_err());
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
    fn ipython_help_lines_become_prefix_escapes_of_the_same_length() {
        let (text, swaps) = help_to_prefix(
            "model?\nnp.*load*??\nf(x).mean(0)?  # why?\ns = \"a?\"\nt = (1,\n 2)?\n\"\"\"doc?\n\"\"\"\n",
        );
        assert_eq!(
            text,
            "?model\n??np.*load*\n?f(x).mean(0)  # why?\ns = \"a?\"\nt = (1,\n 2)?\n\"\"\"doc?\n\"\"\"\n"
        );
        assert_eq!(swaps.len(), 3);
        assert_eq!(
            restore_help("?model\nx = 1\n??np.*load*", &swaps),
            "model?\nx = 1\nnp.*load*??"
        );
    }

    #[test]
    fn cells_indented_as_a_whole_are_dedented_and_columns_map_back() {
        let raw = r##"{"cells": [
            {"cell_type": "code", "source": "import torch"},
            {"cell_type": "code", "source": "\n    x = torch.ones(2)\n\n    y = x + 1\n"},
            {"cell_type": "code", "source": "%%time\n  z = 1\n  z?"}
        ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}"##;
        let nb = Notebook::parse(raw).unwrap();
        assert_eq!(
            nb.source(),
            "import torch\n\nx = torch.ones(2)\n\ny = x + 1\n\nz = 1\n?z\n"
        );
        // `x` is on row 3 of the joined text, column 1 there, column 5 in the cell.
        assert_eq!(nb.cell_map().cell_row(3), (2, 2));
        assert_eq!(nb.cell_map().column_shift(3), 4);
        assert_eq!(nb.cell_map().column_shift(4), 0);
        // Fixed code is re-indented (and help lines restored) when written back.
        let new_source = nb
            .source()
            .replace("ones(2)", "zeros(2)")
            .replace("z = 1", "z = 2");
        let ranges = nb
            .cell_ranges()
            .iter()
            .map(|r| {
                let shift = if r.start() > TextSize::new(20) { 1 } else { 0 };
                TextRange::new(r.start() + TextSize::new(shift), r.end() + TextSize::new(1))
            })
            .collect::<Vec<_>>();
        let ranges = vec![ranges[0].sub_end(TextSize::new(1)), ranges[1], ranges[2]];
        let v: Value =
            serde_json::from_str(&nb.rebuilt(new_source, ranges).to_json().unwrap()).unwrap();
        assert_eq!(
            v["cells"][1]["source"],
            serde_json::json!(["\n", "    x = torch.zeros(2)\n", "\n", "    y = x + 1\n"])
        );
        assert_eq!(
            v["cells"][2]["source"],
            serde_json::json!(["%%time\n", "  z = 2\n", "  z?"])
        );
    }

    #[test]
    fn cells_marked_as_another_language_are_skipped() {
        let raw = r##"{"cells": [
            {"cell_type": "code", "metadata": {"vscode": {"languageId": "shellscript"}}, "source": "python run.py --epochs 3"},
            {"cell_type": "code", "metadata": {"vscode": {"languageId": "plaintext"}}, "source": "epoch 1 | loss 0.52"},
            {"cell_type": "code", "metadata": {"vscode": {"languageId": "python"}}, "source": "x = 1"},
            {"cell_type": "code", "metadata": {}, "source": "%%writefile cfg.yaml\nlr: 0.1"},
            {"cell_type": "code", "metadata": {"polyglot_notebook": {"kernelName": "csharp"}}, "source": "var a = 1;"},
            {"cell_type": "code", "source": "y = 2"}
        ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}"##;
        let nb = Notebook::parse(raw).expect("parses");
        assert_eq!(nb.source(), "x = 1\ny = 2\n");
        assert_eq!(nb.cell_map().starts(), &[(3, 0), (6, 1)]);
    }

    #[test]
    fn typescript_notebook_without_kernelspec_is_skipped() {
        // tslab notebook saved by an editor that filled in a default `language_info`.
        let raw = r##"{"cells": [
            {"cell_type": "code", "metadata": {}, "source": ["import * as tslab from 'tslab';\n", "console.log(tslab.versions)"]},
            {"cell_type": "code", "metadata": {}, "source": ["import Plot from '@observablehq/plot';\n", "const xs = [1, 2, 3];"]}
        ], "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 2}"##;
        let nb = Notebook::parse(raw).expect("parses");
        assert_eq!(nb.source(), "");
        // The same notebook with a Python kernelspec is Python: its cells are analysed.
        let with_kernel = raw.replace(
            r#""metadata": {"language_info""#,
            r#""metadata": {"kernelspec": {"name": "python3", "language": "python"}, "language_info""#,
        );
        let nb = Notebook::parse(&with_kernel).expect("parses");
        assert!(nb.source().contains("console.log"));
    }

    #[test]
    fn python_notebook_with_a_javascript_cell_magic_is_python() {
        let raw = r##"{"cells": [
            {"cell_type": "code", "metadata": {}, "source": "%%javascript\nconst el = document.body;\nconsole.log(el)"},
            {"cell_type": "code", "metadata": {}, "source": "x = torch.ones(3)"},
            {"cell_type": "code", "metadata": {}, "source": "const = 3\nlet = const + 1"}
        ], "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 2}"##;
        let nb = Notebook::parse(raw).expect("parses");
        assert!(nb.source().contains("x = torch.ones(3)"));
        assert!(nb.source().contains("let = const + 1"));
    }

    #[test]
    fn broken_notebooks_are_errors() {
        assert!(Notebook::parse("{").is_err());
        assert!(Notebook::parse("[]").is_err());
        assert!(Notebook::parse(r#"{"cells": [{"cell_type": "code", "source": 3}]}"#).is_err());
    }
}
