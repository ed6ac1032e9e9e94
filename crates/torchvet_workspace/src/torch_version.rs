//! The torch version a project declares. Parsing is `torchvet_project`'s (requirements with
//! includes and markers, PEP 621, Poetry, PDM, uv, setup.cfg/setup.py, environment.yml,
//! Pipfile, lock files); this module only decides which directory's declaration applies to a
//! checked path: the nearest one on the way up, stopping at the repository root.
use std::path::{Path, PathBuf};
use torchvet_linter::Version;

/// A declared torch requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredVersion {
    /// The specifier text, e.g. `>=2.1,<2.5`.
    pub specifier: String,
    /// Where it was declared.
    pub file: PathBuf,
    /// The highest major.minor the declaration allows (a lock file bounds it too);
    /// `None` = unbounded (latest).
    pub max: Option<Version>,
    /// The lowest major.minor the declaration allows (a lower bound, a pin or a lock);
    /// `None` = no lower bound declared.
    pub min: Option<Version>,
}

/// The torch version declared by the project that contains `start`: the nearest directory on
/// the way up whose dependency files declare torch (stopping at a `.git` directory).
pub fn declared_torch_version(start: &Path) -> Option<DeclaredVersion> {
    let abs = std::path::absolute(start).ok()?;
    let mut dir = if abs.is_dir() {
        Some(abs.as_path())
    } else {
        abs.parent()
    };
    while let Some(d) = dir {
        if let Some(req) = torchvet_project::declared_requirement_in_dir(d, "torch") {
            return Some(DeclaredVersion {
                specifier: req.specifier.clone(),
                file: d.join(&req.source),
                max: req
                    .max_allowed_version()
                    .map(|(major, minor)| Version::new(major, minor)),
                min: req
                    .min_allowed_version()
                    .map(|(major, minor)| Version::new(major, minor)),
            });
        }
        if d.join(".git").exists() {
            break;
        }
        dir = d.parent();
    }
    None
}

/// The declared torch version per checked file, as Ruff resolves nested configurations: each
/// file gets the declaration nearest to it (its own project root: the nearest directory on the
/// way up whose dependency files declare torch, stopping at a `.git` directory), whatever
/// the directory the run started from. Answers are cached per directory, so a tree of many
/// files reads each directory's dependency files once. Safe to share across threads.
#[derive(Debug, Default)]
pub struct TorchTargets {
    cache: std::sync::Mutex<std::collections::HashMap<PathBuf, Option<DeclaredVersion>>>,
}

impl TorchTargets {
    /// An empty resolver.
    pub fn new() -> Self {
        Self::default()
    }

    /// The torch declaration that applies to `file` (a file or a directory).
    pub fn for_path(&self, file: &Path) -> Option<DeclaredVersion> {
        let abs = std::path::absolute(file).ok()?;
        let dir = if abs.is_dir() {
            abs
        } else {
            abs.parent()?.to_path_buf()
        };
        self.for_dir(&dir)
    }

    fn for_dir(&self, dir: &Path) -> Option<DeclaredVersion> {
        if let Some(hit) = self.cache.lock().ok()?.get(dir) {
            return hit.clone();
        }
        // Walk up to the first directory with an answer (declared here, cached, or a
        // repository root), then cache the answer for every directory passed.
        let mut passed: Vec<PathBuf> = Vec::new();
        let mut cur = Some(dir);
        let mut answer = None;
        while let Some(d) = cur {
            if let Some(hit) = self.cache.lock().ok()?.get(d) {
                answer = hit.clone();
                break;
            }
            passed.push(d.to_path_buf());
            if let Some(req) = torchvet_project::declared_requirement_in_dir(d, "torch") {
                answer = Some(DeclaredVersion {
                    specifier: req.specifier.clone(),
                    file: d.join(&req.source),
                    max: req
                        .max_allowed_version()
                        .map(|(major, minor)| Version::new(major, minor)),
                    min: req
                        .min_allowed_version()
                        .map(|(major, minor)| Version::new(major, minor)),
                });
                break;
            }
            if d.join(".git").exists() {
                break;
            }
            cur = d.parent();
        }
        if let Ok(mut cache) = self.cache.lock() {
            for p in passed {
                cache.insert(p, answer.clone());
            }
        }
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_declaration_wins_and_bounds_the_version() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("requirements.txt"),
            "# deps\nnumpy\ntorch[cuda]==1.12.1 ; python_version>'3.7'\n",
        )
        .unwrap();
        let sub = d.path().join("pkg");
        std::fs::create_dir(&sub).unwrap();
        let got = declared_torch_version(&sub).unwrap();
        assert_eq!(got.max, Some(Version::new(1, 12)));
        assert_eq!(got.specifier, "==1.12.1");
        std::fs::write(
            sub.join("pyproject.toml"),
            "[project]\nname='x'\ndependencies = ['torch>=1.10,<2.0']\n",
        )
        .unwrap();
        let got = declared_torch_version(&sub.join("train.py")).unwrap();
        assert_eq!(got.max, Some(Version::new(1, u32::MAX)));
        assert!(got.file.ends_with("pyproject.toml"));
    }

    #[test]
    fn each_file_gets_its_own_project_declaration_whatever_the_start() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join(".git")).unwrap();
        std::fs::write(d.path().join("requirements.txt"), "torch==2.4.1\n").unwrap();
        let old = d.path().join("legacy/deep");
        std::fs::create_dir_all(&old).unwrap();
        std::fs::write(
            d.path().join("legacy/setup.cfg"),
            "[options]\ninstall_requires =\n    torch>=1.8,<1.13\n",
        )
        .unwrap();
        let plain = d.path().join("tools");
        std::fs::create_dir(&plain).unwrap();
        let targets = TorchTargets::new();
        let v = |p: &Path| targets.for_path(p).and_then(|d| d.max);
        assert_eq!(v(&old.join("train.py")), Some(Version::new(1, 12)));
        assert_eq!(v(&d.path().join("legacy/x.py")), Some(Version::new(1, 12)));
        assert_eq!(v(&plain.join("y.py")), Some(Version::new(2, 4)));
        assert_eq!(v(&d.path().join("z.py")), Some(Version::new(2, 4)));
        // Cached answers are the same.
        assert_eq!(v(&old.join("other.py")), Some(Version::new(1, 12)));
        // Nothing above the repository root is read.
        let bare = tempfile::tempdir().unwrap();
        std::fs::create_dir(bare.path().join(".git")).unwrap();
        assert_eq!(targets.for_path(&bare.path().join("a.py")), None);
    }
}
