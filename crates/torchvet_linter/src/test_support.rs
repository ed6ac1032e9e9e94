//! Fixture-driven rule tests (used by `tests/rules.rs`).
//!
//! A fixture is Python (or a notebook) where every line that must produce a finding of the
//! rule under test ends with a `# expect: <rule-name>` comment; every other line must stay
//! silent. A first-line header `# torchvet-test: target-torch=X.Y` sets the target version.
use crate::registry::Rule;
use crate::settings::{LintSettings, Version};
use crate::Linter;
use std::collections::BTreeSet;
use std::path::Path;
use torchvet_diagnostics::{render, Diagnostic, OutputFormat, RenderOptions};
use torchvet_python::SourceFile;

/// The outcome of running one rule over one fixture.
pub struct FixtureRun {
    /// Findings of the rule.
    pub diagnostics: Vec<Diagnostic>,
    /// The `full` rendering (for snapshots).
    pub rendered: String,
    /// 0-based lines marked `# expect: <rule>`.
    pub expected_lines: BTreeSet<usize>,
    /// 0-based lines with findings.
    pub actual_lines: BTreeSet<usize>,
    /// Number of lines marked `# ok` (documented silent look-alikes).
    pub ok_markers: usize,
}

/// How many findings `rule` alone reports on a snippet of Python (`train.py`): for rule unit
/// tests of cases a single fixture file cannot hold (a whole file's context).
pub fn count_findings(rule: &str, src: &str) -> usize {
    let linter = Linter::new(LintSettings::only(rule));
    let file = SourceFile::from_python("train.py", src.to_string());
    linter.lint(&file, "train.py").len()
}

/// Run `rule` alone over the fixture at `path`.
pub fn run_fixture(rule: &Rule, path: &Path, display: &str) -> Result<FixtureRun, String> {
    // Through the project model, as `check` runs: a fixture is a one-file project (imports of
    // siblings on disk resolve, as they would for a single checked file).
    let (loaded, _model) = crate::project::load_project(&[path.to_path_buf()], &[], true);
    let file = match loaded.into_iter().next().map(|l| l.state) {
        Some(Ok(f)) => f,
        Some(Err(e)) => return Err(format!("{}: {e}", path.display())),
        None => return Err(format!("{}: not read", path.display())),
    };
    let source = &file.source;
    let mut settings = LintSettings::only(rule.name);
    settings.target_torch = header_target(&source.text);
    let linter = Linter::new(settings);
    let ctx = crate::FileContext {
        project: file.project.clone(),
        ..crate::FileContext::default()
    };
    let diagnostics: Vec<Diagnostic> = linter
        .lint_file(source, file.parsed.as_ref(), display, &ctx)
        .into_iter()
        .filter(|d| d.name == rule.name)
        .collect();
    let marker = format!("# expect: {}", rule.name);
    let mut expected_lines = BTreeSet::new();
    let mut ok_markers = 0;
    for (i, line) in source.text.lines().enumerate() {
        if line.contains(&marker) {
            expected_lines.insert(i);
        }
        if line.contains("# ok") {
            ok_markers += 1;
        }
    }
    let actual_lines = diagnostics
        .iter()
        .map(|d| {
            source
                .line_index
                .line_of(ruff_text_size::TextSize::new(d.range.0 as u32))
        })
        .collect();
    let rendered = render(
        &diagnostics,
        &RenderOptions {
            format: OutputFormat::Full,
            version: "test",
        },
    );
    Ok(FixtureRun {
        diagnostics,
        rendered,
        expected_lines,
        actual_lines,
        ok_markers,
    })
}

/// The outcome of fixing one fixture with one rule's fixes (safe and unsafe).
pub struct FixRun {
    /// Unified diff of the fix (empty when nothing changed).
    pub diff: String,
    /// The fixed text parses.
    pub parses: bool,
    /// A second fix pass changes nothing.
    pub converged: bool,
    /// Fixes dropped because they broke parsing.
    pub dropped: usize,
}

/// Apply `rule`'s fixes to the fixture at `path` (in memory) and check the result.
pub fn run_fix(rule: &Rule, path: &Path, display: &str) -> Result<Option<FixRun>, String> {
    let source = SourceFile::load(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !matches!(source.kind, torchvet_python::SourceKind::Python) {
        return Ok(None);
    }
    let mut settings = LintSettings::only(rule.name);
    settings.target_torch = header_target(&source.text);
    let linter = Linter::new(settings);
    let (loaded, _model) = crate::project::load_project(&[path.to_path_buf()], &[], true);
    let project = loaded
        .first()
        .and_then(|l| l.state.as_ref().ok())
        .and_then(|f| f.project.clone());
    let ctx = crate::FileContext {
        project,
        ..crate::FileContext::default()
    };
    let first = linter.fix_in(&source, display, true, &ctx);
    if first.applied.is_empty() && first.dropped.is_empty() {
        return Ok(None);
    }
    let fixed = SourceFile::from_python(path.to_path_buf(), first.text.clone());
    let parses = fixed.parse().errors().is_empty();
    let second = linter.fix_in(&fixed, display, true, &ctx.for_text(&fixed));
    let diff = similar::TextDiff::from_lines(&*source.text, &*first.text)
        .unified_diff()
        .context_radius(1)
        .header(&format!("a/{display}"), &format!("b/{display}"))
        .to_string();
    Ok(Some(FixRun {
        diff,
        parses,
        converged: second.applied.is_empty() && second.text == first.text,
        dropped: first.dropped.len(),
    }))
}

fn header_target(text: &str) -> Option<Version> {
    for line in text.lines().take(3) {
        if let Some(rest) = line.trim().strip_prefix("# torchvet-test:") {
            for opt in rest.split_whitespace() {
                if let Some(v) = opt.strip_prefix("target-torch=") {
                    return Version::parse(v);
                }
            }
        }
    }
    None
}

/// The sections every rule's docs must have, in order.
pub const DOC_SECTIONS: &[&str] = &[
    "## What it does",
    "## Why is this bad?",
    "## Example",
    "Use instead:",
    "## Fix safety",
    "## References",
];

/// Check a rule's docs: every section present, in order.
pub fn check_docs(rule: &Rule) -> Result<(), String> {
    let docs = rule.docs_text();
    let mut pos = 0;
    for section in DOC_SECTIONS {
        match docs[pos..].find(section) {
            Some(i) => pos += i + section.len(),
            None => {
                return Err(format!(
                    "{}: docs miss `{section}` (or it is out of order; the order is {:?})",
                    rule.name, DOC_SECTIONS
                ))
            }
        }
    }
    Ok(())
}
