//! The front end: read `.py` and `.ipynb` files, map offsets to rows/columns (and notebook
//! cells), and parse with `ruff_python_parser`. Bad input becomes a [`LoadError`], never a panic.
#![deny(missing_docs)]

pub mod launch;
mod line_index;
mod notebook;

pub use line_index::LineIndex;
pub use notebook::{CellMap, Notebook};

pub use ruff_python_ast as ast;
pub use ruff_python_parser as parser;
pub use ruff_text_size::{Ranged, TextRange, TextSize};

use ruff_python_ast::{ModModule, PySourceType};
use ruff_python_parser::{parse_cells_unchecked, parse_unchecked_source, ParseOptions, Parsed};
use std::path::{Path, PathBuf};

/// Files larger than this are refused with a clear error.
pub const MAX_FILE_SIZE: u64 = 10 * 1024 * 1024;

/// Why a file could not be analysed.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The OS refused.
    #[error("cannot read file: {0}")]
    Io(#[from] std::io::Error),
    /// A symbolic link whose target does not exist.
    #[error("broken symbolic link (its target does not exist)")]
    BrokenLink,
    /// Over [`MAX_FILE_SIZE`].
    #[error("file is too large to analyse ({size} bytes; the limit is {limit} bytes)")]
    TooLarge {
        /// Actual size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// Contains NUL bytes.
    #[error("file looks binary (NUL byte at offset {0}); not a Python source file")]
    Binary(usize),
    /// Not UTF-8, and no known encoding declared (PEP 263).
    #[error(
        "file is not valid UTF-8 (invalid byte at offset {0}) and declares no encoding torchvet can read (`# -*- coding: gbk -*-` on its first or second line)"
    )]
    NotUtf8(usize),
    /// A notebook whose JSON is broken or not nbformat.
    #[error("malformed notebook: {0}")]
    Notebook(String),
}

/// What kind of source a file is.
#[derive(Debug, Clone)]
pub enum SourceKind {
    /// A `.py` file.
    Python,
    /// A Jupyter notebook: the analysed text is its code cells, joined.
    Notebook(Box<Notebook>),
}

/// A loaded source file.
#[derive(Debug)]
pub struct SourceFile {
    /// Where it is.
    pub path: PathBuf,
    /// The Python text that is analysed (notebook cells joined by `\n`); no BOM.
    pub text: std::sync::Arc<str>,
    /// Python or notebook.
    pub kind: SourceKind,
    /// Whether the file started with a UTF-8 BOM (stripped from `text`).
    pub bom: bool,
    /// The encoding the file declares and was decoded from, when it is not UTF-8 (PEP 263:
    /// `# coding=gbk`); fixes are not written to such a file.
    pub encoding: Option<&'static str>,
    /// Rows and columns.
    pub line_index: LineIndex,
}

/// Is this a path torchvet lints (by extension)?
pub fn is_lintable(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("py" | "pyw" | "ipynb")
    )
}

fn check_bytes(bytes: &[u8]) -> Result<(), LoadError> {
    if let Some(pos) = memchr::memchr(0, bytes) {
        return Err(LoadError::Binary(pos));
    }
    Ok(())
}

/// Decode bytes as UTF-8 text (BOM stripped), refusing binary data. A file that is not UTF-8
/// but declares its encoding in its first two lines, as PEP 263 defines it (`# coding=gbk`,
/// `# -*- coding: latin-1 -*-`), is decoded from that encoding, as Python reads it: the third
/// value names the encoding then.
pub fn decode(bytes: Vec<u8>) -> Result<(String, bool, Option<&'static str>), LoadError> {
    check_bytes(&bytes)?;
    let bytes = match String::from_utf8(bytes) {
        Ok(mut text) => {
            let bom = text.starts_with('\u{feff}');
            if bom {
                text.drain(..3);
            }
            return Ok((text, bom, None));
        }
        Err(e) => e,
    };
    let valid_up_to = bytes.utf8_error().valid_up_to();
    let bytes = bytes.into_bytes();
    let encoding = declared_encoding(&bytes)
        .filter(|e| *e != encoding_rs::UTF_8)
        .ok_or(LoadError::NotUtf8(valid_up_to))?;
    let text = encoding
        .decode_without_bom_handling_and_without_replacement(&bytes)
        .ok_or(LoadError::NotUtf8(valid_up_to))?;
    Ok((text.into_owned(), false, Some(encoding.name())))
}

/// The encoding a PEP 263 declaration in the first two lines names (`# -*- coding: gbk -*-`,
/// `# vim: set fileencoding=latin-1 :`): a comment line matching `coding[:=]\s*([-\w.]+)`.
/// Python's codec names that the WHATWG labels spell otherwise are mapped (`latin-1`,
/// `cp936`, `sjis`, `cp932`).
fn declared_encoding(bytes: &[u8]) -> Option<&'static encoding_rs::Encoding> {
    for line in bytes.split(|b| *b == b'\n').take(2) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let start = line
            .iter()
            .position(|b| !matches!(b, b' ' | b'\t' | b'\x0c'))?;
        if line[start] != b'#' {
            continue;
        }
        let Some(at) = memchr::memmem::find(line, b"coding") else {
            continue;
        };
        let rest = &line[at + "coding".len()..];
        let Some(rest) = rest.strip_prefix(b":").or_else(|| rest.strip_prefix(b"=")) else {
            continue;
        };
        let rest = &rest[rest
            .iter()
            .position(|b| !matches!(b, b' ' | b'\t'))
            .unwrap_or(rest.len())..];
        let len = rest
            .iter()
            .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')))
            .unwrap_or(rest.len());
        let name = std::str::from_utf8(&rest[..len])
            .ok()?
            .to_ascii_lowercase()
            .replace('_', "-");
        let label = match name.as_str() {
            "latin-1" | "iso-8859-1" | "iso8859-1" | "l1" => "latin1",
            "cp936" | "ms936" => "gbk",
            "sjis" | "cp932" | "ms932" | "shift-jis" => "shift_jis",
            "utf8" | "utf-8-sig" => "utf-8",
            other => other,
        };
        return encoding_rs::Encoding::for_label(label.as_bytes());
    }
    None
}

/// Parse a source's text as [`SourceFile::parse`] does (`cells`: a notebook's cell ranges).
fn parse_text(text: &str, cells: Option<&[TextRange]>) -> Parsed<ModModule> {
    match cells {
        None if text_is_cell_script(text) => {
            quiet_catch_unwind(|| parse_unchecked_source(text, PySourceType::Ipynb))
                .unwrap_or_else(|_| parse_unchecked_source(text, PySourceType::Python))
        }
        None => {
            let parsed = parse_unchecked_source(text, PySourceType::Python);
            if parsed.errors().is_empty() || !may_pass_async_argument(text) {
                return parsed;
            }
            // Pre-3.7 code that passes `async=` (torch < 0.4's name of `non_blocking`):
            // parse it as Python 3.6 did, with the word spelled as a plain name of the
            // same length, so offsets are unchanged. The linter still reports the file as
            // a syntax error of today's Python ([`SourceFile::legacy_async_arguments`]).
            let places = async_arguments(&parsed);
            if places.is_empty() {
                return parsed;
            }
            let mut bytes = text.as_bytes().to_vec();
            for r in &places {
                bytes[r.start().to_usize()..r.end().to_usize()].copy_from_slice(LEGACY_ASYNC);
            }
            let fixed = String::from_utf8(bytes).unwrap_or_default();
            let again = parse_unchecked_source(&fixed, PySourceType::Python);
            if again.errors().is_empty() {
                again
            } else {
                parsed
            }
        }
        Some(ranges) => {
            let ipython = quiet_catch_unwind(|| {
                parse_cells_unchecked(
                    text,
                    ranges.to_vec(),
                    &ParseOptions::from(PySourceType::Ipynb),
                )
            });
            match ipython {
                Ok(parsed) => parsed,
                Err(_) => parse_cells_unchecked(
                    text,
                    ranges.to_vec(),
                    &ParseOptions::from(PySourceType::Python),
                ),
            }
        }
    }
}

/// A source's text and what parsing it needs besides (see [`SourceFile::reparse`]).
#[derive(Clone, Debug)]
pub struct Reparse {
    text: std::sync::Arc<str>,
    cells: Option<std::sync::Arc<[TextRange]>>,
}

impl Reparse {
    /// A Python text's.
    pub fn python(text: &str) -> Self {
        Reparse {
            text: text.into(),
            cells: None,
        }
    }

    /// Parse the text as the source it came from parses.
    pub fn parse(&self) -> Parsed<ModModule> {
        parse_text(&self.text, self.cells.as_deref())
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// Is this Python text a cell script (`# %%` cells): see [`SourceFile::is_cell_script`].
fn text_is_cell_script(text: &str) -> bool {
    if memchr::memmem::find(text.as_bytes(), b"%%").is_none() {
        return false;
    }
    text.lines().any(|l| {
        l.strip_prefix('#')
            .is_some_and(|r| r.strip_prefix(' ').unwrap_or(r).starts_with("%%"))
    })
}

impl SourceFile {
    /// Read and decode a file; notebooks are turned into their joined code cells.
    pub fn load(path: &Path) -> Result<Self, LoadError> {
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    && std::fs::symlink_metadata(path).is_ok() =>
            {
                return Err(LoadError::BrokenLink)
            }
            Err(e) => return Err(e.into()),
        };
        if meta.is_dir() {
            return Err(LoadError::Io(std::io::Error::other("is a directory")));
        }
        if meta.len() > MAX_FILE_SIZE {
            return Err(LoadError::TooLarge {
                size: meta.len(),
                limit: MAX_FILE_SIZE,
            });
        }
        let bytes = std::fs::read(path)?;
        let is_notebook = path.extension().and_then(|e| e.to_str()) == Some("ipynb");
        Self::from_bytes(path.to_path_buf(), bytes, is_notebook)
    }

    /// Build from bytes already read.
    pub fn from_bytes(path: PathBuf, bytes: Vec<u8>, is_notebook: bool) -> Result<Self, LoadError> {
        if bytes.len() as u64 > MAX_FILE_SIZE {
            return Err(LoadError::TooLarge {
                size: bytes.len() as u64,
                limit: MAX_FILE_SIZE,
            });
        }
        let (raw, bom, encoding) = decode(bytes)?;
        if is_notebook {
            let nb = Notebook::parse(&raw).map_err(LoadError::Notebook)?;
            let text = nb.source().to_string();
            let line_index = LineIndex::new(&text);
            Ok(Self {
                path,
                text: text.into(),
                kind: SourceKind::Notebook(Box::new(nb)),
                bom,
                encoding,
                line_index,
            })
        } else {
            let line_index = LineIndex::new(&raw);
            Ok(Self {
                path,
                text: raw.into(),
                kind: SourceKind::Python,
                bom,
                encoding,
                line_index,
            })
        }
    }

    /// Build a Python source from a string (tests, stdin, editors).
    pub fn from_python(path: impl Into<PathBuf>, text: String) -> Self {
        let line_index = LineIndex::new(&text);
        Self {
            path: path.into(),
            text: text.into(),
            kind: SourceKind::Python,
            bom: false,
            encoding: None,
            line_index,
        }
    }

    /// Parse once. Notebooks parse cell by cell so one broken cell does not hide the others.
    ///
    /// The parser's IPython mode can panic while recovering from some syntax errors next to
    /// escape commands (found by fuzzing: a `;` auto-quote line after an unexpected indent). A
    /// notebook that trips it is parsed as plain Python instead: escape commands then read as
    /// syntax errors, and nothing panics.
    pub fn parse(&self) -> Parsed<ModModule> {
        match &self.kind {
            SourceKind::Python => parse_text(&self.text, None),
            SourceKind::Notebook(nb) => parse_text(&self.text, Some(&nb.cell_ranges())),
        }
    }

    /// What parsing this source again needs, without the source: its text (shared, not
    /// copied) and a notebook's cell ranges. The project model keeps one per file, to compute
    /// facts that few queries need from the tree when a query first asks (see
    /// `torchvet_semantic::project::FileSummary::grad_flow`).
    pub fn reparse(&self) -> Reparse {
        Reparse {
            text: self.text.clone(),
            cells: match &self.kind {
                SourceKind::Python => None,
                SourceKind::Notebook(nb) => Some(nb.cell_ranges().into()),
            },
        }
    }

    /// The places where this Python file passes `async` as a keyword argument
    /// (`x.cuda(async=True)`, torch < 0.4's name of `non_blocking`), when they are the only
    /// reason the file does not parse: a syntax error since Python 3.7, where `async` became a
    /// reserved word. [`SourceFile::parse`] reads such a file as Python 3.6 did, so the rest of
    /// it is analysed; the linter reports these places as the file's syntax error. Empty for
    /// every other file (and for notebooks, whose cells recover one by one).
    pub fn legacy_async_arguments(&self) -> Vec<TextRange> {
        if !matches!(self.kind, SourceKind::Python)
            || self.is_cell_script()
            || !may_pass_async_argument(&self.text)
        {
            return Vec::new();
        }
        let parsed = parse_unchecked_source(&self.text, PySourceType::Python);
        if parsed.errors().is_empty() || !self.parse().errors().is_empty() {
            return Vec::new();
        }
        async_arguments(&parsed)
    }

    /// Is this Python file a cell script, a notebook written as Python: one of its lines (at
    /// the start of the line) is a percent-format cell marker, `# %%` or `#%%` (Jupytext's
    /// percent format, VS Code's and PyCharm's interactive cells, Spyder's cells, each run in
    /// an IPython kernel). Its IPython line escapes (`%matplotlib inline`, `!pip install x`,
    /// `x = %time f()`) are then valid, as in a notebook's cells, and [`SourceFile::parse`]
    /// reads them with the parser's IPython mode. A plain `.py` file (no marker) with a stray
    /// `%` line is still a syntax error: Python refuses it, and so do we.
    pub fn is_cell_script(&self) -> bool {
        matches!(self.kind, SourceKind::Python) && text_is_cell_script(&self.text)
    }

    /// Does the line holding `offset` (where the parser put a syntax error) carry a
    /// fill-in-the-blank placeholder of course material, left for the student to complete?
    /// Two shapes: an assignment whose right-hand side is left empty before a comment that
    /// asks for it (`rotated_image = #  Your code here`, `img_path = # TASK: ...`, `loss =
    /// #TODO`, `model = # implement`; not a commented-out value), and a
    /// placeholder written as code (`TODO: YOUR CODE HERE`, `x = <YOUR CODE>`,
    /// `YOUR CODE HERE`). A line that merely has a `# TODO` comment after code is not one.
    pub fn is_exercise_blank(&self, offset: TextSize) -> bool {
        exercise_blank(self.line_text(offset))
    }

    /// Notebooks: parse as if the analysed cells whose index (0-based, in
    /// [`Notebook::cell_ranges`] order) is in `skip` were empty. Offsets stay those of the
    /// joined text (the skipped cells are blanked byte for byte), so findings in the other
    /// cells are placed as usual. For a Python file this is [`SourceFile::parse`].
    pub fn parse_skipping_cells(&self, skip: &[usize]) -> Parsed<ModModule> {
        match &self.kind {
            SourceKind::Python => self.parse(),
            SourceKind::Notebook(nb) => {
                let ranges = nb.cell_ranges();
                let mut bytes = self.text.as_bytes().to_vec();
                for &i in skip {
                    if let Some(r) = ranges.get(i) {
                        for b in &mut bytes[r.start().to_usize()..r.end().to_usize()] {
                            if *b != b'\n' {
                                *b = b' ';
                            }
                        }
                    }
                }
                // Every byte of a blanked cell is ASCII now, so the text is still UTF-8.
                let text = String::from_utf8(bytes).unwrap_or_default();
                parse_cells_unchecked(&text, ranges, &ParseOptions::from(PySourceType::Ipynb))
            }
        }
    }

    /// Is this Python file a Jinja template rather than Python (a cookiecutter / copier project
    /// template): a directory or file name of its path holds a `{{ ... }}` placeholder
    /// (`{{cookiecutter.project_slug}}/train.py`), or its text holds a `{{ cookiecutter.x }}`
    /// placeholder or a `{% ... %}` tag at the start of a line. Such a file becomes Python only
    /// once rendered; a syntax error in it is not the user's. Notebooks are never templates.
    pub fn is_template(&self) -> bool {
        if !matches!(self.kind, SourceKind::Python) {
            return false;
        }
        let templated_path = self.path.components().any(|c| {
            let c = c.as_os_str().to_string_lossy();
            c.contains("{{") && c.contains("}}")
        });
        if templated_path {
            return true;
        }
        let text = &self.text;
        text.contains("{{cookiecutter.")
            || text.contains("{{ cookiecutter.")
            || text.lines().any(|l| {
                let l = l.trim_start();
                (l.starts_with("{%") || l.starts_with("{%-")) && l.contains("%}")
            })
    }

    /// Notebooks: the index (0-based, in [`Notebook::cell_ranges`] order) of the analysed
    /// cell holding `offset`. An offset on the newline that ends a cell (where the parser puts
    /// errors at a cell's end) belongs to that cell. `None` for Python files.
    pub fn cell_index(&self, offset: TextSize) -> Option<usize> {
        let SourceKind::Notebook(nb) = &self.kind else {
            return None;
        };
        let ranges = nb.cell_ranges();
        let i = ranges.partition_point(|r| r.end() < offset);
        if i < ranges.len() {
            Some(i)
        } else {
            ranges.len().checked_sub(1)
        }
    }

    /// The notebook cell map, when this is a notebook.
    pub fn cells(&self) -> Option<&CellMap> {
        match &self.kind {
            SourceKind::Notebook(nb) => Some(nb.cell_map()),
            SourceKind::Python => None,
        }
    }

    /// Display position of a byte offset: (cell, row, column), row/column 1-based, row inside
    /// the cell for notebooks.
    pub fn position(&self, offset: TextSize) -> (Option<usize>, usize, usize) {
        let (row, col) = self.line_index.row_col(&self.text, offset);
        match self.cells() {
            Some(map) => {
                let (cell, row_in_cell) = map.cell_row(row);
                (Some(cell), row_in_cell, col + map.column_shift(row))
            }
            None => (None, row, col),
        }
    }

    /// The text of the (0-based) line containing `offset`, without its newline.
    pub fn line_text(&self, offset: TextSize) -> &str {
        self.line_index.line_text(&self.text, offset)
    }
}

/// See [`SourceFile::is_exercise_blank`].
fn exercise_blank(line: &str) -> bool {
    let (code, comment) = split_comment(line);
    let code = code.trim();
    // `name = # Your code here`, `loss = #TODO`: an empty right-hand side, then a comment
    // that asks for it. A commented-out value (`path = #'/data/x.csv'`) is no exercise: the
    // script is broken. (`==`, `<=`, `>=`, `!=` end a comparison, not an assignment.)
    let asks = comment.is_some_and(|c| {
        let c = c.to_ascii_lowercase();
        [
            "your",
            "todo",
            "task",
            "implement",
            "fill",
            "insert",
            "complete",
            "exercise",
        ]
        .iter()
        .any(|w| c.contains(w))
    });
    let empty_rhs = asks
        && code.ends_with('=')
        && !code.ends_with("==")
        && !code.ends_with("<=")
        && !code.ends_with(">=")
        && !code.ends_with("!=")
        && code.len() > 1;
    if empty_rhs {
        return true;
    }
    let upper = code.to_ascii_uppercase();
    let todo_line = code
        .strip_prefix("TODO")
        .is_some_and(|r| r.starts_with([':', ' ']) || r.is_empty());
    todo_line
        || [
            "YOUR CODE",
            "YOUR ANSWER",
            "YOUR SOLUTION",
            "FILL IN",
            "FILL ME",
        ]
        .iter()
        .any(|p| upper.contains(p))
}

/// A line's code and its comment (`None` when it has none). Quotes on the line are skipped;
/// a line inside a multi-line string is read as code.
fn split_comment(line: &str) -> (&str, Option<&str>) {
    let bytes = line.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(_) if b == b'\\' => i += 1,
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'"' || b == b'\'' => quote = Some(b),
            None if b == b'#' => return (&line[..i], Some(&line[i + 1..])),
            None => {}
        }
        i += 1;
    }
    (line, None)
}

thread_local! {
    static QUIET_PANICS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `catch_unwind` without the panic hook's message for panics caught here (other panics still
/// reach the previous hook).
fn quiet_catch_unwind<T>(f: impl FnOnce() -> T) -> std::thread::Result<T> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET_PANICS.with(std::cell::Cell::get) {
                prev(info);
            }
        }));
    });
    QUIET_PANICS.with(|q| q.set(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET_PANICS.with(|q| q.set(false));
    r
}

/// What `async` is spelled as when a pre-3.7 file is parsed (see [`SourceFile::parse`]): a plain
/// name of the same length, so every offset stays valid.
const LEGACY_ASYNC: &[u8; 5] = b"_sync";

/// Cheap pre-filter: does the text hold `async` followed by `=` (not `==`)?
fn may_pass_async_argument(text: &str) -> bool {
    memchr::memmem::find_iter(text.as_bytes(), b"async").any(|at| {
        let rest = text.as_bytes()[at + 5..].trim_ascii_start();
        rest.first() == Some(&b'=') && rest.get(1) != Some(&b'=')
    })
}

/// The `async` keywords of a parse that are followed by `=`: keyword arguments of pre-3.7 code
/// (`async` is never followed by `=` in valid Python 3.7+, and comments and strings are not
/// tokens of this kind).
fn async_arguments(parsed: &Parsed<ModModule>) -> Vec<TextRange> {
    use ruff_python_ast::token::TokenKind;
    let tokens: Vec<_> = parsed
        .tokens()
        .iter()
        .filter(|t| !t.kind().is_trivia())
        .collect();
    tokens
        .windows(2)
        .filter(|w| w[0].kind() == TokenKind::Async && w[1].kind() == TokenKind::Equal)
        .map(|w| w[0].range())
        .collect()
}

#[cfg(test)]
mod template_tests {
    use super::SourceFile;

    fn template(path: &str, text: &str) -> bool {
        SourceFile::from_python(path, text.to_string()).is_template()
    }

    #[test]
    fn templates_by_path_or_jinja_tags() {
        assert!(template("{{cookiecutter.slug}}/train.py", "import torch\n"));
        assert!(template("tpl/model_{{ name }}.py", "x = 1\n"));
        assert!(template("a.py", "LR = {{ cookiecutter.lr }}\n"));
        assert!(template(
            "a.py",
            "import os\n  {%- if cuda %}\nx = 1\n{% endif %}\n"
        ));
        assert!(!template("a.py", "T = '{% if x %}{{ y }}{% endif %}'\n"));
        assert!(!template("a.py", "d = {'a': {'b': 1}}\n"));
    }
}

#[cfg(test)]
mod encoding_tests {
    use super::{decode, LoadError};

    // "中文" in GBK.
    const GBK_WORD: &[u8] = b"\xd6\xd0\xce\xc4";

    #[test]
    fn a_declared_encoding_is_decoded_as_python_reads_it() {
        for header in [
            &b"# coding=gbk\n"[..],
            b"#!/usr/bin/env python\n# -*- coding: GBK -*-\n",
            b"# vim: set fileencoding=cp936 :\n",
        ] {
            let mut bytes = header.to_vec();
            bytes.extend_from_slice(b"# ");
            bytes.extend_from_slice(GBK_WORD);
            bytes.extend_from_slice(b"\nx = 1\n");
            let (text, bom, encoding) = decode(bytes).unwrap();
            assert!(text.contains("# 中文\nx = 1"), "{text}");
            assert!(!bom);
            assert_eq!(encoding, Some("GBK"));
        }
        let (text, _, encoding) =
            decode(b"# -*- coding: latin-1 -*-\nx = '\xe9'\n".to_vec()).unwrap();
        assert!(text.contains("x = 'é'"));
        assert_eq!(encoding, Some("windows-1252"));
        // UTF-8 needs no declaration and names no encoding.
        let (_, _, encoding) = decode("# coding=gbk\nx = 'é'\n".as_bytes().to_vec()).unwrap();
        assert_eq!(encoding, None);
    }

    #[test]
    fn undeclared_or_wrongly_declared_bytes_stay_an_error() {
        let mut undeclared = b"x = 1\n# ".to_vec();
        undeclared.extend_from_slice(GBK_WORD);
        assert!(matches!(decode(undeclared), Err(LoadError::NotUtf8(8))));
        // The declaration must be on one of the first two lines, in a comment.
        let late = b"x = 1\ny = 2\n# coding=gbk\n# \xd6\xd0\n".to_vec();
        assert!(matches!(decode(late), Err(LoadError::NotUtf8(_))));
        let in_string = b"s = 'coding=gbk \xd6\xd0'\n".to_vec();
        assert!(matches!(decode(in_string), Err(LoadError::NotUtf8(_))));
        // Declared UTF-8 (or an unknown codec) but not UTF-8.
        assert!(matches!(
            decode(b"# coding: utf-8\nx = '\xe9'\n".to_vec()),
            Err(LoadError::NotUtf8(_))
        ));
        assert!(matches!(
            decode(b"# coding: klingon\nx = '\xe9'\n".to_vec()),
            Err(LoadError::NotUtf8(_))
        ));
    }
}
