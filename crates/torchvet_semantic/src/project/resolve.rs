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
//! Projects also extend `sys.path` at run time (`sys.path.insert(0, osp.join(this_dir, '..',
//! 'lib'))` in a Faster R-CNN `_init_paths.py`), and a script's own directory is on it for
//! every module the script imports. [`sys_path_additions`] reads, statically, what a file
//! adds; the model turns those and the entry scripts into a *search context* per file (see
//! `search_paths.rs`: which directories, and why an addition serves the processes it runs
//! in), and [`Resolver::set_contexts`] hands it here. A context is searched only for an
//! absolute import that the search above does not resolve, and gives a module only when all of
//! its directories holding the name agree ([`Resolver::context_candidates`]), so no resolution
//! of the usual search changes.
//!
//! The discovered files are kept as a tree of interned directories, so a look-up is a few hash
//! probes on short names. Paths outside the walked roots (siblings of a single checked file,
//! parents of the checked root) are looked up on disk once and cached.
use ruff_python_ast as ast;
use ruff_text_size::Ranged;
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

pub(crate) type DirId = u32;

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
    /// Search contexts (see [`Resolver::set_contexts`]): the distinct lists of extra
    /// directories, which one each file has (by the bytes of its path), and the candidates
    /// found per context and name (cache).
    ctxs: Vec<Vec<DirId>>,
    ctx_of: FxHashMap<Box<[u8]>, u32>,
    ctx_memo: RwLock<Vec<Candidates>>,
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
            ..Resolver::default()
        }
    }

    /// The walked roots.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    pub(crate) fn dir_id(&self, path: &Path) -> DirId {
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
        self.resolve_with(importer, qualified, Found::clone)
    }

    /// [`Resolver::resolve`] seen through `f`, without copying a memoised resolution (the
    /// link asks for every reference of every file and wants only the file).
    pub fn resolve_with<R>(
        &self,
        importer: &Path,
        qualified: &str,
        f: impl Fn(&Found) -> R,
    ) -> Option<R> {
        if let Some(Some(r)) = self.resolve_plain_with(importer, qualified, &f) {
            return Some(r);
        }
        // Not resolved plainly: the search context's single candidate.
        if qualified.starts_with('.') || self.ctxs.is_empty() {
            return None;
        }
        let &ctx = self.ctx_of.get(importer.as_os_str().as_encoded_bytes())?;
        let hit = self.ctx_memo.read().ok().and_then(|m| {
            m[ctx as usize]
                .get(qualified)
                .map(|c| (c.len() == 1).then(|| f(&c[0])))
        });
        match hit {
            Some(r) => r,
            None => {
                let mut c = self.context_candidates(importer, qualified);
                (c.len() == 1)
                    .then(|| c.pop())
                    .flatten()
                    .map(|found| f(&found))
            }
        }
    }

    /// The usual search (own directory, parents, `src/`; memoised per importing directory),
    /// seen through `f`: `None` when the importer has no directory, `Some(None)` when the name
    /// does not resolve that way.
    fn resolve_plain_with<R>(
        &self,
        importer: &Path,
        qualified: &str,
        f: &impl Fn(&Found) -> R,
    ) -> Option<Option<R>> {
        let dir = self.dir_id(importer.parent()?);
        if let Some(hit) = self.memo.read().ok().and_then(|m| {
            m.get(&dir)
                .and_then(|d| d.get(qualified))
                .map(|found| found.as_ref().map(f))
        }) {
            return Some(hit);
        }
        let found = self.resolve_from(dir, qualified);
        let r = found.as_ref().map(f);
        if let Ok(mut m) = self.memo.write() {
            m.entry(dir).or_default().insert(qualified.into(), found);
        }
        Some(r)
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
        // The first directory holding the name wins, as in Python, except that a plain
        // module there (`alg/alg.py`, seen from `alg/algs/x.py` because parents are searched)
        // cannot be the package that `alg.algs.base.Algorithm` walks into: a later directory
        // where more of the name is modules is taken instead (Python, run from the project
        // root, finds the package `alg/` there).
        let mut hit: Option<Option<Found>> = None;
        for d in self.search_dirs(dir) {
            if !self.has_top(d, first) {
                continue;
            }
            let found = self.longest_module(d, &segments);
            match (&hit, &found) {
                (None, Some(f)) if f.rest.len() >= 2 && !f.file.ends_with("__init__.py") => {
                    hit = Some(found);
                }
                (None, _) => return found,
                (Some(Some(h)), Some(f)) if f.rest.len() < h.rest.len() => return found,
                _ => {}
            }
        }
        hit.flatten()
    }
}

// ----- search contexts: directories a file's processes add to `sys.path` -----

/// Candidates for a name through a file's search context: every distinct module the
/// context's directories give for it.
type Candidates = FxHashMap<Box<str>, Vec<Found>>;

impl Resolver {
    /// Set the search contexts: per file (absolute path), the extra directories searched, in
    /// order, for an absolute import that the usual search does not resolve (see the module
    /// docs and `ProjectModel::link_search_paths`). Replaces the previous contexts.
    pub(crate) fn set_contexts(&mut self, contexts: Vec<(PathBuf, Vec<DirId>)>) {
        let mut ctxs: Vec<Vec<DirId>> = Vec::new();
        let mut ids: FxHashMap<Vec<DirId>, u32> = FxHashMap::default();
        let mut of = FxHashMap::default();
        for (file, dirs) in contexts {
            if dirs.is_empty() {
                continue;
            }
            let id = *ids.entry(dirs.clone()).or_insert_with(|| {
                ctxs.push(dirs);
                ctxs.len() as u32 - 1
            });
            of.insert(file.into_os_string().into_encoded_bytes().into(), id);
        }
        self.ctx_memo = RwLock::new(vec![Candidates::default(); ctxs.len()]);
        self.ctxs = ctxs;
        self.ctx_of = of;
    }

    /// The directory of an absolute path, interned when it exists (a directory holding
    /// discovered files, or one on disk).
    pub(crate) fn existing_dir(&self, path: &Path) -> Option<DirId> {
        let known = self
            .tree
            .read()
            .ok()
            .and_then(|t| t.by_path.get(path.as_os_str().as_encoded_bytes()).copied());
        match known {
            Some(id) => Some(id),
            None if path.is_dir() => Some(self.dir_id(path)),
            None => None,
        }
    }

    /// The directory of a file's parent, interned.
    pub(crate) fn dir_of(&self, file: &Path) -> Option<DirId> {
        Some(self.dir_id(file.parent()?))
    }

    /// May a file in `dir` add `added` to the search path: it lies inside a walked root or
    /// inside the file's project root (never a parent of the project, where other checkouts
    /// live)?
    pub(crate) fn inside_project(&self, dir: DirId, added: DirId) -> bool {
        let path = self.path_of(added);
        if self.roots.iter().any(|r| path.starts_with(r)) {
            return true;
        }
        path.starts_with(self.path_of(self.project_root(dir)))
    }

    /// The names of the modules and packages directly in a directory.
    pub(crate) fn top_names(&self, d: DirId, out: &mut FxHashSet<Box<str>>) {
        self.list(d);
        let t = self.tree.read().unwrap_or_else(|e| e.into_inner());
        let dir = &t.dirs[d as usize];
        out.extend(dir.modules.iter().cloned());
        out.extend(dir.dirs.keys().cloned());
    }

    /// Does the usual search (own directory, parents, `src/`) resolve `qualified` from
    /// `importer`?
    pub(crate) fn resolves_plainly(&self, importer: &Path, qualified: &str) -> bool {
        self.resolve_plain_with(importer, qualified, &|_| ())
            .flatten()
            .is_some()
    }

    /// Every module the importer's search context gives for an absolute name the usual
    /// search does not resolve (empty when it has no context or nothing matches). One
    /// element: the name resolves; several: the context's directories disagree.
    pub fn context_candidates(&self, importer: &Path, qualified: &str) -> Vec<Found> {
        if qualified.starts_with('.') || self.ctxs.is_empty() {
            return Vec::new();
        }
        let Some(&ctx) = self.ctx_of.get(importer.as_os_str().as_encoded_bytes()) else {
            return Vec::new();
        };
        if let Some(hit) = self
            .ctx_memo
            .read()
            .ok()
            .and_then(|m| m[ctx as usize].get(qualified).cloned())
        {
            return hit;
        }
        let segments: Vec<&str> = qualified.split('.').collect();
        let mut out: Vec<Found> = Vec::new();
        for &d in &self.ctxs[ctx as usize] {
            if !self.has_top(d, segments[0]) {
                continue;
            }
            if let Some(f) = self.longest_module(d, &segments) {
                if !out.contains(&f) {
                    out.push(f);
                }
            }
        }
        if let Ok(mut m) = self.ctx_memo.write() {
            m[ctx as usize].insert(qualified.into(), out.clone());
        }
        out
    }
}

// ----- what a file adds to `sys.path` -----

/// The directories a file adds to `sys.path` when it runs, as far as the source says them
/// statically (nothing is executed). Recognised: `sys.path.insert(i, p)`,
/// `sys.path.append(p)`, `sys.path.extend([...])` and `site.addsitedir(p)` at module level
/// (inside `if` / `try` / `with` / loops over literal lists, the `__main__` block included) and
/// in the same file's functions that module-level code calls (`add_path(osp.join(this_dir,
/// '..', 'lib'))` runs `add_path`'s body with `path` bound to the argument; two levels).
/// `p` is evaluated from `__file__` (`os.path.dirname`/`abspath`/`realpath`/`normpath`/`join`
/// and their aliases, `pathlib.Path(...)` with `.parent`, `.parents[n]`, `.resolve()`,
/// `/`, `str(...)`), string constants, `os.getcwd()` / `Path.cwd()`, `sys.path[0]`,
/// concatenation, f-strings, and names assigned earlier in the same scope. Relative paths are
/// relative to the working directory, taken to be the file's own directory (scripts are
/// usually started from their folder).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SysPathAdditions {
    /// The directories, absolute and lexically normalised (not checked for existence).
    pub dirs: Vec<PathBuf>,
    /// The additions whose value is not known statically (where they are in the file).
    pub unknown: Vec<ruff_text_size::TextRange>,
}

/// Does a text possibly add to `sys.path` (a cheap gate before [`sys_path_additions`])?
pub fn may_add_sys_path(text: &str) -> bool {
    let t = text.as_bytes();
    let has = |w: &str| memchr::memmem::find(t, w.as_bytes()).is_some();
    has("sys.path") || has("from sys import") || has("addsitedir")
}

/// [`SysPathAdditions`] of a file's module body. `imports` are the file's module-level
/// bindings (name -> qualified name); `notebook`: there is no `__file__`.
pub fn sys_path_additions(
    file: &Path,
    body: &[ast::Stmt],
    imports: &[(Box<str>, Box<str>)],
    notebook: bool,
) -> SysPathAdditions {
    let cwd = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut e = PathEval {
        file: (!notebook).then_some(file),
        cwd,
        imports: imports.iter().map(|(n, q)| (&**n, &**q)).collect(),
        defs: FxHashMap::default(),
        out: SysPathAdditions::default(),
        stack: Vec::new(),
    };
    for stmt in body {
        if let ast::Stmt::FunctionDef(f) = stmt {
            e.defs.insert(f.name.as_str(), f);
        }
    }
    let mut env = Env::default();
    e.suite(body, &mut env);
    let mut seen = FxHashSet::default();
    e.out.dirs.retain(|d| seen.insert(d.clone()));
    e.out
}

/// Names bound in the scope being walked: a path value, or `None` (bound to something
/// else, which hides an import of the same name).
type Env<'a> = FxHashMap<&'a str, Option<PathBuf>>;

/// How many functions deep the walk follows calls.
const MAX_CALL_DEPTH: usize = 2;

struct PathEval<'a> {
    file: Option<&'a Path>,
    cwd: PathBuf,
    imports: FxHashMap<&'a str, &'a str>,
    defs: FxHashMap<&'a str, &'a ast::StmtFunctionDef>,
    out: SysPathAdditions,
    /// Functions being walked (no recursion).
    stack: Vec<&'a str>,
}

impl<'a> PathEval<'a> {
    fn suite(&mut self, body: &'a [ast::Stmt], env: &mut Env<'a>) {
        for stmt in body {
            self.stmt(stmt, env);
        }
    }

    fn stmt(&mut self, stmt: &'a ast::Stmt, env: &mut Env<'a>) {
        use ast::Stmt;
        match stmt {
            Stmt::Expr(e) => self.expr_calls(&e.value, env),
            Stmt::Assign(a) => {
                self.expr_calls(&a.value, env);
                let v = self.eval(&a.value, env);
                for t in &a.targets {
                    self.bind(t, v.clone(), env);
                }
            }
            Stmt::AnnAssign(a) => {
                if let Some(value) = &a.value {
                    self.expr_calls(value, env);
                    let v = self.eval(value, env);
                    self.bind(&a.target, v, env);
                }
            }
            Stmt::AugAssign(a) => self.bind(&a.target, None, env),
            Stmt::If(i) => {
                self.expr_calls(&i.test, env);
                self.suite(&i.body, env);
                for c in &i.elif_else_clauses {
                    self.suite(&c.body, env);
                }
            }
            Stmt::Try(t) => {
                self.suite(&t.body, env);
                for h in &t.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    self.suite(&h.body, env);
                }
                self.suite(&t.orelse, env);
                self.suite(&t.finalbody, env);
            }
            Stmt::With(w) => {
                for item in &w.items {
                    if let Some(v) = &item.optional_vars {
                        self.bind(v, None, env);
                    }
                }
                self.suite(&w.body, env);
            }
            Stmt::For(f) => {
                let items: Option<&[ast::Expr]> = match &*f.iter {
                    ast::Expr::List(l) => Some(&l.elts),
                    ast::Expr::Tuple(t) => Some(&t.elts),
                    _ => None,
                };
                match (items, &*f.target) {
                    (Some(items), ast::Expr::Name(_)) if items.len() <= 16 => {
                        for item in items {
                            let v = self.eval(item, env);
                            self.bind(&f.target, v, env);
                            self.suite(&f.body, env);
                        }
                    }
                    _ => {
                        self.bind(&f.target, None, env);
                        self.suite(&f.body, env);
                    }
                }
                self.suite(&f.orelse, env);
            }
            Stmt::While(w) => {
                self.suite(&w.body, env);
                self.suite(&w.orelse, env);
            }
            Stmt::FunctionDef(f) => {
                env.insert(f.name.as_str(), None);
            }
            Stmt::ClassDef(c) => {
                env.insert(c.name.as_str(), None);
            }
            _ => {}
        }
    }

    fn bind(&self, target: &'a ast::Expr, v: Option<PathBuf>, env: &mut Env<'a>) {
        match target {
            ast::Expr::Name(n) => {
                env.insert(n.id.as_str(), v);
            }
            ast::Expr::Tuple(t) => t.elts.iter().for_each(|e| self.bind(e, None, env)),
            ast::Expr::List(l) => l.elts.iter().for_each(|e| self.bind(e, None, env)),
            _ => {}
        }
    }

    /// The additions and followed calls of an expression statement (or an assigned value).
    fn expr_calls(&mut self, expr: &'a ast::Expr, env: &mut Env<'a>) {
        match expr {
            ast::Expr::Call(call) => self.call(call, env),
            ast::Expr::BoolOp(b) => b.values.iter().for_each(|v| self.expr_calls(v, env)),
            ast::Expr::UnaryOp(u) => self.expr_calls(&u.operand, env),
            _ => {}
        }
    }

    fn call(&mut self, call: &'a ast::ExprCall, env: &mut Env<'a>) {
        let args = &call.arguments.args;
        let q = self.qualified(&call.func, env);
        let added: Option<Vec<&'a ast::Expr>> = match q.as_deref() {
            Some("sys.path.insert") => args.get(1).map(|a| vec![a]),
            Some("sys.path.append" | "site.addsitedir") => args.first().map(|a| vec![a]),
            Some("sys.path.extend") => match args.first() {
                Some(ast::Expr::List(l)) => Some(l.elts.iter().collect()),
                Some(ast::Expr::Tuple(t)) => Some(t.elts.iter().collect()),
                Some(other) => Some(vec![other]),
                None => None,
            },
            _ => None,
        };
        if let Some(added) = added {
            for a in added {
                match self.eval(a, env) {
                    Some(p) => {
                        let abs = normalize(&self.cwd.join(p));
                        self.out.dirs.push(abs);
                    }
                    None => self.out.unknown.push(a.range()),
                }
            }
            return;
        }
        // A call of a module-level function of the file: walk its body with the arguments.
        let ast::Expr::Name(n) = &*call.func else {
            return;
        };
        let name = n.id.as_str();
        if env.get(name).is_some_and(|v| v.is_some()) || self.stack.contains(&name) {
            return;
        }
        let Some(&f) = self.defs.get(name) else {
            return;
        };
        if self.stack.len() >= MAX_CALL_DEPTH {
            return;
        }
        let mut inner = env.clone();
        let params: Vec<&'a str> = f.parameters.iter().map(|p| p.name().as_str()).collect();
        for p in &params {
            inner.insert(p, None);
        }
        for (i, a) in args.iter().enumerate() {
            if let Some(p) = params.get(i) {
                let v = self.eval(a, env);
                inner.insert(p, v);
            }
        }
        for k in &call.arguments.keywords {
            if let Some(arg) = &k.arg {
                if let Some(p) = params.iter().find(|p| **p == arg.as_str()) {
                    let v = self.eval(&k.value, env);
                    inner.insert(p, v);
                }
            }
        }
        // Defaults of parameters not passed.
        for p in f.parameters.iter_non_variadic_params() {
            let pname = p.parameter.name.as_str();
            if inner.get(pname).is_some_and(|v| v.is_none()) {
                if let Some(d) = p.default() {
                    let v = self.eval(d, env);
                    inner.insert(pname, v);
                }
            }
        }
        self.stack.push(name);
        self.suite(&f.body, &mut inner);
        self.stack.pop();
    }

    /// The dotted name an expression stands for through the imports (`osp.join` ->
    /// `os.path.join`); `None` for a name bound in the scope.
    fn qualified(&self, expr: &ast::Expr, env: &Env<'a>) -> Option<String> {
        match expr {
            ast::Expr::Name(n) => {
                let id = n.id.as_str();
                if env.contains_key(id) {
                    return None;
                }
                Some(self.imports.get(id).copied().unwrap_or(id).to_string())
            }
            ast::Expr::Attribute(a) => {
                let mut q = self.qualified(&a.value, env)?;
                q.push('.');
                q.push_str(a.attr.as_str());
                Some(q)
            }
            _ => None,
        }
    }

    fn str_of(&self, expr: &ast::Expr, env: &Env<'a>) -> Option<String> {
        self.eval(expr, env)
            .and_then(|p| p.into_os_string().into_string().ok())
    }

    /// The path an expression evaluates to (relative to the working directory unless
    /// absolute), lexically as Python computes it.
    fn eval(&self, expr: &ast::Expr, env: &Env<'a>) -> Option<PathBuf> {
        use ast::Expr;
        match expr {
            Expr::StringLiteral(s) => Some(PathBuf::from(s.value.to_str())),
            Expr::Name(n) => {
                let id = n.id.as_str();
                if let Some(v) = env.get(id) {
                    return v.clone();
                }
                (id == "__file__").then(|| self.file.map(Path::to_path_buf))?
            }
            Expr::Attribute(a) => {
                match self.qualified(expr, env).as_deref() {
                    Some("os.sep" | "os.path.sep") => return Some(PathBuf::from("/")),
                    Some("os.pardir" | "os.path.pardir") => return Some(PathBuf::from("..")),
                    Some("os.curdir" | "os.path.curdir") => return Some(PathBuf::from(".")),
                    _ => {}
                }
                match a.attr.as_str() {
                    "parent" => Some(pure_parent(&self.eval(&a.value, env)?)),
                    _ => None,
                }
            }
            Expr::Subscript(s) => {
                let ast::Expr::NumberLiteral(ast::ExprNumberLiteral {
                    value: ast::Number::Int(i),
                    ..
                }) = &*s.slice
                else {
                    return None;
                };
                let i = i.as_u64()? as usize;
                match &*s.value {
                    // `Path(__file__).parents[1]`
                    Expr::Attribute(a) if a.attr.as_str() == "parents" => {
                        let mut p = self.eval(&a.value, env)?;
                        for _ in 0..=i {
                            p = pure_parent(&p);
                        }
                        Some(p)
                    }
                    // `os.path.split(p)[0]`
                    Expr::Call(c)
                        if i == 0
                            && self.qualified(&c.func, env).as_deref() == Some("os.path.split") =>
                    {
                        Some(dirname(&self.eval(c.arguments.args.first()?, env)?))
                    }
                    // `sys.path[0]`: the script's directory.
                    v if i == 0 && self.qualified(v, env).as_deref() == Some("sys.path") => {
                        Some(self.cwd.clone())
                    }
                    _ => None,
                }
            }
            Expr::BinOp(b) => match b.op {
                ast::Operator::Div => {
                    Some(self.eval(&b.left, env)?.join(self.eval(&b.right, env)?))
                }
                ast::Operator::Add => {
                    let mut l = self.str_of(&b.left, env)?;
                    l.push_str(&self.str_of(&b.right, env)?);
                    Some(PathBuf::from(l))
                }
                _ => None,
            },
            Expr::FString(f) => crate::helpers::fstring_text(f, |i| {
                if i.conversion != ast::ConversionFlag::None {
                    return None;
                }
                self.str_of(&i.expression, env)
            })
            .map(PathBuf::from),
            Expr::Call(c) => self.eval_call(c, env),
            _ => None,
        }
    }

    fn eval_call(&self, c: &ast::ExprCall, env: &Env<'a>) -> Option<PathBuf> {
        let args = &c.arguments.args;
        if !c.arguments.keywords.is_empty() {
            return None;
        }
        let arg = |i: usize| args.get(i).and_then(|a| self.eval(a, env));
        let q = self.qualified(&c.func, env);
        match q.as_deref() {
            Some("os.path.dirname") => return Some(dirname(&arg(0)?)),
            Some("os.path.abspath" | "os.path.realpath") => {
                return Some(normalize(&self.cwd.join(arg(0)?)))
            }
            Some("os.path.normpath") => return Some(normalize(&arg(0)?)),
            Some("os.path.join") => {
                let mut p = PathBuf::new();
                for a in args {
                    p.push(self.eval(a, env)?);
                }
                return (!args.is_empty()).then_some(p);
            }
            Some("os.getcwd" | "pathlib.Path.cwd") => return Some(self.cwd.clone()),
            Some("str" | "os.fspath" | "os.path.expanduser") if args.len() == 1 => return arg(0),
            Some("pathlib.Path" | "pathlib.PurePath" | "pathlib.PosixPath") => {
                let mut p = PathBuf::new();
                for a in args {
                    p.push(self.eval(a, env)?);
                }
                return Some(if args.is_empty() {
                    PathBuf::from(".")
                } else {
                    p
                });
            }
            Some("inspect.getfile") => {
                let ast::Expr::Call(inner) = args.first()? else {
                    return None;
                };
                let f = self.qualified(&inner.func, env);
                return (f.as_deref() == Some("inspect.currentframe"))
                    .then(|| self.file.map(Path::to_path_buf))?;
            }
            _ => {}
        }
        // Methods of a path value.
        let ast::Expr::Attribute(a) = &*c.func else {
            return None;
        };
        match a.attr.as_str() {
            "resolve" | "absolute" if args.is_empty() => {
                Some(normalize(&self.cwd.join(self.eval(&a.value, env)?)))
            }
            "expanduser" | "as_posix" if args.is_empty() => self.eval(&a.value, env),
            "joinpath" => {
                let mut p = self.eval(&a.value, env)?;
                for x in args {
                    p.push(self.eval(x, env)?);
                }
                Some(p)
            }
            _ => None,
        }
    }
}

/// `os.path.dirname`: everything before the last separator (`a/b/..` -> `a/b`).
fn dirname(p: &Path) -> PathBuf {
    let s = p.as_os_str().as_encoded_bytes();
    match s.iter().rposition(|&b| b == b'/') {
        Some(0) => PathBuf::from("/"),
        Some(i) => {
            let head = &s[..i];
            // Trailing separators of the head are dropped (`a//b` -> `a`), not the root.
            let end = head.iter().rposition(|&b| b != b'/').map_or(1, |j| j + 1);
            PathBuf::from(String::from_utf8_lossy(&head[..end]).into_owned())
        }
        None => PathBuf::new(),
    }
}

/// `PurePath.parent`: the path without its last component (`a/b/..` -> `a/b`, `.` -> `.`).
fn pure_parent(p: &Path) -> PathBuf {
    match p.parent() {
        Some(q) if q.as_os_str().is_empty() => PathBuf::from("."),
        Some(q) => q.to_path_buf(),
        None => p.to_path_buf(),
    }
}

/// Resolve `.` and `..` lexically.
fn normalize(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    out
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
    fn a_module_of_a_parent_is_not_the_package_a_name_walks_into() {
        // DomainBed-style: `alg/alg.py` beside the package directory `alg/algs/`; from
        // `alg/algs/erm.py`, `alg.algs.base.Algorithm` is the package at the root.
        let (d, r) = fixture(&[
            "train.py",
            "alg/alg.py",
            "alg/algs/base.py",
            "alg/algs/erm.py",
        ]);
        let p = d.path();
        let erm = p.join("alg/algs/erm.py");
        assert_eq!(
            r.resolve(&erm, "alg.algs.base.Algorithm"),
            Some(Found {
                file: p.join("alg/algs/base.py"),
                rest: vec!["Algorithm".into()]
            })
        );
        // A name of the module itself still resolves there.
        assert_eq!(
            r.resolve(&erm, "alg.get_algorithm_class").map(|f| f.file),
            Some(p.join("alg/alg.py"))
        );
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

    /// The directories a file at `/p/tools/train.py` adds, as the evaluator reads them.
    fn added(src: &str) -> (Vec<String>, usize) {
        let parsed = torchvet_python::parser::parse_module(src).expect("parses");
        let body = &parsed.syntax().body;
        let scope = crate::bindings::Scope::collect(
            crate::bindings::ScopeKind::Module,
            body,
            None,
            &Default::default(),
        );
        let imports: Vec<(Box<str>, Box<str>)> =
            scope.imports().map(|(n, q)| (n.into(), q.into())).collect();
        let a = sys_path_additions(Path::new("/p/tools/train.py"), body, &imports, false);
        (
            a.dirs
                .iter()
                .map(|d| d.to_string_lossy().into_owned())
                .collect(),
            a.unknown.len(),
        )
    }

    #[test]
    fn sys_path_expressions_from_file() {
        let one = |src: &str| -> String {
            let (dirs, unknown) = added(src);
            assert_eq!(unknown, 0, "{src}");
            assert_eq!(dirs.len(), 1, "{src}: {dirs:?}");
            dirs[0].clone()
        };
        assert_eq!(
            one("import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))\n"),
            "/p"
        );
        assert_eq!(
            one("import os\nimport sys\nsys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), '..', 'lib')))\n"),
            "/p/lib"
        );
        assert_eq!(
            one("import sys\nfrom pathlib import Path\nsys.path.append(str(Path(__file__).resolve().parent.parent))\n"),
            "/p"
        );
        assert_eq!(
            one("import sys\nfrom pathlib import Path\nsys.path.insert(0, str(Path(__file__).parents[1] / 'src'))\n"),
            "/p/src"
        );
        assert_eq!(
            one("import os.path as osp, sys\nsys.path.append(osp.dirname(osp.dirname(osp.realpath(__file__))))\n"),
            "/p"
        );
        assert_eq!(
            one("import sys\nimport pathlib\nROOT = pathlib.Path(__file__).absolute().parent.parent\nsys.path.insert(0, str(ROOT / 'lib'))\n"),
            "/p/lib"
        );
        // `os.path.dirname` is a string operation: `dirname('a/b/..')` is `a/b`.
        assert_eq!(
            one("import os, sys\nsys.path.append(os.path.dirname(os.path.join(os.path.dirname(__file__), '..')))\n"),
            "/p/tools"
        );
        // Concatenation, f-strings, `os.pardir`, `sys.path[0]`, `inspect`.
        assert_eq!(
            one("import os, sys\nsys.path.append(os.path.dirname(__file__) + '/../lib')\n"),
            "/p/lib"
        );
        assert_eq!(
            one("import os, sys\nhere = os.path.dirname(os.path.abspath(__file__))\nsys.path.append(f'{here}/../src')\n"),
            "/p/src"
        );
        assert_eq!(
            one("import os, sys\nsys.path.append(os.path.join(os.path.dirname(__file__), os.pardir))\n"),
            "/p"
        );
        assert_eq!(
            one("import os, sys\nsys.path.append(os.path.dirname(sys.path[0]))\n"),
            "/p"
        );
        assert_eq!(
            one("import os, sys, inspect\ncurrentdir = os.path.dirname(os.path.abspath(inspect.getfile(inspect.currentframe())))\nparentdir = os.path.dirname(currentdir)\nsys.path.insert(0, parentdir)\n"),
            "/p"
        );
    }

    #[test]
    fn sys_path_relative_constants_are_relative_to_the_script() {
        let (dirs, _) = added("import sys\nsys.path.append('..')\nsys.path.insert(0, '../')\nsys.path.append('./src')\nsys.path.append('/opt/lib')\n");
        assert_eq!(dirs, vec!["/p", "/p/tools/src", "/opt/lib"]);
        let (dirs, _) = added("import os, sys\nsys.path.append(os.path.join(os.getcwd(), 'models'))\nsys.path.append(os.path.abspath('.'))\n");
        assert_eq!(dirs, vec!["/p/tools/models", "/p/tools"]);
    }

    #[test]
    fn sys_path_helpers_and_variables_are_followed() {
        // The Detectron / Faster R-CNN `_init_paths.py`.
        let (dirs, unknown) = added(
            "import os.path as osp\nimport sys\n\ndef add_path(path):\n    if path not in sys.path:\n        sys.path.insert(0, path)\n\nthis_dir = osp.dirname(__file__)\n\n# Add lib to PYTHONPATH\nlib_path = osp.join(this_dir, '..', 'lib')\nadd_path(lib_path)\n\ncoco_path = osp.join(this_dir, '..', 'data', 'coco', 'PythonAPI')\nadd_path(coco_path)\n",
        );
        assert_eq!(unknown, 0);
        assert_eq!(dirs, vec!["/p/lib", "/p/data/coco/PythonAPI"]);
        // A setup function called at import time, a loop over a literal list, `from sys import
        // path`, `site.addsitedir`, the `__main__` block.
        let (dirs, _) = added(
            "import os, site\nfrom sys import path as syspath\n\nROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n\ndef setup(sub='third_party'):\n    syspath.append(os.path.join(ROOT, sub))\n\nsetup()\nfor d in ['models', 'utils']:\n    syspath.insert(0, os.path.join(ROOT, d))\nsite.addsitedir(ROOT + '/vendor')\n\ndef main():\n    syspath.append(os.path.join(ROOT, 'scripts'))\n\nif __name__ == '__main__':\n    main()\n",
        );
        assert_eq!(
            dirs,
            vec![
                "/p/third_party",
                "/p/models",
                "/p/utils",
                "/p/vendor",
                "/p/scripts"
            ]
        );
        // Unknown values are counted, functions nobody calls are not walked.
        let (dirs, unknown) = added(
            "import sys, os\nsys.path.append(os.environ['PROJECT_ROOT'])\nsys.path.insert(0, args.lib)\n\ndef later(p):\n    sys.path.append(p)\n",
        );
        assert!(dirs.is_empty());
        assert_eq!(unknown, 2);
        // A name rebound to something else is not the path it held.
        let (dirs, unknown) = added(
            "import sys, os\nroot = os.path.dirname(__file__)\nroot = get_root()\nsys.path.append(root)\n",
        );
        assert!(dirs.is_empty());
        assert_eq!(unknown, 1);
    }
}
