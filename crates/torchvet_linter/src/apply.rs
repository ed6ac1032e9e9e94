//! Applying fixes: non-overlapping edits in a deterministic order, repeated until nothing
//! changes (bounded), with a re-parse after every round; a fix that would introduce a syntax
//! error is dropped and reported.
use crate::Linter;
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
fn apply_edits(text: &str, fixes: &[&Diagnostic], crlf: bool) -> (String, Vec<usize>) {
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
    for (s, e, c) in edits {
        out.push_str(&text[pos..s]);
        out.push_str(&c);
        pos = e;
    }
    out.push_str(&text[pos..]);
    (out, used)
}

fn parses(source: &SourceFile, text: &str) -> bool {
    let probe = match &source.kind {
        SourceKind::Python => SourceFile::from_python(source.path.clone(), text.to_string()),
        SourceKind::Notebook(_) => return false,
    };
    probe.parse().errors().is_empty()
}

impl Linter {
    /// Fix one file in memory: apply safe (and, if asked, unsafe) fixes until nothing changes.
    /// Notebooks are fixed as their joined code; the caller writes cells back.
    pub fn fix(&self, source: &SourceFile, filename: &str, unsafe_fixes: bool) -> FixOutcome {
        let crlf = source.text.contains("\r\n");
        if matches!(source.kind, SourceKind::Notebook(_)) {
            // Writing cells back is not supported yet: report, never half-fix a notebook.
            return FixOutcome {
                text: source.text.clone(),
                applied: Vec::new(),
                dropped: Vec::new(),
                remaining: self.lint(source, filename),
            };
        }
        let mut current = SourceFile {
            path: source.path.clone(),
            text: source.text.clone(),
            kind: source.kind.clone(),
            bom: source.bom,
            line_index: source.line_index.clone(),
        };
        let mut applied = Vec::new();
        let mut dropped = Vec::new();
        let mut diags = self.lint(&current, filename);
        // The original must parse: never "fix" a file with a syntax error.
        if diags.iter().any(|d| d.name == "syntax-error") {
            return FixOutcome {
                text: current.text,
                applied,
                dropped,
                remaining: diags,
            };
        }
        for _ in 0..MAX_ROUNDS {
            let mut fixable: Vec<&Diagnostic> =
                diags.iter().filter(|d| wanted(d, unsafe_fixes)).collect();
            if fixable.is_empty() {
                break;
            }
            fixable.sort_by(|a, b| (a.range.0, a.code).cmp(&(b.range.0, b.code)));
            let (text, used) = apply_edits(&current.text, &fixable, crlf);
            let text = if parses(&current, &text) {
                applied.extend(used.iter().map(|&i| record(fixable[i])));
                text
            } else {
                // Fall back to one fix at a time, keeping those that parse.
                let mut text = current.text.clone();
                let mut any = false;
                for &i in &used {
                    let (candidate, _) = apply_edits(&text, &fixable[i..=i], crlf);
                    // Offsets are relative to the original; only the first applied fix is safe
                    // to combine this round. Later ones wait for the next round.
                    if parses(&current, &candidate) {
                        text = candidate;
                        applied.push(record(fixable[i]));
                        any = true;
                        break;
                    }
                    dropped.push(record(fixable[i]));
                }
                if !any {
                    break;
                }
                text
            };
            if text == current.text {
                break;
            }
            current = rebuilt(&current, text);
            diags = self.lint(&current, filename);
        }
        // Dropped fixes are still reported among the remaining findings.
        FixOutcome {
            text: current.text,
            applied,
            dropped,
            remaining: diags,
        }
    }
}

fn rebuilt(prev: &SourceFile, text: String) -> SourceFile {
    let mut f = SourceFile::from_python(prev.path.clone(), text);
    f.bom = prev.bom;
    f
}
