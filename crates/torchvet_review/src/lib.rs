//! The structured code review behind `torchvet review PATH...`.
//!
//! A review has seven sections, always in the same order (see [`SECTIONS`]): a summary with the
//! expert checklist, the findings of the linter grouped and ranked by what they do to this
//! code (results first, then security by exposure, performance, hygiene), the good practices
//! the code already follows, and the few tests most worth writing.
//!
//! One source of facts: the review loads the project once, like `check`
//! ([`torchvet_linter::project::load_project`]), runs every rule (preview rules too, labelled
//! with their confidence) through the project model, and reads its checklist, positives and
//! test recommendations from the same model ([`torchvet_semantic::project`]). Nothing is
//! re-derived from the text.

pub mod cli;
mod gather;
mod render;

use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use torchvet_diagnostics::{Applicability, Diagnostic, Severity};
use torchvet_linter::project::load_project;
use torchvet_linter::{all_rules, find_rule, FileContext, Group, LintSettings, Linter, Rule};
use torchvet_semantic::project::practices;
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

/// How much a review shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Detail {
    /// A budget: a few locations per item, fixes for the items that matter, the rest in
    /// tables.
    #[default]
    Default,
    /// Everything: every location, every fix.
    Full,
}

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
    /// Findings show the code does not do it (or does it wrong).
    Fail,
    /// Nothing in the code shows it either way.
    NotShown,
    /// Nothing in the code makes the check relevant.
    NotApplicable,
}

impl CheckStatus {
    /// `pass`, `fail`, `not-shown` or `not-applicable`.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Pass => "pass",
            CheckStatus::Fail => "fail",
            CheckStatus::NotShown => "not-shown",
            CheckStatus::NotApplicable => "not-applicable",
        }
    }
}

/// A finding group a checklist row links to.
#[derive(Debug, Clone, Serialize)]
pub struct CheckFinding {
    /// Rule code.
    pub code: String,
    /// Rule name.
    pub rule: String,
    /// How many places.
    pub count: usize,
    /// The first place.
    pub first: String,
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
    /// The code that passed (or was looked at).
    pub evidence: Vec<Evidence>,
    /// For a fail: the findings that justify it.
    pub findings: Vec<CheckFinding>,
}

/// A named thing found in the code (model, loop, data loader).
#[derive(Debug, Clone, Serialize)]
pub struct Item {
    /// Class, function or call name.
    pub name: String,
    /// `file:line`.
    pub location: String,
}

/// Counts of findings by severity (over every location).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Counts {
    /// Critical findings.
    pub critical: usize,
    /// Warnings.
    pub warning: usize,
    /// Advice.
    pub info: usize,
}

/// A file reviewed once for several identical copies.
#[derive(Debug, Clone, Serialize)]
pub struct Duplicate {
    /// The copy that was reviewed.
    pub reviewed: String,
    /// The identical copies (same code after dropping notebook outputs).
    pub also_in: Vec<String>,
}

/// Section 1.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Python files and notebooks reviewed (distinct contents).
    pub files: usize,
    /// Total lines of the distinct files.
    pub lines: usize,
    /// The declared torch requirement (`torch>=2.1 (pyproject.toml)`), if any.
    pub torch_requirement: Option<String>,
    /// `nn.Module` subclasses.
    pub models: Vec<Item>,
    /// Functions that run a backward pass.
    pub training_loops: Vec<Item>,
    /// Evaluation functions (loops under `no_grad`/after `.eval()`).
    pub evaluation: Vec<Item>,
    /// `DataLoader(...)` constructions.
    pub data_loaders: Vec<Item>,
    /// Distributed setup (DDP, FSDP, process groups).
    pub distributed: Vec<Evidence>,
    /// Mixed precision (autocast, GradScaler).
    pub amp: Vec<Evidence>,
    /// What the code is, in one sentence.
    pub description: String,
    /// The overall verdict: `not-ready`, `ready-after-fixes` or `good`.
    pub verdict_level: &'static str,
    /// The overall verdict, in a sentence.
    pub verdict: String,
    /// Findings by severity.
    pub counts: Counts,
    /// The expert checklist.
    pub checklist: Vec<Check>,
    /// Identical files reviewed once.
    pub duplicates: Vec<Duplicate>,
}

/// A before/after code change.
#[derive(Debug, Clone, Serialize)]
pub struct Snippet {
    /// `fix` (the rule's own fix applied to this code) or `docs` (the rule's documented
    /// example).
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

/// One place of a grouped finding.
#[derive(Debug, Clone, Serialize)]
pub struct Place {
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The finding's message at this place.
    pub message: String,
}

impl Place {
    /// `file:line` (or `file:cell N:line`).
    pub fn location(&self) -> String {
        location(&self.file, self.cell, self.line)
    }
}

/// What a finding does to the code, in ranking order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Impact {
    /// Changes results (wrong loss input, gradients, modes, graphs kept alive, state lost).
    Results,
    /// Runs code from a file an attacker may control.
    Security,
    /// Breaks at run time on the target torch (removed API, invalid argument combination).
    Breaks,
    /// Slower or larger than it needs to be.
    Performance,
    /// Deprecations, reproducibility, distributed setup, checkpoint hygiene.
    Hygiene,
    /// Style.
    Style,
}

/// One grouped finding of sections 2 to 5: one rule and root cause, every place.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Rule code (`TV076`).
    pub code: String,
    /// Rule name.
    pub rule: String,
    /// Severity.
    pub severity: Severity,
    /// `high` for stable rules, `preview` for preview rules (lower confidence).
    pub confidence: &'static str,
    /// The impact class that ranks it.
    pub impact: Impact,
    /// For security findings: how exposed the load is (`outside`, `unknown`, `own-file`,
    /// `shipped`: a file that ships with the code).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exposure: Option<&'static str>,
    /// Rule title.
    pub title: String,
    /// The first place's message.
    pub message: String,
    /// What goes wrong and why it matters (from the rule documentation).
    pub why: Option<String>,
    /// The change to make (at the first place that has a fix).
    pub fix: Option<Snippet>,
    /// Context from the project (for deprecated APIs: the declared torch requirement).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Every place.
    pub locations: Vec<Place>,
    /// Distinct files among the places.
    pub files: usize,
}

impl Finding {
    /// The first place, `file:line`.
    pub fn location(&self) -> String {
        self.locations
            .first()
            .map(Place::location)
            .unwrap_or_default()
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

/// Tests to write for one model family or loop.
#[derive(Debug, Clone, Serialize)]
pub struct TestRecommendation {
    /// `model`, `training-loop` or `evaluation`.
    pub kind: &'static str,
    /// Class or function name.
    pub target: String,
    /// `file:line`.
    pub location: String,
    /// Other classes / functions the same tests cover (same family).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub covers: Vec<String>,
    /// The tests, one sentence each.
    pub tests: Vec<String>,
}

/// A complete review.
#[derive(Debug, Clone, Serialize)]
pub struct Review {
    /// The paths as given.
    pub paths: Vec<String>,
    /// How much is shown.
    pub detail: Detail,
    /// Section 1.
    pub summary: Summary,
    /// Section 2: what changes results or exposes code execution, ranked by impact.
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

/// Paths inside a single reviewed directory are shown relative to it (the title names it).
fn display_in(base: Option<&Path>, path: &Path) -> String {
    if let Some(rel) = base.and_then(|b| path.strip_prefix(b).ok()) {
        let s = rel.to_string_lossy().replace('\\', "/");
        if !s.is_empty() {
            return s;
        }
    }
    display_path(path)
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
    review_with(paths, Detail::Default, &mut |_, _| {})
}

/// Review `paths`, calling `progress(done, total)` as files are linted.
pub fn review_with(
    paths: &[PathBuf],
    detail: Detail,
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
    // Every rule, preview ones included: a person reads the review, and each finding says
    // how confident its rule is.
    let settings = LintSettings::from_selectors(Some(&["ALL".to_string()]), &[], &[], true)
        .map_err(|e| ReviewError::Settings(format!("{e:?}")))?;
    let linter = Linter::new(settings);
    let targets = TorchTargets::with_roots(paths);

    let base = match paths {
        [one] if one.is_dir() => Some(one.as_path()),
        _ => None,
    };
    let shown = |p: &Path| display_in(base, p);
    // Phase 1, as in `check`: every file read, parsed and summarised once; the model linked.
    let (loaded, _model) = load_project(&found.files, paths, true);

    // Identical files (same code; notebook outputs are not part of the code) are reviewed
    // once.
    let mut first_of: BTreeMap<&str, usize> = BTreeMap::new();
    let mut copies: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut unique = Vec::new();
    for (i, l) in loaded.iter().enumerate() {
        match &l.state {
            Ok(f) => match first_of.get(f.source.text.as_ref()) {
                Some(&j) if !f.source.text.trim().is_empty() => {
                    copies.entry(j).or_default().push(shown(&l.path))
                }
                _ => {
                    first_of.insert(f.source.text.as_ref(), i);
                    unique.push(i);
                }
            },
            Err(e) => errors.push(format!("{}: {e}", shown(&l.path))),
        }
    }
    let duplicates: Vec<Duplicate> = copies
        .iter()
        .map(|(&i, also)| Duplicate {
            reviewed: shown(&loaded[i].path),
            also_in: also.clone(),
        })
        .collect();

    // Phase 2: the rules, per distinct file, against the model.
    let total = unique.len();
    let mut files = Vec::new();
    let mut raw: Vec<(usize, Diagnostic)> = Vec::new();
    for (done, &i) in unique.iter().enumerate() {
        progress(done, total);
        let l = &loaded[i];
        let Ok(file) = &l.state else { continue };
        let name = shown(&l.path);
        let declared = targets.targets(&l.path);
        let ctx = FileContext {
            project: file.project.clone(),
            target: Some(declared.torch),
            min_torch: declared.min_torch,
            nearest_min_torch: declared.nearest_min_torch,
            target_torchvision: Some(declared.torchvision),
            min_torchvision: declared.min_torchvision,
            launches_with_rank_argument: Some(declared.launches_with_rank_argument),
            launches_with_env_rank: Some(declared.launches_with_env_rank),
            documented_min_torch: declared.documented_min_torch,
        };
        let diags = linter.lint_file(&file.source, file.parsed.as_ref(), &name, &ctx);
        for d in diags {
            raw.push((files.len(), d));
        }
        // The practices (seeds, AMP, loaders, ...) only the review needs: read from the tree
        // here rather than in every file's summary, which `check` builds too.
        let practices = if file
            .project
            .as_ref()
            .is_some_and(|p| p.summary().vocab.torch)
        {
            match file.parsed.as_ref() {
                Some(parsed) => practices::extract(&parsed.syntax().body),
                None => practices::extract(&file.source.parse().syntax().body),
            }
        } else {
            practices::Practices::default()
        };
        files.push(gather::ReviewedFile {
            name,
            source: &file.source,
            project: file.project.clone(),
            practices,
        });
    }
    progress(total, total);

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

    let mut counts = Counts::default();
    // Group: one item per rule and root cause (its severity and, for loads, its exposure).
    let mut groups: BTreeMap<(String, Severity, Option<&'static str>), Finding> = BTreeMap::new();
    let mut syntax: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (idx, d) in &raw {
        match d.severity {
            Severity::Critical => counts.critical += 1,
            Severity::Warning => counts.warning += 1,
            Severity::Info => counts.info += 1,
        }
        let rule = find_rule(d.name).map(|i| all_rules()[i]);
        if rule.is_some_and(|r| r.group == Group::Syntax) {
            syntax
                .entry(d.filename.clone())
                .or_default()
                .push(match d.cell {
                    Some(c) => format!("cell {c}"),
                    None => format!("line {}", d.location.row),
                });
            continue;
        }
        let file = &files[*idx];
        let exposure = exposure(d);
        let place = Place {
            file: d.filename.clone(),
            cell: d.cell,
            line: d.location.row,
            column: d.location.column,
            scope: file.scope_at(d.range.0),
            message: d.message.clone(),
        };
        let key = (d.code.to_string(), d.severity, exposure);
        match groups.get_mut(&key) {
            Some(g) => {
                if g.fix.is_none() {
                    g.fix = fix_snippet(d, &file.source.text);
                }
                g.locations.push(place);
            }
            None => {
                let mut f = new_finding(d, rule, exposure, &file.source.text, place);
                if rule.is_some_and(|r| r.group == Group::DeprecatedApi) {
                    f.note = Some(match &torch_requirement {
                        Some(t) => format!("judged against the declared `{t}`"),
                        None => "no torch version is declared: judged against the latest torch; pin one to know which deprecations apply".to_string(),
                    });
                }
                groups.insert(key, f);
            }
        }
    }
    for (file, at) in syntax {
        errors.push(format!(
            "{file}: syntax error in {} (not analysed; the rest of the file was)",
            at.join(", ")
        ));
    }

    let mut critical = Vec::new();
    let mut performance = Vec::new();
    let mut best_practices = Vec::new();
    let mut code_quality = Vec::new();
    for (_, mut f) in groups {
        f.locations.sort_by(|a, b| {
            (a.file.as_str(), a.cell, a.line, a.column).cmp(&(
                b.file.as_str(),
                b.cell,
                b.line,
                b.column,
            ))
        });
        let mut names: Vec<&str> = f.locations.iter().map(|p| p.file.as_str()).collect();
        names.dedup();
        f.files = names.len();
        match section_of(&f) {
            1 => critical.push(f),
            2 => performance.push(f),
            3 => best_practices.push(f),
            _ => code_quality.push(f),
        }
    }
    for list in [
        &mut critical,
        &mut performance,
        &mut best_practices,
        &mut code_quality,
    ] {
        rank(list);
    }

    let facts = gather::Facts::collect(&files);
    let checklist = facts.checklist(&[&critical, &performance, &best_practices, &code_quality]);
    let (verdict_level, verdict) = verdict(&critical, &performance, &best_practices, &checklist);
    let summary = facts.summary(gather::SummaryInput {
        counts,
        torch_requirement,
        verdict_level,
        verdict,
        checklist,
        duplicates,
    });
    let positive = facts.positives();
    let testing = facts.testing();
    Ok(Review {
        paths: paths.iter().map(|p| display_path(p)).collect(),
        detail,
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

/// Rules whose findings change results even though the catalog files them under memory or
/// data loading (graphs kept alive, evaluation with autograd on, shuffled evaluation).
const RESULTS_RULES: &[&str] = &[
    "accumulate-loss-tensor",
    "store-outputs-without-detach",
    "retain-graph-in-loop",
    "eval-without-no-grad",
    "eval-loader-shuffled",
    "cuda-in-dataset-getitem",
];

/// Correctness rules that are advice rather than bugs (they stay with best practices).
const ADVICE_RULES: &[&str] = &[
    "torch-load-without-map-location",
    "load-state-dict-strict-false",
    "adam-weight-decay-not-decoupled",
    "weight-decay-on-norm-and-bias",
    "torch-version-string-compare",
    "cuda-timing-without-synchronize",
];

fn impact_of(rule: Option<&Rule>, severity: Severity) -> Impact {
    let Some(rule) = rule else {
        return Impact::Hygiene;
    };
    if RESULTS_RULES.contains(&rule.name) {
        return Impact::Results;
    }
    match rule.group {
        Group::Correctness if ADVICE_RULES.contains(&rule.name) => Impact::Hygiene,
        Group::Correctness => Impact::Results,
        Group::Security | Group::Checkpoint => Impact::Security,
        Group::DeprecatedApi | Group::DataLoading | Group::Distributed
            if severity == Severity::Critical =>
        {
            Impact::Breaks
        }
        Group::Performance | Group::Memory | Group::DataLoading => Impact::Performance,
        Group::Style => Impact::Style,
        _ => Impact::Hygiene,
    }
}

/// How exposed a `torch.load` finding is, from the rule's own verdict (its severity and
/// whether it traced the path to an outside source or to the project's own save).
fn exposure(d: &Diagnostic) -> Option<&'static str> {
    exposure_of(d.name, &d.message)
}

/// [`exposure`] from the rule's name and message: the rule states the origin it traced in
/// fixed phrases (the path comes from an outside source, a caller passes a download; this file
/// or another file of the project writes the checkpoint; it ships with the code).
fn exposure_of(rule: &str, message: &str) -> Option<&'static str> {
    if rule != "torch-load-without-weights-only" && rule != "torch-hub-load-untrusted" {
        return None;
    }
    Some(
        if message.contains("the path comes from")
            || message.contains("a caller passes it a downloaded file")
        {
            "outside"
        } else if message.contains("writes the checkpoint itself")
            || message.contains("writes this checkpoint itself")
        {
            "own-file"
        } else if message.contains("ships with the code") {
            "shipped"
        } else {
            "unknown"
        },
    )
}

fn section_of(f: &Finding) -> u8 {
    match f.impact {
        Impact::Results if f.severity == Severity::Info && f.rule != "eval-loader-shuffled" => 3,
        Impact::Results | Impact::Security | Impact::Breaks => 1,
        Impact::Performance => 2,
        Impact::Hygiene => 3,
        Impact::Style => 4,
    }
}

fn exposure_rank(e: Option<&str>) -> u8 {
    match e {
        Some("outside") => 0,
        Some("unknown") | None => 1,
        _ => 2,
    }
}

/// Impact first, then (for security) exposure, then severity, confidence, and how often.
fn rank(list: &mut [Finding]) {
    list.sort_by(|a, b| {
        a.impact
            .cmp(&b.impact)
            .then(exposure_rank(a.exposure).cmp(&exposure_rank(b.exposure)))
            .then(b.severity.cmp(&a.severity))
            .then(a.confidence.cmp(b.confidence))
            .then(b.locations.len().cmp(&a.locations.len()))
            .then_with(|| a.code.cmp(&b.code))
    });
}

/// Is the finding a blocker: a critical bug that changes results, code that fails on the
/// target torch, or a load of an outside or unknown file, from a stable (high-confidence)
/// rule?
fn blocks(f: &Finding) -> bool {
    f.severity == Severity::Critical
        && f.confidence == "high"
        && match f.impact {
            Impact::Results | Impact::Breaks => true,
            Impact::Security => !matches!(f.exposure, Some("own-file" | "shipped")),
            _ => false,
        }
}

fn places(n: usize) -> String {
    if n == 1 {
        "1 place".to_string()
    } else {
        format!("{n} places")
    }
}

fn verdict(
    critical: &[Finding],
    performance: &[Finding],
    best: &[Finding],
    checklist: &[Check],
) -> (&'static str, String) {
    let blockers: Vec<&Finding> = critical.iter().filter(|f| blocks(f)).collect();
    if !blockers.is_empty() {
        let named: Vec<String> = blockers
            .iter()
            .take(3)
            .map(|f| {
                // The title without its parenthetical examples.
                let title = f
                    .title
                    .match_indices(" (")
                    .find(|(i, _)| !f.title[i + 2..].starts_with(')'))
                    .map_or(f.title.as_str(), |(i, _)| &f.title[..i]);
                format!("{} ({})", lower_first(title), places(f.locations.len()))
            })
            .collect();
        let more = blockers.len().saturating_sub(3);
        let tail = if more > 0 {
            format!(", and {more} more")
        } else {
            String::new()
        };
        return (
            "not-ready",
            format!("Not ready: {}{tail}.", named.join("; ")),
        );
    }
    if !critical.is_empty() {
        let n: usize = critical.iter().map(|f| f.locations.len()).sum();
        let first: Vec<String> = critical
            .iter()
            .take(2)
            .map(|f| format!("`{}`", f.rule))
            .collect();
        return (
            "ready-after-fixes",
            format!(
                "Ready after these fixes: {} issue{} in {} that may change results or expose code execution (first: {}); none is a high-confidence critical bug.",
                critical.len(),
                if critical.len() == 1 { "" } else { "s" },
                places(n),
                first.join(", ")
            ),
        );
    }
    let passed: Vec<&str> = checklist
        .iter()
        .filter(|c| c.status == CheckStatus::Pass)
        .map(|c| c.id)
        .collect();
    let rest = performance.len() + best.len();
    let reason = if passed.is_empty() {
        "no rule found a correctness or security issue".to_string()
    } else {
        format!(
            "no rule found a correctness or security issue, and the checklist passes on {}",
            passed.join(", ")
        )
    };
    let tail = if rest > 0 {
        format!(" {rest} optional improvement(s) below.")
    } else {
        String::new()
    };
    ("good", format!("Good: {reason}.{tail}"))
}

/// Lower-case the first letter of a sentence start, unless the first word is a name
/// (`CrossEntropyLoss`, `torch.load`, `F.dropout`).
fn lower_first(s: &str) -> String {
    let first = s.split(' ').next().unwrap_or("");
    if first
        .chars()
        .skip(1)
        .any(|c| c.is_uppercase() || c == '.' || c == '_')
    {
        return s.to_string();
    }
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

fn new_finding(
    d: &Diagnostic,
    rule: Option<&Rule>,
    exposure: Option<&'static str>,
    text: &str,
    place: Place,
) -> Finding {
    let docs = rule.map(|r| r.docs_text()).unwrap_or_default();
    let fix = fix_snippet(d, text).or_else(|| {
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
        confidence: if rule.is_some_and(|r| r.preview) {
            "preview"
        } else {
            "high"
        },
        impact: impact_of(rule, d.severity),
        exposure,
        title: d.title.to_string(),
        message: d.message.clone(),
        why: docs_section(&docs, "## Why is this bad?"),
        fix,
        note: None,
        locations: vec![place],
        files: 1,
    }
}

fn fix_snippet(d: &Diagnostic, text: &str) -> Option<Snippet> {
    let fix = d.fix.as_ref()?;
    let (before, after) = apply_fix(text, fix)?;
    // An insertion on an empty line shows nothing to compare with: the documented example
    // says more.
    if before.trim().is_empty() {
        return None;
    }
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
    fn exposure_reads_every_origin_the_load_rule_states() {
        // The phrases the rule writes for each origin it traces (torch_load_without_weights_only.rs).
        let rule = "torch-load-without-weights-only";
        let cases = [
            ("`torch.load` without `weights_only` unpickles ...: the path comes from a command-line argument", "outside"),
            ("... unpickles arbitrary objects and a caller passes it a downloaded file: ...", "outside"),
            ("... this file writes the checkpoint itself, so it is not an outside file, but ...", "own-file"),
            ("... the project writes this checkpoint itself (train.py:40), so it is not an outside file, but ...", "own-file"),
            ("... so it is taken to be a checkpoint that ships with the code, not an outside file; ...", "shipped"),
            ("... a malicious checkpoint runs code when loaded ...", "unknown"),
        ];
        for (message, want) in cases {
            assert_eq!(exposure_of(rule, message), Some(want), "{message}");
        }
        assert_eq!(
            exposure_of("softmax-implicit-dim", "the path comes from"),
            None
        );
    }

    #[test]
    fn dedent_keeps_relative_indent() {
        assert_eq!(dedent("    if x:\n        y"), "if x:\n    y");
    }

    #[test]
    fn names_keep_their_case() {
        assert_eq!(lower_first("CrossEntropyLoss fed"), "CrossEntropyLoss fed");
        assert_eq!(lower_first("F.dropout in"), "F.dropout in");
        assert_eq!(lower_first("Result of"), "result of");
    }

    #[test]
    fn graphs_kept_alive_rank_with_correctness() {
        let r = find_rule("accumulate-loss-tensor").map(|i| all_rules()[i]);
        assert_eq!(impact_of(r, Severity::Warning), Impact::Results);
        let r = find_rule("dataloader-num-workers-zero").map(|i| all_rules()[i]);
        assert_eq!(impact_of(r, Severity::Info), Impact::Performance);
    }
}
