//! Module resolution over the checked tree: which file an import names.
//!
//! Python finds `import a.b.c` by trying each directory of `sys.path` in order and taking the
//! first one that holds a module or package `a`. A project's `sys.path` depends on how it is
//! run (`python train.py` puts the script's directory first; `python -m pkg.train` and
//! installed packages put the project root or `src/` there), so the resolver searches, for an
//! importing file: its own directory, then each parent directory up to the project root (the
//! nearest directory holding `pyproject.toml`, `setup.py`, `setup.cfg` or `.git`, or the top of
//! the checked tree), then that root's `src/`. The first directory holding `a.py` or a directory
//! `a/` with Python files wins, as in Python. Relative imports (`from ..models import Net`) are
//! resolved from the importing file's package directory.
//!
//! Files inside the checked tree are known from discovery and need no file-system call; paths
//! outside it (siblings of a single checked file, parents of the checked root) are looked up
//! on disk once and cached.
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A module found for a dotted name: the file, and the names left over (attributes of it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The module file (`x.py` or `x/__init__.py`).
    pub file: PathBuf,
    /// Remaining segments after the module (`["Net"]` for `pkg.models.Net`).
    pub rest: Vec<String>,
}

/// Resolves dotted names to files.
#[derive(Debug, Default)]
pub struct Resolver {
    /// Discovered files (absolute).
    files: FxHashSet<PathBuf>,
    /// Directories holding discovered files, and all their ancestors up to the roots.
    dirs: FxHashSet<PathBuf>,
    /// The walked roots: below them, discovery is complete (no disk look-ups needed).
    roots: Vec<PathBuf>,
    /// Disk look-ups outside the roots: path -> is a file / is a directory.
    disk: Mutex<FxHashMap<PathBuf, (bool, bool)>>,
    /// Project root of a directory (cache).
    project_roots: Mutex<FxHashMap<PathBuf, PathBuf>>,
}

const ROOT_MARKERS: &[&str] = &["pyproject.toml", "setup.py", "setup.cfg", ".git"];
/// How many parent directories are searched above an importing file at most.
const MAX_PARENTS: usize = 8;

impl Resolver {
    /// A resolver over the discovered `files` (absolute paths) below `roots` (absolute
    /// directories that discovery walked; a checked single file contributes nothing here).
    pub fn new(files: impl IntoIterator<Item = PathBuf>, roots: Vec<PathBuf>) -> Self {
        let mut r = Resolver {
            roots,
            ..Resolver::default()
        };
        for f in files {
            let mut d = f.parent();
            while let Some(dir) = d {
                if !r.dirs.insert(dir.to_path_buf()) {
                    break;
                }
                d = dir.parent();
            }
            r.files.insert(f);
        }
        r
    }

    /// The walked roots.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    fn walked(&self, path: &Path) -> bool {
        self.roots.iter().any(|r| path.starts_with(r))
    }

    fn disk(&self, path: &Path) -> (bool, bool) {
        if let Some(v) = self.disk.lock().ok().and_then(|m| m.get(path).copied()) {
            return v;
        }
        let v = match std::fs::metadata(path) {
            Ok(m) => (m.is_file(), m.is_dir()),
            Err(_) => (false, false),
        };
        if let Ok(mut m) = self.disk.lock() {
            m.insert(path.to_path_buf(), v);
        }
        v
    }

    /// Is `path` a Python file we may read (discovered, or on disk outside the walked roots)?
    pub fn is_file(&self, path: &Path) -> bool {
        if self.files.contains(path) {
            return true;
        }
        if self.walked(path) {
            return false;
        }
        self.disk(path).0
    }

    fn is_dir(&self, path: &Path) -> bool {
        if self.dirs.contains(path) {
            return true;
        }
        if self.walked(path) {
            return false;
        }
        self.disk(path).1
    }

    /// The project root of a directory: the nearest ancestor holding a root marker, else the
    /// top walked root containing it, else the directory itself.
    pub fn project_root(&self, dir: &Path) -> PathBuf {
        if let Some(r) = self.project_roots.lock().ok().and_then(|m| m.get(dir).cloned()) {
            return r;
        }
        let mut found = None;
        let mut d = Some(dir);
        let mut n = 0;
        while let Some(cur) = d {
            if ROOT_MARKERS
                .iter()
                .any(|m| self.disk(&cur.join(m)) != (false, false))
            {
                found = Some(cur.to_path_buf());
                break;
            }
            n += 1;
            if n > MAX_PARENTS {
                break;
            }
            d = cur.parent();
        }
        let root = found
            .or_else(|| {
                self.roots
                    .iter()
                    .filter(|r| dir.starts_with(r))
                    .min_by_key(|r| r.components().count())
                    .cloned()
            })
            .unwrap_or_else(|| dir.to_path_buf());
        if let Ok(mut m) = self.project_roots.lock() {
            m.insert(dir.to_path_buf(), root.clone());
        }
        root
    }

    /// The directories searched for an absolute import made by a file in `dir`, in order.
    fn search_dirs(&self, dir: &Path) -> Vec<PathBuf> {
        let root = self.project_root(dir);
        let mut out = Vec::new();
        let mut d = Some(dir);
        while let Some(cur) = d {
            out.push(cur.to_path_buf());
            if cur == root || out.len() > MAX_PARENTS {
                break;
            }
            d = cur.parent();
        }
        let src = root.join("src");
        if self.is_dir(&src) && !out.contains(&src) {
            out.push(src);
        }
        out
    }

    /// Does `dir` hold a module or package named `name`?
    fn has_top(&self, dir: &Path, name: &str) -> bool {
        self.is_file(&dir.join(format!("{name}.py"))) || self.is_dir(&dir.join(name))
    }

    /// Within `base`, the longest module path of `segments` that exists.
    fn longest_module(&self, base: &Path, segments: &[&str]) -> Option<Found> {
        for n in (1..=segments.len()).rev() {
            let mut p = base.to_path_buf();
            for s in &segments[..n - 1] {
                p.push(s);
            }
            let last = segments[n - 1];
            let file = p.join(format!("{last}.py"));
            let init = p.join(last).join("__init__.py");
            let hit = if self.is_file(&file) {
                Some(file)
            } else if self.is_file(&init) {
                Some(init)
            } else {
                None
            };
            if let Some(file) = hit {
                return Some(Found {
                    file,
                    rest: segments[n..].iter().map(|s| s.to_string()).collect(),
                });
            }
        }
        None
    }

    /// Resolve a qualified name as written in `importer` (`pkg.models.Net`, `.models.Net`,
    /// `..utils`) to the module file it names and the attributes left over. `None` for names
    /// outside the project (`torch.nn.Linear`).
    pub fn resolve(&self, importer: &Path, qualified: &str) -> Option<Found> {
        let dir = importer.parent()?;
        let level = qualified.bytes().take_while(|b| *b == b'.').count();
        let rest = &qualified[level..];
        let segments: Vec<&str> = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split('.').collect()
        };
        if level > 0 {
            // `from . import x` in pkg/a.py: the package directory is the file's directory.
            let mut base = dir.to_path_buf();
            for _ in 1..level {
                base = base.parent()?.to_path_buf();
            }
            if segments.is_empty() {
                let init = base.join("__init__.py");
                return self.is_file(&init).then(|| Found {
                    file: init,
                    rest: Vec::new(),
                });
            }
            return self.longest_module(&base, &segments).or_else(|| {
                // `from . import models` where `models` is a namespace directory, or a name
                // defined in the package's `__init__`.
                let init = base.join("__init__.py");
                self.is_file(&init).then(|| Found {
                    file: init,
                    rest: segments.iter().map(|s| s.to_string()).collect(),
                })
            });
        }
        let first = *segments.first()?;
        for d in self.search_dirs(dir) {
            if self.has_top(&d, first) {
                return self.longest_module(&d, &segments);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(files: &[&str]) -> (tempfile_like::Dir, Resolver) {
        let dir = tempfile_like::Dir::new();
        let mut paths = Vec::new();
        for f in files {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "").unwrap();
            paths.push(p);
        }
        std::fs::write(dir.path().join("pyproject.toml"), "").unwrap();
        let r = Resolver::new(paths, vec![dir.path().to_path_buf()]);
        (dir, r)
    }

    /// A tiny temporary directory (the semantic crate has no dev-dependencies).
    mod tempfile_like {
        pub struct Dir(std::path::PathBuf);
        impl Dir {
            pub fn new() -> Self {
                use std::sync::atomic::{AtomicUsize, Ordering};
                static N: AtomicUsize = AtomicUsize::new(0);
                let p = std::env::temp_dir().join(format!(
                    "torchvet-resolve-{}-{}",
                    std::process::id(),
                    N.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::create_dir_all(&p).unwrap();
                Dir(p.canonicalize().unwrap())
            }
            pub fn path(&self) -> &std::path::Path {
                &self.0
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn resolves_siblings_packages_relative_and_src_layouts() {
        let (d, r) = fixture(&[
            "train.py",
            "models.py",
            "pkg/__init__.py",
            "pkg/nets/__init__.py",
            "pkg/nets/resnet.py",
            "pkg/engine.py",
            "src/lib/__init__.py",
            "src/lib/core.py",
            "tools/run.py",
        ]);
        let p = d.path();
        let train = p.join("train.py");
        assert_eq!(
            r.resolve(&train, "models.Net"),
            Some(Found {
                file: p.join("models.py"),
                rest: vec!["Net".into()]
            })
        );
        assert_eq!(
            r.resolve(&train, "pkg.nets.resnet.ResNet").map(|f| f.file),
            Some(p.join("pkg/nets/resnet.py"))
        );
        assert_eq!(
            r.resolve(&train, "pkg.nets.ResNet"),
            Some(Found {
                file: p.join("pkg/nets/__init__.py"),
                rest: vec!["ResNet".into()]
            })
        );
        let engine = p.join("pkg/engine.py");
        assert_eq!(
            r.resolve(&engine, ".nets.resnet.ResNet").map(|f| f.file),
            Some(p.join("pkg/nets/resnet.py"))
        );
        let resnet = p.join("pkg/nets/resnet.py");
        assert_eq!(
            r.resolve(&resnet, "..engine.train").map(|f| f.file),
            Some(p.join("pkg/engine.py"))
        );
        assert_eq!(
            r.resolve(&resnet, ".").map(|f| f.file),
            Some(p.join("pkg/nets/__init__.py"))
        );
        // A script in a sub-directory importing a top-level package; a src/ layout.
        let run = p.join("tools/run.py");
        assert_eq!(
            r.resolve(&run, "pkg.engine").map(|f| f.file),
            Some(p.join("pkg/engine.py"))
        );
        assert_eq!(
            r.resolve(&run, "lib.core.f").map(|f| f.file),
            Some(p.join("src/lib/core.py"))
        );
        // Third-party names stay outside.
        assert_eq!(r.resolve(&train, "torch.nn.Linear"), None);
    }
}
