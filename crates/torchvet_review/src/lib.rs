//! The structured code review behind `torchvet review PATH...`.
//!
//! A review has seven sections, always in the same order (see [`SECTIONS`]): a summary with the
//! expert checklist, the findings of the linter grouped by what they mean for the reader
//! (critical, performance, best practice, code quality), the good practices the code already
//! follows, and concrete tests to write. Every statement points to code (`file:line`).

pub mod cli;
mod facts;
mod render;

use facts::FileFacts;
use serde::Serialize;
use std::path::{Path, PathBuf};
use torchvet_diagnostics::{Applicability, Diagnostic, Severity};
use torchvet_linter::{all_rules, find_rule, Group, LintSettings, Linter};
use torchvet_python::SourceFile;
use torchvet_workspace::{declared_torch_version, discover, DiscoveryOptions, TorchTargets};

pub use render::{render_html, render_json, render_markdown};

/// The section titles, in report order.
pub const SECTIONS: [&str; 7] = [
    "Summary",
    "Critical issues",
    "Performance improvements",
    "Best practices",
    "Code quality",
    "Positive aspects",
    "Testing recommendations",
];

/// Why a review could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// No path was given.
    #[error("no path to review")]
    NoPaths,
    /// A given path does not exist.
    #[error("{0}: no such file or directory")]
    NotFound(PathBuf),
    /// The paths contain no Python file or notebook.
    #[error("no Python files or notebooks found")]
    NoPythonFiles,
    /// The lint settings could not be built.
    #[error("lint settings: {0}")]
    Settings(String),
}

/// A place in the code and what it says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Evidence {
    /// File as displayed (relative when the input was relative).
    pub file: String,
    /// 1-based notebook cell, for notebooks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cell: Option<usize>,
    /// 1-based line (inside the cell for notebooks).
    pub line: usize,
    /// The trimmed source line.
    pub text: String,
}

fn location(file: &str, cell: Option<usize>, line: usize) -> String {
    match cell {
        Some(c) => format!("{file}:cell {c}:{line}"),
        None => format!("{file}:{line}"),
    }
}

impl Evidence {
    /// `file:line` (or `file:cell N:line`).
    pub fn location(&self) -> String {
        location(&self.file, self.cell, self.line)
    }
}

/// Result of one checklist item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckStatus {
    /// The code does it.
    Pass,
    /// The code should do it and does not (or does it wrong).
    Fail,
    /// Nothing in the code makes the check relevant.
    NotApplicable,
}

impl CheckStatus {
    /// `pass`, `fail` or `not-applicable`.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Pass => "pass",
            CheckStatus::Fail => "fail",
            CheckStatus::NotApplicable => "not-applicable",
        }
    }
}

/// One item of the expert checklist.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// Stable identifier (`device`, `train-eval-modes`, ...).
    pub id: &'static str,
    /// What is checked.
    pub title: &'static str,
    /// The verdict.
    pub status: CheckStatus,
    /// Why, in a few words.
    pub note: String,
    /// The lines that decided it.
    pub evidence: Vec<Evidence>,
}

/// A named thing found in the code (model, loop, data loader).
#[derive(Debug, Clone, Serialize)]
pub struct Item {
    /// Class, function or call name.
    pub name: String,
    /// `file:line`.
    pub location: String,
}

/// Counts of findings by severity.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Counts {
    /// Critical findings.
    pub critical: usize,
    /// Warnings.
    pub warning: usize,
    /// Advice.
    pub info: usize,
}

/// Section 1.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Python files and notebooks reviewed.
    pub files: usize,
    /// Total lines.
    pub lines: usize,
    /// The declared torch requirement (`torch>=2.1 (pyproject.toml)`), if any.
    pub torch_requirement: Option<String>,
    /// `nn.Module` subclasses.
    pub models: Vec<Item>,
    /// Functions that call `backward()`.
    pub training_loops: Vec<Item>,
    /// Evaluation functions and `no_grad`/`inference_mode` blocks.
    pub evaluation: Vec<Item>,
    /// `DataLoader(...)` constructions.
    pub data_loaders: Vec<Item>,
    /// Distributed setup (DDP, FSDP, process groups).
    pub distributed: Vec<Evidence>,
    /// Mixed precision (autocast, GradScaler).
    pub amp: Vec<Evidence>,
    /// What the code is, in one sentence.
    pub description: String,
    /// The overall verdict.
    pub verdict: String,
    /// Findings by severity.
    pub counts: Counts,
    /// The expert checklist.
    pub checklist: Vec<Check>,
}

/// A before/after code change.
#[derive(Debug, Clone, Serialize)]
pub struct Snippet {
    /// `fix` (the rule's own fix applied to this code), `docs` (the rule's documented
    /// example) or `suggestion` (a review-level change).
    pub origin: &'static str,
    /// `safe`, `unsafe` or `display-only` for fixes; absent for docs examples.
    pub applicability: Option<&'static str>,
    /// What the change does.
    pub description: String,
    /// Code before.
    pub before: String,
    /// Code after.
    pub after: String,
}

/// One finding of sections 2 to 5.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Rule code (`TV076`), or `REVIEW` for review-level observations.
    pub code: String,
    /// Rule name.
    pub rule: String,
    /// Severity.
    pub severity: Severity,
    /// Rule title.
    pub title: String,
    /// File as displayed.
    pub file: String,
    /// 1-based notebook cell, for notebooks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cell: Option<usize>,
    /// 1-based line (inside the cell for notebooks).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// Enclosing class / function (`Classifier.forward`), when inside one.
    pub scope: Option<String>,
    /// The finding's message.
    pub message: String,
    /// What goes wrong and why it matters (from the rule documentation).
    pub why: Option<String>,
    /// The change to make.
    pub fix: Option<Snippet>,
    /// Context from the project (for deprecated APIs: the declared torch requirement).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Finding {
    /// `file:line` (or `file:cell N:line`).
    pub fn location(&self) -> String {
        location(&self.file, self.cell, self.line)
    }
}

/// A good practice found in the code.
#[derive(Debug, Clone, Serialize)]
pub struct Positive {
    /// Stable identifier.
    pub id: &'static str,
    /// What is done well.
    pub title: &'static str,
    /// Why it is good.
    pub detail: &'static str,
    /// Where.
    pub evidence: Vec<Evidence>,
}

/// Tests to write for one module or loop.
#[derive(Debug, Clone, Serialize)]
pub struct TestRecommendation {
    /// `module`, `training-loop` or `evaluation`.
    pub kind: &'static str,
    /// Class or function name.
    pub target: String,
    /// `file:line`.
    pub location: String,
    /// The tests, one sentence each.
    pub tests: Vec<String>,
}

/// A complete review.
#[derive(Debug, Clone, Serialize)]
pub struct Review {
    /// The paths as given.
    pub paths: Vec<String>,
    /// Section 1.
    pub summary: Summary,
    /// Section 2.
    pub critical: Vec<Finding>,
    /// Section 3.
    pub performance: Vec<Finding>,
    /// Section 4.
    pub best_practices: Vec<Finding>,
    /// Section 5.
    pub code_quality: Vec<Finding>,
    /// Section 6.
    pub positive: Vec<Positive>,
    /// Section 7.
    pub testing: Vec<TestRecommendation>,
    /// Files that could not be read or parsed.
    pub errors: Vec<String>,
}

fn display_path(path: &Path) -> String {
    let mut p = path.to_path_buf();
    if p.is_absolute() {
        if let Ok(cwd) = std::env::current_dir() {
            if let Ok(rel) = p.strip_prefix(&cwd) {
                p = rel.to_path_buf();
            }
        }
    }
    let s = p.to_string_lossy().replace('\\', "/");
    s.strip_prefix("./").map(str::to_string).unwrap_or(s)
}

/// Review `paths` (files or directories).
pub fn review(paths: &[PathBuf]) -> Result<Review, ReviewError> {
    review_with_progress(paths, &mut |_, _| {})
}

/// Review `paths`, calling `progress(done, total)` after each file.
pub fn review_with_progress(
    paths: &[PathBuf],
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Review, ReviewError> {
    if paths.is_empty() {
        return Err(ReviewError::NoPaths);
    }
    for p in paths {
        if !p.exists() {
            return Err(ReviewError::NotFound(p.clone()));
        }
    }
    let root = std::env::current_dir().unwrap_or_default();
    let found = discover(
        paths,
        &DiscoveryOptions {
            root,
            ..DiscoveryOptions::default()
        },
    );
    let mut errors: Vec<String> = found
        .errors
        .iter()
        .map(|(p, m)| format!("{}: {m}", display_path(p)))
        .collect();
    if found.files.is_empty() {
        return Err(ReviewError::NoPythonFiles);
    }
    let settings = LintSettings::from_selectors(Some(&["ALL".to_string()]), &[], &[], false)
        .map_err(|e| ReviewError::Settings(format!("{e:?}")))?;
    let linter = Linter::new(settings);
    // Each file is judged against the torch version declared nearest to it, as `check` does.
    let targets = TorchTargets::new();

    let mut files = Vec::new();
    let mut diagnostics = Vec::new();
    let mut cards = Vec::new();
    let total = found.files.len();
    for (done, path) in found.files.iter().enumerate() {
        progress(done, total);
        let display = display_path(path);
        let source = match SourceFile::load(path) {
            Ok(s) => s,
            Err(e) => {
                errors.push(format!("{display}: {e}"));
                continue;
            }
        };
        let target = targets.for_path(path).and_then(|d| d.max);
        let diags = linter.lint_for_target(&source, &display, target);
        let facts = FileFacts::new(display, &source.text, source.cells().cloned());
        if let Ok(found_cards) = torchvet_summary::summarize(&source.text, None) {
            for card in found_cards {
                cards.push((facts.loc(card.line as usize), card));
            }
        }
        for d in diags {
            diagnostics.push((files.len(), d));
        }
        files.push((facts, source));
    }

    let torch_requirement = paths.first().and_then(|p| {
        declared_torch_version(p).map(|d| {
            let file = d
                .file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            format!("torch{} ({file})", d.specifier)
        })
    });
    let mut critical = Vec::new();
    let mut performance = Vec::new();
    let mut best_practices = Vec::new();
    let mut code_quality = Vec::new();
    let mut counts = Counts::default();
    for (idx, d) in &diagnostics {
        let (facts, source) = &files[*idx];
        match d.severity {
            Severity::Critical => counts.critical += 1,
            Severity::Warning => counts.warning += 1,
            Severity::Info => counts.info += 1,
        }
        let group = find_rule(d.name).map(|i| all_rules()[i].group);
        let mut finding = to_finding(d, facts, &source.text);
        if group == Some(Group::DeprecatedApi) {
            finding.note = Some(match &torch_requirement {
                Some(t) => format!("the project declares `{t}`: check the deprecation against it"),
                None => "no torch version is declared; pin one to know which deprecations apply"
                    .to_string(),
            });
        }
        if d.severity == Severity::Critical {
            critical.push(finding);
        } else {
            match group {
                Some(Group::Performance | Group::Memory | Group::DataLoading) => {
                    performance.push(finding)
                }
                Some(Group::Style) => code_quality.push(finding),
                _ => best_practices.push(finding),
            }
        }
    }
    for (facts, _) in &files {
        for f in facts::missing_type_hints(facts) {
            counts.info += 1;
            code_quality.push(f);
        }
    }
    for list in [
        &mut critical,
        &mut performance,
        &mut best_practices,
        &mut code_quality,
    ] {
        sort_findings(list);
    }

    let all_facts: Vec<&FileFacts> = files.iter().map(|(f, _)| f).collect();
    let summary = facts::summarize(&all_facts, &cards, counts, torch_requirement);
    let positive = facts::positives(&all_facts);
    let testing = facts::testing(&all_facts, &cards);
    Ok(Review {
        paths: paths.iter().map(|p| display_path(p)).collect(),
        summary,
        critical,
        performance,
        best_practices,
        code_quality,
        positive,
        testing,
        errors,
    })
}

fn sort_findings(list: &mut [Finding]) {
    list.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.file.cmp(&b.file))
            .then(a.cell.cmp(&b.cell))
            .then(a.line.cmp(&b.line))
            .then(a.column.cmp(&b.column))
            .then_with(|| a.code.cmp(&b.code))
    });
}

fn to_finding(d: &Diagnostic, facts: &FileFacts, text: &str) -> Finding {
    let rule = find_rule(d.name).map(|i| all_rules()[i]);
    let docs = rule.map(|r| r.docs_text()).unwrap_or_default();
    let joined_row = text
        .get(..d.range.0)
        .map_or(d.location.row, |t| t.matches('\n').count() + 1);
    let fix = d
        .fix
        .as_ref()
        .and_then(|fix| {
            let (before, after) = apply_fix(text, fix)?;
            Some(Snippet {
                origin: "fix",
                applicability: Some(match fix.applicability {
                    Applicability::Safe => "safe",
                    Applicability::Unsafe => "unsafe",
                    Applicability::DisplayOnly => "display-only",
                }),
                description: fix.message.clone(),
                before,
                after,
            })
        })
        .or_else(|| {
            let (before, after) = docs_example(&docs)?;
            Some(Snippet {
                origin: "docs",
                applicability: None,
                description: "the rule's documented example".to_string(),
                before,
                after,
            })
        });
    Finding {
        code: d.code.to_string(),
        rule: d.name.to_string(),
        severity: d.severity,
        title: d.title.to_string(),
        file: d.filename.clone(),
        cell: d.cell,
        line: d.location.row,
        column: d.location.column,
        scope: facts.scope_at(joined_row),
        message: d.message.clone(),
        why: docs_section(&docs, "## Why is this bad?"),
        fix,
        note: None,
    }
}

/// Apply a fix's edits to the lines they touch: `(before, after)`.
fn apply_fix(text: &str, fix: &torchvet_diagnostics::Fix) -> Option<(String, String)> {
    let start = fix.edits.iter().map(|e| e.start).min()?;
    let end = fix.edits.iter().map(|e| e.end).max()?;
    if end > text.len() || !text.is_char_boundary(start) || !text.is_char_boundary(end) {
        return None;
    }
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
    let before = &text[line_start..line_end];
    let mut after = before.to_string();
    let mut edits: Vec<_> = fix.edits.iter().collect();
    edits.sort_by_key(|e| std::cmp::Reverse(e.start));
    for e in edits {
        let (s, t) = (
            e.start.checked_sub(line_start)?,
            e.end.checked_sub(line_start)?,
        );
        if s > t || t > after.len() || !after.is_char_boundary(s) || !after.is_char_boundary(t) {
            return None;
        }
        after.replace_range(s..t, &e.content);
    }
    if after == before {
        return None;
    }
    Some((dedent(before), dedent(&after)))
}

fn dedent(s: &str) -> String {
    let indent = s
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    s.lines()
        .map(|l| l.get(indent..).unwrap_or(l.trim_start()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first paragraph under a `## ` heading of the rule docs.
fn docs_section(docs: &str, heading: &str) -> Option<String> {
    let rest = &docs[docs.find(heading)? + heading.len()..];
    let body = rest.split("\n## ").next().unwrap_or(rest);
    let para: Vec<&str> = body
        .trim_start()
        .split("\n\n")
        .next()
        .unwrap_or("")
        .lines()
        .map(str::trim)
        .collect();
    let s = para.join(" ");
    (!s.is_empty()).then_some(s)
}

fn first_code_block(s: &str) -> Option<String> {
    let open = s.find("```")?;
    let after_open = &s[open + 3..];
    let body_start = after_open.find('\n')? + 1;
    let body = &after_open[body_start..];
    let close = body.find("```")?;
    Some(body[..close].trim_end().to_string())
}

/// The `## Example` and `Use instead:` code blocks of the rule docs.
fn docs_example(docs: &str) -> Option<(String, String)> {
    let ex = docs.find("## Example")?;
    let section = &docs[ex..];
    let section = match section[3..].find("\n## ") {
        Some(i) => &section[..i + 3],
        None => section,
    };
    let before = first_code_block(section)?;
    let instead = section.find("Use instead:")?;
    let after = first_code_block(&section[instead..])?;
    Some((before, after))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_example_extracts_both_blocks() {
        let docs = "## What it does\nx\n\n## Why is this bad?\nIt breaks\nthings.\n\nMore.\n\n## Example\n```python\na = 1\n```\n\nUse instead:\n```python\na = 2\n```\n\n## References\n";
        assert_eq!(
            docs_example(docs),
            Some(("a = 1".to_string(), "a = 2".to_string()))
        );
        assert_eq!(
            docs_section(docs, "## Why is this bad?").as_deref(),
            Some("It breaks things.")
        );
    }

    #[test]
    fn dedent_keeps_relative_indent() {
        assert_eq!(dedent("    if x:\n        y"), "if x:\n    y");
    }
}
