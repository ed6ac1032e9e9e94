//! Applying fixes: non-overlapping edits in a deterministic order, repeated until nothing
//! changes (bounded), with a re-parse after every round; a fix that would introduce a syntax
//! error is dropped and reported.
use crate::{FileContext, Linter};
use ruff_text_size::{TextRange, TextSize};
use torchvet_diagnostics::{Applicability, Diagnostic};
use torchvet_python::{SourceFile, SourceKind};

/// Most rounds of fix-then-relint per file.
pub const MAX_ROUNDS: usize = 10;

/// One applied (or dropped) fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixRecord {
    /// Rule code.
    pub code: &'static str,
    /// Rule name.
    pub name: &'static str,
    /// What the fix did.
    pub message: String,
    /// 1-based row of the finding (cell-relative for notebooks).
    pub row: usize,
    /// Notebook cell.
    pub cell: Option<usize>,
}

/// The result of fixing one file.
#[derive(Debug)]
pub struct FixOutcome {
    /// The fixed Python text (joined cells for notebooks).
    pub text: String,
    /// Fixes applied, in order.
    pub applied: Vec<FixRecord>,
    /// Fixes dropped because the result did not parse.
    pub dropped: Vec<FixRecord>,
    /// Findings left after fixing.
    pub remaining: Vec<Diagnostic>,
    /// For a notebook with applied fixes: its new JSON (or why it could not be written).
    pub notebook_json: Option<Result<String, String>>,
}

fn record(d: &Diagnostic) -> FixRecord {
    FixRecord {
        code: d.code,
        name: d.name,
        message: d
            .fix
            .as_ref()
            .map(|f| f.message.clone())
            .unwrap_or_default(),
        row: d.location.row,
        cell: d.cell,
    }
}

fn wanted(d: &Diagnostic, unsafe_fixes: bool) -> bool {
    match d.fix.as_ref().map(|f| f.applicability) {
        Some(Applicability::Safe) => true,
        Some(Applicability::Unsafe) => unsafe_fixes,
        _ => false,
    }
}

/// Apply the edits of `fixes` (each a set of edits) that do not overlap an earlier one.
/// Returns the new text and the indices of the fixes used.
fn apply_edits(text: &str, fixes: &[&Diagnostic], crlf: bool) -> (String, Vec<usize>, Vec<Span>) {
    let mut used = Vec::new();
    let mut taken: Vec<(usize, usize)> = Vec::new();
    for (i, d) in fixes.iter().enumerate() {
        let Some(fix) = &d.fix else { continue };
        let overlaps = fix.edits.iter().any(|e| {
            taken.iter().any(|&(s, t)| {
                // Touching insertions at the same point also conflict (order would matter).
                (e.start < t && s < e.end)
                    || (e.start == e.end && e.start >= s && e.start <= t)
                    || (s == t && s >= e.start && s <= e.end)
            })
        });
        let in_bounds = fix.edits.iter().all(|e| {
            e.start <= e.end
                && e.end <= text.len()
                && text.is_char_boundary(e.start)
                && text.is_char_boundary(e.end)
        });
        if overlaps || !in_bounds {
            continue;
        }
        taken.extend(fix.edits.iter().map(|e| (e.start, e.end)));
        used.push(i);
    }
    let mut edits: Vec<(usize, usize, String)> = used
        .iter()
        .flat_map(|&i| {
            fixes[i]
                .fix
                .as_ref()
                .into_iter()
                .flat_map(|f| f.edits.iter())
        })
        .map(|e| {
            let content = if crlf && !e.content.contains("\r\n") {
                e.content.replace('\n', "\r\n")
            } else {
                e.content.clone()
            };
            (e.start, e.end, content)
        })
        .collect();
    edits.sort_by_key(|e| (e.0, e.1));
    let mut out = String::with_capacity(text.len() + 64);
    let mut pos = 0;
    let mut spans = Vec::with_capacity(edits.len());
    for (s, e, c) in edits {
        out.push_str(&text[pos..s]);
        out.push_str(&c);
        spans.push(Span {
            start: s,
            end: e,
            inserted: c.len(),
        });
        pos = e;
    }
    out.push_str(&text[pos..]);
    (out, used, spans)
}

/// One applied edit, for remapping notebook cell ranges.
#[derive(Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
    inserted: usize,
}

impl Span {
    fn delta(self) -> isize {
        self.inserted as isize - (self.end - self.start) as isize
    }
}

/// Where a cell's range lies after the edits. An insertion at a cell's first byte belongs to
/// that cell; one at its last byte (before the separator) too. Edits never cross cells.
fn remap(range: TextRange, spans: &[Span]) -> TextRange {
    let (s, e) = (range.start().to_usize(), range.end().to_usize());
    let shift = |cond: &dyn Fn(&Span) -> bool| -> isize {
        spans
            .iter()
            .filter(|sp| cond(sp))
            .map(|sp| sp.delta())
            .sum()
    };
    let new_s = s as isize + shift(&|sp| sp.end < s || (sp.end == s && sp.start < s));
    let new_e = e as isize + shift(&|sp| sp.start <= e);
    let to_size = |v: isize| TextSize::new(u32::try_from(v.max(0)).unwrap_or(u32::MAX));
    TextRange::new(to_size(new_s), to_size(new_e.max(new_s)))
}

/// Apply `fixes` to the current file and rebuild it (notebook cell ranges remapped).
fn candidate(current: &SourceFile, fixes: &[&Diagnostic], crlf: bool) -> (SourceFile, Vec<usize>) {
    let (text, used, spans) = apply_edits(&current.text, fixes, crlf);
    (rebuilt(current, text, &spans), used)
}

fn parses(file: &SourceFile) -> bool {
    file.parse().errors().is_empty()
}

impl Linter {
    /// Fix one file in memory: apply safe (and, if asked, unsafe) fixes until nothing changes.
    /// Notebooks are fixed as their joined code; the caller writes cells back.
    pub fn fix(&self, source: &SourceFile, filename: &str, unsafe_fixes: bool) -> FixOutcome {
        self.fix_in(source, filename, unsafe_fixes, &FileContext::default())
    }

    /// [`Linter::fix`] with this file's own target torch (see [`Linter::lint_for_target`]).
    pub fn fix_for_target(
        &self,
        source: &SourceFile,
        filename: &str,
        unsafe_fixes: bool,
        target: Option<crate::Version>,
    ) -> FixOutcome {
        let ctx = FileContext {
            target: Some(target),
            ..FileContext::default()
        };
        self.fix_in(source, filename, unsafe_fixes, &ctx)
    }

    /// [`Linter::fix`] in the file's context (project view, own target torch). After each
    /// round of edits the file is summarised again and overlaid on the model, so positions
    /// stay right.
    pub fn fix_in(
        &self,
        source: &SourceFile,
        filename: &str,
        unsafe_fixes: bool,
        ctx: &FileContext,
    ) -> FixOutcome {
        let crlf = source.text.contains("\r\n");
        let mut current = SourceFile {
            path: source.path.clone(),
            text: source.text.clone(),
            kind: source.kind.clone(),
            bom: source.bom,
            encoding: source.encoding,
            line_index: source.line_index.clone(),
        };
        let mut applied = Vec::new();
        let mut dropped = Vec::new();
        let mut ctx = ctx.clone();
        let mut diags = self.lint_file(&current, None, filename, &ctx);
        // The original must parse: never "fix" a file with a syntax error.
        if diags.iter().any(|d| d.name == "syntax-error") {
            return FixOutcome {
                text: current.text.to_string(),
                applied,
                dropped,
                remaining: diags,
                notebook_json: None,
            };
        }
        for _ in 0..MAX_ROUNDS {
            let mut fixable: Vec<&Diagnostic> =
                diags.iter().filter(|d| wanted(d, unsafe_fixes)).collect();
            if fixable.is_empty() {
                break;
            }
            fixable.sort_by(|a, b| (a.range.0, a.code).cmp(&(b.range.0, b.code)));
            let (next, used) = candidate(&current, &fixable, crlf);
            let next = if parses(&next) {
                applied.extend(used.iter().map(|&i| record(fixable[i])));
                next
            } else {
                // Fall back to one fix at a time: the first that parses is kept this round,
                // the others wait for the next round (their offsets refer to this text).
                let mut kept = None;
                for &i in &used {
                    let (one, _) = candidate(&current, &fixable[i..=i], crlf);
                    if parses(&one) {
                        applied.push(record(fixable[i]));
                        kept = Some(one);
                        break;
                    }
                    dropped.push(record(fixable[i]));
                }
                match kept {
                    Some(one) => one,
                    None => break,
                }
            };
            if next.text == current.text {
                break;
            }
            current = next;
            ctx = ctx.for_text(&current);
            diags = self.lint_file(&current, None, filename, &ctx);
        }
        // Dropped fixes are still reported among the remaining findings.
        let notebook_json = match (&current.kind, applied.is_empty()) {
            (SourceKind::Notebook(nb), false) => Some(nb.to_json()),
            _ => None,
        };
        FixOutcome {
            text: current.text.to_string(),
            applied,
            dropped,
            remaining: diags,
            notebook_json,
        }
    }
}

fn rebuilt(prev: &SourceFile, text: String, spans: &[Span]) -> SourceFile {
    match &prev.kind {
        SourceKind::Python => {
            let mut f = SourceFile::from_python(prev.path.clone(), text);
            f.bom = prev.bom;
            f.encoding = prev.encoding;
            f
        }
        SourceKind::Notebook(nb) => {
            let ranges = nb
                .cell_ranges()
                .into_iter()
                .map(|r| remap(r, spans))
                .collect();
            let line_index = torchvet_python::LineIndex::new(&text);
            let nb = nb.rebuilt(text.clone(), ranges);
            SourceFile {
                path: prev.path.clone(),
                text: text.into(),
                kind: SourceKind::Notebook(Box::new(nb)),
                bom: prev.bom,
                encoding: prev.encoding,
                line_index,
            }
        }
    }
}
