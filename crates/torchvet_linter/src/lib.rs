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
pub use settings::{torch_for_torchvision, torchvision_for_torch, LintSettings, Version};

use checker::Dispatch;
use ruff_python_ast::ModModule;
use ruff_python_parser::Parsed;
use ruff_text_size::{Ranged, TextRange, TextSize};
use torchvet_diagnostics::{rule_url, Diagnostic, Edit, Fix, Location, Related};
use torchvet_python::SourceFile;
pub use torchvet_semantic::project::{grad_flow_files, set_eager_grad_flows, ProjectFile};

/// What a file is linted with besides the settings: its view of the project model, and its
/// own target torch when that differs from the run's (the requirement declared nearest to it).
#[derive(Clone, Debug, Default)]
pub struct FileContext {
    /// The project model's view of the file.
    pub project: Option<ProjectFile>,
    /// The file's target torch (`Some(None)` = latest); `None` = the settings' target.
    pub target: Option<Option<Version>>,
    /// The lowest torch the file's project declares (`torch>=1.7` -> 1.7); `None` = the
    /// settings' (none declared).
    pub min_torch: Option<Version>,
    /// The lowest torch the file's nearest declaration allows (see
    /// [`LintSettings::nearest_min_torch`]); `None` = the settings'.
    pub nearest_min_torch: Option<Version>,
    /// The file's target torchvision, when its project declares torchvision (`Some(None)` =
    /// unbounded); `None` = the settings'.
    pub target_torchvision: Option<Option<Version>>,
    /// The lowest torchvision the file's project declares; `None` = the settings'.
    pub min_torchvision: Option<Version>,
    /// The file's project is started with the legacy launcher, which passes the local rank
    /// as an option (see [`LintSettings::launches_with_rank_argument`]); `None` = the
    /// settings'.
    pub launches_with_rank_argument: Option<bool>,
    /// The file's project starts it with an environment-rank launcher only (see
    /// [`LintSettings::launches_with_env_rank`]); `None` = the settings'.
    pub launches_with_env_rank: Option<bool>,
    /// The lowest torch the file's project documents (see
    /// [`LintSettings::documented_min_torch`]); `None` = the settings'.
    pub documented_min_torch: Option<Version>,
}

impl FileContext {
    /// The same context for a new text of the file (after edits): the file is summarised
    /// again and overlaid on the model, so positions the model holds match the new text.
    pub fn for_text(&self, source: &SourceFile) -> FileContext {
        let mut ctx = self.clone();
        if let Some(p) = &self.project {
            let parsed = source.parse();
            let summary = p.summarise_text(source, parsed.syntax());
            ctx.project = Some(p.with_overlay(summary));
        }
        ctx
    }
}

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
    ///
    /// A Python file with a syntax error gets that one finding. A notebook recovers cell by
    /// cell: each code cell that does not parse (after the IPython transforms of
    /// [`torchvet_python::Notebook`]) is reported once, at its first error, and left out;
    /// every other cell is analysed as usual.
    pub fn lint(&self, source: &SourceFile, filename: &str) -> Vec<Diagnostic> {
        self.lint_file(source, None, filename, &FileContext::default())
    }

    /// [`Linter::lint`] with this file's own target torch (`None` = latest), e.g. the torch
    /// requirement declared nearest to the file, in place of the settings' target. The other
    /// settings are the linter's.
    pub fn lint_for_target(
        &self,
        source: &SourceFile,
        filename: &str,
        target: Option<Version>,
    ) -> Vec<Diagnostic> {
        let ctx = FileContext {
            target: Some(target),
            ..FileContext::default()
        };
        self.lint_file(source, None, filename, &ctx)
    }

    /// Lint one loaded file with the project model's view of it.
    pub fn lint_in(
        &self,
        source: &SourceFile,
        filename: &str,
        project: Option<&ProjectFile>,
    ) -> Vec<Diagnostic> {
        let ctx = FileContext {
            project: project.cloned(),
            ..FileContext::default()
        };
        self.lint_file(source, None, filename, &ctx)
    }

    /// Lint one file in its context (project view, own target torch); `parsed` is its tree
    /// when the caller kept it (the two-phase `check` keeps the trees of phase 1).
    pub fn lint_file(
        &self,
        source: &SourceFile,
        parsed: Option<&Parsed<ModModule>>,
        filename: &str,
        ctx: &FileContext,
    ) -> Vec<Diagnostic> {
        self.lint_file_with_scopes(source, parsed, None, filename, ctx)
    }

    /// [`Linter::lint_file`] with the scopes phase 1 collected for `parsed` (see
    /// [`torchvet_semantic::KeptScopes`]), so the checker does not collect them again.
    pub fn lint_file_with_scopes(
        &self,
        source: &SourceFile,
        parsed: Option<&Parsed<ModModule>>,
        scopes: Option<torchvet_semantic::KeptScopes>,
        filename: &str,
        ctx: &FileContext,
    ) -> Vec<Diagnostic> {
        let target_differs = ctx.target.is_some_and(|t| t != self.settings.target_torch);
        let min_differs = (ctx.min_torch.is_some() && ctx.min_torch != self.settings.min_torch)
            || (ctx.nearest_min_torch.is_some()
                && ctx.nearest_min_torch != self.settings.nearest_min_torch);
        let tv_differs = ctx
            .target_torchvision
            .is_some_and(|t| t != self.settings.target_torchvision)
            || (ctx.min_torchvision.is_some()
                && ctx.min_torchvision != self.settings.min_torchvision);
        let launch_differs = ctx
            .launches_with_rank_argument
            .is_some_and(|l| l != self.settings.launches_with_rank_argument)
            || ctx
                .launches_with_env_rank
                .is_some_and(|l| l != self.settings.launches_with_env_rank);
        let doc_differs = ctx.documented_min_torch.is_some()
            && ctx.documented_min_torch != self.settings.documented_min_torch;
        if target_differs || min_differs || tv_differs || launch_differs || doc_differs {
            let settings = LintSettings {
                target_torch: ctx.target.unwrap_or(self.settings.target_torch),
                min_torch: ctx.min_torch.or(self.settings.min_torch),
                nearest_min_torch: ctx.nearest_min_torch.or(self.settings.nearest_min_torch),
                documented_min_torch: ctx
                    .documented_min_torch
                    .or(self.settings.documented_min_torch),
                target_torchvision: ctx
                    .target_torchvision
                    .unwrap_or(self.settings.target_torchvision),
                min_torchvision: ctx.min_torchvision.or(self.settings.min_torchvision),
                launches_with_rank_argument: ctx
                    .launches_with_rank_argument
                    .unwrap_or(self.settings.launches_with_rank_argument),
                launches_with_env_rank: ctx
                    .launches_with_env_rank
                    .unwrap_or(self.settings.launches_with_env_rank),
                ..self.settings.clone()
            };
            self.lint_with(
                &settings,
                source,
                parsed,
                scopes,
                filename,
                ctx.project.as_ref(),
            )
        } else {
            self.lint_with(
                &self.settings,
                source,
                parsed,
                scopes,
                filename,
                ctx.project.as_ref(),
            )
        }
    }

    fn lint_with(
        &self,
        settings: &LintSettings,
        source: &SourceFile,
        parsed: Option<&Parsed<ModModule>>,
        scopes: Option<torchvet_semantic::KeptScopes>,
        filename: &str,
        project: Option<&ProjectFile>,
    ) -> Vec<Diagnostic> {
        // The kept scopes belong to the caller's tree only.
        let mut scopes = scopes.filter(|_| parsed.is_some());
        // A Python file that does not parse is reported only when torchvet would analyse it:
        // it uses torch or training words, torch code of the project imports it, or it names
        // training hyperparameters. Any other file (a vendored parser's test inputs, a
        // Python 2 helper of another tool) is another tool's business; if it parses, it is
        // not analysed either, so it gets no finding at all and is not parsed (again). A
        // notebook's cells are reported whatever the notebook holds (see `syntax-error`).
        if matches!(source.kind, torchvet_python::SourceKind::Python)
            && !would_analyse(source, project)
        {
            return Vec::new();
        }
        let owned;
        let mut parsed: &Parsed<ModModule> = match parsed {
            Some(p) => p,
            None => {
                owned = source.parse();
                &owned
            }
        };
        let recovered;
        let mut syntax = Vec::new();
        // A cookiecutter / Jinja template is Python only once rendered: not reported.
        if !parsed.errors().is_empty() && source.is_template() {
            return Vec::new();
        }
        if !parsed.errors().is_empty() {
            let mut broken: Vec<usize> = Vec::new();
            for err in parsed.errors() {
                let cell = source.cell_index(err.location.start());
                if let Some(c) = cell {
                    if broken.contains(&c) {
                        continue;
                    }
                    broken.push(c);
                }
                // A fill-in-the-blank of course material (`x = # Your code here`,
                // `TODO: YOUR CODE HERE`): the student's to complete, not a defect to report.
                // The cell (or file) is still left out of the analysis.
                let blank = source.is_exercise_blank(err.location.start());
                if let (Some(i), false) = (self.syntax_rule, blank) {
                    let raw = RawDiagnostic {
                        rule: i,
                        range: TextRange::empty(err.location.start()),
                        message: match cell {
                            Some(_) => format!(
                                "syntax error: {} (this cell is not analysed; the other cells are)",
                                err.error
                            ),
                            None => format!("syntax error: {}", err.error),
                        },
                        fix: None,
                        related: Vec::new(),
                        remote: Vec::new(),
                        severity: None,
                    };
                    syntax.push(to_display(source, filename, &raw));
                }
                if cell.is_none() {
                    // A Python file: one finding, nothing else is analysed.
                    return syntax;
                }
            }
            recovered = source.parse_skipping_cells(&broken);
            if !recovered.errors().is_empty() {
                return syntax;
            }
            parsed = &recovered;
            scopes = None;
        }
        // Pre-3.7 code passing `async=` (torch < 0.4): parsed as Python 3.6 read it, so the
        // rest is analysed, and reported once as the syntax error it is today.
        if let (Some(i), true) = (self.syntax_rule, syntax.is_empty()) {
            // A byte search first; a file that passes `async=` is parsed once more to find it.
            let legacy = source.legacy_async_arguments();
            if let (Some(&first), true) = (legacy.first(), would_analyse(source, project)) {
                let raw = RawDiagnostic {
                    rule: i,
                    range: first,
                    message: "syntax error: `async` is a reserved word since Python 3.7 and cannot name an argument (torch 0.4 renamed it `non_blocking`); the rest of the file is analysed as Python 3.6 read it".to_string(),
                    fix: None,
                    related: Vec::new(),
                    remote: Vec::new(),
                    severity: None,
                };
                syntax.push(to_display(source, filename, &raw));
            }
        }
        let relevant = is_relevant(source, project);
        if self.dispatch.is_empty() || !relevant {
            return syntax;
        }
        let module = parsed.syntax();
        let raws = Checker::new(
            source,
            settings,
            &self.dispatch,
            module,
            project.cloned(),
            scopes,
        )
        .run(module);
        if raws.is_empty() {
            return syntax;
        }
        let noqa = noqa::NoqaMap::new(source, parsed.tokens());
        let rules = all_rules();
        let mut out: Vec<Diagnostic> = raws
            .iter()
            .filter(|r| !noqa.suppressed(rules[r.rule], source.line_index.line_of(r.range.start())))
            .map(|r| to_display(source, filename, r))
            .collect();
        out.extend(syntax);
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
        severity: raw.severity.unwrap_or(rule.severity),
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

/// Should the file's code be analysed: it uses torch or training words, or (in a project) torch
/// code of the project imports it?
fn is_relevant(source: &SourceFile, project: Option<&ProjectFile>) -> bool {
    match project {
        Some(p) => p.is_relevant(),
        None => {
            let v = torchvet_semantic::project::Vocab::of(&source.text);
            v.torch || v.training
        }
    }
}

/// Would torchvet analyse this file if it parsed: relevant, or it names training
/// hyperparameters (an experiment's settings file)?
fn would_analyse(source: &SourceFile, project: Option<&ProjectFile>) -> bool {
    is_relevant(source, project) || torchvet_semantic::project::names_training_setup(&source.text)
}
