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
            });
        }
        if d.join(".git").exists() {
            break;
        }
        dir = d.parent();
    }
    None
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
}
