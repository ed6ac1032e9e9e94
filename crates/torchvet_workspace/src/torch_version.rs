//! The torch version a project declares (pyproject.toml, requirements*.txt, setup.cfg).
use std::path::{Path, PathBuf};
use torchvet_linter::Version;

/// A declared torch requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredVersion {
    /// The specifier text, e.g. `>=2.1,<2.5`.
    pub specifier: String,
    /// Where it was declared.
    pub file: PathBuf,
    /// The highest major.minor the specifier allows; `None` = unbounded (latest).
    pub max: Option<Version>,
}

/// The highest `major.minor` a PEP 440 / Poetry specifier allows (`None` = no upper bound).
pub fn max_allowed_version(spec: &str) -> Option<Version> {
    let mut best: Option<Version> = None;
    let mut tighten = |v: Version| {
        best = Some(match best {
            Some(b) if b <= v => b,
            _ => v,
        });
    };
    for clause in spec.split(',') {
        let c = clause.trim().trim_matches(|ch| ch == '"' || ch == '\'');
        let (op, ver) = if let Some(rest) = c.strip_prefix("===") {
            ("==", rest)
        } else if let Some(rest) = c.strip_prefix("==") {
            ("==", rest)
        } else if let Some(rest) = c.strip_prefix("<=") {
            ("<=", rest)
        } else if let Some(rest) = c.strip_prefix("~=") {
            ("~=", rest)
        } else if let Some(rest) = c.strip_prefix('<') {
            ("<", rest)
        } else if let Some(rest) = c.strip_prefix('^') {
            ("^", rest)
        } else if let Some(rest) = c.strip_prefix('~') {
            ("~", rest)
        } else if c.starts_with(|ch: char| ch.is_ascii_digit()) {
            ("==", c) // Poetry's bare version means exactly that version.
        } else {
            continue;
        };
        let ver = ver.trim().trim_end_matches(".*");
        let parts: Vec<&str> = ver.split('.').collect();
        let Some(v) = Version::parse(ver) else {
            continue;
        };
        match op {
            "==" | "<=" => tighten(v),
            "<" => {
                let minor_given = parts.len() >= 2 && parts[1] != "0";
                let patch_given = parts.len() >= 3 && !parts[2].trim_start_matches('0').is_empty();
                if patch_given {
                    tighten(v);
                } else if minor_given {
                    tighten(Version::new(v.major, v.minor - 1));
                } else if v.major > 0 {
                    tighten(Version::new(v.major - 1, 99));
                }
            }
            "~=" => {
                if parts.len() >= 3 {
                    tighten(v);
                } else {
                    tighten(Version::new(v.major, 99));
                }
            }
            "^" => {
                if v.major > 0 {
                    tighten(Version::new(v.major, 99));
                } else {
                    tighten(v);
                }
            }
            "~" => tighten(v),
            _ => {}
        }
    }
    best
}

fn is_torch_name(name: &str) -> bool {
    let n = name.trim().to_ascii_lowercase();
    n == "torch" || n == "pytorch"
}

/// Split a PEP 508 line into (name, specifier). Markers and extras are dropped.
fn split_requirement(line: &str) -> Option<(&str, &str)> {
    let line = line.split(';').next()?.split('#').next()?.trim();
    if line.is_empty() || line.starts_with('-') {
        return None;
    }
    let end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .unwrap_or(line.len());
    let name = &line[..end];
    let mut rest = line[end..].trim();
    if rest.starts_with('[') {
        rest = rest.split_once(']').map(|x| x.1).unwrap_or("").trim();
    }
    if rest.starts_with('@') {
        return Some((name, ""));
    }
    Some((name, rest.trim_matches(|c| c == '(' || c == ')')))
}

fn from_lines<'a>(lines: impl Iterator<Item = &'a str>, file: &Path) -> Option<DeclaredVersion> {
    for line in lines {
        if let Some((name, spec)) = split_requirement(line) {
            if is_torch_name(name) {
                return Some(DeclaredVersion {
                    specifier: spec.to_string(),
                    file: file.to_path_buf(),
                    max: max_allowed_version(spec),
                });
            }
        }
    }
    None
}

fn from_pyproject(path: &Path) -> Option<DeclaredVersion> {
    let text = std::fs::read_to_string(path).ok()?;
    let doc: toml::Table = toml::from_str(&text).ok()?;
    let project = doc.get("project").and_then(|p| p.as_table());
    if let Some(deps) = project
        .and_then(|p| p.get("dependencies"))
        .and_then(|d| d.as_array())
    {
        if let Some(v) = from_lines(deps.iter().filter_map(|d| d.as_str()), path) {
            return Some(v);
        }
    }
    let poetry = doc
        .get("tool")
        .and_then(|t| t.get("poetry"))
        .and_then(|p| p.get("dependencies"))
        .and_then(|d| d.as_table());
    if let Some(deps) = poetry {
        for (name, value) in deps {
            if is_torch_name(name) {
                let spec = match value {
                    toml::Value::String(s) => s.clone(),
                    toml::Value::Table(t) => t
                        .get("version")
                        .and_then(|v| v.as_str())
                        .unwrap_or("")
                        .to_string(),
                    _ => String::new(),
                };
                return Some(DeclaredVersion {
                    max: max_allowed_version(&spec),
                    specifier: spec,
                    file: path.to_path_buf(),
                });
            }
        }
    }
    None
}

fn from_setup_cfg(path: &Path) -> Option<DeclaredVersion> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut in_requires = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("install_requires") {
            in_requires = true;
            if let Some((_, v)) = t.split_once('=') {
                lines.push(v.trim().to_string());
            }
            continue;
        }
        if in_requires {
            if !line.starts_with([' ', '\t']) && !t.is_empty() {
                in_requires = false;
            } else {
                lines.push(t.to_string());
            }
        }
    }
    from_lines(lines.iter().map(String::as_str), path)
}

/// The torch version declared by the project that contains `start` (searching upwards for
/// `pyproject.toml`, `requirements*.txt` and `setup.cfg`, nearest directory first).
pub fn declared_torch_version(start: &Path) -> Option<DeclaredVersion> {
    let abs = std::path::absolute(start).ok()?;
    let mut dir = if abs.is_dir() {
        Some(abs.as_path())
    } else {
        abs.parent()
    };
    while let Some(d) = dir {
        let py = d.join("pyproject.toml");
        if py.is_file() {
            if let Some(v) = from_pyproject(&py) {
                return Some(v);
            }
        }
        if let Ok(entries) = std::fs::read_dir(d) {
            let mut reqs: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("requirements") && n.ends_with(".txt"))
                })
                .collect();
            reqs.sort();
            for r in reqs {
                if let Ok(text) = std::fs::read_to_string(&r) {
                    if let Some(v) = from_lines(text.lines(), &r) {
                        return Some(v);
                    }
                }
            }
        }
        let cfg = d.join("setup.cfg");
        if cfg.is_file() {
            if let Some(v) = from_setup_cfg(&cfg) {
                return Some(v);
            }
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
    fn max_versions() {
        let v = |s: &str| max_allowed_version(s);
        assert_eq!(v("==1.13.1"), Some(Version::new(1, 13)));
        assert_eq!(v(">=1.10,<2.0"), Some(Version::new(1, 99)));
        assert_eq!(v(">=2.1,<2.5"), Some(Version::new(2, 4)));
        assert_eq!(v("<=2.3"), Some(Version::new(2, 3)));
        assert_eq!(v("~=1.13"), Some(Version::new(1, 99)));
        assert_eq!(v("~=2.1.0"), Some(Version::new(2, 1)));
        assert_eq!(v("^2.1"), Some(Version::new(2, 99)));
        assert_eq!(v(">=2.0"), None);
        assert_eq!(v(""), None);
        assert_eq!(v("2.0.1"), Some(Version::new(2, 0)));
    }

    #[test]
    fn reads_requirements() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("requirements.txt"),
            "# deps\nnumpy\ntorch[cuda]==1.12.1 ; python_version>'3.7'\n",
        )
        .unwrap();
        let got = declared_torch_version(d.path()).unwrap();
        assert_eq!(got.max, Some(Version::new(1, 12)));
        assert_eq!(got.specifier, "==1.12.1");
    }
}
