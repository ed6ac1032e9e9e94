//! Search contexts: the directories a project's processes add to the module search path,
//! beyond the importing file's own directory, its parents and `src/` (see [`super::resolve`]).
//!
//! Python's `sys.path` belongs to the process. A process starts at an entry script `E`
//! (`python tools/train.py`), which puts `E`'s directory first, and every file it imports,
//! transitively, runs in the same process and may add directories (`sys.path.insert(0, ...)`
//! in `_init_paths.py`, imported for that side effect). So for a file `M`, the extra
//! directories are, for each entry script that reaches `M` through imports:
//!
//! - the directories added by any file that the same entry reaches (an addition made by `F`
//!   serves every file of the processes `F` runs in: the files that import `F`, transitively,
//!   up to their entry scripts, and everything those import), then
//! - the entry script's own directory (`python transformer/train.py` lets the shared
//!   `utils.py` one level up do `from parameters import *` from `transformer/`).
//!
//! Entry scripts are the files no project file imports, and files with an
//! `if __name__ == "__main__":` block; a file reached by no entry is its own. Only
//! directories that exist, and lie inside a walked root or the adding file's project root,
//! count. The extra directories are searched only for absolute imports that the usual search
//! does not resolve, so no existing resolution changes, and a name resolves through them only
//! when every extra directory holding it gives the same module: two script folders with their
//! own `parameters.py` leave a shared `utils.py`'s `from parameters import *` unresolved (the
//! star import still brings the torch names all candidates agree on, see
//! [`super::ProjectFile::star_imported_torch_names`]). Python would take the first directory of the
//! process that runs; with several processes the model cannot know which, and precision
//! beats recall. Import order within a file is not modelled (an addition after an import
//! still serves it), and neither are additions in functions that module-level code does not
//! call.
//!
//! A file that thousands of files reach (the core of a library, imported by every test), or
//! whose context would hold more than 32 directories, gets none: its processes are too many
//! to tell apart, and unknown means silent.
//!
//! Resolutions through contexts add import edges, which can reach new files (and their
//! additions): the contexts are computed again until no new edge appears (a few rounds).
use super::resolve::DirId;
use super::{qualified_refs, summary_is_external, FileId, FileSummary, ProjectModel};
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Rounds of context computation (each may add import edges).
const ROUNDS: usize = 4;
/// Files visited at most when looking for the entry scripts above a file: a module that
/// thousands of files reach (the core of a library, imported by every test) gets no context,
/// as if nothing were known (its processes are too many to tell apart).
const MAX_UP: usize = 2_000;
/// Directories in a context at most (beyond: no context, for the same reason).
const MAX_CONTEXT_DIRS: usize = 32;

/// A loader of files outside the checked set.
pub(super) type Load<'a> = &'a (dyn Fn(&Path) -> Option<FileSummary> + Sync);

/// What the contexts of a model depend on (for [`ProjectModel::dependents`]).
#[derive(Debug, Default)]
pub(super) struct ContextDeps {
    /// Files with a search context.
    pub(super) with_context: FxHashSet<FileId>,
    /// Per file: the files whose context it contributes to (as an entry script or an adder).
    pub(super) serves: FxHashMap<FileId, Vec<FileId>>,
}

impl ProjectModel {
    /// Compute the search contexts and give them to the resolver; with `load`, files outside
    /// the checked set that resolutions through contexts reach are loaded.
    ///
    /// `unresolved`: the first names of the absolute references that the usual search leaves
    /// unresolved (see [`ProjectModel::load_imported`]); when no directory a context may hold
    /// has one of them, nothing is computed.
    pub(super) fn link_search_paths(
        &mut self,
        load: Option<Load<'_>>,
        unresolved: &FxHashSet<Box<str>>,
    ) {
        if !self.may_use_contexts(unresolved) {
            return;
        }
        let mut resolved: FxHashSet<(FileId, Box<str>)> = FxHashSet::default();
        let mut laps = super::Laps::start();
        for _ in 0..ROUNDS {
            let n = self.files.len();
            // Import edges with the current contexts, inverted in file order.
            let mut importers: Vec<Vec<FileId>> = vec![Vec::new(); n];
            for (i, targets) in self.imported_files().into_iter().enumerate() {
                for t in targets {
                    if importers[t as usize].last() != Some(&(i as FileId)) {
                        importers[t as usize].push(i as FileId);
                    }
                }
            }
            laps.lap("search paths: importers");
            let entry: Vec<bool> = (0..n)
                .map(|i| importers[i].is_empty() || self.files[i].script)
                .collect();
            let mut above: FxHashMap<FileId, Arc<[FileId]>> = FxHashMap::default();
            let mut entries_above = |f: FileId, files: &[Arc<FileSummary>]| -> Arc<[FileId]> {
                above
                    .entry(f)
                    .or_insert_with(|| {
                        let mut seen: FxHashSet<FileId> = FxHashSet::default();
                        seen.insert(f);
                        let mut stack = vec![f];
                        let mut out = Vec::new();
                        while let Some(g) = stack.pop() {
                            if entry[g as usize] {
                                out.push(g);
                            }
                            for &h in &importers[g as usize] {
                                if seen.insert(h) {
                                    stack.push(h);
                                }
                            }
                            if seen.len() > MAX_UP {
                                return Arc::from(Vec::new());
                            }
                        }
                        if out.is_empty() {
                            out.push(f);
                        }
                        out.sort_by(|a, b| files[*a as usize].path.cmp(&files[*b as usize].path));
                        out.into()
                    })
                    .clone()
            };
            // Directories added, per entry script of the processes the adding file runs in.
            let mut added: FxHashMap<FileId, Vec<(DirId, FileId)>> = FxHashMap::default();
            let mut context_dirs: Vec<DirId> = Vec::new();
            for f in 0..n as FileId {
                let s = &self.files[f as usize];
                if s.sys_path.is_empty() {
                    continue;
                }
                let Some(own) = self.resolver.dir_of(&s.path) else {
                    continue;
                };
                let dirs: Vec<DirId> = s
                    .sys_path
                    .iter()
                    .filter_map(|p| self.resolver.existing_dir(p))
                    .filter(|&d| self.resolver.inside_project(own, d))
                    .collect();
                if dirs.is_empty() {
                    continue;
                }
                context_dirs.extend(&dirs);
                for &e in entries_above(f, &self.files).iter() {
                    added
                        .entry(e)
                        .or_default()
                        .extend(dirs.iter().map(|&d| (d, f)));
                }
            }
            // The names the extra directories can give (a cheap reject of the imports of
            // other libraries).
            for (i, &is_entry) in entry.iter().enumerate() {
                if is_entry {
                    if let Some(d) = self.resolver.dir_of(&self.files[i].path) {
                        context_dirs.push(d);
                    }
                }
            }
            context_dirs.sort_unstable();
            context_dirs.dedup();
            let mut names: FxHashSet<Box<str>> = FxHashSet::default();
            for &d in &context_dirs {
                self.resolver.top_names(d, &mut names);
            }
            // The files with an import only the contexts may resolve, and their contexts.
            let mut contexts: Vec<(PathBuf, Vec<DirId>)> = Vec::new();
            let mut deps = ContextDeps::default();
            laps.lap("search paths: added dirs, names");
            let wanting: Vec<bool> = (0..n)
                .into_par_iter()
                .map(|m| {
                    let s = &self.files[m];
                    qualified_refs(s).any(|q| {
                        !q.starts_with('.')
                            && !summary_is_external(q)
                            && names.contains(q.split('.').next().unwrap_or(q))
                            && !self.resolver.resolves_plainly(&s.path, q)
                    })
                })
                .collect();
            for m in 0..n as FileId {
                let s = &self.files[m as usize];
                if !wanting[m as usize] {
                    continue;
                }
                let mut dirs: Vec<DirId> = Vec::new();
                let mut sources: Vec<FileId> = Vec::new();
                for &e in entries_above(m, &self.files).iter() {
                    for &(d, f) in added.get(&e).map(Vec::as_slice).unwrap_or(&[]) {
                        if !dirs.contains(&d) {
                            dirs.push(d);
                        }
                        sources.push(f);
                    }
                    if let Some(d) = self.resolver.dir_of(&self.files[e as usize].path) {
                        if !dirs.contains(&d) {
                            dirs.push(d);
                        }
                    }
                    sources.push(e);
                }
                if dirs.is_empty() || dirs.len() > MAX_CONTEXT_DIRS {
                    continue;
                }
                sources.sort_unstable();
                sources.dedup();
                for f in sources {
                    if f != m {
                        deps.serves.entry(f).or_default().push(m);
                    }
                }
                deps.with_context.insert(m);
                contexts.push((s.path.clone(), dirs));
            }
            laps.lap("search paths: contexts");
            self.resolver.set_contexts(contexts);
            self.context_deps = deps;
            // New resolutions (and files to load for them).
            let mut grew = false;
            let mut wanted: Vec<PathBuf> = Vec::new();
            for &m in &self.context_deps.with_context {
                let s = &self.files[m as usize];
                for q in qualified_refs(s) {
                    if q.starts_with('.')
                        || summary_is_external(q)
                        || resolved.contains(&(m, Box::from(q)))
                        || self.resolver.resolves_plainly(&s.path, q)
                    {
                        continue;
                    }
                    let Some(found) = self.resolver.resolve(&s.path, q) else {
                        continue;
                    };
                    resolved.insert((m, q.into()));
                    grew = true;
                    if !self.by_path.contains_key(&found.file) {
                        wanted.push(found.file);
                    }
                }
            }
            if let Some(load) = load {
                wanted.sort();
                wanted.dedup();
                let room =
                    (self.checked.len() + super::MAX_EXTRA_FILES).saturating_sub(self.files.len());
                wanted.truncate(room);
                for s in wanted.iter().filter_map(|p| load(p)) {
                    let id = self.files.len() as FileId;
                    self.by_path.insert(s.path.clone(), id);
                    self.files.push(Arc::new(s));
                    self.checked.push(false);
                }
            }
            laps.lap("search paths: new resolutions");
            if !grew {
                break;
            }
        }
    }

    /// Can a search context resolve anything: is one of the `unresolved` first names a
    /// module or package of a directory that a context may hold (the directory of any file,
    /// which may be an entry script, or one that a file adds)? Without one every context is
    /// empty, and the import edges the contexts need are not computed (most projects stop
    /// here: the names the usual search leaves unresolved are other libraries').
    fn may_use_contexts(&self, unresolved: &FxHashSet<Box<str>>) -> bool {
        if unresolved.is_empty() {
            return false;
        }
        let mut dirs: Vec<DirId> = Vec::new();
        for s in &self.files {
            dirs.extend(self.resolver.dir_of(&s.path));
            dirs.extend(
                s.sys_path
                    .iter()
                    .filter_map(|p| self.resolver.existing_dir(p)),
            );
        }
        dirs.sort_unstable();
        dirs.dedup();
        let mut names: FxHashSet<Box<str>> = FxHashSet::default();
        for d in dirs {
            self.resolver.top_names(d, &mut names);
        }
        unresolved.iter().any(|n| names.contains(n))
    }

    /// The files whose search context `id` contributes to, and those below it (what it
    /// imports, transitively) that have one: an edit of `id` can change how they resolve.
    pub(super) fn context_dependents(&self, id: FileId, out: &mut Vec<FileId>) {
        let cd = &self.context_deps;
        if cd.with_context.is_empty() {
            return;
        }
        out.extend(cd.serves.get(&id).into_iter().flatten());
        let mut seen: FxHashSet<FileId> = FxHashSet::default();
        seen.insert(id);
        let mut stack = vec![id];
        while let Some(f) = stack.pop() {
            for &d in &self.deps[f as usize] {
                if seen.insert(d) {
                    if cd.with_context.contains(&d) {
                        out.push(d);
                    }
                    stack.push(d);
                }
            }
        }
    }
}

impl ProjectModel {
    /// The torch names a star import of a name that the file's search context resolves to
    /// several modules brings: those every candidate imports alike (`from parameters import
    /// *` in a `utils.py` shared by script folders that each have a `parameters.py` importing
    /// `torch`, `torch.nn as nn`). Empty when a candidate is not in the model.
    pub(super) fn agreed_star_torch_names(
        &self,
        file: FileId,
        star: &str,
    ) -> Vec<(Box<str>, Box<str>)> {
        let m = self;
        let candidates = m
            .resolver
            .context_candidates(&self.files[file as usize].path, star);
        if candidates.len() < 2 || candidates.iter().any(|c| !c.rest.is_empty()) {
            return Vec::new();
        }
        let mut common: Option<Vec<(Box<str>, Box<str>)>> = None;
        for c in &candidates {
            let Some(&id) = m.by_path.get(&c.file) else {
                return Vec::new();
            };
            let names: Vec<(Box<str>, Box<str>)> = m
                .file(id)
                .imports
                .iter()
                .filter(|(_, q)| q.starts_with("torch"))
                .cloned()
                .collect();
            common = Some(match common {
                None => names,
                Some(prev) => prev.into_iter().filter(|x| names.contains(x)).collect(),
            });
        }
        common.unwrap_or_default()
    }
}
