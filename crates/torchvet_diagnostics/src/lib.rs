//! The one diagnostic model of torchvet and its renderers.
//!
//! Everything a finding needs for display lives here: the rule identity (code, name,
//! severity), the message, the location (already converted to 1-based row/column, with a
//! notebook cell when there is one), and an optional fix. Renderers know nothing of the CLI.
#![deny(missing_docs)]

pub mod progress;
mod render;

pub use render::{render, OutputFormat, RenderOptions};

use serde::Serialize;
use std::fmt;

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Advice.
    Info,
    /// Real harm: memory, silent slowness, deprecated behaviour that changes.
    Warning,
    /// Wrong results, crash, hang or code execution.
    Critical,
}

impl Severity {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How safe a fix is to apply unattended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Applicability {
    /// Shown only; never applied.
    DisplayOnly,
    /// Applied with `--unsafe-fixes`: may change behaviour.
    Unsafe,
    /// Applied with `--fix`: keeps meaning.
    Safe,
}

/// A 1-based position for display (`row` is the line, `column` counts characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Location {
    /// 1-based line (inside the cell for notebooks).
    pub row: usize,
    /// 1-based column in characters.
    pub column: usize,
}

/// One text replacement, in byte offsets of the analysed source.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Edit {
    /// The replacement text.
    pub content: String,
    /// Byte offset where the replaced range starts.
    #[serde(skip)]
    pub start: usize,
    /// Byte offset where the replaced range ends.
    #[serde(skip)]
    pub end: usize,
    /// Display start.
    pub location: Location,
    /// Display end.
    pub end_location: Location,
}

/// A fix: edits plus how safe they are.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Fix {
    /// Safe, unsafe or display-only.
    pub applicability: Applicability,
    /// What the fix does, in a few words.
    pub message: String,
    /// The edits, non-overlapping, in source order.
    pub edits: Vec<Edit>,
}

/// A secondary location a message refers to (e.g. the related `backward()` call).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Related {
    /// What is there.
    pub message: String,
    /// Where.
    pub location: Location,
    /// Where it ends.
    pub end_location: Location,
    /// The notebook cell, when there is one.
    pub cell: Option<usize>,
    /// The file, when it is not the finding's own file (a model class defined in another
    /// module of the project).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
}

/// One finding in one file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Stable code, e.g. `TV007`.
    pub code: &'static str,
    /// Kebab-case rule name, e.g. `torch-load-without-weights-only`.
    pub name: &'static str,
    /// Severity.
    pub severity: Severity,
    /// What is wrong, for this occurrence.
    pub message: String,
    /// The file, as given or discovered.
    pub filename: String,
    /// Start.
    pub location: Location,
    /// End.
    pub end_location: Location,
    /// The notebook cell (1-based, counting code cells and others alike), when there is one.
    pub cell: Option<usize>,
    /// The fix, if any.
    pub fix: Option<Fix>,
    /// Where the rule is documented.
    pub url: String,
    /// The rule's one-line title (not serialised; used by SARIF).
    #[serde(skip)]
    pub title: &'static str,
    /// Secondary locations.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub related: Vec<Related>,
    /// Byte range in the analysed source (not serialised).
    #[serde(skip)]
    pub range: (usize, usize),
    /// The source line(s) of the finding, for the `full` renderer (not serialised).
    #[serde(skip)]
    pub source_line: Option<String>,
}

impl Diagnostic {
    /// Sort key: file, cell, row, column, code.
    pub fn sort_key(&self) -> (&str, usize, usize, usize, &str) {
        (
            self.filename.as_str(),
            self.cell.unwrap_or(0),
            self.location.row,
            self.location.column,
            self.code,
        )
    }
}

/// A file that could not be analysed (I/O error, not UTF-8, binary, broken notebook...).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileError {
    /// The file.
    pub filename: String,
    /// Why.
    pub message: String,
}

/// The documentation URL of a rule.
pub fn rule_url(name: &str) -> String {
    format!("https://torchvet.dev/rules/{name}")
}
