//! Fixes as the rules build them (byte ranges of the analysed source).
use crate::checker::Checker;
use ruff_text_size::{TextRange, TextSize};
pub use torchvet_diagnostics::Applicability;

/// One replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEdit {
    /// The replaced range.
    pub range: TextRange,
    /// The new text.
    pub content: String,
}

impl RawEdit {
    /// Replace `range` with `content`.
    pub fn replace(range: TextRange, content: impl Into<String>) -> Self {
        Self {
            range,
            content: content.into(),
        }
    }

    /// Insert `content` at `offset`.
    pub fn insert(offset: ruff_text_size::TextSize, content: impl Into<String>) -> Self {
        Self {
            range: TextRange::empty(offset),
            content: content.into(),
        }
    }

    /// Delete `range`.
    pub fn delete(range: TextRange) -> Self {
        Self {
            range,
            content: String::new(),
        }
    }
}

/// A fix: edits with an applicability.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawFix {
    /// Safe, unsafe or display-only.
    pub applicability: Applicability,
    /// What it does.
    pub message: String,
    /// Non-overlapping edits.
    pub edits: Vec<RawEdit>,
}

impl RawFix {
    /// A fix that keeps meaning.
    pub fn safe(message: impl Into<String>, edits: Vec<RawEdit>) -> Self {
        Self::new(Applicability::Safe, message, edits)
    }

    /// A fix that may change behaviour.
    pub fn unsafe_edit(message: impl Into<String>, edits: Vec<RawEdit>) -> Self {
        Self::new(Applicability::Unsafe, message, edits)
    }

    /// A fix shown, never applied.
    pub fn display_only(message: impl Into<String>, edits: Vec<RawEdit>) -> Self {
        Self::new(Applicability::DisplayOnly, message, edits)
    }

    fn new(
        applicability: Applicability,
        message: impl Into<String>,
        mut edits: Vec<RawEdit>,
    ) -> Self {
        edits.sort_by_key(|e| (e.range.start(), e.range.end()));
        Self {
            applicability,
            message: message.into(),
            edits,
        }
    }
}

/// An edit that appends a keyword argument (`name=value`) to a call, after its last argument
/// (before any trailing comma or comment), or inside empty parentheses.
pub fn add_keyword_argument(call: &ruff_python_ast::ExprCall, keyword: &str) -> RawEdit {
    use ruff_text_size::Ranged;
    let last_end = call
        .arguments
        .args
        .iter()
        .map(Ranged::end)
        .chain(call.arguments.keywords.iter().map(Ranged::end))
        .max();
    match last_end {
        Some(end) => RawEdit::insert(end, format!(", {keyword}")),
        None => RawEdit::insert(
            call.arguments.start() + ruff_text_size::TextSize::from(1),
            keyword.to_string(),
        ),
    }
}

// ----- Layout of inserted text -----

/// The indentation before `at` when only spaces and tabs precede it on its line (the
/// statement starting there is the first thing on its line).
pub(crate) fn own_line_indent<'a>(checker: &Checker<'a>, at: TextSize) -> Option<&'a str> {
    let text = &checker.source.text;
    let pos = at.to_usize();
    let line_start = text.get(..pos)?.rfind('\n').map_or(0, |i| i + 1);
    let indent = text.get(line_start..pos)?;
    indent
        .chars()
        .all(|c| c == ' ' || c == '\t')
        .then_some(indent)
}

/// The offset just after the end of the line holding `at` (start of the next line), and
/// whether a newline must be prepended (end of file without a newline).
pub(crate) fn next_line_start(checker: &Checker, at: TextSize) -> (TextSize, bool) {
    let text = &checker.source.text;
    let pos = at.to_usize();
    match text.get(pos..).and_then(|rest| rest.find('\n')) {
        Some(i) => (TextSize::new((pos + i + 1) as u32), false),
        None => (TextSize::new(text.len() as u32), true),
    }
}

/// The file's newline sequence (`\r\n` when it uses one anywhere).
pub(crate) fn newline(checker: &Checker) -> &'static str {
    if checker.source.text.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    }
}
