//! The whole-project model behind the language server.
//!
//! At `initialize` the model of the workspace roots is built on a background thread (the same
//! phase 1 as `torchvet check`: discover, read, parse and summarise every file, then link).
//! Until it is ready each open document is linted alone; once it is, the summaries of the
//! open documents' buffers are overlaid on it and every open document is checked again.
//!
//! After that the model follows the summary of each open document's buffer (unsaved text
//! included) and of every other file as it is on disk. An edit re-summarises the buffer and
//! the document is checked at once against the current model with its new summary overlaid
//! (as `check --fix` does between rounds of fixes). When the summary changed, the links are
//! rebuilt from the summaries on a background thread ([`ProjectState::queue`]; no other file
//! is read or parsed; changes that arrive meanwhile are merged into the next relink). Then the
//! open documents whose view of the project changed ([`ProjectModel::view_digest`]) among the
//! dependents of the changed files are checked again, and the edited documents themselves
//! (their findings are published again only if they differ).
use crossbeam_channel::{Receiver, Sender};
use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use torchvet_linter::project::{load_project, update_model, with_star_torch_names_from_disk};
use torchvet_semantic::project::{FileSummary, ProjectModel};
use torchvet_workspace::{discover, find_config, DiscoveryOptions};

/// Above this many files in the workspace no model is built (each document is linted alone);
/// overridable with the initialization option `projectMaxFiles`.
pub(crate) const DEFAULT_MAX_FILES: usize = 20_000;

/// A finished background build.
pub(crate) struct Built {
    generation: u64,
    result: Result<Arc<ProjectModel>, String>,
    /// Files in the model, and the wall time the build took.
    pub(crate) files: usize,
    pub(crate) elapsed: Duration,
}

/// A finished background relink.
pub(crate) struct Relinked {
    /// The model it started from, and the new one (`None` after an internal error).
    pub(crate) old: Arc<ProjectModel>,
    pub(crate) new: Option<Arc<ProjectModel>>,
    /// The files that changed.
    pub(crate) paths: Vec<PathBuf>,
    pub(crate) elapsed: Duration,
}

/// The model of the workspace, and its background builds.
pub(crate) struct ProjectState {
    /// The workspace roots (absolute directories). No roots: no model.
    roots: Vec<PathBuf>,
    max_files: usize,
    /// The model in use (the buffers of the open documents overlaid).
    pub(crate) model: Option<Arc<ProjectModel>>,
    /// A build is running; its result carries `generation`.
    building: bool,
    generation: u64,
    /// Files that changed on disk while a build was running (read again once it is done).
    pub(crate) changed_while_building: Vec<PathBuf>,
    /// Why there is no model (shown once), if a build failed or was refused.
    pub(crate) off_reason: Option<String>,
    tx: Sender<Built>,
    /// Finished builds.
    pub(crate) rx: Receiver<Built>,
    /// Changes waiting for the next relink: a new summary, or `None` for a removed file.
    queued: FxHashMap<PathBuf, Option<FileSummary>>,
    /// The files of the relink running now, with the fingerprints of their new summaries
    /// (`None`: removed).
    in_flight: FxHashMap<PathBuf, Option<u64>>,
    relinking: bool,
    relink_tx: Sender<Relinked>,
    /// Finished relinks.
    pub(crate) relink_rx: Receiver<Relinked>,
}

impl ProjectState {
    pub(crate) fn new(roots: Vec<PathBuf>, max_files: usize) -> Self {
        let (tx, rx) = crossbeam_channel::unbounded();
        let (relink_tx, relink_rx) = crossbeam_channel::unbounded();
        Self {
            queued: FxHashMap::default(),
            in_flight: FxHashMap::default(),
            relinking: false,
            relink_tx,
            relink_rx,
            roots,
            max_files,
            model: None,
            building: false,
            generation: 0,
            changed_while_building: Vec::new(),
            off_reason: None,
            tx,
            rx,
        }
    }

    /// Is there a workspace to model at all?
    pub(crate) fn enabled(&self) -> bool {
        !self.roots.is_empty()
    }

    pub(crate) fn is_building(&self) -> bool {
        self.building
    }

    /// Is `path` inside one of the workspace roots?
    pub(crate) fn covers(&self, path: &Path) -> bool {
        self.roots.iter().any(|r| path.starts_with(r))
    }

    /// Start building the model in the background (again, after a configuration change: the
    /// current model stays in use until the new one is ready).
    pub(crate) fn start_build(&mut self) {
        if self.roots.is_empty() {
            return;
        }
        self.generation += 1;
        self.building = true;
        self.changed_while_building.clear();
        let generation = self.generation;
        let roots = self.roots.clone();
        let max_files = self.max_files;
        let tx = self.tx.clone();
        let spawned =
            std::thread::Builder::new()
                .name("torchvet-project".into())
                .spawn(move || {
                    let start = Instant::now();
                    let result = std::panic::catch_unwind(|| build(&roots, max_files))
                        .unwrap_or_else(|_| {
                            Err("internal error while building the project model (please report it)"
                            .into())
                        });
                    let files = result.as_ref().map_or(0, |m| m.len());
                    let _ = tx.send(Built {
                        generation,
                        result,
                        files,
                        elapsed: start.elapsed(),
                    });
                });
        if let Err(e) = spawned {
            self.building = false;
            self.off_reason = Some(format!("cannot start the project build: {e}"));
        }
    }

    /// Does the model lag behind a change of this file (queued or being relinked)?
    pub(crate) fn is_pending(&self, path: &Path) -> bool {
        self.queued.contains_key(path) || self.in_flight.contains_key(path)
    }

    /// The fingerprint the model will have for `path` once the queued and running relinks
    /// are done (`Some(None)`: removed; `None`: nothing pending, the model's is current).
    pub(crate) fn pending_fingerprint(&self, path: &Path) -> Option<Option<u64>> {
        match self.queued.get(path) {
            Some(s) => Some(s.as_ref().map(|s| s.fingerprint)),
            None => self.in_flight.get(path).copied(),
        }
    }

    /// Queue a new summary (or a removal, `None`) for the next relink, and start one when none
    /// is running.
    pub(crate) fn queue(&mut self, path: PathBuf, summary: Option<FileSummary>) {
        self.queued.insert(path, summary);
        self.start_relink();
    }

    fn start_relink(&mut self) {
        if self.relinking || self.building || self.queued.is_empty() {
            return;
        }
        let Some(old) = self.model.clone() else {
            return;
        };
        let mut changed = Vec::new();
        let mut removed = Vec::new();
        let mut paths = Vec::new();
        let mut in_flight = FxHashMap::default();
        for (path, s) in self.queued.drain() {
            paths.push(path.clone());
            in_flight.insert(path.clone(), s.as_ref().map(|s| s.fingerprint));
            match s {
                Some(s) => changed.push(s),
                None => removed.push(path),
            }
        }
        self.in_flight = in_flight;
        self.relinking = true;
        let tx = self.relink_tx.clone();
        let spawned = std::thread::Builder::new()
            .name("torchvet-relink".into())
            .spawn(move || {
                let start = Instant::now();
                let new = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    with_star_torch_names_from_disk(Arc::new(update_model(&old, changed, &removed)))
                }))
                .ok();
                let _ = tx.send(Relinked {
                    old,
                    new,
                    paths,
                    elapsed: start.elapsed(),
                });
            });
        if spawned.is_err() {
            self.relinking = false;
            self.in_flight.clear();
        }
    }

    /// Take a finished relink: the new model when it still applies (no full build replaced
    /// the model meanwhile). The next relink starts if changes are queued.
    pub(crate) fn finish_relink(&mut self, r: &Relinked) -> Option<Arc<ProjectModel>> {
        self.relinking = false;
        self.in_flight.clear();
        let current = self.model.as_ref()?;
        let applies = Arc::ptr_eq(current, &r.old);
        let new = match (&r.new, applies) {
            (Some(new), true) => {
                self.model = Some(new.clone());
                Some(new.clone())
            }
            _ => None,
        };
        self.start_relink();
        new
    }

    /// Take a finished build. Returns the new model when it is the latest build's and
    /// succeeded (the caller overlays the open documents and re-checks them).
    pub(crate) fn finish(&mut self, built: Built) -> Option<Arc<ProjectModel>> {
        if built.generation != self.generation {
            return None;
        }
        self.building = false;
        match built.result {
            Ok(m) => {
                self.off_reason = None;
                // Changes queued against the previous model are taken up again by the
                // caller (open buffers are summarised anew, disk changes re-read).
                self.queued.clear();
                self.model = Some(m.clone());
                Some(m)
            }
            Err(e) => {
                self.off_reason = Some(e);
                None
            }
        }
    }
}

/// Discover the files of the roots (with the excludes of their configuration files) and
/// build their model.
fn build(roots: &[PathBuf], max_files: usize) -> Result<Arc<ProjectModel>, String> {
    let mut files = Vec::new();
    for root in roots {
        let config = find_config(root).ok().flatten();
        let opts = config
            .as_ref()
            .map(|c| c.options.clone())
            .unwrap_or_default();
        let found = discover(
            std::slice::from_ref(root),
            &DiscoveryOptions {
                exclude: opts.exclude.clone(),
                extend_exclude: opts.extend_exclude.clone().unwrap_or_default(),
                root: config
                    .as_ref()
                    .map(|c| c.root().to_path_buf())
                    .unwrap_or_else(|| root.clone()),
                extra_extensions: Vec::new(),
            },
        );
        files.extend(found.files);
        if files.len() > max_files {
            return Err(format!(
                "more than {max_files} Python files in the workspace: each file is checked alone \
                 (raise the initialization option `projectMaxFiles` to model the whole project)"
            ));
        }
    }
    files.sort();
    files.dedup();
    let (loaded, model) = load_project(&files, roots, true);
    drop(loaded);
    model.ok_or_else(|| "no project model".to_string())
}
