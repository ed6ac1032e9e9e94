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
//! The discovered files are kept as a tree of interned directories, so a look-up is a few hash
//! probes on short names. Paths outside the walked roots (siblings of a single checked file,
//! parents of the checked root) are looked up on disk once and cached.
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::{Path, PathBuf};
use std::sync::RwLock;

/// A module found for a dotted name: the file, and the names left over (attributes of it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The module file (`x.py` or `x/__init__.py`).
    pub file: PathBuf,
    /// Remaining segments after the module (`["Net"]` for `pkg.models.Net`).
    pub rest: Vec<String>,
}

type DirId = u32;

/// Resolutions made from one directory: qualified name -> what it names.
type Resolutions = FxHashMap<Box<str>, Option<Found>>;

#[derive(Debug, Default)]
struct Dir {
    path: PathBuf,
    parent: Option<DirId>,
    /// Sub-directories by name (only those known: holding discovered files, or seen on disk).
    dirs: FxHashMap<Box<str>, DirId>,
    /// Stems of the `.py` files directly in it.
    modules: FxHashSet<Box<str>>,
    /// Below a walked root: the listing above is complete.
    walked: bool,
    /// Listed from disk already (outside the walked roots).
    listed: bool,
    /// Holds a project-root marker (pyproject.toml, setup.py, setup.cfg, .git).
    marker: Option<bool>,
}

#[derive(Debug, Default)]
struct Tree {
    dirs: Vec<Dir>,
    /// Directories by the bytes of their path (hashing bytes is much cheaper than hashing a
    /// `Path` component by component; the paths all come from the same absolute spelling).
    by_path: FxHashMap<Box<[u8]>, DirId>,
    roots: Vec<PathBuf>,
}

impl Tree {
    fn intern(&mut self, path: &Path) -> DirId {
        if let Some(&id) = self.by_path.get(path.as_os_str().as_encoded_bytes()) {
            return id;
        }
        let parent = path.parent().map(|p| self.intern(p));
        let id = self.dirs.len() as DirId;
        let walked = self.roots.iter().any(|r| path.starts_with(r));
        self.dirs.push(Dir {
            path: path.to_path_buf(),
            parent,
            walked,
            ..Dir::default()
        });
        self.by_path
            .insert(path.as_os_str().as_encoded_bytes().into(), id);
        if let (Some(p), Some(name)) = (parent, path.file_name().and_then(|n| n.to_str())) {
            self.dirs[p as usize].dirs.insert(name.into(), id);
        }
        id
    }
}

/// Resolves dotted names to files.
#[derive(Debug, Default)]
pub struct Resolver {
    tree: RwLock<Tree>,
    roots: Vec<PathBuf>,
    /// Search directories per directory (cache).
    search: RwLock<FxHashMap<DirId, Vec<DirId>>>,
    /// Resolutions per importing directory and qualified name (cache: every file of a
    /// package imports the same names, and the tree does not change during a model build).
    memo: RwLock<FxHashMap<DirId, Resolutions>>,
}

const ROOT_MARKERS: &[&str] = &["pyproject.toml", "setup.py", "setup.cfg", ".git"];
/// How many parent directories are searched above an importing file at most.
const MAX_PARENTS: usize = 8;

impl Resolver {
    /// A resolver over the discovered `files` (absolute paths) below `roots` (absolute
    /// directories that discovery walked; a checked single file contributes nothing here).
    pub fn new(files: impl IntoIterator<Item = PathBuf>, roots: Vec<PathBuf>) -> Self {
        let mut tree = Tree {
            roots: roots.clone(),
            ..Tree::default()
        };
        for f in files {
            let Some(dir) = f.parent() else { continue };
            let d = tree.intern(dir);
            if let Some(stem) = f
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".py"))
            {
                tree.dirs[d as usize].modules.insert(stem.into());
            }
        }
        Resolver {
            tree: RwLock::new(tree),
            roots,
            search: RwLock::default(),
            memo: RwLock::default(),
        }
    }

    /// The walked roots.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    fn dir_id(&self, path: &Path) -> DirId {
        if let Some(&id) = self
            .tree
            .read()
            .ok()
            .and_then(|t| t.by_path.get(path.as_os_str().as_encoded_bytes()).copied())
            .as_ref()
        {
            return id;
        }
        let mut t = self.tree.write().unwrap_or_else(|e| e.into_inner());
        t.intern(path)
    }

    /// Make sure a directory outside the walked roots has its listing read from disk.
    fn list(&self, d: DirId) {
        {
            let t = self.tree.read().unwrap_or_else(|e| e.into_inner());
            let dir = &t.dirs[d as usize];
            if dir.walked || dir.listed {
                return;
            }
        }
        let path = {
            let t = self.tree.read().unwrap_or_else(|e| e.into_inner());
            t.dirs[d as usize].path.clone()
        };
        let mut subdirs = Vec::new();
        let mut modules = Vec::new();
        if let Ok(rd) = std::fs::read_dir(&path) {
            for e in rd.flatten() {
                let Ok(ft) = e.file_type() else { continue };
                let name = e.file_name();
                let Some(name) = name.to_str() else { continue };
                if ft.is_dir() {
                    subdirs.push(name.to_string());
                } else if let Some(stem) = name.strip_suffix(".py") {
                    modules.push(stem.to_string());
                }
            }
        }
        let mut t = self.tree.write().unwrap_or_else(|e| e.into_inner());
        for s in subdirs {
            let p = path.join(&s);
            t.intern(&p);
        }
        let dir = &mut t.dirs[d as usize];
        dir.modules.extend(modules.into_iter().map(Box::from));
        dir.listed = true;
    }

    fn has_marker(&self, d: DirId) -> bool {
        {
            let t = self.tree.read().unwrap_or_else(|e| e.into_inner());
            if let Some(m) = t.dirs[d as usize].marker {
                return m;
            }
        }
        let path = {
            let t = self.tree.read().unwrap_or_else(|e| e.into_inner());
            t.dirs[d as usize].path.clone()
        };
        let m = ROOT_MARKERS.iter().any(|m| path.join(m).exists());
        let mut t = self.tree.write().unwrap_or_else(|e| e.into_inner());
        t.dirs[d as usize].marker = Some(m);
        m
    }

    fn parent(&self, d: DirId) -> Option<DirId> {
        self.tree.read().ok()?.dirs[d as usize].parent
    }

    fn child_dir(&self, d: DirId, name: &str) -> Option<DirId> {
        self.list(d);
        let t = self.tree.read().ok()?;
        t.dirs[d as usize].dirs.get(name).copied()
    }

    fn has_module(&self, d: DirId, name: &str) -> bool {
        self.list(d);
        let t = self.tree.read().unwrap_or_else(|e| e.into_inner());
        t.dirs[d as usize].modules.contains(name)
    }

    fn path_of(&self, d: DirId) -> PathBuf {
        let t = self.tree.read().unwrap_or_else(|e| e.into_inner());
        t.dirs[d as usize].path.clone()
    }

    /// The project root of a directory: the nearest ancestor holding a root marker, else the
    /// top walked root containing it, else the directory itself.
    fn project_root(&self, dir: DirId) -> DirId {
        let mut d = Some(dir);
        let mut n = 0;
        let mut top_walked = None;
        while let Some(cur) = d {
            if self.has_marker(cur) {
                return cur;
            }
            let walked = {
                let t = self.tree.read().unwrap_or_else(|e| e.into_inner());
                t.dirs[cur as usize].walked
            };
            if walked {
                top_walked = Some(cur);
            }
            n += 1;
            if n > MAX_PARENTS {
                break;
            }
            d = self.parent(cur);
        }
        top_walked.unwrap_or(dir)
    }

    /// The directories searched for an absolute import made by a file in `dir`, in order.
    fn search_dirs(&self, dir: DirId) -> Vec<DirId> {
        if let Some(v) = self.search.read().ok().and_then(|m| m.get(&dir).cloned()) {
            return v;
        }
        let root = self.project_root(dir);
        let mut out = Vec::new();
        let mut d = Some(dir);
        while let Some(cur) = d {
            out.push(cur);
            if cur == root || out.len() > MAX_PARENTS {
                break;
            }
            d = self.parent(cur);
        }
        if let Some(src) = self.child_dir(root, "src") {
            if !out.contains(&src) {
                out.push(src);
            }
        }
        if let Ok(mut m) = self.search.write() {
            m.insert(dir, out.clone());
        }
        out
    }

    /// Does `dir` hold a module or package named `name`?
    fn has_top(&self, dir: DirId, name: &str) -> bool {
        self.has_module(dir, name) || self.child_dir(dir, name).is_some()
    }

    /// Within `base`, the longest module path of `segments` that exists.
    fn longest_module(&self, base: DirId, segments: &[&str]) -> Option<Found> {
        // Walk down the directories as far as they go.
        let mut chain = vec![base];
        for s in &segments[..segments.len().saturating_sub(1)] {
            match self.child_dir(*chain.last()?, s) {
                Some(d) => chain.push(d),
                None => break,
            }
        }
        for n in (1..=segments.len()).rev() {
            // `segments[..n-1]` must be directories: chain[n-1] is the parent of the module.
            let Some(&parent) = chain.get(n - 1) else {
                continue;
            };
            let last = segments[n - 1];
            let file = if self.has_module(parent, last) {
                Some(self.path_of(parent).join(format!("{last}.py")))
            } else {
                self.child_dir(parent, last)
                    .filter(|&d| self.has_module(d, "__init__"))
                    .map(|d| self.path_of(d).join("__init__.py"))
            };
            if let Some(file) = file {
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
        let dir = self.dir_id(importer.parent()?);
        if let Some(hit) = self
            .memo
            .read()
            .ok()
            .and_then(|m| m.get(&dir).and_then(|d| d.get(qualified)).cloned())
        {
            return hit;
        }
        let found = self.resolve_from(dir, qualified);
        if let Ok(mut m) = self.memo.write() {
            m.entry(dir)
                .or_default()
                .insert(qualified.into(), found.clone());
        }
        found
    }

    fn resolve_from(&self, dir: DirId, qualified: &str) -> Option<Found> {
        let level = qualified.bytes().take_while(|b| *b == b'.').count();
        let rest = &qualified[level..];
        let segments: Vec<&str> = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split('.').collect()
        };
        if level > 0 {
            // `from . import x` in pkg/a.py: the package directory is the file's directory.
            let mut base = dir;
            for _ in 1..level {
                base = self.parent(base)?;
            }
            let init = || {
                self.has_module(base, "__init__")
                    .then(|| self.path_of(base).join("__init__.py"))
            };
            if segments.is_empty() {
                return init().map(|file| Found {
                    file,
                    rest: Vec::new(),
                });
            }
            return self.longest_module(base, &segments).or_else(|| {
                // A name defined in the package's `__init__`.
                init().map(|file| Found {
                    file,
                    rest: segments.iter().map(|s| s.to_string()).collect(),
                })
            });
        }
        let first = *segments.first()?;
        for d in self.search_dirs(dir) {
            if self.has_top(d, first) {
                return self.longest_module(d, &segments);
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

    #[test]
    fn single_files_see_their_siblings_on_disk() {
        let (d, _) = fixture(&["models.py", "train.py", "pkg/__init__.py", "pkg/a.py"]);
        let p = d.path();
        // Only train.py was given (as pre-commit passes staged files): nothing is walked.
        let r = Resolver::new(vec![p.join("train.py")], Vec::new());
        assert_eq!(
            r.resolve(&p.join("train.py"), "models.Net").map(|f| f.file),
            Some(p.join("models.py"))
        );
        assert_eq!(
            r.resolve(&p.join("train.py"), "pkg.a").map(|f| f.file),
            Some(p.join("pkg/a.py"))
        );
        assert_eq!(r.resolve(&p.join("train.py"), "nothere"), None);
    }
}
