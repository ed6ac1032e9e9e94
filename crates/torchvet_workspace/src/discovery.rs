use globset::{Glob, GlobSet, GlobSetBuilder};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Directory names skipped by default (besides hidden ones such as `.git` and `.venv`).
pub const DEFAULT_EXCLUDES: &[&str] = &[
    ".git",
    ".venv",
    "venv",
    "site-packages",
    "node_modules",
    "__pycache__",
    ".torchvet_cache",
    "build",
    "dist",
    ".ipynb_checkpoints",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
];

/// How to walk.
#[derive(Debug, Clone, Default)]
pub struct DiscoveryOptions {
    /// Replace the default excludes.
    pub exclude: Option<Vec<String>>,
    /// Add to the excludes.
    pub extend_exclude: Vec<String>,
    /// Patterns are relative to this directory.
    pub root: PathBuf,
    /// Also collect files with these extensions (e.g. checkpoints), besides `.py`/`.ipynb`.
    pub extra_extensions: Vec<String>,
}

/// What the walk found.
#[derive(Debug, Default)]
pub struct Discovered {
    /// Files to lint, sorted.
    pub files: Vec<PathBuf>,
    /// Other files that matched `extra_extensions`, sorted.
    pub extra: Vec<PathBuf>,
    /// Problems (unreadable directories, broken links given explicitly...).
    pub errors: Vec<(PathBuf, String)>,
}

fn build_globs(patterns: &[String]) -> GlobSet {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        // A bare name matches at any depth; a pattern with a slash is rooted.
        let pat = if p.contains('/') {
            p.trim_start_matches("./").to_string()
        } else {
            format!("**/{p}")
        };
        if let Ok(g) = Glob::new(&pat) {
            b.add(g);
        }
        if let Ok(g) = Glob::new(&format!("{}/**", pat.trim_end_matches('/'))) {
            b.add(g);
        }
    }
    b.build().unwrap_or_else(|_| GlobSet::empty())
}

fn relative<'a>(path: &'a Path, root: &Path) -> &'a Path {
    path.strip_prefix(root)
        .or_else(|_| path.strip_prefix("./"))
        .unwrap_or(path)
}

/// Walk `paths`: directories recursively (honouring `.gitignore` and the excludes), files as
/// given (explicit files are always checked).
pub fn discover(paths: &[PathBuf], opts: &DiscoveryOptions) -> Discovered {
    let mut excludes: Vec<String> = match &opts.exclude {
        Some(e) => e.clone(),
        None => DEFAULT_EXCLUDES.iter().map(|s| s.to_string()).collect(),
    };
    excludes.extend(opts.extend_exclude.iter().cloned());
    let globs = build_globs(&excludes);
    let root = std::path::absolute(&opts.root).unwrap_or_else(|_| opts.root.clone());
    let wanted = |p: &Path| -> (bool, bool) {
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        (
            matches!(ext, "py" | "pyw" | "ipynb"),
            opts.extra_extensions.iter().any(|x| x == ext),
        )
    };
    let out = Mutex::new(Discovered::default());
    for path in paths {
        let meta = std::fs::metadata(path);
        match meta {
            Err(e) => {
                let msg = if std::fs::symlink_metadata(path).is_ok() {
                    format!("broken symbolic link: {e}")
                } else {
                    format!("cannot read: {e}")
                };
                out.lock()
                    .expect("no panics while locked")
                    .errors
                    .push((path.clone(), msg));
            }
            Ok(m) if m.is_file() => {
                let (lint, extra) = wanted(path);
                let mut o = out.lock().expect("no panics while locked");
                if extra {
                    o.extra.push(path.clone());
                } else {
                    // Explicit files are always checked, whatever their extension.
                    let _ = lint;
                    o.files.push(path.clone());
                }
            }
            Ok(_) => {
                let mut builder = ignore::WalkBuilder::new(path);
                builder
                    .hidden(true)
                    .git_ignore(true)
                    .git_global(false)
                    .git_exclude(true)
                    .require_git(false)
                    .parents(true)
                    .ignore(true);
                let globs = globs.clone();
                let root = root.clone();
                builder.filter_entry(move |entry| {
                    if entry.depth() == 0 {
                        return true;
                    }
                    let p = entry.path();
                    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
                    !globs.is_match(relative(&abs, &root)) && !globs.is_match(p)
                });
                builder.build_parallel().run(|| {
                    let out = &out;
                    let wanted = &wanted;
                    Box::new(move |entry| {
                        match entry {
                            Ok(entry) => {
                                let is_file = entry
                                    .file_type()
                                    .is_some_and(|t| t.is_file() || t.is_symlink());
                                if is_file {
                                    let p = entry.path();
                                    let (lint, extra) = wanted(p);
                                    if lint || extra {
                                        let mut o = out.lock().expect("no panics while locked");
                                        if lint {
                                            o.files.push(p.to_path_buf());
                                        } else {
                                            o.extra.push(p.to_path_buf());
                                        }
                                    }
                                }
                            }
                            Err(err) => {
                                let path = match &err {
                                    ignore::Error::WithPath { path, .. } => path.clone(),
                                    _ => PathBuf::new(),
                                };
                                out.lock()
                                    .expect("no panics while locked")
                                    .errors
                                    .push((path, err.to_string()));
                            }
                        }
                        ignore::WalkState::Continue
                    })
                });
            }
        }
    }
    let mut d = out.into_inner().unwrap_or_default();
    d.files.sort();
    d.files.dedup();
    d.extra.sort();
    d.extra.dedup();
    d.errors.sort();
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn honours_gitignore_and_default_excludes() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        for f in [
            "a.py",
            "nb.ipynb",
            "venv/x.py",
            "build/y.py",
            "pkg/__pycache__/z.py",
            "ignored/w.py",
            ".hidden/h.py",
            "pkg/m.py",
            "notes.txt",
        ] {
            let p = r.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "x = 1\n").unwrap();
        }
        std::fs::write(r.join(".gitignore"), "ignored/\n").unwrap();
        let found = discover(
            &[r.to_path_buf()],
            &DiscoveryOptions {
                root: r.to_path_buf(),
                ..Default::default()
            },
        );
        let names: Vec<String> = found
            .files
            .iter()
            .map(|p| {
                p.strip_prefix(r)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/")
            })
            .collect();
        assert_eq!(names, vec!["a.py", "nb.ipynb", "pkg/m.py"]);
        // Explicit files are always checked.
        let explicit = discover(
            &[r.join("venv/x.py")],
            &DiscoveryOptions {
                root: r.to_path_buf(),
                ..Default::default()
            },
        );
        assert_eq!(explicit.files.len(), 1);
        // extend-exclude with a rooted pattern.
        let opts = DiscoveryOptions {
            root: r.to_path_buf(),
            extend_exclude: vec!["pkg".into()],
            ..Default::default()
        };
        assert_eq!(discover(&[r.to_path_buf()], &opts).files.len(), 2);
    }

    #[cfg(unix)]
    #[test]
    fn broken_symlink_given_explicitly_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let link = d.path().join("gone.py");
        std::os::unix::fs::symlink(d.path().join("missing.py"), &link).unwrap();
        let found = discover(&[link], &DiscoveryOptions::default());
        assert_eq!(found.errors.len(), 1);
        assert!(found.errors[0].1.contains("broken symbolic link"));
    }
}
