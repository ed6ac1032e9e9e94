use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What users write under `[tool.torchvet]` (or at the top of `torchvet.toml`).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Options {
    /// Rules to enable (replacing the defaults).
    pub select: Option<Vec<String>>,
    /// Rules to enable on top of the selection.
    pub extend_select: Option<Vec<String>>,
    /// Rules to disable.
    pub ignore: Option<Vec<String>>,
    /// Glob patterns of files and directories to skip (replacing the defaults).
    pub exclude: Option<Vec<String>>,
    /// Glob patterns to skip on top of the defaults.
    pub extend_exclude: Option<Vec<String>>,
    /// Glob pattern -> rules ignored in matching files.
    pub per_file_ignores: Option<BTreeMap<String, Vec<String>>>,
    /// The torch version the code targets (`"2.1"`).
    pub target_torch: Option<String>,
    /// Enable preview rules.
    pub preview: Option<bool>,
}

#[derive(Deserialize)]
struct Pyproject {
    tool: Option<Tool>,
}

#[derive(Deserialize)]
struct Tool {
    torchvet: Option<Options>,
}

/// A configuration file that was found and read.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    /// The file.
    pub path: PathBuf,
    /// Its options.
    pub options: Options,
}

impl ConfigFile {
    /// The directory patterns are relative to.
    pub fn root(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }
}

/// A configuration error that names the file, the key and the line.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Cannot read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// TOML syntax, unknown key or wrong type.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The parser's message (with line and column).
        message: String,
    },
    /// A value that parses but is not valid (e.g. unknown rule).
    #[error("{path}:{line}: `{key}`: {message}")]
    BadValue {
        /// The file.
        path: PathBuf,
        /// 1-based line of the key (0 when unknown).
        line: usize,
        /// The key.
        key: String,
        /// What is wrong.
        message: String,
    },
}

/// Line (1-based) where `key` first appears as a key in `text` (after `[tool.torchvet]` for
/// pyproject files), for error messages.
pub fn key_line(text: &str, key: &str) -> usize {
    let mut in_section = !text.contains("[tool.torchvet");
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("[tool.torchvet") {
            in_section = true;
            continue;
        }
        if in_section
            && t.starts_with(key)
            && t[key.len()..].trim_start().starts_with(['=', '.', ']'])
        {
            return i + 1;
        }
        if in_section && t.starts_with(&format!("\"{key}\"")) {
            return i + 1;
        }
    }
    0
}

/// Read a config file (`pyproject.toml` uses `[tool.torchvet]`; anything else is read whole).
/// `Ok(None)` for a pyproject without a `[tool.torchvet]` table.
pub fn load_config(path: &Path) -> Result<Option<ConfigFile>, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let is_pyproject = path.file_name().and_then(|n| n.to_str()) == Some("pyproject.toml");
    let invalid = |e: toml::de::Error| ConfigError::Invalid {
        path: path.to_path_buf(),
        message: e.to_string().trim_end().replace('\n', "\n  "),
    };
    let options = if is_pyproject {
        let p: Pyproject = toml::from_str(&text).map_err(invalid)?;
        match p.tool.and_then(|t| t.torchvet) {
            Some(o) => o,
            None => return Ok(None),
        }
    } else {
        toml::from_str::<Options>(&text).map_err(invalid)?
    };
    let file = ConfigFile {
        path: path.to_path_buf(),
        options,
    };
    validate(&file, &text)?;
    Ok(Some(file))
}

fn validate(file: &ConfigFile, text: &str) -> Result<(), ConfigError> {
    let o = &file.options;
    let bad = |key: &str, message: String| ConfigError::BadValue {
        path: file.path.clone(),
        line: key_line(text, key),
        key: key.to_string(),
        message,
    };
    let lists: [(&str, &Option<Vec<String>>); 3] = [
        ("select", &o.select),
        ("extend-select", &o.extend_select),
        ("ignore", &o.ignore),
    ];
    for (key, list) in lists {
        for sel in list.iter().flatten() {
            if let Err(e) = torchvet_linter::expand_selector(sel) {
                return Err(bad(key, e.to_string()));
            }
        }
    }
    for (pattern, sels) in o.per_file_ignores.iter().flatten() {
        if let Err(e) = globset::Glob::new(pattern) {
            return Err(bad(
                "per-file-ignores",
                format!("bad glob `{pattern}`: {e}"),
            ));
        }
        for sel in sels {
            if let Err(e) = torchvet_linter::expand_selector(sel) {
                return Err(bad("per-file-ignores", e.to_string()));
            }
        }
    }
    for (key, list) in [
        ("exclude", &o.exclude),
        ("extend-exclude", &o.extend_exclude),
    ] {
        for pattern in list.iter().flatten() {
            if let Err(e) = globset::Glob::new(pattern) {
                return Err(bad(key, format!("bad glob `{pattern}`: {e}")));
            }
        }
    }
    if let Some(v) = &o.target_torch {
        if torchvet_linter::Version::parse(v).is_none() {
            return Err(bad(
                "target-torch",
                format!("`{v}` is not a torch version (expected MAJOR.MINOR, e.g. \"2.1\")"),
            ));
        }
    }
    Ok(())
}

/// Find the configuration for a path: the nearest `torchvet.toml`, or `pyproject.toml` with a
/// `[tool.torchvet]` table, in the path's directory or above.
pub fn find_config(start: &Path) -> Result<Option<ConfigFile>, ConfigError> {
    let abs = std::path::absolute(start).unwrap_or_else(|_| start.to_path_buf());
    let mut dir = if abs.is_dir() {
        Some(abs.as_path())
    } else {
        abs.parent()
    };
    while let Some(d) = dir {
        let tv = d.join("torchvet.toml");
        if tv.is_file() {
            return load_config(&tv);
        }
        let py = d.join("pyproject.toml");
        if py.is_file() {
            if let Some(cfg) = load_config(&py)? {
                return Ok(Some(cfg));
            }
        }
        dir = d.parent();
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn reads_pyproject_section() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            d.path(),
            "pyproject.toml",
            "[project]\nname='x'\n[tool.torchvet]\nselect = ['ALL']\nignore = ['TV007']\ntarget-torch = '1.13'\n",
        );
        let cfg = load_config(&p).unwrap().unwrap();
        assert_eq!(cfg.options.select, Some(vec!["ALL".to_string()]));
        assert_eq!(cfg.options.target_torch.as_deref(), Some("1.13"));
    }

    #[test]
    fn unknown_key_names_file_key_and_line() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            d.path(),
            "torchvet.toml",
            "select = ['ALL']\nselcet = ['x']\n",
        );
        let err = load_config(&p).unwrap_err().to_string();
        assert!(err.contains("torchvet.toml"), "{err}");
        assert!(err.contains("selcet"), "{err}");
        assert!(err.contains("line 2"), "{err}");
    }

    #[test]
    fn bad_rule_names_file_key_and_line() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            d.path(),
            "pyproject.toml",
            "[tool.torchvet]\n\nignore = ['no-such-rule']\n",
        );
        let err = load_config(&p).unwrap_err().to_string();
        assert!(err.contains("pyproject.toml:3: `ignore`"), "{err}");
        assert!(err.contains("no-such-rule"), "{err}");
    }

    #[test]
    fn pyproject_without_section_is_skipped_when_searching() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "torchvet.toml", "preview = true\n");
        let sub = d.path().join("pkg");
        std::fs::create_dir(&sub).unwrap();
        write(&sub, "pyproject.toml", "[project]\nname='x'\n");
        let cfg = find_config(&sub).unwrap().unwrap();
        assert!(cfg.path.ends_with("torchvet.toml"));
        assert_eq!(cfg.options.preview, Some(true));
    }
}
