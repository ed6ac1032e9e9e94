//! `torchvet project`: decide from files alone whether a directory is a PyTorch project, and
//! describe it (tech stack, torch version, CUDA evidence, model/checkpoint/training/config
//! directories, train/test/export/profile commands), each fact with the evidence that decided it.
//!
//! Nothing is executed or imported: Python is parsed with ruff's parser, dependency files are
//! read as text/TOML/JSON.

pub mod cli;
mod deps;
mod documented;
mod pyscan;
mod report;
pub mod requirement;
mod scan;

pub use report::{render_template, to_json, to_text, RenderError};
pub use requirement::{max_allowed, normalize_name, DeclaredRequirement, RequirementOrigin};
pub use scan::{analyze, DirCount, Field, ProjectReport, Trigger, TriggerKind};

use serde::Serialize;
use std::path::Path;

/// A piece of evidence: a file, optionally a line (and notebook cell), and what it says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Evidence {
    /// Path relative to the analysed directory, `/`-separated.
    pub file: String,
    /// 1-based line (within the cell for notebooks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// 1-based notebook cell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cell: Option<u32>,
    /// The matched text (trimmed source line or a short description).
    pub text: String,
}

impl Evidence {
    pub(crate) fn new(file: String, line: Option<u32>, text: &str) -> Self {
        Evidence {
            file,
            line,
            cell: None,
            text: text.trim().chars().take(200).collect(),
        }
    }

    /// `file:line` (or `file:cell N:line`, or `file`).
    pub fn location(&self) -> String {
        match (self.cell, self.line) {
            (Some(c), Some(l)) => format!("{}:cell {c}:{l}", self.file),
            (None, Some(l)) => format!("{}:{l}", self.file),
            _ => self.file.clone(),
        }
    }
}

/// Byte offset to 1-based line.
pub(crate) struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub(crate) fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        LineIndex { starts }
    }

    pub(crate) fn line(&self, offset: usize) -> u32 {
        match self.starts.binary_search(&offset) {
            Ok(i) => i as u32 + 1,
            Err(i) => i as u32,
        }
    }
}

/// The requirements of `facts` with the lock-file versions attached.
fn with_locks(facts: &deps::DepFacts) -> Vec<DeclaredRequirement> {
    let mut out = facts.requirements.clone();
    for r in &mut out {
        r.locked_version = lock_version(&facts.locks, &r.normalized);
    }
    out
}

/// What a whole project declares about how it is installed and run, from one walk of its
/// tree (see [`project_declarations`]).
#[derive(Debug, Clone, Default)]
pub struct ProjectDeclarations {
    /// Every dependency declared under the root (requirements files with their includes,
    /// pyproject, setup.cfg/setup.py, conda environment files, Pipfile), with lock-file
    /// versions attached.
    pub requirements: Vec<DeclaredRequirement>,
    /// The programs (file names such as `main.py`) that a script or document of the project
    /// (a shell or job script, a README, a Makefile, a CI file) starts with the legacy
    /// launcher, `python -m torch.distributed.launch` without `--use_env`. That launcher
    /// passes the local rank as a command-line option (`--local-rank=N` since torch 2.0), so
    /// the program's parser must accept it; under `torchrun` or `--use_env` only the
    /// `LOCAL_RANK` variable is set. Read as text, never run.
    pub legacy_launched_programs: Vec<String>,
    /// The programs that a script or document of the project starts with `torchrun`,
    /// `python -m torch.distributed.run` or the legacy launcher with `--use_env`: they get
    /// their rank from `LOCAL_RANK` and no rank option.
    pub env_launched_programs: Vec<String>,
    /// The lowest torch (major, minor) the project's documentation mentions as one it runs
    /// on: "PyTorch 1.7.0+", "PyTorch >= 1.6", "tested on PyTorch 1.6.0/1.8.0", `conda
    /// install pytorch==1.7.1`, in the README / INSTALL files at the root or the text files
    /// under `docs/`. Weaker than a declared requirement: it may only keep a fix that needs a
    /// newer torch from being safe, never decide a finding.
    pub documented_torch_min: Option<(u32, u32)>,
}

/// [`ProjectDeclarations`] of the project under `root`.
pub fn project_declarations(root: &Path) -> ProjectDeclarations {
    let (facts, (programs, env_programs), documented) = scan::collect_deps_and_launches(root);
    ProjectDeclarations {
        requirements: with_locks(&facts),
        legacy_launched_programs: programs,
        env_launched_programs: env_programs,
        documented_torch_min: documented,
    }
}

fn lock_version(locks: &[DeclaredRequirement], normalized: &str) -> Option<String> {
    locks
        .iter()
        .find(|l| same_package(&l.normalized, normalized))
        .and_then(|l| l.locked_version.clone())
}

pub(crate) fn same_package(a: &str, b: &str) -> bool {
    a == b || (requirement::is_torch(a) && requirement::is_torch(b))
}

/// The declaration of `package` that best describes the project (main dependencies before
/// optional ones, files nearer the root first), with the lock-file version attached when a lock
/// file pins it. Falls back to the lock file alone. `torch` also matches conda's `pytorch`.
pub fn declared_requirement(root: &Path, package: &str) -> Option<DeclaredRequirement> {
    let facts = scan::collect_deps(root);
    best_requirement(&facts.requirements, &facts.locks, package)
}

/// Like [`declared_requirement`], but reading only the dependency files directly in `dir`
/// (and the files they include), without walking the tree below it: cheap enough to call
/// for every directory on the way up from a checked file.
pub fn declared_requirement_in_dir(dir: &Path, package: &str) -> Option<DeclaredRequirement> {
    let facts = scan::collect_deps_in_dir(dir);
    best_requirement(&facts.requirements, &facts.locks, package)
}

/// [`declared_requirement_in_dir`] for torch, with the highest torch (major, minor) that
/// the Python pinned by the same directory's files can run (a conda `python=3.5`, a
/// `.python-version`, a Pipfile `python_version`, an upper bound in `requires-python`):
/// `None` when no file there bounds Python, or the bound leaves every torch release open.
/// A torch declared without a version (`- pytorch` beside `- python=3.5`) is bounded too.
pub fn declared_torch_in_dir(dir: &Path) -> Option<(DeclaredRequirement, Option<(u32, u32)>)> {
    declarations_in_dir(dir).torch
}

/// What the dependency files directly in one directory declare about torch and
/// torchvision, from one read of the directory (see [`declarations_in_dir`]).
#[derive(Clone, Debug, Default)]
pub struct DirDeclarations {
    /// The torch declaration, with the highest torch the same directory's pinned Python can
    /// run (see [`declared_torch_in_dir`]).
    pub torch: Option<(DeclaredRequirement, Option<(u32, u32)>)>,
    /// `declared_requirement_in_dir(dir, "torchvision")`.
    pub torchvision: Option<DeclaredRequirement>,
}

/// The torch and torchvision declarations of `dir` from one read of its dependency files:
/// the version resolver asks both for every directory above a checked file.
pub fn declarations_in_dir(dir: &Path) -> DirDeclarations {
    let facts = scan::collect_deps_in_dir(dir);
    let torch = best_requirement(&facts.requirements, &facts.locks, "torch").map(|req| {
        let bound = python_bounded_torch(facts.python.iter().map(|(spec, _)| spec.as_str()));
        (req, bound)
    });
    DirDeclarations {
        torch,
        torchvision: best_requirement(&facts.requirements, &facts.locks, "torchvision"),
    }
}

/// A (major, minor) version.
type MajorMinor = (u32, u32);

/// The newest torch release line that still supports each Python: (Python major, minor) ->
/// the last torch (major, minor) published for it. From the compatibility table of
/// torchvision's README (torch 1.0 to 2.3 with their Python ranges:
/// <https://github.com/pytorch/vision#installation>) and PyTorch's release compatibility
/// matrix (torch 2.4 supports Python 3.8 to 3.12, torch 2.5 needs 3.9:
/// <https://github.com/pytorch/pytorch/blob/main/RELEASE.md#release-compatibility-matrix>).
/// Python 2.7 ends with torch 1.4; older Pythons than listed get the first row's torch
/// (no newer torch supports them either); a newer Python bounds no torch here.
const LAST_TORCH_FOR_PYTHON: &[(MajorMinor, MajorMinor)] = &[
    ((2, 7), (1, 4)),
    ((3, 5), (1, 5)),
    ((3, 6), (1, 10)),
    ((3, 7), (1, 13)),
    ((3, 8), (2, 4)),
];

/// The highest torch the pinned Pythons allow: each spec's highest Python (`=3.5`,
/// `3.8.10`, `<3.8`) through [`LAST_TORCH_FOR_PYTHON`]; the most permissive wins (files of
/// one directory may describe different environments). A spec that leaves Python open
/// (`python_requires=">=3.6"` in a `setup.py` beside a development `environment.yml` with
/// `python=3.8`) or allows a Python newer than the table leaves torch open: the package is
/// installed on newer Pythons too.
pub(crate) fn python_bounded_torch<'a>(specs: impl Iterator<Item = &'a str>) -> Option<(u32, u32)> {
    let mut best: Option<(u32, u32)> = None;
    for spec in specs {
        let py = max_allowed(spec)?;
        let torch = LAST_TORCH_FOR_PYTHON
            .iter()
            .find(|(p, _)| py <= *p)
            .map(|(_, t)| *t)?;
        best = Some(best.map_or(torch, |b| b.max(torch)));
    }
    best
}

pub(crate) fn best_requirement(
    reqs: &[DeclaredRequirement],
    locks: &[DeclaredRequirement],
    package: &str,
) -> Option<DeclaredRequirement> {
    let want = normalize_name(package);
    let mut cands: Vec<&DeclaredRequirement> = reqs
        .iter()
        .filter(|r| same_package(&r.normalized, &want))
        .collect();
    cands.sort_by_key(|r| {
        (
            // A versioned declaration says more than an unversioned one.
            r.specifier.is_empty() && r.url.is_none(),
            r.origin.rank(),
            // Among equals, a declaration with an upper bound says more.
            r.max_allowed_version().is_none(),
            r.source.components().count(),
            r.source.clone(),
            r.line,
        )
    });
    let lock = lock_version(locks, &want);
    match cands.first() {
        Some(r) => {
            let mut r = (*r).clone();
            r.locked_version = lock;
            Some(r)
        }
        None => locks
            .iter()
            .find(|l| same_package(&l.normalized, &want))
            .cloned(),
    }
}

#[cfg(test)]
mod tests {
    use super::python_bounded_torch;

    #[test]
    fn pinned_python_bounds_torch() {
        let b = |specs: &[&str]| python_bounded_torch(specs.iter().copied());
        assert_eq!(b(&["=3.5"]), Some((1, 5)));
        assert_eq!(b(&["3.6.9"]), Some((1, 10)));
        assert_eq!(b(&["==3.7"]), Some((1, 13)));
        assert_eq!(b(&["3.8.18"]), Some((2, 4)));
        assert_eq!(b(&["=2.7"]), Some((1, 4)));
        assert_eq!(b(&["<3.8"]), Some((1, 13)));
        // No bound: a newer Python, a lower bound only, a major-only pin.
        assert_eq!(b(&["3.10"]), None);
        assert_eq!(b(&[">=3.6"]), None);
        assert_eq!(b(&["=3"]), None);
        assert_eq!(b(&[]), None);
        // The most permissive pin wins; one without an upper bound leaves torch open.
        assert_eq!(b(&["=3.5", "3.7"]), Some((1, 13)));
        assert_eq!(b(&["=3.8", ">=3.6"]), None);
        assert_eq!(b(&["=3.5", "3.11"]), None);
    }

    #[test]
    fn conda_cpu_packages_name_torch_and_torchvision() {
        let dir = std::env::temp_dir().join(format!("tv-conda-cpu-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("requirements.txt"),
            "numpy=1.15.2=py35_1\npytorch-cpu=0.4.0=py35_cpu_1\ntorchvision-cpu=0.2.1=py35_1\n",
        )
        .unwrap();
        let tv = super::declared_requirement_in_dir(&dir, "torchvision").unwrap();
        assert_eq!(tv.max_allowed_version(), Some((0, 2)));
        let torch = super::declared_requirement_in_dir(&dir, "torch").unwrap();
        assert_eq!(torch.max_allowed_version(), Some((0, 4)));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
