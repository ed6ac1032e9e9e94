//! The linter: the checker (one AST pass), the rule registry, suppression comments, and the
//! rules themselves (`rules/<group>/<rule_name>.rs`).
#![deny(missing_docs)]

pub mod apply;
pub mod checker;
pub mod fix;
pub mod noqa;
pub mod project;
pub mod registry;
pub mod rules;
pub mod settings;
#[doc(hidden)]
pub mod test_support;

pub use checker::{Checker, RawDiagnostic};
pub use registry::{all_rules, expand_selector, find_rule, Autofix, Group, Rule};
pub use settings::{LintSettings, Version};

use checker::Dispatch;
use ruff_text_size::{Ranged, TextRange, TextSize};
use torchvet_diagnostics::{rule_url, Diagnostic, Edit, Fix, Location, Related};
use ruff_python_ast::ModModule;
use ruff_python_parser::Parsed;
use torchvet_python::SourceFile;
pub use torchvet_semantic::project::ProjectFile;

/// A configured linter, reusable across files and threads.
pub struct Linter {
    settings: LintSettings,
    dispatch: Dispatch,
    syntax_rule: Option<usize>,
}

impl Linter {
    /// Build from settings.
    pub fn new(settings: LintSettings) -> Self {
        let dispatch = Dispatch::new(&settings);
        let syntax_rule = find_rule("syntax-error").filter(|&i| settings.is_enabled(i));
        Self {
            settings,
            dispatch,
            syntax_rule,
        }
    }

    /// The settings.
    pub fn settings(&self) -> &LintSettings {
        &self.settings
    }

    /// Lint one loaded file on its own; `filename` is how it is shown.
    pub fn lint(&self, source: &SourceFile, filename: &str) -> Vec<Diagnostic> {
        self.lint_in(source, filename, None)
    }

    /// Lint one loaded file with the project model's view of it.
    pub fn lint_in(
        &self,
        source: &SourceFile,
        filename: &str,
        project: Option<&ProjectFile>,
    ) -> Vec<Diagnostic> {
        let parsed = source.parse();
        self.lint_parsed(source, &parsed, filename, project)
    }

    /// Lint one file already parsed (the two-phase `check` keeps the trees of phase 1).
    pub fn lint_parsed(
        &self,
        source: &SourceFile,
        parsed: &Parsed<ModModule>,
        filename: &str,
        project: Option<&ProjectFile>,
    ) -> Vec<Diagnostic> {
        if let Some(err) = parsed.errors().first() {
            let Some(i) = self.syntax_rule else {
                return Vec::new();
            };
            let raw = RawDiagnostic {
                rule: i,
                range: TextRange::empty(err.location.start()),
                message: format!("syntax error: {}", err.error),
                fix: None,
                related: Vec::new(),
                remote: Vec::new(),
            };
            return vec![to_display(source, filename, &raw)];
        }
        let relevant = match project {
            Some(p) => p.is_relevant(),
            None => {
                let v = torchvet_semantic::project::Vocab::of(&source.text);
                v.torch || v.training
            }
        };
        if self.dispatch.is_empty() || !relevant {
            return Vec::new();
        }
        let module = parsed.syntax();
        let raws = Checker::new(
            source,
            &self.settings,
            &self.dispatch,
            module,
            project.cloned(),
        )
        .run(module);
        if raws.is_empty() {
            return Vec::new();
        }
        let noqa = noqa::NoqaMap::new(source, parsed.tokens());
        let rules = all_rules();
        let mut out: Vec<Diagnostic> = raws
            .iter()
            .filter(|r| !noqa.suppressed(rules[r.rule], source.line_index.line_of(r.range.start())))
            .map(|r| to_display(source, filename, r))
            .collect();
        out.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        out.dedup_by(|a, b| a.code == b.code && a.range == b.range && a.message == b.message);
        out
    }

    /// Parse only (the benchmark's baseline): the number of syntax errors.
    pub fn parse_only(source: &SourceFile) -> usize {
        source.parse().errors().len()
    }
}

fn location(source: &SourceFile, offset: TextSize) -> (Option<usize>, Location) {
    let (cell, row, column) = source.position(offset);
    (cell, Location { row, column })
}

/// Convert a raw finding to its display form.
pub fn to_display(source: &SourceFile, filename: &str, raw: &RawDiagnostic) -> Diagnostic {
    let rule = all_rules()[raw.rule];
    let (cell, start) = location(source, raw.range.start());
    let (_, end) = location(source, raw.range.end());
    let fix = raw.fix.as_ref().map(|f| Fix {
        applicability: f.applicability,
        message: f.message.clone(),
        edits: f
            .edits
            .iter()
            .map(|e| Edit {
                content: e.content.clone(),
                start: e.range.start().to_usize(),
                end: e.range.end().to_usize(),
                location: location(source, e.range.start()).1,
                end_location: location(source, e.range.end()).1,
            })
            .collect(),
    });
    let related = raw
        .related
        .iter()
        .map(|(range, message)| {
            let (cell, loc) = location(source, range.start());
            Related {
                message: message.clone(),
                location: loc,
                end_location: location(source, range.end()).1,
                cell,
                filename: None,
            }
        })
        .chain(raw.remote.iter().cloned())
        .collect();
    Diagnostic {
        code: rule.code,
        name: rule.name,
        severity: rule.severity,
        message: raw.message.clone(),
        filename: filename.to_string(),
        location: start,
        end_location: end,
        cell,
        fix,
        url: rule_url(rule.name),
        title: rule.title,
        related,
        range: (raw.range.start().to_usize(), raw.range.end().to_usize()),
        source_line: Some(source.line_text(raw.range.start()).to_string()),
    }
}

/// The range of any node.
pub fn range_of(node: &impl Ranged) -> TextRange {
    node.range()
}
