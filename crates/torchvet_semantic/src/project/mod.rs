//! The project model: whole-program facts under every rule.
//!
//! Real projects put the model in one file, the loss in another, the loop in a third, and pass
//! the model and optimizer as parameters. The project model links the files of a checked tree
//! so that every analysis can ask, from any file:
//!
//! - **what a name is** ([`ProjectFile::entity`]): module resolution over the tree (package
//!   roots, `src/` layouts, scripts importing siblings, relative imports, `__init__.py`
//!   re-exports, aliases and star imports; see [`resolve`]);
//! - **what a class is** ([`ProjectModel::is_module`], [`ProjectModel::mode_layer`],
//!   [`ProjectModel::forward_props`]): the `nn.Module` / `Dataset` hierarchy across files, what
//!   `forward` returns (probabilities, log-probabilities), and whether the class behaves
//!   differently in train and eval mode (Dropout, BatchNorm, or sub-modules that do);
//! - **what a call gives** ([`ProjectFile::call_kind`], [`ProjectModel::resolve_val`]): the
//!   kind and class a function returns, composed transitively;
//! - **what a parameter holds** ([`ProjectModel::param`]): from the arguments at every call
//!   site in the project (a bounded fixed point over the call graph), else from how the
//!   function uses it (`model(x)` + `.eval()` is a module; `.step()` + `.zero_grad()` an
//!   optimizer);
//! - **what a call does** ([`ProjectModel::events`]): the training events (backward, step,
//!   zero_grad, eval/train, ...) a function performs, per parameter, including those of the
//!   functions it calls (to a depth of [`MAX_DEPTH`]).
//!
//! It is built in two phases. Phase 1 summarises each file alone, in parallel
//! ([`summary::summarise`]); phase 2 ([`ProjectModel::build`]) links the summaries: it resolves
//! references, loads files that imports name outside the checked set (summaries only), and
//! runs the fixed points. Rules then run per file with read access to the model.
//!
//! The model holds summaries, never syntax trees, so one edited file is re-summarised and the
//! links rebuilt from the summaries ([`ProjectModel::rebuild_with`]); the files to re-check are
//! the edited one and its dependents ([`ProjectModel::dependents`]).
pub mod facts;
mod grad;
pub mod practices;
pub mod resolve;
mod search_paths;
pub mod summary;

use crate::classes::{is_dataset_base, is_module_base, join_mode_layers, mode_layer};
use crate::flow::EventKind;
use crate::kinds::{qualified_call_kind, Kind};
use rayon::prelude::*;
use resolve::Resolver;
use ruff_python_ast as ast;
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
pub use summary::{
    grad_flow_files, is_test_module, is_test_path, names_training_setup, set_eager_grad_flows,
    summarise, summarise_source, summarise_source_keeping_scopes, summarise_source_with,
    summarise_with, ClassSummary, DropoutRate, FileSummary, FunctionSummary, InstanceCall, Lit,
    ParamDefault, PropFact, Ref, RoleTag, SumCall, SumEvent, Target, Usage, Val, Vocab,
};

/// How deep summaries compose (a call inside a call inside a call...).
pub const MAX_DEPTH: u32 = 4;
/// Rounds of the parameter-kind fixed point over the call graph.
const PARAM_ROUNDS: usize = 4;

thread_local! {
    /// While the parameter fixed point evaluates one callee: the functions whose parameters
    /// the resolution read (see `ProjectModel::link_params`).
    static PARAM_READS: std::cell::RefCell<Option<Vec<FuncId>>> = const { std::cell::RefCell::new(None) };
}
/// One function's parameters: what each holds, `None` when nothing is known.
type ParamSlots = Box<[Option<Box<Resolved>>]>;

/// Files outside the checked set loaded to resolve imports, at most.
pub const MAX_EXTRA_FILES: usize = 512;

/// A file of the model.
pub type FileId = u32;

/// A class of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClassId {
    /// The file.
    pub file: FileId,
    /// Index in the file's classes.
    pub index: u32,
}

/// A function of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FuncId {
    /// The file.
    pub file: FileId,
    /// Index in the file's functions (0 is the module body).
    pub index: u32,
}

/// What a name refers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entity {
    /// A project class.
    Class(ClassId),
    /// A project function.
    Function(FuncId),
    /// A module-level object of a project file.
    Global(FileId, Box<str>),
    /// A project module.
    Module(FileId),
    /// Something outside the project (`torch.nn.Linear`), by qualified name.
    External(Box<str>),
}

/// A class, in the project or outside it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ClassRef {
    /// A project class.
    Project(ClassId),
    /// A library class by qualified name (`torch.nn.Softmax`).
    External(Box<str>),
}

/// DataLoader facts.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LoaderFacts {
    /// `shuffle=` literal value.
    pub shuffle: Option<bool>,
    /// The sampler's kind and class name.
    pub sampler: Kind,
}

/// What a value resolves to.
#[derive(Clone, Debug, PartialEq, Eq, Default, Hash)]
pub struct Resolved {
    /// Its kind.
    pub kind: Kind,
    /// The class it is an instance of, when known.
    pub class: Option<ClassRef>,
    /// Loader facts, for a DataLoader built in the project.
    pub loader: Option<LoaderFacts>,
    /// Elements, for a tuple.
    pub elements: Option<Vec<Resolved>>,
    /// Tensor properties (a function returning probabilities), with the function.
    pub props: Vec<PropFact>,
    /// The function whose return value carries `props`.
    pub props_from: Option<FuncId>,
    /// For a module returned by a project function: the properties of what calling it gives,
    /// with that function (`return nn.Sequential(..., nn.Sigmoid())`).
    pub forward: Option<(FuncId, Vec<PropFact>)>,
    /// Calling the value gives a 0-dim tensor: a torch loss module that reduces
    /// (`nn.MSELoss(size_average=False)`), on every path.
    pub zero_dim_call: bool,
    /// The project function whose call returned this value, or the tuple it was unpacked
    /// from (`model, loss_fn, opt = get_model()`): the innermost such call. See
    /// [`ProjectModel::value_mode_free`].
    pub built_by: Option<FuncId>,
    /// The value is one of these, by the path taken (a model chosen in `if`/`elif` branches,
    /// a factory returning different classes). The facts above are those every alternative
    /// has; a fact of some alternatives only ("may") is read here, with the class it comes
    /// from.
    pub alternatives: Option<Vec<Resolved>>,
    /// For an instance of a project class that stores a constructor argument whole
    /// (`SimCLR(resnet18(), 512)` with `self.encoder = encoder`): the train/eval-sensitive
    /// layers of what this construction hands in there, which the class alone cannot tell.
    pub stored_mode: Option<&'static str>,
}

impl Resolved {
    fn of_kind(kind: Kind) -> Self {
        Resolved {
            kind,
            ..Resolved::default()
        }
    }

    /// Is anything known?
    pub fn is_known(&self) -> bool {
        self.kind != Kind::Unknown
            || self.class.is_some()
            || self.elements.is_some()
            || !self.props.is_empty()
            || self.forward.is_some()
            || self.zero_dim_call
    }

    /// The value that is one of `alts` (see [`Resolved::alternatives`]): a fact holds when
    /// every alternative has it. An alternative that is not known leaves only the list, and
    /// a value known only by its list counts as unknown where call sites are joined (a site
    /// whose argument may be anything does not outvote the others).
    fn one_of(alts: Vec<Resolved>) -> Resolved {
        let mut flat: Vec<Resolved> = Vec::with_capacity(alts.len());
        for a in alts {
            match a.alternatives {
                Some(inner) => flat.extend(inner),
                None => flat.push(a),
            }
        }
        let Some(first) = flat.first() else {
            return Resolved::default();
        };
        if flat.iter().all(|a| a == first) {
            return first.clone();
        }
        let all = |f: &dyn Fn(&Resolved) -> bool| flat.iter().all(f);
        let kind = if all(&|a| a.kind == first.kind) {
            first.kind.clone()
        } else {
            Kind::Unknown
        };
        let same_class = all(&|a| a.class == first.class);
        let same_props = all(&|a| a.props == first.props && a.props_from == first.props_from);
        let same_forward = all(&|a| a.forward == first.forward);
        let same_loader = all(&|a| a.loader == first.loader);
        let same_builder = all(&|a| a.built_by == first.built_by);
        Resolved {
            kind,
            class: if same_class {
                first.class.clone()
            } else {
                None
            },
            loader: if same_loader {
                first.loader.clone()
            } else {
                None
            },
            elements: None,
            props: if same_props {
                first.props.clone()
            } else {
                Vec::new()
            },
            props_from: if same_props { first.props_from } else { None },
            forward: if same_forward {
                first.forward.clone()
            } else {
                None
            },
            zero_dim_call: all(&|a| a.zero_dim_call),
            built_by: if same_builder { first.built_by } else { None },
            stored_mode: if all(&|a| a.stored_mode == first.stored_mode) {
                first.stored_mode
            } else {
                None
            },
            alternatives: Some(flat),
        }
    }

    /// Join the values one parameter gets at different call sites: a fact survives when every
    /// site that knows something agrees.
    fn join(self, other: Resolved) -> Resolved {
        if !self.is_known() {
            return other;
        }
        if !other.is_known() {
            return self;
        }
        let kind = if self.kind == other.kind {
            self.kind
        } else {
            Kind::Unknown
        };
        let class = if self.class == other.class {
            self.class
        } else {
            None
        };
        let loader = if self.loader == other.loader {
            self.loader
        } else {
            None
        };
        let elements = match (self.elements, other.elements) {
            (Some(a), Some(b)) if a.len() == b.len() => {
                Some(a.into_iter().zip(b).map(|(x, y)| x.join(y)).collect())
            }
            _ => None,
        };
        let (props, props_from) = if self.props == other.props {
            (self.props, self.props_from)
        } else {
            (Vec::new(), None)
        };
        let forward = if self.forward == other.forward {
            self.forward
        } else {
            None
        };
        let alternatives = if self.alternatives == other.alternatives {
            self.alternatives
        } else {
            None
        };
        Resolved {
            kind,
            class,
            loader,
            elements,
            props,
            props_from,
            forward,
            zero_dim_call: self.zero_dim_call && other.zero_dim_call,
            built_by: if self.built_by == other.built_by {
                self.built_by
            } else {
                None
            },
            stored_mode: if self.stored_mode == other.stored_mode {
                self.stored_mode
            } else {
                None
            },
            alternatives,
        }
    }
}

/// A training event of a function, composed through the functions it calls.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FlatEvent {
    /// What.
    pub kind: EventKind,
    /// On what, from the function's point of view.
    pub target: Target,
    /// The target's role.
    pub role: RoleTag,
    /// Conditional in the function (or in a call chain).
    pub conditional: bool,
    /// Periodic.
    pub periodic: bool,
    /// In a loop of the function or of a function it calls.
    pub in_loop: bool,
    /// Where the event itself is.
    pub at: (FileId, ruff_text_size::TextRange),
    /// Where it happens in the function whose events these are: the event itself, or the
    /// call it comes through.
    pub site: ruff_text_size::TextRange,
    /// The chain depth it came through (0 = the function's own).
    pub depth: u32,
}

impl FlatEvent {
    /// A backward pass or an optimizer step.
    pub fn trains(&self) -> bool {
        self.kind.trains()
    }
}

/// The function a call runs and the number of parameters it does not pass (see
/// [`ProjectModel::link`]).
type CallTarget = Option<(FuncId, usize)>;

/// The linked summaries of a project.
#[derive(Debug)]
pub struct ProjectModel {
    /// Shared between a model and the models rebuilt from it (an edit replaces one).
    files: Vec<Arc<FileSummary>>,
    by_path: FxHashMap<PathBuf, FileId>,
    checked: Vec<bool>,
    resolver: Resolver,
    /// Per file, per class: is an nn.Module / a Dataset.
    module: Vec<Vec<bool>>,
    dataset: Vec<Vec<bool>>,
    /// Per file, per class: the train/eval-sensitive layer family, and the class that has it.
    mode: Vec<Vec<Option<(&'static str, ClassId)>>>,
    /// Per file, per function, per parameter: what call sites (or usage) say it holds;
    /// `None` for nothing known (most parameters: one pointer each instead of a
    /// [`Resolved`]).
    params: Vec<Vec<ParamSlots>>,
    /// Per file, per function: events composed through calls.
    events: Vec<Vec<Vec<FlatEvent>>>,
    /// Methods of the project's module classes by name (for calls on objects whose class
    /// the summaries do not know: `discriminator.train_custom()`).
    module_methods: FxHashMap<Box<str>, Vec<FuncId>>,
    /// Per file, per function: whether any call site in the project calls it.
    called: Vec<Vec<bool>>,
    /// Per callee: its call sites (caller, index of the call in the caller, parameters the
    /// call does not pass).
    sites: FxHashMap<FuncId, Vec<(FuncId, usize, usize)>>,
    /// Per function passed as a value to a callee that calls that parameter
    /// (`mini_batch(loader, val_step_fn)` where `mini_batch` calls `step_fn(x, y)`): the
    /// passing calls (caller, index of the call in the caller). The function runs at the
    /// passing call, as far as autograd is concerned.
    passed: FxHashMap<FuncId, Vec<(FuncId, usize)>>,
    /// Files each file depends on (resolved imports and callees), and the reverse.
    deps: Vec<FxHashSet<FileId>>,
    rdeps: Vec<FxHashSet<FileId>>,
    /// Top-level names that resolve to project modules somewhere (a quick filter).
    project_tops: FxHashSet<Box<str>>,
    /// Per file: analysed at all (see [`ProjectModel::is_relevant`]).
    relevant: Vec<bool>,
    /// Per file: values in it may carry probabilities from another file.
    sees_probabilities: Vec<bool>,
    /// Per file: it runs training events itself or through the project functions it calls.
    trains: Vec<bool>,
    /// Cache of lint-time resolutions, per file: qualified name -> entity.
    cache: Vec<RwLock<FxHashMap<Box<str>, Option<Entity>>>>,
    /// Memo of [`ProjectModel::qualified`], per file.
    qcache: Vec<RwLock<FxHashMap<Box<str>, Option<Entity>>>>,
    /// Per file, per function, per call: the function the call runs and the parameters it
    /// does not pass (resolved once while linking).
    targets: Vec<Vec<Vec<CallTarget>>>,
    /// The project subclasses of each project class (direct ones; resolved while linking).
    subclasses: FxHashMap<ClassId, Vec<ClassId>>,
    /// Indices of the fact queries (callers), built on first use (see [`facts`]).
    facts_index: std::sync::OnceLock<facts::FactsIndex>,
    /// Project-wide lists that queries would otherwise scan every file for, per query.
    scan_index: std::sync::OnceLock<facts::ScanIndex>,
    /// Who uses which class's instances and compares which file's names (built on first
    /// question; see [`UseIndex`]).
    use_index: std::sync::OnceLock<UseIndex>,
    /// Which files have a search context and who contributes to it (see [`search_paths`]).
    context_deps: search_paths::ContextDeps,
    /// Names of the containers some file changes in place ([`FileSummary::mutated`]) that
    /// are also module-level registries ([`Val::Dict`]) of some file: those registries are
    /// not trusted.
    mutated_registries: FxHashSet<Box<str>>,
}

/// What files observe of each other beyond imports and calls, indexed once per model: the
/// project classes whose instances are called or used as modules, and the module-level names
/// of each file that other files compare. [`ProjectModel::view_digest`] hashes a file's part
/// of it, so the result cache and the language server see when another file changes it.
#[derive(Debug, Default)]
struct UseIndex {
    /// Classes with an instance called anywhere (an [`InstanceCall`]).
    called: FxHashSet<ClassId>,
    /// Classes with an instance given an `nn.Module` API method anywhere, or called as a
    /// module-level name of its file.
    module_api: FxHashSet<ClassId>,
    /// Per file: its module-level names compared in other files (sorted, once each).
    compared: FxHashMap<FileId, Vec<Box<str>>>,
    /// Methods of project classes called on an instance with autograd off somewhere (see
    /// [`FunctionSummary::no_grad_method_calls`]).
    no_grad_methods: FxHashSet<FuncId>,
}

/// The model seen from one file: the handle rules and analyses hold.
#[derive(Clone, Debug)]
pub struct ProjectFile {
    /// The model.
    pub model: Arc<ProjectModel>,
    /// The file.
    pub file: FileId,
    /// A newer summary of the file than the model's (the text being fixed): positions are
    /// looked up in it and mapped to the model's classes and functions by order and name.
    overlay: Option<Arc<FileSummary>>,
}

/// A name a star import brings and what it refers to (`("nn", "torch.nn")`).
pub type ImportedName = (Box<str>, Box<str>);

impl ProjectModel {
    /// Link the summaries of the checked files. `roots` are the walked directories (absolute);
    /// `load` reads and summarises a file outside the checked set that an import names
    /// (`None` when it cannot be read).
    pub fn build(
        checked: Vec<FileSummary>,
        roots: Vec<PathBuf>,
        load: &(dyn Fn(&Path) -> Option<FileSummary> + Sync),
    ) -> Self {
        let mut laps = Laps::start();
        let mut m = Self::unlinked(checked, roots);
        laps.lap("unlinked");
        let unresolved = m.load_imported(load);
        laps.lap("load_imported");
        m.link_search_paths(Some(load), &unresolved);
        m.link();
        m
    }
    /// One round of the star-import torch names: the new summaries of the checked files whose
    /// star imports bring torch names they do not bind yet (`resummarise` gives `None` to keep
    /// a file's summary).
    fn star_resummaries(
        &self,
        resummarise: &(dyn Fn(FileId, &[ImportedName]) -> Option<FileSummary> + Sync),
    ) -> Vec<FileSummary> {
        self.files()
            .filter(|&id| self.is_checked(id) && !self.file(id).star_imports.is_empty())
            .filter_map(|id| {
                let names = self.missing_star_torch_names_of(id, self.file(id));
                if names.is_empty() {
                    None
                } else {
                    resummarise(id, &names)
                }
            })
            .collect()
    }

    /// [`ProjectModel::build`] followed by [`ProjectModel::with_star_torch_names`], with one
    /// link instead of one per round: which torch names a star import brings depends only on
    /// the summaries and the resolver (the module a star import names and that module's
    /// imports), so the rounds run on the summaries before linking.
    pub fn build_with_star_torch_names(
        checked: Vec<FileSummary>,
        roots: Vec<PathBuf>,
        load: &(dyn Fn(&Path) -> Option<FileSummary> + Sync),
        resummarise: &(dyn Fn(FileId, &[ImportedName]) -> Option<FileSummary> + Sync),
    ) -> Self {
        let mut laps = Laps::start();
        let mut m = Self::unlinked(checked, roots);
        laps.lap("unlinked");
        let unresolved = m.load_imported(load);
        laps.lap("load_imported");
        // The search contexts once, before the rounds: the torch names a star import brings
        // may come through them, and re-summarising with torch names changes no import of a
        // project module nor any `sys.path` addition.
        m.link_search_paths(Some(load), &unresolved);
        laps.lap("search paths");
        for _ in 0..2 {
            // What a model linked from these summaries answers: the same top-level project
            // names, fresh memos.
            let n = m.files.len();
            m.project_tops = m.project_tops_of();
            m.cache = (0..n).map(|_| RwLock::default()).collect();
            m.qcache = (0..n).map(|_| RwLock::default()).collect();
            let new = m.star_resummaries(resummarise);
            if new.is_empty() || new.iter().any(|s| !m.by_path.contains_key(&s.path)) {
                break;
            }
            for summary in new {
                let id = m.by_path[&summary.path];
                m.files[id as usize] = Arc::new(summary);
            }
        }
        laps.lap("star rounds");
        m.link_timed(&mut laps);
        m
    }

    /// The checked files' summaries, not linked yet.
    fn unlinked(checked: Vec<FileSummary>, roots: Vec<PathBuf>) -> Self {
        let resolver = Resolver::new(checked.iter().map(|f| f.path.clone()), roots);
        let n = checked.len();
        ProjectModel {
            by_path: checked
                .iter()
                .enumerate()
                .map(|(i, f)| (f.path.clone(), i as FileId))
                .collect(),
            files: checked.into_iter().map(Arc::new).collect(),
            checked: vec![true; n],
            resolver,
            module: Vec::new(),
            dataset: Vec::new(),
            mode: Vec::new(),
            params: Vec::new(),
            events: Vec::new(),
            called: Vec::new(),
            sites: FxHashMap::default(),
            passed: FxHashMap::default(),
            deps: Vec::new(),
            rdeps: Vec::new(),
            project_tops: FxHashSet::default(),
            relevant: Vec::new(),
            sees_probabilities: Vec::new(),
            trains: Vec::new(),
            cache: Vec::new(),
            qcache: Vec::new(),
            targets: Vec::new(),
            module_methods: FxHashMap::default(),
            subclasses: FxHashMap::default(),
            facts_index: std::sync::OnceLock::new(),
            scan_index: std::sync::OnceLock::new(),
            use_index: std::sync::OnceLock::new(),
            context_deps: Default::default(),
            mutated_registries: FxHashSet::default(),
        }
    }

    /// Rebuild after one file changed (its new summary), keeping everything else: summaries
    /// are kept, links are recomputed (cheap: no syntax tree is touched).
    pub fn rebuild_with(&self, summary: FileSummary) -> Option<Self> {
        self.rebuild_with_all(vec![summary])
    }

    /// [`ProjectModel::rebuild_with`] for several changed files at once (one relink). `None`
    /// when one of them is not in the model (a new file needs [`ProjectModel::build`]).
    pub fn rebuild_with_all(&self, summaries: Vec<FileSummary>) -> Option<Self> {
        let mut files = self.files.clone();
        for summary in summaries {
            let id = *self.by_path.get(&summary.path)?;
            files[id as usize] = Arc::new(summary);
        }
        let roots = self.resolver_roots();
        let resolver = Resolver::new(
            files
                .iter()
                .zip(&self.checked)
                .filter(|(_, c)| **c)
                .map(|(f, _)| f.path.clone()),
            roots,
        );
        let mut m = ProjectModel {
            by_path: self.by_path.clone(),
            files,
            checked: self.checked.clone(),
            resolver,
            module: Vec::new(),
            dataset: Vec::new(),
            mode: Vec::new(),
            params: Vec::new(),
            events: Vec::new(),
            called: Vec::new(),
            sites: FxHashMap::default(),
            passed: FxHashMap::default(),
            deps: Vec::new(),
            rdeps: Vec::new(),
            project_tops: FxHashSet::default(),
            relevant: Vec::new(),
            sees_probabilities: Vec::new(),
            trains: Vec::new(),
            cache: Vec::new(),
            qcache: Vec::new(),
            targets: Vec::new(),
            module_methods: FxHashMap::default(),
            subclasses: FxHashMap::default(),
            facts_index: std::sync::OnceLock::new(),
            scan_index: std::sync::OnceLock::new(),
            use_index: std::sync::OnceLock::new(),
            context_deps: Default::default(),
            mutated_registries: FxHashSet::default(),
        };
        let unresolved = m.unresolved_tops(0..m.files.len() as FileId);
        m.link_search_paths(None, &unresolved);
        m.link();
        Some(m)
    }

    fn resolver_roots(&self) -> Vec<PathBuf> {
        self.resolver.roots().to_vec()
    }

    /// The walked directories the model was built for.
    pub fn roots(&self) -> &[PathBuf] {
        self.resolver.roots()
    }

    /// The file with this path.
    pub fn file_id(&self, path: &Path) -> Option<FileId> {
        self.by_path.get(path).copied()
    }

    /// A file's summary.
    pub fn file(&self, id: FileId) -> &FileSummary {
        &self.files[id as usize]
    }

    /// Number of files (checked and loaded).
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// No files at all?
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Is the file in the checked set (not only loaded to resolve imports)?
    pub fn is_checked(&self, id: FileId) -> bool {
        self.checked[id as usize]
    }

    /// The files whose findings may change when `id` changes: those that import it or call
    /// into it, transitively (the file itself first).
    pub fn dependents(&self, id: FileId) -> Vec<FileId> {
        let mut out = vec![id];
        let mut seen: FxHashSet<FileId> = FxHashSet::default();
        seen.insert(id);
        let mut i = 0;
        while i < out.len() {
            let f = out[i];
            for &d in &self.rdeps[f as usize] {
                if seen.insert(d) {
                    out.push(d);
                }
            }
            // A file's parameters get kinds from its callers: they depend on it too.
            for &d in &self.deps[f as usize] {
                if f == id && seen.insert(d) {
                    out.push(d);
                }
            }
            i += 1;
        }
        // The files whose classes' instances it uses and whose names it compares (see
        // [`UseIndex`]): what it does with them is part of their view.
        let mut observed = Vec::new();
        self.observed_classes(id, &mut |c, _| observed.push(c.file));
        observed.extend(self.compared_names(id).map(|(m, _)| m));
        // The files whose search context it contributes to (see [`search_paths`]).
        self.context_dependents(id, &mut observed);
        for d in observed {
            if seen.insert(d) {
                out.push(d);
            }
        }
        out
    }

    /// The files a file depends on (direct).
    pub fn dependencies(&self, id: FileId) -> impl Iterator<Item = FileId> + '_ {
        self.deps[id as usize].iter().copied()
    }

    /// A view of the model from one file.
    pub fn view(self: &Arc<Self>, file: FileId) -> ProjectFile {
        ProjectFile {
            model: self.clone(),
            file,
            overlay: None,
        }
    }

    /// May values in the file carry probabilities or log-probabilities (it or a file it
    /// imports applies softmax / sigmoid, or its functions receive a model whose forward does)?
    pub fn sees_probabilities(&self, id: FileId) -> bool {
        self.sees_probabilities[id as usize]
    }

    /// Does any file of the model call `set_epoch`?
    pub fn any_set_epoch(&self) -> bool {
        self.scan().set_epoch
    }

    /// Does any file of the model read the `LOCAL_RANK` environment variable (the program
    /// expects `torchrun` / `torch.distributed.launch --use_env`)?
    pub fn any_reads_local_rank_env(&self) -> bool {
        self.scan().reads_local_rank_env
    }

    /// Does any file read `.local_rank` on a value another file can hand over (a parameter,
    /// `self.args`, a module-level name): a parsed `--local_rank` option may be read there.
    pub fn any_reads_shared_local_rank_attr(&self) -> bool {
        self.scan().reads_shared_local_rank_attr
    }

    /// May any file make CUDA the default for new tensors (see
    /// [`facts::FileFacts::may_set_cuda_default`])?
    pub fn any_may_set_cuda_default(&self) -> bool {
        self.scan().may_set_cuda_default
    }

    /// Does the file run training events (backward, step, zero_grad), itself or through the
    /// project functions it calls?
    pub fn trains(&self, id: FileId) -> bool {
        self.trains[id as usize]
    }

    /// Should the file's code be analysed at all: it uses torch or training vocabulary, or
    /// torch-using code of the project imports it (an `engine.py` that receives everything as
    /// parameters)?
    pub fn is_relevant(&self, id: FileId) -> bool {
        self.relevant[id as usize]
    }

    // ----- building -----

    /// Load the files outside the checked set that imports name (three waves). Returns the
    /// first names of the absolute references that resolve to no project file (`PIL`, or a
    /// `lib` that only a `sys.path` addition finds), for [`ProjectModel::link_search_paths`].
    fn load_imported(
        &mut self,
        load: &(dyn Fn(&Path) -> Option<FileSummary> + Sync),
    ) -> FxHashSet<Box<str>> {
        let mut frontier: Vec<FileId> = (0..self.files.len() as FileId).collect();
        let mut tried: FxHashSet<PathBuf> = FxHashSet::default();
        let mut unresolved: FxHashSet<Box<str>> = FxHashSet::default();
        for _wave in 0..3 {
            let mut wanted: Vec<PathBuf> = Vec::new();
            // Each file's references resolved in parallel (the resolver is shared and
            // memoised), then merged in file order.
            let per_file: Vec<Vec<Result<PathBuf, &str>>> = frontier
                .par_iter()
                .map(|&f| {
                    let s = &self.files[f as usize];
                    qualified_refs(s)
                        .filter(|q| !summary_is_external(q))
                        .filter_map(|q| {
                            match self.resolver.resolve_with(&s.path, q, |found| {
                                (!self.by_path.contains_key(&found.file))
                                    .then(|| found.file.clone())
                            }) {
                                None => Some(Err(q)),
                                Some(Some(file)) => Some(Ok(file)),
                                Some(None) => None,
                            }
                        })
                        .collect()
                })
                .collect();
            for r in per_file.into_iter().flatten() {
                match r {
                    Err(q) => note_unresolved(q, &mut unresolved),
                    Ok(file) => {
                        if tried.insert(file.clone()) {
                            wanted.push(file);
                        }
                    }
                }
            }
            frontier.clear();
            if wanted.is_empty() || self.files.len() >= self.checked.len() + MAX_EXTRA_FILES {
                break;
            }
            let room = (self.checked.len() + MAX_EXTRA_FILES).saturating_sub(self.files.len());
            wanted.truncate(room);
            let loaded: Vec<FileSummary> = wanted.iter().filter_map(|p| load(p)).collect();
            for s in loaded {
                let id = self.files.len() as FileId;
                self.by_path.insert(s.path.clone(), id);
                self.files.push(Arc::new(s));
                self.checked.push(false);
                frontier.push(id);
            }
        }
        // The files the last wave loaded were not looked at.
        let rest = self.unresolved_tops(frontier.into_iter());
        unresolved.extend(rest);
        unresolved
    }

    /// What [`ProjectModel::load_imported`] returns, for these files only.
    fn unresolved_tops(&self, files: impl Iterator<Item = FileId>) -> FxHashSet<Box<str>> {
        let mut unresolved: FxHashSet<Box<str>> = FxHashSet::default();
        for f in files {
            let s = &self.files[f as usize];
            for q in qualified_refs(s) {
                if !summary_is_external(q)
                    && self.resolver.resolve_with(&s.path, q, |_| ()).is_none()
                {
                    note_unresolved(q, &mut unresolved);
                }
            }
        }
        unresolved
    }

    /// Top-level names that are project modules (for a cheap reject at lint time): a module or
    /// package, or a namespace package (a directory without `__init__.py`, as in
    /// `from kospeech.models.modules import BNReluRNN`) through which an import reaches a
    /// project file.
    fn project_tops_of(&self) -> FxHashSet<Box<str>> {
        let mut tops = FxHashSet::default();
        for f in &self.files {
            let stars = f.star_imports.iter();
            for q in f.imports.iter().map(|(_, q)| q).chain(stars) {
                if q.starts_with('.') || summary_is_external(q) {
                    continue;
                }
                let first = q.split('.').next().unwrap_or(q);
                if tops.contains(first) {
                    continue;
                }
                if self.resolver.resolve_with(&f.path, first, |_| ()).is_some()
                    || (first.len() < q.len()
                        && self.resolver.resolve_with(&f.path, q, |_| ()).is_some())
                {
                    tops.insert(Box::from(first));
                }
            }
        }
        tops
    }

    fn link(&mut self) {
        self.link_timed(&mut Laps::off());
    }

    /// Per file, the other project files its qualified references resolve to (each once, in
    /// reference order), with the resolver's current contexts. Resolved in parallel: the
    /// resolver is shared and memoised.
    fn imported_files(&self) -> Vec<Vec<FileId>> {
        (0..self.files.len())
            .into_par_iter()
            .map(|i| {
                let path = &self.files[i].path;
                let mut seen: FxHashSet<&str> = FxHashSet::default();
                qualified_refs(&self.files[i])
                    .filter(|q| !summary_is_external(q) && seen.insert(q))
                    .filter_map(|q| {
                        self.resolver
                            .resolve_with(path, q, |f| self.by_path.get(&f.file).copied())
                            .flatten()
                    })
                    .filter(|&t| t as usize != i)
                    .collect()
            })
            .collect()
    }

    fn link_timed(&mut self, laps: &mut Laps) {
        let n = self.files.len();
        self.cache = (0..n).map(|_| RwLock::default()).collect();
        self.qcache = (0..n).map(|_| RwLock::default()).collect();
        self.project_tops = self.project_tops_of();
        // Dependencies: resolved qualified references.
        self.deps = vec![FxHashSet::default(); n];
        self.rdeps = vec![FxHashSet::default(); n];
        for (i, targets) in self.imported_files().into_iter().enumerate() {
            for t in targets {
                self.deps[i].insert(t);
                self.rdeps[t as usize].insert(i as FileId);
            }
        }
        // Relevance: torch or training words, torch names that a star import of a project
        // module brings (`from model import *` where `model.py` imports torch: the file
        // uses torch without naming it), or imported (transitively) by a file that uses torch.
        let star_torch: Vec<bool> = (0..n as FileId)
            .map(|i| {
                let f = &self.files[i as usize];
                !f.vocab.torch
                    && !f.star_imports.is_empty()
                    && !self.star_torch_names_of(i, f).is_empty()
            })
            .collect();
        self.relevant = self
            .files
            .iter()
            .zip(&star_torch)
            .map(|(f, &star)| f.vocab.torch || f.vocab.training || star)
            .collect();
        let mut stack: Vec<FileId> = (0..n as FileId)
            .filter(|&i| self.files[i as usize].vocab.torch || star_torch[i as usize])
            .collect();
        while let Some(f) = stack.pop() {
            for &d in &self.deps[f as usize] {
                if !self.relevant[d as usize] {
                    self.relevant[d as usize] = true;
                    stack.push(d);
                }
            }
        }
        let registries: FxHashSet<&str> = self
            .files
            .iter()
            .flat_map(|f| f.globals.iter())
            .filter(|(_, v)| matches!(v, Val::Dict(_)))
            .map(|(n, _)| &**n)
            .collect();
        self.mutated_registries = if registries.is_empty() {
            FxHashSet::default()
        } else {
            self.files
                .iter()
                .flat_map(|f| f.mutated.iter())
                .filter(|n| registries.contains(&***n))
                .cloned()
                .collect()
        };
        laps.lap("deps, relevance, registries");
        self.link_classes();
        laps.lap("classes");
        self.link_params(laps);
        self.link_module_methods();
        laps.lap("module methods");
        self.link_events();
        laps.lap("events");
        // Probabilities reach a file through what it imports (transitively) and through the
        // parameters its functions receive.
        let mut sees: Vec<bool> = self.files.iter().map(|f| f.vocab.probabilities).collect();
        let mut stack: Vec<FileId> = (0..n as FileId).filter(|&i| sees[i as usize]).collect();
        while let Some(f) = stack.pop() {
            for &d in &self.rdeps[f as usize] {
                if !sees[d as usize] {
                    sees[d as usize] = true;
                    stack.push(d);
                }
            }
        }
        for (fi, seen) in sees.iter_mut().enumerate() {
            if *seen {
                continue;
            }
            *seen = self.params[fi].iter().flatten().flatten().any(|r| {
                r.props_from.is_some()
                    || r.forward.is_some()
                    || match &r.class {
                        Some(ClassRef::Project(c)) => self.forward_props(*c).0.iter().any(|p| {
                            matches!(
                                p.prop,
                                crate::dataflow::Prop::Probabilities
                                    | crate::dataflow::Prop::LogProbabilities
                            )
                        }),
                        _ => false,
                    }
            });
        }
        self.sees_probabilities = sees;
        laps.lap("probabilities");
        self.trains = self
            .events
            .iter()
            .map(|per| {
                per.iter().flatten().any(|e| {
                    matches!(
                        e.kind,
                        EventKind::Backward | EventKind::Step | EventKind::ZeroGrad
                    )
                })
            })
            .collect();
    }

    // The fixed points index several per-file tables in step.
    #[allow(clippy::needless_range_loop)]
    fn link_classes(&mut self) {
        let n = self.files.len();
        self.module = self
            .files
            .iter()
            .map(|f| f.classes.iter().map(|c| c.local_module).collect())
            .collect();
        self.dataset = self
            .files
            .iter()
            .map(|f| f.classes.iter().map(|c| c.local_dataset).collect())
            .collect();
        // Resolved bases, once.
        let bases: Vec<Vec<Vec<Option<Entity>>>> = (0..n)
            .into_par_iter()
            .map(|fi| {
                self.files[fi]
                    .classes
                    .iter()
                    .map(|c| {
                        c.bases
                            .iter()
                            .map(|b| self.entity_of_ref(fi as FileId, b, None, 0))
                            .collect()
                    })
                    .collect()
            })
            .collect();
        // Project subclasses of each project class (what `self.<method>()` may dispatch to).
        let mut subclasses: FxHashMap<ClassId, Vec<ClassId>> = FxHashMap::default();
        for (fi, per_file) in bases.iter().enumerate() {
            for (ci, bs) in per_file.iter().enumerate() {
                for b in bs {
                    if let Some(Entity::Class(base)) = b {
                        subclasses.entry(*base).or_default().push(ClassId {
                            file: fi as FileId,
                            index: ci as u32,
                        });
                    }
                }
            }
        }
        self.subclasses = subclasses;
        for _ in 0..16 {
            let mut changed = false;
            for fi in 0..n {
                for ci in 0..bases[fi].len() {
                    for b in &bases[fi][ci] {
                        let (m, d) = match b {
                            Some(Entity::Class(c)) => (
                                self.module[c.file as usize][c.index as usize],
                                self.dataset[c.file as usize][c.index as usize],
                            ),
                            Some(Entity::External(q)) => (is_module_base(q), is_dataset_base(q)),
                            _ => (false, false),
                        };
                        if m && !self.module[fi][ci] {
                            self.module[fi][ci] = true;
                            changed = true;
                        }
                        if d && !self.dataset[fi][ci] {
                            self.dataset[fi][ci] = true;
                            changed = true;
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
        // Train/eval sensitivity: a layer of its own, a sub-module class that has one, a
        // base class that has one.
        self.mode = self
            .files
            .iter()
            .enumerate()
            .map(|(fi, f)| {
                f.classes
                    .iter()
                    .enumerate()
                    .map(|(ci, c)| {
                        c.mode_layer.map(|k| {
                            (
                                k,
                                ClassId {
                                    file: fi as FileId,
                                    index: ci as u32,
                                },
                            )
                        })
                    })
                    .collect()
            })
            .collect();
        let subs: Vec<Vec<Vec<Entity>>> = (0..n)
            .into_par_iter()
            .map(|fi| {
                self.files[fi]
                    .classes
                    .iter()
                    .enumerate()
                    .map(|(ci, c)| {
                        let mut es: Vec<Entity> = c
                            .submodules
                            .iter()
                            .filter_map(|r| self.entity_of_ref(fi as FileId, r, None, 0))
                            .collect();
                        es.extend(bases[fi][ci].iter().flatten().cloned());
                        es
                    })
                    .collect()
            })
            .collect();
        // Every family of the class and what it holds (`Dropout` in one sub-module,
        // `BatchNorm` in another), located where the first was found; the sets only grow.
        for _ in 0..16 {
            let mut changed = false;
            for fi in 0..n {
                for ci in 0..subs[fi].len() {
                    if !self.module[fi][ci] || subs[fi][ci].is_empty() {
                        continue;
                    }
                    let here = ClassId {
                        file: fi as FileId,
                        index: ci as u32,
                    };
                    let mut found = self.mode[fi][ci];
                    for e in &subs[fi][ci] {
                        let more = match e {
                            Entity::Class(c) if *c != here => {
                                self.mode[c.file as usize][c.index as usize]
                            }
                            Entity::External(q) => mode_layer(q).map(|k| (k, here)),
                            Entity::Function(f) => self.function_mode(*f),
                            _ => None,
                        };
                        found = match (found, more) {
                            (Some((k, at)), Some((m, _))) => Some((join_mode_layers(k, m), at)),
                            (f, m) => f.or(m),
                        };
                    }
                    if found.map(|(k, _)| k) != self.mode[fi][ci].map(|(k, _)| k) {
                        self.mode[fi][ci] = found;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// A builder function's train/eval-sensitive result: it returns an instance of a class
    /// that has such layers.
    fn function_mode(&self, f: FuncId) -> Option<(&'static str, ClassId)> {
        let r = self.resolve_val(f, &self.func(f).returns.clone(), 0);
        match r.class {
            Some(ClassRef::Project(c)) => self.mode[c.file as usize][c.index as usize],
            _ => None,
        }
    }

    #[allow(clippy::needless_range_loop)]
    fn link_params(&mut self, laps: &mut Laps) {
        let n = self.files.len();
        // Call sites per callee.
        let mut sites: FxHashMap<FuncId, Vec<(FuncId, usize, usize)>> = FxHashMap::default();
        self.called = self
            .files
            .iter()
            .map(|f| vec![false; f.functions.len()])
            .collect();
        let targets: Vec<Vec<Vec<CallTarget>>> = (0..n)
            .into_par_iter()
            .map(|fi| {
                self.files[fi]
                    .functions
                    .iter()
                    .enumerate()
                    .map(|(gi, g)| {
                        let caller = FuncId {
                            file: fi as FileId,
                            index: gi as u32,
                        };
                        g.calls
                            .iter()
                            .map(|c| self.callee_function(caller, &c.callee))
                            .collect()
                    })
                    .collect()
            })
            .collect();
        self.targets = targets;
        laps.lap("params: call targets");
        for fi in 0..n {
            for (gi, g) in self.files[fi].functions.iter().enumerate() {
                let caller = FuncId {
                    file: fi as FileId,
                    index: gi as u32,
                };
                for (ci, _) in g.calls.iter().enumerate() {
                    let Some((callee, shift)) = self.targets[fi][gi][ci] else {
                        continue;
                    };
                    self.called[callee.file as usize][callee.index as usize] = true;
                    sites.entry(callee).or_default().push((caller, ci, shift));
                }
            }
        }
        // `self.<name>(...)` in a method also runs the overrides that project subclasses
        // define (a trainer's `train()` calling the `_valid_epoch()` of each subclass), on the
        // instances of the subclasses that inherit the calling method itself.
        if !self.subclasses.is_empty() {
            // Once per class: a base class calls methods of `self` from many methods.
            let mut memo: FxHashMap<ClassId, Vec<ClassId>> = FxHashMap::default();
            for fi in 0..n {
                for (gi, g) in self.files[fi].functions.iter().enumerate() {
                    let Some(index) = g.class else { continue };
                    let class = ClassId {
                        file: fi as FileId,
                        index,
                    };
                    if g.params.first().is_none_or(|p| &**p != "self")
                        || !self.subclasses.contains_key(&class)
                    {
                        continue;
                    }
                    let caller = FuncId {
                        file: fi as FileId,
                        index: gi as u32,
                    };
                    let descendants = memo.entry(class).or_insert_with(|| self.descendants(class));
                    let inheriting: Vec<ClassId> = descendants
                        .iter()
                        .copied()
                        .filter(|&d| self.method(d, &g.name, 0) == Some(caller))
                        .collect();
                    if inheriting.is_empty() {
                        continue;
                    }
                    for (ci, c) in g.calls.iter().enumerate() {
                        let Ref::Method(name) = &c.callee else {
                            continue;
                        };
                        let resolved = self.targets[fi][gi][ci].map(|(t, _)| t);
                        let mut added: Vec<FuncId> = Vec::new();
                        for &d in &inheriting {
                            let Some(o) = self.method(d, name, 0) else {
                                continue;
                            };
                            if Some(o) != resolved && !added.contains(&o) {
                                added.push(o);
                                sites.entry(o).or_default().push((caller, ci, 1));
                            }
                        }
                    }
                }
            }
        }
        // (The overrides' sites are calls too.)
        for o in sites.keys() {
            self.called[o.file as usize][o.index as usize] = true;
        }
        // Calls of instances of project loss modules (`crit(pred, y)` with `crit =
        // FocalLoss()`): their `forward` receives the tensor properties of the arguments (a
        // sigmoid output handed to a focal loss that applies `binary_cross_entropy_with_logits`),
        // and nothing else (kinds, classes and literals come from call sites only).
        let instance_sites: Vec<Vec<(FuncId, (FuncId, usize))>> = if self
            .files
            .iter()
            .any(|f| f.classes.iter().any(|c| c.computes_loss))
        {
            (0..n)
                .into_par_iter()
                .map(|fi| {
                    let f = &self.files[fi];
                    let mut out = Vec::new();
                    if !(f.vocab.torch || f.vocab.training) {
                        return out;
                    }
                    for (gi, g) in f.functions.iter().enumerate() {
                        let caller = FuncId {
                            file: fi as FileId,
                            index: gi as u32,
                        };
                        for (ii, ic) in g.instance_calls.iter().enumerate() {
                            if ic.args.is_empty() && ic.kwargs.is_empty() {
                                continue;
                            }
                            let Some(t) = self.instance_call_target(caller, &ic.recv) else {
                                continue;
                            };
                            let loss = self.func(t).class.is_some_and(|index| {
                                self.is_loss_class(ClassId {
                                    file: t.file,
                                    index,
                                })
                            });
                            if t != caller && loss {
                                out.push((t, (caller, ii)));
                            }
                        }
                    }
                    out
                })
                .collect()
        } else {
            Vec::new()
        };
        let mut instances: FxHashMap<FuncId, Vec<(FuncId, usize)>> = FxHashMap::default();
        for (t, site) in instance_sites.into_iter().flatten() {
            instances.entry(t).or_default().push(site);
        }
        laps.lap("params: sites");
        self.passed = self.passed_functions();
        laps.lap("params: passed functions");
        // Start from annotations and usage. Annotations repeat (`torch.Tensor`, `nn.Module`,
        // `int`): each distinct one of a file is resolved once. Files in parallel.
        let params: Vec<Vec<ParamSlots>> = self
            .files
            .par_iter()
            .enumerate()
            .map(|(fi, f)| {
                let mut annotation_memo: FxHashMap<&Ref, Option<Resolved>> = FxHashMap::default();
                let mut per_file = Vec::with_capacity(f.functions.len());
                for (gi, g) in f.functions.iter().enumerate() {
                    let id = FuncId {
                        file: fi as FileId,
                        index: gi as u32,
                    };
                    let seeds = (0..g.params.len())
                        .map(|pi| {
                            if let Some(Some(r)) = g.annotations.get(pi) {
                                // `Ref::Method` depends on the function's class: not shared.
                                let known = if matches!(r, Ref::Method(_)) {
                                    self.annotation_instance(id, r)
                                } else {
                                    annotation_memo
                                        .entry(r)
                                        .or_insert_with(|| self.annotation_instance(id, r))
                                        .clone()
                                };
                                if let Some(res) = known {
                                    return Some(Box::new(res));
                                }
                            }
                            let usage = Resolved::of_kind(
                                g.usage.get(pi).map(|u| u.kind()).unwrap_or(Kind::Unknown),
                            );
                            usage.is_known().then(|| Box::new(usage))
                        })
                        .collect();
                    per_file.push(seeds);
                }
                per_file
            })
            .collect();
        self.params = params;
        laps.lap("params: sites and seeds");
        // The fixed point over call sites. Each callee's parameters are a function of the
        // parameters its call sites' resolution reads (the callers', and those of whatever the
        // arguments reach: returned values, `self.x` set in `__init__`). Those reads are
        // recorded, so a later round re-evaluates only the callees whose inputs changed; the
        // result is the same as evaluating every callee every round.
        let mut order: Vec<FuncId> = sites.keys().chain(instances.keys()).copied().collect();
        order.sort_unstable();
        order.dedup();
        let mut reads: FxHashMap<FuncId, Vec<FuncId>> = FxHashMap::default();
        let mut changed_last: Option<FxHashSet<FuncId>> = None;
        for _ in 0..PARAM_ROUNDS {
            // The stale callees of this round, evaluated in parallel against the previous
            // round's parameters (each evaluation only reads the model; `PARAM_READS` is per
            // thread and set and taken within one evaluation), merged in callee order.
            let stale: Vec<FuncId> = order
                .iter()
                .copied()
                .filter(|callee| match &changed_last {
                    Some(changed) => reads
                        .get(callee)
                        .is_some_and(|r| r.iter().any(|f| changed.contains(f))),
                    None => true,
                })
                .collect();
            let evaluated: Vec<(FuncId, SiteEvaluation)> = stale
                .par_iter()
                .map(|&callee| {
                    let list = sites.get(&callee).map_or(&[][..], Vec::as_slice);
                    let inst = instances.get(&callee).map_or(&[][..], Vec::as_slice);
                    (callee, self.evaluate_param_sites(callee, list, inst))
                })
                .collect();
            let mut updates: Vec<(FuncId, usize, Resolved)> = Vec::new();
            for (callee, (ups, read)) in evaluated {
                updates.extend(ups.into_iter().map(|(pi, r)| (callee, pi, r)));
                reads.insert(callee, read);
            }
            if updates.is_empty() {
                break;
            }
            let mut changed = FxHashSet::default();
            for (callee, pi, r) in updates {
                self.params[callee.file as usize][callee.index as usize][pi] = Some(Box::new(r));
                changed.insert(callee);
            }
            changed_last = Some(changed);
        }
        self.sites = sites;
        laps.lap("params: fixed point");
    }

    /// One callee's parameters from its call sites (one round of the fixed point of
    /// [`ProjectModel::link_params`]): the parameters whose joined value is known and differs
    /// from the current one, and the functions whose parameters the evaluation read.
    fn evaluate_param_sites(
        &self,
        callee: FuncId,
        list: &[(FuncId, usize, usize)],
        instances: &[(FuncId, usize)],
    ) -> SiteEvaluation {
        let g = self.func(callee);
        let mut updates = Vec::new();
        PARAM_READS.with(|r| *r.borrow_mut() = Some(Vec::new()));
        for pi in 0..g.params.len() {
            let mut acc: Option<Resolved> = None;
            for &(caller, ci, shift) in list {
                let call = &self.func(caller).calls[ci];
                let pname = &*g.params[pi];
                let arg = if pi >= shift {
                    call.args.get(pi - shift)
                } else {
                    None
                }
                .or_else(|| {
                    call.kwargs
                        .iter()
                        .find(|(k, _)| &**k == pname)
                        .map(|(_, v)| v)
                });
                let Some(arg) = arg else { continue };
                let r = self.resolve_val(caller, arg, 0);
                acc = Some(match acc {
                    None => r,
                    Some(a) => a.join(r),
                });
            }
            if let Some(r) = acc {
                if r.is_known() {
                    let slot =
                        self.params[callee.file as usize][callee.index as usize][pi].as_deref();
                    // Call sites win over usage; annotations win over both.
                    let annotated = g.annotations[pi].is_some()
                        && slot.is_some_and(|s| s.kind != Kind::Unknown);
                    match slot {
                        // A `torch.Tensor` annotation says nothing of the tensor's properties:
                        // those of the arguments still come in (`x_recon: torch.Tensor` that
                        // every call site passes a sigmoid output).
                        Some(s)
                            if annotated
                                && s.class.is_none()
                                && s.props.is_empty()
                                && !r.props.is_empty() =>
                        {
                            updates.push((
                                pi,
                                Resolved {
                                    props: r.props,
                                    props_from: r.props_from,
                                    ..s.clone()
                                },
                            ));
                        }
                        _ if !annotated && slot != Some(&r) => updates.push((pi, r)),
                        _ => {}
                    }
                }
                continue;
            }
            // No call site passes it: the tensor properties every instance call passes (the
            // forward's `self` is the instance; its arguments start at the second parameter).
            if pi == 0 || instances.is_empty() {
                continue;
            }
            let pname = &*g.params[pi];
            let mut props: Option<Resolved> = None;
            for &(caller, ii) in instances {
                let ic = &self.func(caller).instance_calls[ii];
                let arg = ic.args.get(pi - 1).or_else(|| {
                    ic.kwargs
                        .iter()
                        .find(|(k, _)| &**k == pname)
                        .map(|(_, v)| v)
                });
                // A site that does not pass it says nothing is known.
                let Some(arg) = arg else {
                    props = None;
                    break;
                };
                let r = self.resolve_val(caller, arg, 0);
                let r = Resolved {
                    props: r.props,
                    props_from: r.props_from,
                    ..Resolved::default()
                };
                props = Some(match props {
                    None => r,
                    Some(a) => a.join(r),
                });
            }
            let Some(r) = props.filter(|r| !r.props.is_empty()) else {
                continue;
            };
            let slot = self.params[callee.file as usize][callee.index as usize][pi].as_deref();
            if slot.is_some_and(|s| s.props == r.props && s.props_from == r.props_from) {
                continue;
            }
            let base = slot.cloned().unwrap_or_default();
            updates.push((
                pi,
                Resolved {
                    props: r.props,
                    props_from: r.props_from,
                    ..base
                },
            ));
        }
        let mut read = PARAM_READS
            .with(|r| r.borrow_mut().take())
            .unwrap_or_default();
        read.sort_unstable();
        read.dedup();
        (updates, read)
    }

    /// Functions passed as values to a callee that calls the parameter receiving them (see
    /// `ProjectModel::passed`). Needs the call targets.
    fn passed_functions(&self) -> FxHashMap<FuncId, Vec<(FuncId, usize)>> {
        let mut passed: FxHashMap<FuncId, Vec<(FuncId, usize)>> = FxHashMap::default();
        for (fi, f) in self.files.iter().enumerate() {
            for (gi, g) in f.functions.iter().enumerate() {
                let caller = FuncId {
                    file: fi as FileId,
                    index: gi as u32,
                };
                for (ci, call) in g.calls.iter().enumerate() {
                    if call.args.is_empty() && call.kwargs.is_empty() {
                        continue;
                    }
                    let Some((callee, shift)) = self.targets[fi][gi][ci] else {
                        continue;
                    };
                    let h = self.func(callee);
                    for (pi, u) in h.usage.iter().enumerate() {
                        if !u.has(Usage::CALLED) {
                            continue;
                        }
                        let arg = pi
                            .checked_sub(shift)
                            .and_then(|k| call.args.get(k))
                            .or_else(|| {
                                let name = h.params.get(pi)?;
                                call.kwargs.iter().find(|(k, _)| k == name).map(|(_, v)| v)
                            });
                        let Some(fv) = arg.and_then(|a| self.function_value(caller, a)) else {
                            continue;
                        };
                        if fv != callee && fv != caller {
                            passed.entry(fv).or_default().push((caller, ci));
                        }
                    }
                }
            }
        }
        passed
    }

    /// The project function a value names uncalled: a function by name (`step`), or what a
    /// factory returns (`make_val_step(model, loss_fn)`, whose `return perform_val_step`
    /// hands out a closure).
    fn function_value(&self, ctx: FuncId, v: &Val) -> Option<FuncId> {
        let r = match v {
            Val::Ref(r) => r.clone(),
            Val::Call { callee, .. } => Ref::Returned(Box::new(callee.clone())),
            _ => return None,
        };
        match self.entity_of_ref(ctx.file, &r, Some(ctx), 0)? {
            Entity::Function(f) => Some(f),
            _ => None,
        }
    }

    /// The value an annotation names, when the project knows it (`model: Net`).
    fn annotation_instance(&self, f: FuncId, r: &Ref) -> Option<Resolved> {
        let e = self.entity_of_ref(f.file, r, Some(f), 0)?;
        let res = self.instance_of(e);
        res.is_known().then_some(res)
    }

    fn link_module_methods(&mut self) {
        let mut by_name: FxHashMap<Box<str>, Vec<FuncId>> = FxHashMap::default();
        for (fi, f) in self.files.iter().enumerate() {
            for (ci, c) in f.classes.iter().enumerate() {
                if !self.module[fi][ci] {
                    continue;
                }
                for (name, index) in &c.methods {
                    if name.starts_with("__") || crate::classes::is_module_api(name) {
                        continue;
                    }
                    by_name.entry(name.clone()).or_default().push(FuncId {
                        file: fi as FileId,
                        index: *index,
                    });
                }
            }
        }
        self.module_methods = by_name;
    }

    /// The function calling an object runs, seen from function `ctx` where the object has the
    /// value `recv` (an [`InstanceCall`]): the `forward` of the project module class the value
    /// is an instance of (or that class's own `__call__`, when a project class overrides it).
    /// `None` when the value is not known to be an instance of a project module class.
    pub fn instance_call_target(&self, ctx: FuncId, recv: &Val) -> Option<FuncId> {
        let r = self.resolve_val(ctx, recv, 0);
        let Some(ClassRef::Project(c)) = r.class else {
            return None;
        };
        if !self.is_module(c) {
            return None;
        }
        self.method(c, "__call__", 0)
            .or_else(|| self.method(c, "forward", 0))
    }

    /// The `__call__` of a project class that is not a module, when `recv` (in function
    /// `ctx`) is an instance of one: a callable object such as the Annotated Transformer's
    /// `SimpleLossCompute`, handed to `run_epoch(data, model, loss_compute)`, whose call
    /// computes the loss, runs `backward()` and steps the optimizer. Its events count at the
    /// call only when it trains ([`ProjectModel::function_trains`]): a metric or a loss computer that
    /// only returns a value changes nothing.
    pub fn callable_object_target(&self, ctx: FuncId, recv: &Val) -> Option<FuncId> {
        let r = self.resolve_val(ctx, recv, 0);
        let Some(ClassRef::Project(c)) = r.class else {
            return None;
        };
        if self.is_module(c) {
            return None;
        }
        self.method(c, "__call__", 0)
    }

    /// Do the composed events of function `f` train: a backward pass or an optimizer step?
    pub fn function_trains(&self, f: FuncId) -> bool {
        self.events(f).iter().any(FlatEvent::trains)
    }

    /// Does function `f` leave the module its parameter `i` receives in eval mode: its
    /// composed events (its own and those of the project functions it calls) switch that
    /// parameter to eval mode on every path (`model.eval()` at the top of
    /// `evaluate(model, loader)`), and nothing switches it to training mode after that?
    pub fn leaves_param_in_eval(&self, f: FuncId, i: usize) -> bool {
        let events = self.events(f);
        let on_param = |e: &FlatEvent| matches!(&e.target, Target::Param(p, path) if *p as usize == i && path.is_empty());
        let Some(last_eval) = events
            .iter()
            .filter(|e| e.kind == EventKind::Eval && !e.conditional && on_param(e))
            .map(|e| e.site.start())
            .max()
        else {
            return false;
        };
        !events
            .iter()
            .any(|e| e.kind == EventKind::Train && on_param(e) && e.site.start() >= last_eval)
    }

    /// Does another file of the project compare the module-level name `name` of file `file`
    /// (`onmt.constants.torch_version >= 1.2` for `torch_version` of `onmt/constants.py`, or
    /// the name imported from it and compared)?
    pub fn compared_in_other_files(&self, file: FileId, name: &str) -> bool {
        self.uses()
            .compared
            .get(&file)
            .is_some_and(|v| v.binary_search_by(|n| (**n).cmp(name)).is_ok())
    }

    /// Is an instance of class `c` called anywhere in the project (an [`InstanceCall`] whose
    /// object resolves to an instance of `c`)?
    pub fn instance_called(&self, c: ClassId) -> bool {
        self.uses().called.contains(&c)
    }

    /// Is an instance of class `c` used as a module anywhere in the project: called, or
    /// given an `nn.Module` API method (`net.to(dev)`, `net.parameters()`, `net.eval()`,
    /// `net.state_dict()`, ...)?
    pub fn instance_used_as_module(&self, c: ClassId) -> bool {
        let u = self.uses();
        u.called.contains(&c) || u.module_api.contains(&c)
    }

    /// A call of function `f` (by name, in any file but unit-test code) that runs with
    /// autograd on: not under `no_grad` or in a no-grad decorated caller, in a caller that
    /// does not only run without grad ([`Self::runs_without_grad`]), whose result the caller
    /// neither returns nor differentiates; where it is (file and range). For an evaluation function that one caller wraps in `no_grad` and another
    /// does not (`evaluate(model, test_loader)` after training).
    pub fn call_site_with_grad(&self, f: FuncId) -> Option<(FileId, ruff_text_size::TextRange)> {
        self.call_site_with_grad_where(f, true, &|_, _, _| true)
    }

    /// [`Self::call_site_with_grad`] among the calls that pass parameter `i` a falsy literal
    /// (`False`, `0`, `None`, also by default): `run_epoch(model, val_loader, optimizer=None)`
    /// of a function that trains only when it is given an optimizer. What such a call
    /// returns (an average loss, a metric) may be returned by its caller.
    pub fn call_site_with_grad_falsy(
        &self,
        f: FuncId,
        i: usize,
    ) -> Option<(FileId, ruff_text_size::TextRange)> {
        let falsy = |l: &Lit| matches!(l, Lit::Bool(false) | Lit::Int(0) | Lit::None);
        self.call_site_with_grad_where(f, false, &|caller, ci, shift| {
            self.literal_passed(f, i, caller, ci, shift)
                .is_some_and(falsy)
        })
    }

    /// The call sites of `f` that `filter` keeps and that run it with autograd on; with
    /// `unreturned`, only those whose result the caller does not return either.
    fn call_site_with_grad_where(
        &self,
        f: FuncId,
        unreturned: bool,
        filter: &dyn Fn(FuncId, usize, usize) -> bool,
    ) -> Option<(FileId, ruff_text_size::TextRange)> {
        self.sites.get(&f)?.iter().find_map(|&(caller, ci, shift)| {
            let g = self.func(caller);
            let call = &g.calls[ci];
            // What it gives is only looked at there (printed, stored): not differentiated,
            // and (with `unreturned`) not returned to a caller that may differentiate it.
            let kept = self
                .grad_flow(caller)
                .results
                .get(ci)
                .is_some_and(|r| (unreturned && r.returned) || r.differentiated);
            (!call.no_grad
                && !kept
                && !g.no_grad
                && !self.files[caller.file as usize].test_code
                && filter(caller, ci, shift)
                && !self.runs_without_grad(caller))
            .then_some((caller.file, call.range))
        })
    }

    /// Is method `f` called on an instance of its class (or of a project subclass) with
    /// autograd off somewhere in the project: `with torch.no_grad(): scores =
    /// model.detect(x)` in another file, with `model` a parameter annotated `model: Model` or
    /// passed a `Model(...)`? The receiver's class comes from the model's resolution of the
    /// object ([`Self::resolve_val`]), for any project class (a plain wrapper class too).
    pub fn method_called_without_grad(&self, f: FuncId) -> bool {
        self.func(f).class.is_some() && self.uses().no_grad_methods.contains(&f)
    }

    /// The project methods `obj.name(...)` may run: `name` looked up on the class (or each
    /// alternative class) the object resolves to. Empty when the object's class is not known
    /// or is a library class.
    fn methods_on(&self, ctx: FuncId, recv: &Val, name: &str) -> Vec<FuncId> {
        let r = self.resolve_val(ctx, recv, 0);
        receiver_classes(&r)
            .into_iter()
            .filter_map(|c| match c {
                Some(ClassRef::Project(c)) => self.method(*c, name, 0),
                _ => None,
            })
            .collect()
    }

    fn uses(&self) -> &UseIndex {
        self.use_index.get_or_init(|| {
            let mut idx = UseIndex::default();
            for fi in 0..self.files.len() {
                let file = fi as FileId;
                self.observed_classes(file, &mut |c, called| {
                    if called {
                        idx.called.insert(c);
                    } else {
                        idx.module_api.insert(c);
                    }
                });
                for (m, name) in self.compared_names(file) {
                    idx.compared.entry(m).or_default().push(name.into());
                }
                for (gi, g) in self.files[fi].functions.iter().enumerate() {
                    let ctx = FuncId {
                        file,
                        index: gi as u32,
                    };
                    for (recv, name) in g.no_grad_method_calls.iter() {
                        idx.no_grad_methods.extend(self.methods_on(ctx, recv, name));
                    }
                }
            }
            for v in idx.compared.values_mut() {
                v.sort_unstable();
                v.dedup();
            }
            idx
        })
    }

    /// The project classes whose instances file `file` uses as modules: `f(c, true)` for an
    /// instance call, `f(c, false)` for an `nn.Module` API method or a call of a module-level
    /// name.
    fn observed_classes(&self, file: FileId, f: &mut dyn FnMut(ClassId, bool)) {
        for (gi, g) in self.files[file as usize].functions.iter().enumerate() {
            let ctx = FuncId {
                file,
                index: gi as u32,
            };
            for ic in g.instance_calls.iter() {
                if let Some(ClassRef::Project(c)) = self.resolve_val(ctx, &ic.recv, 0).class {
                    f(c, true);
                }
            }
            for v in g.module_api_uses.iter() {
                if let Some(ClassRef::Project(c)) = self.resolve_val(ctx, v, 0).class {
                    f(c, false);
                }
            }
            for name in g.global_module_uses.iter() {
                if let Some(ClassRef::Project(c)) = self.global(file, name, 0).class {
                    f(c, false);
                }
            }
        }
    }

    /// The module-level names of other files that file `file` compares (see
    /// [`FileSummary::compared_refs`]): the file they belong to and the name.
    fn compared_names<'f>(&'f self, file: FileId) -> impl Iterator<Item = (FileId, &'f str)> + 'f {
        self.files[file as usize]
            .compared_refs
            .iter()
            .filter_map(move |q| {
                let (module, last) = q.rsplit_once('.')?;
                match self.qualified(file, module, 0) {
                    Some(Entity::Module(m)) if m != file => Some((m, last)),
                    _ => None,
                }
            })
    }

    /// The one method of the project's module classes called `name`, when exactly one class
    /// defines it (a name such as `train_custom`): a call `obj.train_custom()` on a module
    /// whose class the summaries do not know runs it.
    pub fn unique_module_method(&self, name: &str) -> Option<FuncId> {
        match self.module_methods.get(name).map(Vec::as_slice) {
            Some([one]) => Some(*one),
            _ => None,
        }
    }

    /// The project module-class methods that `obj.name(...)` may run, seen from function
    /// `ctx` where the object's value is `recv`: the method of the object's class (through
    /// its bases) when the model knows the class, of each class when it is one of several,
    /// and every module-class method of that name when the class is not known (an object
    /// reassigned from `torch.load`, a parameter without call sites). A may-set: callers use
    /// it to credit a mode the method restores (`self.train()` in `net.loss_func()`), never
    /// to report one.
    pub fn object_methods(&self, ctx: FuncId, recv: &Val, name: &str) -> Vec<FuncId> {
        self.object_methods_as(ctx, recv, name, false)
    }

    /// [`Self::object_methods`] for a recorded call: one recorded with
    /// [`summary::ObjectMethodCall::known_only`] runs nothing when its object's class is not
    /// known.
    pub fn object_call_methods(&self, ctx: FuncId, oc: &summary::ObjectMethodCall) -> Vec<FuncId> {
        self.object_methods_as(ctx, &oc.recv, &oc.name, oc.known_only)
    }

    fn object_methods_as(
        &self,
        ctx: FuncId,
        recv: &Val,
        name: &str,
        known_only: bool,
    ) -> Vec<FuncId> {
        let Some(all) = self.module_methods.get(name) else {
            return Vec::new();
        };
        let r = self.resolve_val(ctx, recv, 0);
        let mut out = Vec::new();
        for c in receiver_classes(&r) {
            match c {
                Some(ClassRef::Project(c)) => {
                    if let Some(m) = self.method(*c, name, 0).filter(|m| all.contains(m)) {
                        out.push(m);
                    }
                }
                // A library class: none of its methods is a project method.
                Some(ClassRef::External(_)) => {}
                None if known_only => return Vec::new(),
                None => return all.clone(),
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    fn link_events(&mut self) {
        let n = self.files.len();
        let mut memo: FxHashMap<FuncId, Vec<FlatEvent>> = FxHashMap::default();
        let mut out: Vec<Vec<Vec<FlatEvent>>> = Vec::with_capacity(n);
        for fi in 0..n {
            if !self.files[fi].vocab.torch && !self.files[fi].vocab.training {
                out.push(vec![Vec::new(); self.files[fi].functions.len()]);
                continue;
            }
            let mut per = Vec::new();
            for gi in 0..self.files[fi].functions.len() {
                let id = FuncId {
                    file: fi as FileId,
                    index: gi as u32,
                };
                let mut stack = Vec::new();
                per.push(self.compose_events(id, 0, &mut memo, &mut stack));
            }
            out.push(per);
        }
        self.events = out;
    }

    /// What the callee's parameter `i` (with `path` below it) is at a call site: the caller's
    /// parameter or `self.<attr>` passed there (positionally, after `shift` implicit leading
    /// parameters, or by keyword), else the caller's own object of that name (`key`, the
    /// argument's object key: `evaluate(model=model)` switches the caller's `model`), else a
    /// local placeholder `<arg i>`.
    #[allow(clippy::too_many_arguments)]
    fn arg_target(
        &self,
        callee: FuncId,
        args: &[Val],
        kwargs: &[(Box<str>, Val)],
        key: Option<&str>,
        i: usize,
        shift: usize,
        path: &str,
    ) -> Target {
        let arg = i.checked_sub(shift).and_then(|k| args.get(k)).or_else(|| {
            let pname = self.func(callee).params.get(i)?;
            kwargs.iter().find(|(k, _)| k == pname).map(|(_, v)| v)
        });
        match arg {
            Some(Val::Param(j)) => Target::Param(*j, path.into()),
            Some(Val::SelfAttr(a)) => Target::SelfAttr(format!("{a}{path}").into()),
            _ => match key {
                Some(k) => Target::Local(format!("{k}{path}").into()),
                None => Target::Local(format!("<arg {i}>{path}").into()),
            },
        }
    }

    fn compose_events(
        &self,
        id: FuncId,
        depth: u32,
        memo: &mut FxHashMap<FuncId, Vec<FlatEvent>>,
        stack: &mut Vec<FuncId>,
    ) -> Vec<FlatEvent> {
        if let Some(e) = memo.get(&id) {
            return e.clone();
        }
        if stack.contains(&id) || depth > MAX_DEPTH {
            return Vec::new();
        }
        stack.push(id);
        let f = self.func(id);
        let mut out: Vec<FlatEvent> = f
            .events
            .iter()
            .map(|e| FlatEvent {
                kind: e.kind,
                target: e.target.clone(),
                role: e.role,
                conditional: e.conditional,
                periodic: e.periodic,
                in_loop: e.in_loop,
                at: (id.file, e.range),
                site: e.range,
                depth: 0,
            })
            .collect();
        for (ci, call) in f.calls.iter().enumerate() {
            let Some((callee, shift)) = self.targets[id.file as usize][id.index as usize][ci]
            else {
                continue;
            };
            if callee == id {
                continue;
            }
            let inner = self.compose_events(callee, depth + 1, memo, stack);
            let is_method = call.callee.passes_self();
            for e in inner {
                let target = match &e.target {
                    Target::Param(0, path) if is_method => {
                        Target::SelfAttr(path.trim_start_matches('.').into())
                    }
                    Target::Param(i, path) => self.arg_target(
                        callee,
                        &call.args,
                        &call.kwargs,
                        self.arg_key(callee, call, *i as usize, shift).as_deref(),
                        *i as usize,
                        shift,
                        path,
                    ),
                    Target::SelfAttr(a) if is_method => Target::SelfAttr(a.clone()),
                    Target::SelfAttr(a) => Target::Local(format!("<self>.{a}").into()),
                    t => t.clone(),
                };
                out.push(FlatEvent {
                    target,
                    conditional: e.conditional || call.conditional,
                    in_loop: e.in_loop || call.in_loop,
                    depth: e.depth + 1,
                    site: call.range,
                    ..e
                });
            }
        }
        // `model(x)`: calling an instance of a project module class runs its `forward`, and
        // the forward's events happen at the call, on the instance (`self.zero_grad()` in
        // the forward clears `model`'s gradients).
        for ic in f.instance_calls.iter() {
            // A callable object that is not a module counts only when its call trains.
            let (callee, module) = match self.instance_call_target(id, &ic.recv) {
                Some(c) => (c, true),
                None => match self.callable_object_target(id, &ic.recv) {
                    Some(c) => (c, false),
                    None => continue,
                },
            };
            if callee == id {
                continue;
            }
            let recv = match &ic.recv {
                Val::Param(j) => Target::Param(*j, "".into()),
                Val::SelfAttr(a) => Target::SelfAttr(a.clone()),
                _ => Target::Local(ic.key.clone()),
            };
            let inner = self.compose_events(callee, depth + 1, memo, stack);
            if !module && !inner.iter().any(FlatEvent::trains) {
                continue;
            }
            for e in inner {
                let target = match &e.target {
                    Target::Param(i, path) if *i > 0 => {
                        self.arg_target(callee, &ic.args, &ic.kwargs, None, *i as usize, 1, path)
                    }
                    t => on_object(&recv, t),
                };
                out.push(FlatEvent {
                    target,
                    conditional: e.conditional || ic.conditional,
                    in_loop: e.in_loop || ic.in_loop,
                    depth: e.depth + 1,
                    site: ic.range,
                    ..e
                });
            }
        }
        // `obj.train_custom()`, `net.set_mode("valid")`: the modes a project module's method
        // sets on itself (or on its sub-modules) are set on `obj`. A switch the method makes
        // under a condition (`if mode in ["eval", "valid"]: self.eval()`) stays conditional.
        // The one method the call can run, when it trains (`pi.train_policy()`, whose body
        // steps the policy's own optimizer after `backward()`), brings all its events, on
        // `obj` as for a call of the instance.
        for oc in f.object_method_calls.iter() {
            let callees = self.object_call_methods(id, oc);
            if let [callee] = callees[..] {
                if callee != id {
                    let inner = self.compose_events(callee, depth + 1, memo, stack);
                    if inner.iter().any(FlatEvent::trains) {
                        for e in inner {
                            // (The call's other arguments are not recorded.)
                            let target = match &e.target {
                                Target::Param(i, _) if *i > 0 => Target::None,
                                t => on_object(&oc.target, t),
                            };
                            out.push(FlatEvent {
                                target,
                                depth: e.depth + 1,
                                site: oc.range,
                                ..e
                            });
                        }
                        continue;
                    }
                }
            }
            for callee in callees {
                if callee == id {
                    continue;
                }
                let inner = self.compose_events(callee, depth + 1, memo, stack);
                for e in inner {
                    if !matches!(
                        e.kind,
                        crate::flow::EventKind::Train | crate::flow::EventKind::Eval
                    ) {
                        continue;
                    }
                    let Target::SelfAttr(a) = &e.target else {
                        continue;
                    };
                    let Some(target) = extend_target(&oc.target, a) else {
                        continue;
                    };
                    out.push(FlatEvent {
                        target,
                        depth: e.depth + 1,
                        site: oc.range,
                        ..e
                    });
                }
            }
        }
        stack.pop();
        // Inside a call cycle the result is partial; it is memoised all the same (bounded).
        memo.insert(id, out.clone());
        out
    }

    // ----- resolution -----

    fn func(&self, f: FuncId) -> &FunctionSummary {
        &self.files[f.file as usize].functions[f.index as usize]
    }

    /// Is this project module class free of state, so that leaving an instance unregistered
    /// (in a plain list or dict attribute) loses nothing? True when it derives from
    /// `nn.Module` directly, registers no parameter or buffer of its own, behaves the same in
    /// train and eval mode, and every module class its methods build is a parameter-free
    /// torch layer (`nn.AvgPool1d`, `nn.ReLU`) or such a project class (a few levels deep).
    /// A class that builds anything else (a layer with weights, a project function's result,
    /// a pretrained model) is not.
    pub fn is_parameter_free_class(&self, c: ClassId) -> bool {
        self.parameter_free_class_at(c, 0)
    }

    /// Is this project class a loss: a class that derives from a loss (a torch or library
    /// loss such as `nn.CrossEntropyLoss`, `monai.losses.DiceLoss`, or a project loss class,
    /// in any file), or an `nn.Module` named as one (`class SoftDiceLoss(nn.Module)`) or whose
    /// methods compute one (`F.cross_entropy`, `nll_loss`, `kl_div`, ...)? Either way it runs
    /// no object stored on the instance other than losses (`self.dice(x, y)` in a combined
    /// loss; its own and inherited methods are fine): an unfinished model skeleton, or a
    /// wrapper around the encoders handed to `__init__` (`self.image_encoder(x)`) that also
    /// computes its training loss, is a model, not a loss.
    pub fn is_loss_class(&self, c: ClassId) -> bool {
        self.loss_class_at(c, 0)
    }

    /// Does class `c` run nothing stored on its instances that may hold parameters: every
    /// `self.<name>(...)` in its methods is one of its own or inherited methods (a sine
    /// generator, a fixed transform) or a parameter-free layer it holds (`self.pool =
    /// nn.MaxPool2d(3)`, `self.act = nn.ReLU()`, or such a project class), no encoder or
    /// backbone handed to `__init__`?
    pub fn runs_only_parameter_free_objects(&self, c: ClassId) -> bool {
        self.class_summary(c).self_calls.iter().all(|a| {
            self.method(c, a, 0).is_some()
                || match self.class_attr(c, a, 0).class {
                    Some(ClassRef::External(q)) => q.strip_prefix("torch.nn.").is_some_and(|n| {
                        crate::is_parameter_free_layer(crate::helpers::last_segment(n))
                    }),
                    Some(ClassRef::Project(held)) => {
                        held != c && self.is_parameter_free_class(held)
                    }
                    None => false,
                }
        })
    }

    /// Is class `c` an empty skeleton: it assigns no `self.<attr>` and builds nothing (an
    /// exercise's `class Net(nn.Module)` whose `__init__` is a `# TODO` and whose `forward`
    /// returns its input)? Such a class stands for the model still to be written.
    pub fn is_empty_skeleton(&self, c: ClassId) -> bool {
        let cs = self.class_summary(c);
        cs.attrs.is_empty() && cs.submodules.is_empty() && !cs.declares_state
    }

    fn loss_class_at(&self, c: ClassId, depth: u32) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        let cs = self.class_summary(c);
        // What it runs on `self`: its methods, or losses it holds (`self.dice(x, y)` in a
        // combined loss); anything else (an encoder, a backbone) makes it a model.
        let runs_model = cs.self_calls.iter().any(|a| {
            if self.method(c, a, 0).is_some() {
                return false;
            }
            match self.class_attr(c, a, 0).class {
                Some(ClassRef::Project(held)) => !self.loss_class_at(held, depth + 1),
                Some(ClassRef::External(q)) => !crate::is_known_loss_class(&q),
                None => true,
            }
        });
        if runs_model {
            return false;
        }
        let loss_base =
            cs.bases
                .iter()
                .any(|b| match self.entity_of_ref(c.file, b, None, depth + 1) {
                    Some(Entity::Class(bc)) => self.loss_class_at(bc, depth + 1),
                    Some(Entity::External(q)) => crate::is_known_loss_class(&q),
                    _ => false,
                });
        let named_loss = cs.name.ends_with("Loss");
        loss_base || ((cs.computes_loss || named_loss) && self.is_module(c))
    }

    fn parameter_free_class_at(&self, c: ClassId, depth: u32) -> bool {
        if depth > 3 {
            return false;
        }
        let cs = self.class_summary(c);
        if !cs.local_module || cs.declares_state || cs.mode_layer.is_some() {
            return false;
        }
        if self.mode[c.file as usize][c.index as usize].is_some() {
            return false;
        }
        let direct_module = |r: &Ref| matches!(r, Ref::Qualified(q) if &**q == "torch.nn.Module");
        if cs.bases.is_empty() || !cs.bases.iter().all(direct_module) {
            return false;
        }
        // A torch class instance: only parameter-free layers without train/eval behaviour.
        let torch_ok = |q: &str| {
            let last = q.rsplit('.').next().unwrap_or(q);
            q.starts_with("torch.nn.")
                && crate::is_parameter_free_layer(last)
                && crate::mode_layer(q).is_none()
        };
        // Its attributes: torch layers, project modules, plain values.
        let attrs_ok = cs.attrs.iter().all(|(_, _, v)| match v {
            Val::Torch(q) | Val::Loss(q) => torch_ok(q),
            Val::Call { callee, .. } => match callee {
                Ref::Qualified(q) => {
                    let last = q.rsplit('.').next().unwrap_or(q);
                    if last.starts_with(|ch: char| ch.is_ascii_uppercase()) {
                        torch_ok(q)
                    } else {
                        !(q.starts_with("torchvision.models.")
                            || q.starts_with("timm.")
                            || q.contains("from_pretrained")
                            || q.contains("load"))
                    }
                }
                r => matches!(
                    self.entity_of_ref(c.file, r, None, 0),
                    Some(Entity::Class(sub)) if self.parameter_free_class_at(sub, depth + 1)
                ),
            },
            // `self.kernel_size = kernel_size`, numbers, strings.
            Val::Param(_) | Val::None => true,
            _ => false,
        });
        if !attrs_ok {
            return false;
        }
        cs.submodules.iter().all(|r| match r {
            Ref::Qualified(q) => {
                let last = q.rsplit('.').next().unwrap_or(q);
                if last.starts_with(|ch: char| ch.is_ascii_uppercase()) {
                    // A class: only parameter-free torch layers without train/eval behaviour.
                    q.starts_with("torch.nn.")
                        && crate::is_parameter_free_layer(last)
                        && crate::mode_layer(q).is_none()
                } else {
                    // A function (`torch.cat`, `F.relu`), unless it builds a model.
                    !(q.starts_with("torchvision.models.")
                        || q.starts_with("timm.")
                        || q.contains("from_pretrained")
                        || q.contains("load"))
                }
            }
            r => match self.entity_of_ref(c.file, r, None, 0) {
                Some(Entity::Class(sub)) => self.parameter_free_class_at(sub, depth + 1),
                _ => false,
            },
        })
    }

    fn class_summary(&self, c: ClassId) -> &ClassSummary {
        &self.files[c.file as usize].classes[c.index as usize]
    }

    /// The function a call runs, and how many leading parameters the call does not pass
    /// (`self` for methods and constructors).
    fn callee_function(&self, caller: FuncId, callee: &Ref) -> Option<(FuncId, usize)> {
        match self.entity_of_ref(caller.file, callee, Some(caller), 0)? {
            Entity::Function(f) => {
                let g = self.func(f);
                let method = g.class.is_some() && g.params.first().is_some_and(|p| &**p == "self");
                let shift = usize::from(method && callee.binds_self());
                Some((f, shift))
            }
            Entity::Class(c) => {
                let init = self.method(c, "__init__", 0)?;
                Some((init, 1))
            }
            _ => None,
        }
    }

    /// The project function that call `ci` of `caller` runs (as the link resolved it).
    pub fn call_target(&self, caller: FuncId, ci: usize) -> Option<FuncId> {
        self.targets
            .get(caller.file as usize)?
            .get(caller.index as usize)?
            .get(ci)?
            .map(|(f, _)| f)
    }

    /// A method of a class or of its project base classes.
    pub fn method(&self, c: ClassId, name: &str, depth: u32) -> Option<FuncId> {
        if depth > MAX_DEPTH {
            return None;
        }
        let cs = self.class_summary(c);
        if let Some((_, i)) = cs.methods.iter().find(|(n, _)| &**n == name) {
            return Some(FuncId {
                file: c.file,
                index: *i,
            });
        }
        self.base_method(c, name, depth)
    }

    /// A method of the project base classes of `c` (in the order written, depth first), not of
    /// `c` itself: what `super().<name>(...)` in a method of `c` runs.
    fn base_method(&self, c: ClassId, name: &str, depth: u32) -> Option<FuncId> {
        self.class_summary(c).bases.iter().find_map(|b| {
            match self.entity_of_ref(c.file, b, None, depth + 1)? {
                Entity::Class(bc) => self.method(bc, name, depth + 1),
                _ => None,
            }
        })
    }

    /// Does a method of class `c` or of one of its project bases put attributes of `self`
    /// chosen by name in eval mode (`getattr(self, "net" + name).eval()`)? Then any module
    /// attribute of an instance may be in eval mode, whatever the attribute is called.
    pub fn evals_attributes_by_name(&self, c: ClassId) -> bool {
        self.evals_attrs_by_name_at(c, 0)
    }

    fn evals_attrs_by_name_at(&self, c: ClassId, depth: u32) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        let cs = self.class_summary(c);
        cs.evals_attrs_by_name
            || cs.bases.iter().any(|b| {
                matches!(self.entity_of_ref(c.file, b, None, depth + 1),
                    Some(Entity::Class(bc)) if self.evals_attrs_by_name_at(bc, depth + 1))
            })
    }

    /// Does `super().__init__()` with no arguments work in class `c`: does the initialiser of
    /// every base take no required argument? `nn.Module` and the containers (`Sequential`,
    /// `ModuleList`, `ModuleDict`, `ParameterList`, `ParameterDict`) take none; a project
    /// base's own `__init__` (or, without one, its bases) decides. `None` when a base is not
    /// known (another library's class, a name the model cannot resolve).
    pub fn base_init_takes_no_args(&self, c: ClassId) -> Option<bool> {
        self.base_init_no_args(c, 0)
    }

    fn base_init_no_args(&self, c: ClassId, depth: u32) -> Option<bool> {
        if depth > MAX_DEPTH {
            return None;
        }
        let cs = self.class_summary(c);
        if cs.bases.is_empty() {
            return None;
        }
        let mut all = true;
        for b in &cs.bases {
            let ok = match self.entity_of_ref(c.file, b, None, depth + 1)? {
                Entity::Class(bc) => {
                    let own = self
                        .class_summary(bc)
                        .methods
                        .iter()
                        .find(|(n, _)| &**n == "__init__")
                        .map(|(_, i)| *i);
                    match own {
                        Some(i) => {
                            self.files[bc.file as usize].functions[i as usize].required_params <= 1
                        }
                        None => self.base_init_no_args(bc, depth + 1)?,
                    }
                }
                Entity::External(q) => matches!(
                    &*q,
                    "torch.nn.Module"
                        | "torch.nn.modules.module.Module"
                        | "torch.nn.Sequential"
                        | "torch.nn.ModuleList"
                        | "torch.nn.ModuleDict"
                        | "torch.nn.ParameterList"
                        | "torch.nn.ParameterDict"
                )
                .then_some(true)?,
                _ => return None,
            };
            all &= ok;
        }
        Some(all)
    }

    fn entity_of_ref(
        &self,
        file: FileId,
        r: &Ref,
        ctx: Option<FuncId>,
        depth: u32,
    ) -> Option<Entity> {
        if depth > MAX_DEPTH * 2 {
            return None;
        }
        match r {
            Ref::Local(name) => self.name_in_file(file, name, depth + 1),
            Ref::Qualified(q) => self.qualified(file, q, depth + 1),
            Ref::Nested(i) => Some(Entity::Function(FuncId { file, index: *i })),
            Ref::DefAt(at) => {
                let f = &self.files[file as usize];
                match f.module_function_at(*at) {
                    Some(index) => Some(Entity::Function(FuncId { file, index })),
                    None => f
                        .classes
                        .iter()
                        .position(|c| c.range.start().to_u32() == *at)
                        .map(|i| {
                            Entity::Class(ClassId {
                                file,
                                index: i as u32,
                            })
                        }),
                }
            }
            Ref::Returned(factory) => {
                let Entity::Function(g) = self.entity_of_ref(file, factory, ctx, depth + 1)? else {
                    return None;
                };
                let Val::Ref(r) = &self.func(g).returns else {
                    return None;
                };
                match self.entity_of_ref(g.file, r, Some(g), depth + 1)? {
                    Entity::Function(h) => Some(Entity::Function(h)),
                    _ => None,
                }
            }
            Ref::Method(name) => {
                let ctx = ctx?;
                let class = self.func(ctx).class?;
                self.method(
                    ClassId {
                        file: ctx.file,
                        index: class,
                    },
                    name,
                    0,
                )
                .map(Entity::Function)
            }
            Ref::Super(name) => {
                let ctx = ctx?;
                let class = ClassId {
                    file: ctx.file,
                    index: self.func(ctx).class?,
                };
                self.base_method(class, name, depth).map(Entity::Function)
            }
            // Module classes' methods are the object-method calls' (`object_methods`).
            Ref::Held(class, name) => match self.entity_of_ref(file, class, ctx, depth + 1)? {
                Entity::Class(c) if !self.is_module(c) => {
                    self.method(c, name, 0).map(Entity::Function)
                }
                _ => None,
            },
        }
    }

    /// A module-level name of a file: its class, function, object, or what it imports.
    fn name_in_file(&self, file: FileId, name: &str, depth: u32) -> Option<Entity> {
        if depth > MAX_DEPTH * 2 {
            return None;
        }
        let f = &self.files[file as usize];
        if let Some(c) = f.class(name) {
            return Some(Entity::Class(ClassId { file, index: c }));
        }
        if let Some(g) = f.function(name) {
            return Some(Entity::Function(FuncId { file, index: g }));
        }
        if let Some(q) = f.import(name) {
            return self.qualified(file, q, depth + 1);
        }
        if f.global(name).is_some() {
            return Some(Entity::Global(file, name.into()));
        }
        for star in &f.star_imports {
            if let Some(Entity::Module(m)) = self.qualified(file, star, depth + 1) {
                if let Some(e) = self.name_in_file(m, name, depth + 1) {
                    return Some(e);
                }
            }
        }
        None
    }

    fn qualified(&self, file: FileId, q: &str, depth: u32) -> Option<Entity> {
        if depth > MAX_DEPTH * 2 {
            return None;
        }
        if summary_is_external(q) {
            return Some(Entity::External(q.into()));
        }
        // Memoised per file (linking resolves the same names many times).
        if let Some(cache) = self.qcache.get(file as usize) {
            if let Some(e) = cache.read().ok().and_then(|c| c.get(q).cloned()) {
                return e;
            }
            let e = self.qualified_uncached(file, q, depth);
            if let Ok(mut c) = cache.write() {
                c.insert(q.into(), e.clone());
            }
            return e;
        }
        self.qualified_uncached(file, q, depth)
    }

    fn qualified_uncached(&self, file: FileId, q: &str, depth: u32) -> Option<Entity> {
        let path = &self.files[file as usize].path;
        let Some(found) = self.resolver.resolve(path, q) else {
            return Some(Entity::External(q.into()));
        };
        let &target = self.by_path.get(&found.file)?;
        match found.rest.as_slice() {
            [] => Some(
                self.package_rebinding(&found.file, target, depth)
                    .unwrap_or(Entity::Module(target)),
            ),
            [name] => self.name_in_file(target, name, depth + 1),
            [name, rest @ ..] => {
                // `pkg.sub` as an attribute of a package `__init__` that imports it.
                match self.name_in_file(target, name, depth + 1)? {
                    Entity::Module(m) => {
                        let mut e = None;
                        for (i, part) in rest.iter().enumerate() {
                            e = self.name_in_file(m, part, depth + 1);
                            if i + 1 < rest.len() {
                                match &e {
                                    Some(Entity::Module(_)) => {}
                                    _ => return None,
                                }
                            }
                        }
                        e
                    }
                    Entity::Class(c) if rest.len() == 1 => {
                        self.method(c, &rest[0], 0).map(Entity::Function)
                    }
                    _ => None,
                }
            }
        }
    }

    /// `pkg.name` where `pkg/name.py` is a submodule and `pkg/__init__.py` binds `name` to
    /// something else (`from .accuracy import accuracy`): Python looks the attribute up on the
    /// package, whose `__init__` replaced the submodule with its own binding, so
    /// `from pkg import accuracy` is the function, not the module. `None` when the package does
    /// not rebind the name (or binds it to the submodule itself: `from . import accuracy`).
    fn package_rebinding(&self, module: &Path, target: FileId, depth: u32) -> Option<Entity> {
        if module.file_name()? == "__init__.py" {
            return None;
        }
        let name = module.file_stem()?.to_str()?;
        let init_path = module.parent()?.join("__init__.py");
        let &init = self.by_path.get(&init_path)?;
        let f = &self.files[init as usize];
        if let Some(c) = f.class(name) {
            return Some(Entity::Class(ClassId {
                file: init,
                index: c,
            }));
        }
        if let Some(g) = f.function(name) {
            return Some(Entity::Function(FuncId {
                file: init,
                index: g,
            }));
        }
        let q = f.import(name)?;
        // `from . import name` / `import pkg.name`: the binding is the submodule itself.
        let found = self.resolver.resolve(&init_path, q)?;
        if found.file == module && found.rest.is_empty() {
            return None;
        }
        match self.qualified(init, q, depth + 1)? {
            Entity::Module(m) if m == target => None,
            e => Some(e),
        }
    }

    /// What an instance of an entity (a call of a class, or an annotation) resolves to.
    fn instance_of(&self, e: Entity) -> Resolved {
        match e {
            Entity::Class(c) => {
                let kind = if self.module[c.file as usize][c.index as usize] {
                    Kind::Module
                } else {
                    Kind::Unknown
                };
                Resolved {
                    kind,
                    class: Some(ClassRef::Project(c)),
                    ..Resolved::default()
                }
            }
            Entity::External(q) => {
                let kind = match qualified_call_kind(&q) {
                    Kind::Unknown if annotation_kind(&q) != Kind::Unknown => annotation_kind(&q),
                    k => k,
                };
                let class = (kind == Kind::Module).then_some(ClassRef::External(q));
                Resolved {
                    kind,
                    class,
                    ..Resolved::default()
                }
            }
            _ => Resolved::default(),
        }
    }

    /// What a summary value resolves to, seen from function `ctx`.
    pub fn resolve_val(&self, ctx: FuncId, v: &Val, depth: u32) -> Resolved {
        self.resolve_val_in(ctx, v, depth, &|i| self.param_at(ctx, i))
    }

    fn param_at(&self, f: FuncId, i: usize) -> Resolved {
        PARAM_READS.with(|r| {
            if let Some(v) = r.borrow_mut().as_mut() {
                v.push(f);
            }
        });
        self.params
            .get(f.file as usize)
            .and_then(|p| p.get(f.index as usize))
            .and_then(|p| p.get(i))
            .map(|r| r.as_deref().cloned().unwrap_or_default())
            .unwrap_or_else(|| {
                // During the fixed point's first round `params` may be empty: usage only.
                Resolved::of_kind(
                    self.func(f)
                        .usage
                        .get(i)
                        .map(|u| u.kind())
                        .unwrap_or(Kind::Unknown),
                )
            })
    }

    /// What calling a module object `r` gives: the tensor properties of its class's `forward`
    /// (each element's, for a tuple `forward`), or of what calling a module returned by a
    /// project function gives. Nothing for anything else.
    pub fn call_output(&self, r: &Resolved) -> Resolved {
        if let Some(ClassRef::Project(c)) = &r.class {
            if let Some(out) = self.forward_output(*c) {
                return out;
            }
        }
        match &r.forward {
            Some((g, props)) => Resolved {
                props: props.clone(),
                props_from: Some(*g),
                ..Resolved::default()
            },
            None => Resolved::default(),
        }
    }

    /// What a project module class's `forward` returns, through project bases.
    fn forward_output(&self, c: ClassId) -> Option<Resolved> {
        if !self.is_module(c) {
            return None;
        }
        let (props, owner) = self.forward_props(c);
        let owner = owner?;
        let forward = self.method_of_class(owner, "forward")?;
        let with_props = |props: &[PropFact]| Resolved {
            props: props.to_vec(),
            props_from: (!props.is_empty()).then_some(forward),
            ..Resolved::default()
        };
        let els = &self.class_summary(owner).forward_elements;
        Some(Resolved {
            elements: (!els.is_empty()).then(|| els.iter().map(|e| with_props(e)).collect()),
            ..with_props(props)
        })
    }

    /// The function of a class's own method `name` (not through bases).
    fn method_of_class(&self, c: ClassId, name: &str) -> Option<FuncId> {
        self.class_summary(c)
            .methods
            .iter()
            .find(|(n, _)| &**n == name)
            .map(|&(_, index)| FuncId {
                file: c.file,
                index,
            })
    }

    /// The result of calling function `g`, with the properties its same-file dataflow
    /// summary knows (of the value, and of what calling a returned module gives).
    fn with_return_props(&self, mut r: Resolved, g: FuncId) -> Resolved {
        let gs = self.func(g);
        if r.props.is_empty() && !gs.return_props.is_empty() {
            r.props = gs.return_props.to_vec();
            r.props_from = Some(g);
        }
        if r.forward.is_none() && !gs.return_forward_props.is_empty() {
            r.forward = Some((g, gs.return_forward_props.to_vec()));
        }
        r.built_by.get_or_insert(g);
        for e in r.elements.iter_mut().flatten() {
            e.built_by.get_or_insert(g);
        }
        r
    }

    fn resolve_val_in(
        &self,
        ctx: FuncId,
        v: &Val,
        depth: u32,
        param: &dyn Fn(usize) -> Resolved,
    ) -> Resolved {
        if depth > MAX_DEPTH {
            return Resolved::default();
        }
        match v {
            Val::Unknown | Val::None => Resolved::default(),
            Val::Kind(k) => Resolved::of_kind(k.clone()),
            Val::Torch(q) => Resolved {
                kind: Kind::Module,
                class: Some(ClassRef::External(q.clone())),
                ..Resolved::default()
            },
            Val::Loss(q) => Resolved {
                kind: Kind::Module,
                class: Some(ClassRef::External(q.clone())),
                zero_dim_call: true,
                ..Resolved::default()
            },
            Val::Join(alts) => Resolved::one_of(
                alts.iter()
                    .map(|a| self.resolve_val_in(ctx, a, depth + 1, param))
                    .collect(),
            ),
            Val::Param(i) => param(*i as usize),
            Val::SelfAttr(a) => self.self_attr(ctx, a, depth + 1),
            Val::Tuple(els) => Resolved {
                elements: Some(
                    els.iter()
                        .map(|e| self.resolve_val_in(ctx, e, depth + 1, param))
                        .collect(),
                ),
                ..Resolved::default()
            },
            Val::Loader {
                shuffle, sampler, ..
            } => {
                let s = self.resolve_val_in(ctx, sampler, depth + 1, param);
                Resolved {
                    kind: Kind::DataLoader,
                    loader: Some(LoaderFacts {
                        shuffle: *shuffle,
                        sampler: s.kind,
                    }),
                    ..Resolved::default()
                }
            }
            // Uncalled classes and registries are nothing by themselves.
            Val::Ref(_) | Val::Dict(_) | Val::Item(_, None) => Resolved::default(),
            Val::Item(base, Some(i)) => self
                .resolve_val_in(ctx, base, depth + 1, param)
                .elements
                .and_then(|mut els| {
                    let i = usize::from(*i);
                    (i < els.len()).then(|| els.swap_remove(i))
                })
                .unwrap_or_default(),
            Val::Invoke(callee) => {
                let Some(es) = self.callees(ctx, callee, depth + 1) else {
                    return Resolved::default();
                };
                let mut alts = Vec::with_capacity(es.len());
                for e in es {
                    let r = self.entity_call(e, depth + 1);
                    if !r.is_known() {
                        return Resolved::default();
                    }
                    alts.push(r);
                }
                match alts.len() {
                    0 => Resolved::default(),
                    1 => alts.pop().unwrap_or_default(),
                    _ => Resolved::one_of(alts),
                }
            }
            Val::Output(inner) => {
                let r = match &**inner {
                    // A module-level object of the file (not a class or function: calling
                    // those builds or computes, which `Val::Call` describes).
                    Val::Ref(r) => match self.entity_of_ref(ctx.file, r, Some(ctx), 0) {
                        Some(Entity::Global(f, name)) => self.global(f, &name, depth + 1),
                        _ => Resolved::default(),
                    },
                    inner => self.resolve_val_in(ctx, inner, depth + 1, param),
                };
                self.call_output(&r)
            }
            Val::Call {
                callee,
                args,
                kwargs,
            } => {
                let Some(e) = self.entity_of_ref(ctx.file, callee, Some(ctx), 0) else {
                    // `self.net(x)` where `net` is no method: the object the attribute holds.
                    if let Ref::Method(m) = callee {
                        return self.call_output(&self.self_attr(ctx, m, depth + 1));
                    }
                    return Resolved::default();
                };
                match e {
                    Entity::Function(g) => {
                        let gs = self.func(g);
                        let shift = usize::from(
                            callee.binds_self()
                                && gs.params.first().is_some_and(|p| &**p == "self"),
                        );
                        let arg_of = |i: usize| -> Resolved {
                            let a = if i >= shift {
                                args.get(i - shift)
                            } else {
                                None
                            };
                            let a = a.or_else(|| {
                                let pname = gs.params.get(i)?;
                                kwargs.iter().find(|(k, _)| k == pname).map(|(_, v)| v)
                            });
                            match a {
                                Some(a) => self.resolve_val_in(ctx, a, depth + 1, param),
                                None => Resolved::default(),
                            }
                        };
                        let r = self.resolve_val_in(g, &gs.returns, depth + 1, &arg_of);
                        self.with_return_props(r, g)
                    }
                    Entity::Class(c) => {
                        let mut r = self.instance_of(Entity::Class(c));
                        if r.kind == Kind::Module && self.mode_layer(c).is_none() {
                            r.stored_mode = self.init_params_stored(c).iter().fold(
                                None,
                                |acc: Option<&'static str>, &(i, name)| {
                                    // Constructor arguments leave out `self`.
                                    let a = args.get(i - 1).or_else(|| {
                                        kwargs.iter().find(|(k, _)| &**k == name).map(|(_, v)| v)
                                    });
                                    let Some(a) = a else { return acc };
                                    let held = self.resolve_val_in(ctx, a, depth + 1, param);
                                    match (acc, self.value_mode_layer(&held)) {
                                        (Some(x), Some((y, _))) => Some(join_mode_layers(x, y)),
                                        (x, y) => x.or(y.map(|(k, _)| k)),
                                    }
                                },
                            );
                        }
                        r
                    }
                    e @ Entity::External(_) => self.instance_of(e),
                    Entity::Global(f, name) => self.global(f, &name, depth + 1),
                    Entity::Module(_) => Resolved::default(),
                }
            }
        }
    }

    /// What calling a project entity gives, its arguments unseen.
    fn entity_call(&self, e: Entity, depth: u32) -> Resolved {
        match e {
            Entity::Function(g) => {
                let gs = self.func(g);
                let r = self.resolve_val_in(g, &gs.returns, depth + 1, &|_| Resolved::default());
                self.with_return_props(r, g)
            }
            e @ (Entity::Class(_) | Entity::External(_)) => self.instance_of(e),
            Entity::Global(f, name) => self.global(f, &name, depth),
            Entity::Module(_) => Resolved::default(),
        }
    }

    /// The classes and builders a computed callee may be ([`Val::Invoke`]), seen from `ctx`:
    /// an uncalled class or function, the values of a registry that no file changes in place,
    /// what a factory returns, on every path. `None` when any of them is not known (a
    /// parameter, `getattr(module, name)`, a registry filled elsewhere), or when there are more
    /// than [`summary::MAX_JOIN`].
    pub(crate) fn callees(&self, ctx: FuncId, v: &Val, depth: u32) -> Option<Vec<Entity>> {
        if depth > MAX_DEPTH {
            return None;
        }
        let mut out: Vec<Entity> = Vec::new();
        let mut add = |es: Vec<Entity>| {
            for e in es {
                if !out.contains(&e) {
                    out.push(e);
                }
            }
        };
        match v {
            Val::Ref(r) => match self.entity_of_ref(ctx.file, r, Some(ctx), 0)? {
                e @ (Entity::Class(_) | Entity::Function(_)) => add(vec![e]),
                Entity::External(q) => {
                    if qualified_call_kind(&q) != Kind::Module {
                        return None;
                    }
                    add(vec![Entity::External(q)]);
                }
                // A module-level object named uncalled: a registry's values.
                Entity::Global(..) | Entity::Module(_) => return None,
            },
            Val::Join(alts) => {
                for a in alts {
                    add(self.callees(ctx, a, depth + 1)?);
                }
            }
            Val::Item(base, None) => {
                let (owner, values) = self.registry_values(ctx, base, depth + 1)?;
                for a in values {
                    add(self.callees(owner, a, depth + 1)?);
                }
            }
            Val::Call { callee, .. } => match self.entity_of_ref(ctx.file, callee, Some(ctx), 0) {
                // A factory: the classes it returns uncalled.
                Some(Entity::Function(g)) => {
                    add(self.callees(g, &self.func(g).returns, depth + 1)?);
                }
                // `MODELS.get(name)` of a registry imported from another module.
                None => {
                    let Ref::Qualified(q) = callee else {
                        return None;
                    };
                    let registry = q.strip_suffix(".get")?;
                    let base = Val::Ref(Ref::Qualified(registry.into()));
                    let (owner, values) = self.registry_values(ctx, &base, depth + 1)?;
                    for a in values {
                        add(self.callees(owner, a, depth + 1)?);
                    }
                }
                Some(_) => return None,
            },
            _ => return None,
        }
        (!out.is_empty() && out.len() <= summary::MAX_JOIN).then_some(out)
    }

    /// The values of a registry (a dict literal of classes or builders, [`Val::Dict`]) that a
    /// value names, and the function they are seen from: a literal, or a module-level one of
    /// any file that no file changes in place (`MODELS[k] = cls`, `MODELS.update(...)`).
    fn registry_values<'v>(
        &'v self,
        ctx: FuncId,
        v: &'v Val,
        depth: u32,
    ) -> Option<(FuncId, &'v [Val])> {
        match v {
            Val::Dict(vs) => Some((ctx, vs)),
            Val::Ref(r) => {
                let Entity::Global(file, name) =
                    self.entity_of_ref(ctx.file, r, Some(ctx), depth)?
                else {
                    return None;
                };
                if self.mutated_registries.contains(&name) {
                    return None;
                }
                match self.files[file as usize].global(&name)? {
                    Val::Dict(vs) => Some((FuncId { file, index: 0 }, vs)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// What the module-level name `name` of file `file` holds for module-level code at `at`,
    /// in a notebook that binds it in more than one cell ([`summary::FileSummary::rebound`]): the value
    /// of the last assignment above `at`, when that is a top-level statement (cells run in
    /// order); `None` when the name is bound once, in a `.py` file, or last in a loop or
    /// branch (then [`Self::local_value`] joins every binding). Like [`Self::local_value`],
    /// only an object only the model resolves ([`Val::is_computed`]).
    pub fn global_value_at(&self, file: FileId, name: &str, at: u32) -> Option<Resolved> {
        let f = self.files.get(file as usize)?;
        if f.rebound.is_empty() {
            return None;
        }
        let from = f.rebound.partition_point(|(n, _, _, _)| &**n < name);
        let (_, _, top, v) = f.rebound[from..]
            .iter()
            .take_while(|(n, _, _, _)| &**n == name)
            .take_while(|(_, start, _, _)| *start < at)
            .last()?;
        (*top && v.is_computed()).then(|| self.resolve_val(FuncId { file, index: 0 }, v, 0))
    }

    /// What a local name of function `f` (of the module body when `f.index` is 0) holds,
    /// when it is bound to an object only the model resolves ([`Val::is_computed`]: `enc` of
    /// `enc, dec = load_model(path)`, `model = MODELS[args.arch](...)`). `None` for other
    /// names (the file's own analyses know them).
    pub fn local_value(&self, f: FuncId, name: &str) -> Option<Resolved> {
        let v = if f.index == 0 {
            self.files.get(f.file as usize)?.global(name)?
        } else {
            let g = self
                .files
                .get(f.file as usize)?
                .functions
                .get(f.index as usize)?;
            let i = g.locals.binary_search_by(|(n, _)| (**n).cmp(name)).ok()?;
            &g.locals[i].1
        };
        v.is_computed_local().then(|| self.resolve_val(f, v, 0))
    }

    /// What `self.<attr>` holds in instances of a class ([`ProjectModel::class_attr`]), when
    /// the class assigns it an object only the model resolves ([`Val::is_computed`]).
    pub fn computed_attr(&self, c: ClassId, attr: &str) -> Option<Resolved> {
        self.class_summary(c)
            .attrs
            .iter()
            .any(|(a, _, v)| &**a == attr && v.is_computed())
            .then(|| self.class_attr(c, attr, 0))
    }

    /// The names function `f` binds to values: the module's globals when `f.index` is 0,
    /// else its computed locals ([`FunctionSummary::locals`] holds only those).
    fn bound_values(&self, f: FuncId) -> &[(Box<str>, Val)] {
        let Some(file) = self.files.get(f.file as usize) else {
            return &[];
        };
        if f.index == 0 {
            &file.globals
        } else {
            file.functions
                .get(f.index as usize)
                .map_or(&[], |g| &g.locals[..])
        }
    }

    /// Every local name of function `f` (the module body when `f.index` is 0) that
    /// [`ProjectModel::local_value`] answers for, with its value.
    pub fn computed_locals(&self, f: FuncId) -> Vec<(&str, Resolved)> {
        self.bound_values(f)
            .iter()
            .filter(|(_, v)| v.is_computed_local())
            .map(|(n, v)| (&**n, self.resolve_val(f, v, 0)))
            .collect()
    }

    /// Does function `f` (the module body when `f.index` is 0) bind any local name that
    /// [`ProjectModel::local_value`] answers for?
    pub fn has_computed_locals(&self, f: FuncId) -> bool {
        self.bound_values(f)
            .iter()
            .any(|(_, v)| v.is_computed_local())
    }

    fn global(&self, file: FileId, name: &str, depth: u32) -> Resolved {
        match self.files[file as usize].global(name) {
            Some(v) => self.resolve_val(FuncId { file, index: 0 }, &v.clone(), depth + 1),
            None => Resolved::default(),
        }
    }

    /// `self.<attr>` in a method: every assignment in the class (and its project bases)
    /// resolved in its method, joined.
    fn self_attr(&self, ctx: FuncId, attr: &str, depth: u32) -> Resolved {
        let Some(class) = self.func(ctx).class else {
            return Resolved::default();
        };
        self.class_attr(
            ClassId {
                file: ctx.file,
                index: class,
            },
            attr,
            depth,
        )
    }

    /// What `<object>.<attr>` holds, for an object the model resolved: for an instance of a
    /// project class, what the class assigns to `self.<attr>` (`vae.decoder` of `vae =
    /// VAE()`, whose `__init__` sets `self.decoder = Decoder()`); `None` for other objects
    /// (a library class's attributes are not modelled).
    pub fn attr_of(&self, object: &Resolved, attr: &str) -> Option<Resolved> {
        match object.class {
            Some(ClassRef::Project(c)) => Some(self.class_attr(c, attr, 0)),
            _ => None,
        }
    }

    /// What `self.<attr>` holds in instances of a class.
    pub fn class_attr(&self, c: ClassId, attr: &str, depth: u32) -> Resolved {
        if depth > MAX_DEPTH {
            return Resolved::default();
        }
        let cs = self.class_summary(c);
        let mut acc: Option<Resolved> = None;
        for (a, m, v) in &cs.attrs {
            // `self.model = None` in `__init__`, built later: a placeholder, whichever
            // assignment comes first.
            if &**a != attr || matches!(v, Val::None) {
                continue;
            }
            let r = self.resolve_val(
                FuncId {
                    file: c.file,
                    index: *m,
                },
                v,
                depth + 1,
            );
            acc = Some(match acc {
                None => r,
                Some(prev) => {
                    // Assignments must agree (a later `self.model = None` does not count).
                    if !r.is_known() || prev == r {
                        prev
                    } else {
                        Resolved::default()
                    }
                }
            });
        }
        match acc {
            Some(r) if r.is_known() => return r,
            Some(_) => {}
            None => {
                for b in &cs.bases {
                    if let Some(Entity::Class(bc)) = self.entity_of_ref(c.file, b, None, depth + 1)
                    {
                        let r = self.class_attr(bc, attr, depth + 1);
                        if r.is_known() {
                            return r;
                        }
                    }
                }
            }
        }
        // Nothing the class or its bases assign tells (`self.model = build(cfg)` of an
        // unresolved factory): how the class's methods use it (`self.optimizer.zero_grad()`
        // and `.step()`, `self.model(x)` and `.parameters()`).
        Resolved {
            kind: self.attr_usage(c, attr).kind(),
            ..Resolved::default()
        }
    }

    /// How the methods of class `c` use `self.<attr>`, joined.
    fn attr_usage(&self, c: ClassId, attr: &str) -> Usage {
        let f = &self.files[c.file as usize];
        let mut u = Usage::default();
        for &(_, m) in &self.class_summary(c).methods {
            if let Some(s) = f.functions.get(m as usize) {
                for (n, bits) in &s.attr_usage {
                    if &**n == attr {
                        u.0 |= bits.0;
                    }
                }
            }
        }
        u
    }

    // ----- queries -----

    /// Is the class an `nn.Module` (through bases in any file)?
    pub fn is_module(&self, c: ClassId) -> bool {
        self.module[c.file as usize][c.index as usize]
    }

    /// Is the class a `Dataset`?
    pub fn is_dataset(&self, c: ClassId) -> bool {
        self.dataset[c.file as usize][c.index as usize]
    }

    /// The train/eval-sensitive layer families of a module class (its own, its sub-modules'
    /// and its bases', joined: `Dropout and BatchNorm`), and the class (itself, a sub-module
    /// or a base) where the first is built.
    pub fn mode_layer(&self, c: ClassId) -> Option<(&'static str, ClassId)> {
        self.mode[c.file as usize][c.index as usize]
    }

    /// The train/eval-sensitive layer family of an instance of class `c` that nothing ever
    /// switched with `train()`: [`ProjectModel::mode_layer`] leaving out the sub-modules its
    /// `__init__` (or a sub-module's) puts in eval mode ([`summary::Untrained`]): a model
    /// whose only BatchNorm layers come from a pretrained network loaded and put in eval mode
    /// in its constructor behaves the same in both modes until something calls `train()`.
    pub fn mode_layer_if_never_trained(&self, c: ClassId) -> Option<(&'static str, ClassId)> {
        self.mode_untrained(c, 0)
    }

    fn mode_untrained(&self, c: ClassId, depth: u32) -> Option<(&'static str, ClassId)> {
        // Nothing train/eval-sensitive at all.
        let found = self.mode_layer(c)?;
        let cs = self.class_summary(c);
        let u = cs.untrained.as_deref();
        if (u.is_none() && cs.mode_layer.is_some()) || depth > MAX_DEPTH {
            return Some(found);
        }
        // Its own layers built outside what it holds in eval mode, and those of the
        // sub-modules and bases (every family, at the first found).
        let own = u.and_then(|u| u.layer).map(|(k, _)| (k, c));
        let subs = u.map_or(&cs.submodules[..], |u| &u.builds[..]);
        own.into_iter()
            .chain(
                subs.iter()
                    .chain(&cs.bases)
                    .filter_map(|r| self.entity_of_ref(c.file, r, None, depth + 1))
                    .filter_map(|e| match e {
                        Entity::Class(sc) if sc != c => self.mode_untrained(sc, depth + 1),
                        Entity::External(q) => mode_layer(&q).map(|k| (k, c)),
                        Entity::Function(f) => self.function_mode(f),
                        _ => None,
                    }),
            )
            .reduce(|(k, at), (m, _)| (join_mode_layers(k, m), at))
    }

    /// May constructing class `c` give it trained weights: its `__init__` (or a base's) calls
    /// a loader (`torch.load`, `load_state_dict`, `from_pretrained`, `load_state_dict_from_url`)
    /// or a library model builder (torchvision, timm, torch.hub, Hugging Face), or a project
    /// class or function that may? Unknown callees count as no.
    pub fn constructor_may_load_weights(&self, c: ClassId) -> bool {
        self.class_may_load(c, 0)
    }

    fn class_may_load(&self, c: ClassId, depth: u32) -> bool {
        if depth > MAX_DEPTH {
            return true;
        }
        let Some(init) = self.method(c, "__init__", 0) else {
            return false;
        };
        let f = self.func(init);
        let loader = |q: &str| {
            let last = q.rsplit('.').next().unwrap_or(q);
            matches!(
                last,
                "load"
                    | "load_state_dict"
                    | "from_pretrained"
                    | "load_state_dict_from_url"
                    | "load_url"
            ) || q.starts_with("torchvision.models.")
                || q.starts_with("timm.")
                || q.starts_with("torch.hub.")
                || q.starts_with("transformers.")
        };
        let calls_loader = f.calls.iter().any(|call| match &call.callee {
            Ref::Qualified(q) => loader(q),
            Ref::Method(m) => loader(m),
            _ => false,
        }) || f.object_method_calls.iter().any(|m| loader(&m.name));
        calls_loader
            || f.builds.iter().any(|r| {
                matches!(r, Ref::Qualified(q) if loader(q))
                    || match self.entity_of_ref(c.file, r, Some(init), depth + 1) {
                        Some(Entity::Class(sc)) => sc != c && self.class_may_load(sc, depth + 1),
                        Some(Entity::Function(_)) => true,
                        _ => false,
                    }
            })
    }

    /// The `__init__` parameter that sets the rate of every train/eval-sensitive layer of
    /// class `c` (all of them `nn.Dropout(<parameter>)`, no project sub-module, no project
    /// base class): an instance built with a rate of 0 is not train/eval-sensitive. See
    /// [`ClassSummary::dropout_rate`].
    pub fn dropout_rate(&self, c: ClassId) -> Option<&DropoutRate> {
        let cs = self.class_summary(c);
        let rate = cs.dropout_rate.as_deref()?;
        let external_bases = cs.bases.iter().all(|b| {
            matches!(
                self.entity_of_ref(c.file, b, None, 0),
                Some(Entity::External(_))
            )
        });
        external_bases.then_some(rate)
    }

    /// The train/eval-sensitive layer family of a value's class (see
    /// [`ProjectModel::mode_layer`]; a library class by name), with the project class where
    /// the layer is built. For one of several classes ([`Resolved::alternatives`]: a model
    /// chosen through a registry, a factory with one return per class), only when every one
    /// of them has such layers: the first's family and class.
    pub fn value_mode_layer(&self, r: &Resolved) -> Option<(&'static str, Option<ClassId>)> {
        let one = |r: &Resolved| match r.class.as_ref()? {
            ClassRef::Project(c) => self
                .mode_layer(*c)
                .map(|(k, at)| (k, Some(at)))
                .or_else(|| r.stored_mode.map(|k| (k, Some(*c)))),
            ClassRef::External(_) if self.library_head_replaced(r) => None,
            // A torch container a project function builds and returns (`def build_model():
            // return nn.Sequential(..., nn.Dropout(0.5), ...)`): the layers that function
            // builds.
            ClassRef::External(q)
                if matches!(
                    &**q,
                    "torch.nn.Sequential" | "torch.nn.ModuleList" | "torch.nn.ModuleDict"
                ) =>
            {
                r.built_by
                    .and_then(|f| self.func(f).mode_layer)
                    .map(|(k, _)| (k, None))
            }
            // A library model: its own layers, with those its builder added (a ResNet whose
            // `fc` the project function replaced by a head with Dropout).
            ClassRef::External(q) => mode_layer(q).map(|k| {
                let added = r.built_by.and_then(|f| self.func(f).mode_layer);
                (added.map_or(k, |(m, _)| join_mode_layers(k, m)), None)
            }),
        };
        if r.class.is_some() {
            return one(r);
        }
        let alts = r.alternatives.as_ref()?;
        let mut first = None;
        for a in alts {
            let m = one(a)?;
            first.get_or_insert(m);
        }
        first
    }

    /// Is the value a library model that the project function returning it stripped of its
    /// only train/eval-sensitive layers ([`FunctionSummary::returns_head_replaced`]: a VGG
    /// whose `classifier` became `nn.Linear(n, 2)`)?
    pub fn library_head_replaced(&self, r: &Resolved) -> bool {
        matches!(&r.class, Some(ClassRef::External(q)) if crate::library_mode_head(q).is_some())
            && r.built_by
                .is_some_and(|f| self.func(f).returns_head_replaced)
    }

    /// Is the value a module known to behave the same in train and eval mode: an instance of
    /// a project module class without train/eval-sensitive layers that stores no constructor
    /// argument (the arguments are not seen here; with them in view, a call is
    /// [`crate::modes::constructs_mode_free`]'s question), or a torch layer or container
    /// (`nn.Sequential(nn.Linear(...), nn.ReLU(), ...)`) that a project function builds and
    /// returns (also as an element of a returned tuple) while building no train/eval-sensitive
    /// layer or pretrained model ([`FunctionSummary::mode_layer`]), calling no project class or
    /// builder, reading no module-level module and returning none of its parameters? Anything
    /// else (a library model, a module handed in) is not known here, except a library model
    /// whose builder replaced its only such layers ([`ProjectModel::library_head_replaced`]).
    pub fn value_mode_free(&self, r: &Resolved) -> bool {
        if self.library_head_replaced(r) {
            return true;
        }
        // An instance of a project module class without such layers (its own, its
        // sub-modules', its bases') that stores no module handed to its constructor.
        if let Some(ClassRef::Project(c)) = &r.class {
            // A stored parameter that every constructor call of the project passes a literal
            // (`SkipGram(context_size=2, ...)` keeping `self.context_size`) holds no module.
            let init = self.method(*c, "__init__", 0);
            return self.is_module(*c)
                && self.mode_layer(*c).is_none()
                && self
                    .init_params_stored(*c)
                    .iter()
                    .all(|&(i, _)| init.is_some_and(|f| self.param_literals(f, i).is_some()));
        }
        let (Some(ClassRef::External(q)), Some(g)) = (&r.class, r.built_by) else {
            return false;
        };
        if !q.starts_with("torch.nn.") || mode_layer(q).is_some() {
            return false;
        }
        let s = self.func(g);
        s.mode_layer.is_none()
            && s.builds.is_empty()
            && s.global_module_uses.is_empty()
            && self.grad_flow(g).params.iter().all(|p| !p.returned)
    }

    /// The parameters of a class's own `__init__` that it stores whole on the instance
    /// (`self.encoder = encoder`): by position (`self` is 0) and name. What a caller hands in
    /// there becomes a sub-module of the instance, so its train/eval-sensitive layers are the
    /// instance's too (`SimCLR(resnet18(), 512)`), which the class alone cannot tell.
    pub fn init_params_stored(&self, c: ClassId) -> Vec<(usize, &str)> {
        let cs = self.class_summary(c);
        let Some(&(_, init)) = cs.methods.iter().find(|(n, _)| &**n == "__init__") else {
            return Vec::new();
        };
        let f = &self.files[c.file as usize].functions[init as usize];
        let mut out: Vec<(usize, &str)> = Vec::new();
        for (_, m, v) in &cs.attrs {
            if let (true, Val::Param(i)) = (*m == init, v) {
                let i = usize::from(*i);
                if let Some(name) = f.params.get(i).filter(|_| i > 0) {
                    if !out.iter().any(|(j, _)| *j == i) {
                        out.push((i, name));
                    }
                }
            }
        }
        out
    }

    /// When the class's `forward` returns a tuple: each element's tensor properties, through
    /// project bases (the class whose `forward` it is, as for [`ProjectModel::forward_props`]).
    pub fn forward_element_props(&self, c: ClassId) -> &[Vec<PropFact>] {
        match self.forward_props(c).1 {
            Some(owner) => &self.class_summary(owner).forward_elements,
            None => &[],
        }
    }

    /// What the class's `forward` returns (tensor properties), through project bases.
    pub fn forward_props(&self, c: ClassId) -> (&[PropFact], Option<ClassId>) {
        let mut cur = c;
        for _ in 0..MAX_DEPTH {
            let cs = self.class_summary(cur);
            if cs.methods.iter().any(|(n, _)| &**n == "forward") {
                return (&cs.forward_props, Some(cur));
            }
            let next =
                cs.bases
                    .iter()
                    .find_map(|b| match self.entity_of_ref(cur.file, b, None, 0) {
                        Some(Entity::Class(bc)) => Some(bc),
                        _ => None,
                    });
            match next {
                Some(n) => cur = n,
                None => break,
            }
        }
        (&[], None)
    }

    /// A class's name and file.
    pub fn class_name(&self, c: ClassId) -> (&str, &Path) {
        (
            &self.class_summary(c).name,
            &self.files[c.file as usize].path,
        )
    }

    /// A function's summary.
    pub fn function(&self, f: FuncId) -> &FunctionSummary {
        self.func(f)
    }

    /// What parameter `i` of a function holds (call sites, else annotation or usage).
    pub fn param(&self, f: FuncId, i: usize) -> Resolved {
        self.param_at(f, i)
    }

    /// How many call sites in the project call the function, and how many of them run with
    /// autograd off (`with torch.no_grad():` or a no-grad decorated caller). A call that
    /// passes the function as a value to a callee that calls it counts as a call site of the
    /// function (`with torch.no_grad(): mini_batch(val_loader, val_step_fn)`).
    pub fn call_sites_no_grad(&self, f: FuncId) -> (usize, usize) {
        let direct = self
            .sites
            .get(&f)
            .into_iter()
            .flatten()
            .map(|&(c, i, _)| (c, i));
        let passed = self.passed.get(&f).into_iter().flatten().copied();
        let (mut sites, mut no_grad) = (0, 0);
        for (caller, ci) in direct.chain(passed) {
            sites += 1;
            if self.func(caller).calls[ci].no_grad || self.func(caller).no_grad {
                no_grad += 1;
            }
        }
        (sites, no_grad)
    }

    /// The caller that makes `f` an evaluation helper: `f` is called in the project, and every
    /// call site is evaluation — in a function named like an evaluation routine
    /// ([`crate::regions::is_eval_name`]: `predict`, `validate`, ...) or in a function that is
    /// itself only called for evaluation (two levels up) — and neither `f` nor any of those
    /// callers calls `backward()` or steps an optimizer. The name of one such evaluation-named
    /// caller. Calls the model cannot resolve (callbacks, other projects) are not seen; a
    /// call site under `no_grad` alone does not count (a target network's forward in a
    /// training step runs there too).
    pub fn evaluation_caller(&self, f: FuncId) -> Option<&str> {
        self.evaluation_caller_at(f, 0)
    }

    fn evaluation_caller_at(&self, f: FuncId, depth: u8) -> Option<&str> {
        let trains = |g: FuncId| {
            self.func(g).events.iter().any(|e| {
                matches!(
                    e.kind,
                    EventKind::Backward | EventKind::Step | EventKind::ZeroGrad
                )
            })
        };
        if depth > 2 || trains(f) {
            return None;
        }
        let list = self.sites.get(&f)?;
        let mut named = None;
        for &(caller, _, _) in list {
            if caller == f || trains(caller) {
                return None;
            }
            let c = self.func(caller);
            let name = if crate::regions::is_eval_name(&c.name) {
                &*c.name
            } else {
                self.evaluation_caller_at(caller, depth + 1)?
            };
            named.get_or_insert(name);
        }
        named
    }

    /// The constant values parameter `i` of `f` takes across the project's call sites: per
    /// call, the literal it passes (by position, after the `shift` parameters bound before
    /// them, such as `self`; or by keyword), or the parameter's default when the call leaves it
    /// out. Deduplicated, in call-site order. `None` when `f` has no call sites, or when some
    /// call passes a value that is not a literal, spreads `*args` / `**kwargs`, or relies on a
    /// default that is not a literal; and for `*args` / `**kwargs` themselves. Calls the model
    /// cannot resolve (through a callback, from outside the project) are not seen.
    pub fn param_literals(&self, f: FuncId, i: usize) -> Option<Vec<Lit>> {
        let list = self.sites.get(&f)?;
        let mut out: Vec<Lit> = Vec::new();
        for &(caller, ci, shift) in list {
            let value = self.literal_passed(f, i, caller, ci, shift)?;
            if !out.contains(value) {
                out.push(value.clone());
            }
        }
        (!out.is_empty()).then_some(out)
    }

    /// The literal that call `ci` of `caller` passes as parameter `i` of `f` (by position,
    /// after `shift` parameters, or by keyword), or the parameter's literal default when the
    /// call leaves it out. `None` when it is not a literal, the call spreads `*args` /
    /// `**kwargs`, or the parameter is variadic.
    fn literal_passed(
        &self,
        f: FuncId,
        i: usize,
        caller: FuncId,
        ci: usize,
        shift: usize,
    ) -> Option<&Lit> {
        let callee = self.func(f);
        let name = callee.params.get(i)?;
        let default = callee.param_defaults.get(i)?;
        if *default == ParamDefault::Variadic {
            return None;
        }
        let call = &self.func(caller).calls[ci];
        if call.spreads || i < shift {
            return None;
        }
        let by_position = (i < usize::from(callee.positional_params))
            .then(|| call.arg_lits.get(i - shift))
            .flatten();
        let by_keyword = call
            .kwarg_lits
            .iter()
            .find(|(kw, _)| kw == name)
            .map(|(_, v)| v);
        let value = match (by_position, by_keyword, default) {
            (Some(v), _, _) | (None, Some(v), _) => v,
            (None, None, ParamDefault::Given(d)) => d,
            _ => return None,
        };
        (*value != Lit::Unknown).then_some(value)
    }

    /// Does every call the project makes of `f` that may pass a true value for parameter `i`
    /// (a literal that is not `False`/`0`/`None`, or anything not a literal) run with autograd
    /// off (`with torch.no_grad():` or a no-grad decorated caller)? False when `f` has no call
    /// sites in the project, and when no call passes a true value.
    pub fn param_true_only_without_grad(&self, f: FuncId, i: usize) -> bool {
        let Some(list) = self.sites.get(&f) else {
            return false;
        };
        let falsy = |l: &Lit| matches!(l, Lit::Bool(false) | Lit::Int(0) | Lit::None);
        let mut any_true = false;
        for &(caller, ci, shift) in list {
            if self
                .literal_passed(f, i, caller, ci, shift)
                .is_some_and(falsy)
            {
                continue;
            }
            any_true = true;
            if !(self.func(caller).calls[ci].no_grad || self.func(caller).no_grad) {
                return false;
            }
        }
        any_true
    }

    /// Does parameter `i` of `f` hold a falsy literal on every call the project makes? Its
    /// default is `False` / `0` / `None`, and every call site passes a falsy literal or
    /// leaves the default out; a function without call sites in the project counts (no call
    /// passes anything else). Calls the model cannot resolve are not seen.
    pub fn param_always_falsy(&self, f: FuncId, i: usize) -> bool {
        let falsy = |l: &Lit| matches!(l, Lit::Bool(false) | Lit::Int(0) | Lit::None);
        let default_falsy = matches!(
            self.func(f).param_defaults.get(i),
            Some(ParamDefault::Given(d)) if falsy(d)
        );
        if !default_falsy {
            return false;
        }
        if self.sites.get(&f).is_none_or(|l| l.is_empty()) {
            return true;
        }
        self.param_literals(f, i)
            .is_some_and(|vals| vals.iter().all(falsy))
    }

    /// Does some caller of `f` switch the object it passes as parameter `i` to eval mode
    /// before the call (`model.eval(); evaluate(model, loader)`)? `None` when `f` has no
    /// call sites in the project.
    pub fn param_evaled_by_callers(&self, f: FuncId, i: usize) -> Option<bool> {
        let list = self.sites.get(&f)?;
        let mut any = false;
        for &(caller, ci, shift) in list {
            let g = self.func(caller);
            let call = &g.calls[ci];
            let Some(key) = self.arg_key(f, call, i, shift) else {
                continue;
            };
            let matches = |t: &Target| match t {
                Target::Param(j, path) => {
                    path.is_empty() && g.params.get(*j as usize).is_some_and(|p| **p == *key)
                }
                Target::SelfAttr(a) => key.strip_prefix("self.") == Some(&**a),
                Target::Local(k) | Target::Global(k) => **k == *key,
                Target::None => false,
            };
            if self.events(caller).iter().any(|e| {
                e.kind == EventKind::Eval
                    && e.site.start() < call.range.start()
                    && matches(&e.target)
            }) {
                any = true;
            }
        }
        Some(any)
    }

    /// Does some caller that builds an instance of class `c` pass an object it put in eval mode
    /// before the call, which `__init__` stores as `self.<attr>` (`net.eval(); ctl =
    /// Controller(net)`, with `self.net = net` in `Controller.__init__`), while no method of the
    /// class switches `self.<attr>` back to training mode? `None` when `__init__` stores no
    /// parameter there or the class is never built in the project.
    pub fn attr_evaled_by_constructors(&self, c: ClassId, attr: &str) -> Option<bool> {
        let cs = self.class_summary(c);
        let mut out = None;
        for (a, m, v) in &cs.attrs {
            let Val::Param(i) = v else { continue };
            let init = FuncId {
                file: c.file,
                index: *m,
            };
            if &**a != attr || &*self.func(init).name != "__init__" {
                continue;
            }
            match self.param_evaled_by_callers(init, usize::from(*i)) {
                Some(true) => out = Some(true),
                Some(false) if out.is_none() => out = Some(false),
                _ => {}
            }
        }
        if out != Some(true) {
            return out;
        }
        let retrains = cs.methods.iter().any(|(_, m)| {
            let f = FuncId {
                file: c.file,
                index: *m,
            };
            self.events(f).iter().any(|e| {
                e.kind == EventKind::Train
                    && matches!(&e.target, Target::SelfAttr(t) if &**t == attr)
            })
        });
        Some(!retrains)
    }

    /// The object key (`model`, `self.net`) a call of `f` passes as parameter `i`, by position
    /// (`shift` parameters are bound before the positional ones: `self`) or by keyword.
    fn arg_key(&self, f: FuncId, call: &SumCall, i: usize, shift: usize) -> Option<Box<str>> {
        if i >= shift {
            if let Some(k) = call.arg_keys.get(i - shift) {
                return k.clone();
            }
        }
        let name = self.func(f).params.get(i)?;
        call.kwarg_keys
            .iter()
            .find(|(kw, _)| kw == name)
            .map(|(_, k)| k.clone())
    }

    /// Does some caller of `f` freeze the object it passes as parameter `i` before the call
    /// (`model.requires_grad_(False); evaluate(model, loader)`)?
    pub fn param_frozen_by_callers(&self, f: FuncId, i: usize) -> bool {
        let Some(list) = self.sites.get(&f) else {
            return false;
        };
        list.iter().any(|&(caller, ci, shift)| {
            let g = self.func(caller);
            let call = &g.calls[ci];
            self.arg_key(f, call, i, shift).is_some_and(|key| {
                g.frozen.iter().any(|(n, span)| {
                    **n == *key
                        && span.start() < call.range.start()
                        && call.range.start() <= span.end()
                })
            })
        })
    }

    /// Does every call of `f` in the project leave parameter `i` at its default: no positional
    /// argument reaches it, no keyword names it, no `*args` / `**kwargs` splat could? `false`
    /// when the project never calls `f` (a library entry point, a callback: anyone may pass it).
    pub fn param_left_default(&self, f: FuncId, i: usize) -> bool {
        let Some(list) = self.sites.get(&f) else {
            return false;
        };
        let Some(name) = self.func(f).params.get(i) else {
            return false;
        };
        !list.is_empty()
            && list.iter().all(|&(caller, ci, shift)| {
                let call = &self.func(caller).calls[ci];
                !call.splat
                    && (i < shift || call.args.len() <= i - shift)
                    && !call.kwargs.iter().any(|(k, _)| k == name)
            })
    }

    /// Does no call of function `f` in the project pass its parameter `i` (none calls it
    /// directly, as when the class is handed over to be built elsewhere, or every call leaves
    /// the parameter at its default)?
    pub fn param_never_passed(&self, f: FuncId, i: usize) -> bool {
        self.sites.get(&f).is_none_or(Vec::is_empty) || self.param_left_default(f, i)
    }

    /// Does building an instance of class `c` freeze its parameters: its `__init__` (its own
    /// or a project base's) sets `requires_grad` off for every parameter of `self` at its top
    /// level, unconditionally or from a parameter that is falsy on every call the project
    /// makes (`def __init__(self, ..., requires_grad=False): ... for p in self.parameters():
    /// p.requires_grad = requires_grad`, the Inception network of FID scripts)? A forward pass
    /// of such a module records no graph on inputs that need no grad.
    pub fn class_freezes_itself(&self, c: ClassId) -> bool {
        let Some(init) = self.method(c, "__init__", 0) else {
            return false;
        };
        match self.func(init).freezes_self {
            summary::SelfFreeze::No => false,
            summary::SelfFreeze::Always => true,
            summary::SelfFreeze::UnlessParam(i) => self.param_always_falsy(init, usize::from(i)),
        }
    }

    /// Does function `f` (0: the module body) turn autograd off the pre-0.4 way: it builds
    /// `Variable(..., volatile=...)` itself, or calls a project function that does
    /// (`get_batch(source, i, evaluation=True)`)?
    pub fn takes_volatile_inputs(&self, f: FuncId) -> bool {
        self.func(f).volatile_inputs
            || self.targets[f.file as usize][f.index as usize]
                .iter()
                .flatten()
                .any(|&(callee, _)| callee != f && self.func(callee).volatile_inputs)
    }

    /// Does some checked file turn autograd off with `Variable(..., volatile=True)`? The flag
    /// was removed in torch 0.4 (it has no effect since): a project that uses it was written
    /// for an older torch, where `torch.no_grad` does not exist yet.
    pub fn uses_volatile_flag(&self) -> bool {
        self.scan().volatile_flag
    }

    /// Does class `c` define `__call__`, itself or through a project base? Calling an instance
    /// then runs that method rather than `nn.Module.__call__` (and so `forward`).
    pub fn class_defines_call(&self, c: ClassId) -> bool {
        self.method(c, "__call__", 0).is_some()
    }

    /// Does function `f` freeze the module named `name` (dotted) before `at`, with nothing in
    /// between giving it trainable parts again (`model.fc = nn.Linear(...)`)?
    pub fn frozen_before(&self, f: FuncId, name: &str, at: ruff_text_size::TextSize) -> bool {
        self.func(f)
            .frozen
            .iter()
            .any(|(n, span)| &**n == name && span.start() < at && at <= span.end())
    }

    /// Is a function or method of this name called with autograd off anywhere in the
    /// project (see [`FileSummary::no_grad_calls`])?
    pub fn called_in_no_grad(&self, name: &str) -> bool {
        self.scan().no_grad_calls.contains(name)
    }

    /// Does some project module class define a method `name` (not a dunder, not `nn.Module`
    /// API)? A cheap test before [`Self::forward_running_method`].
    pub fn is_module_method_name(&self, name: &str) -> bool {
        self.module_methods.contains_key(name)
    }

    /// The project method `obj.<name>(...)` runs when that method runs the instance's forward
    /// pass: the method of that name of `class` (the object's project class, when known) or
    /// else the only method of that name among the project's module classes
    /// ([`Self::unique_module_method`]; `nn.Module` API names never), or the first of several
    /// when every one qualifies, that calls the
    /// instance itself (`self(x)`) or a sub-module it holds (`self.decoder(h)`, an attribute
    /// the class assigns a module) with autograd on (not under its own `no_grad` block or
    /// decorator), and
    /// that trains nowhere (no backward pass or optimizer step in it or in what it calls):
    /// `model.generate(x)`, `model.incremental_forward(c)`, `vae.sample(n)`.
    pub fn forward_running_method(&self, class: Option<ClassId>, name: &str) -> Option<FuncId> {
        if crate::classes::is_module_api(name) {
            return None;
        }
        let f = match class {
            Some(c) if self.is_module(c) => self.method(c, name, 0)?,
            Some(_) => return None,
            None => match self.module_methods.get(name).map(Vec::as_slice) {
                Some([one]) => *one,
                // Several module classes define it (one `generate` per architecture of a
                // project that picks one by configuration): it runs the forward pass when
                // every one of them does.
                Some([first, rest @ ..]) => {
                    if !rest.iter().all(|&f| self.method_runs_forward(f)) {
                        return None;
                    }
                    *first
                }
                _ => return None,
            },
        };
        self.method_runs_forward(f).then_some(f)
    }

    /// Does method `f` of a module class run the instance's forward pass (see
    /// [`Self::forward_running_method`]): not decorated with `no_grad`, calls `self(...)`,
    /// `self.forward(...)` or a sub-module with autograd on, and trains nowhere?
    fn method_runs_forward(&self, f: FuncId) -> bool {
        let g = self.func(f);
        if g.no_grad {
            return false;
        }
        let Some(index) = g.class else {
            return false;
        };
        let class = ClassId {
            file: f.file,
            index,
        };
        let runs_forward = g.instance_calls.iter().any(|ic| {
            let key = &*ic.key;
            !ic.no_grad
                && (key == "self"
                    || key == "self.forward"
                    || key.strip_prefix("self.").is_some_and(|attr| {
                        !attr.contains('.') && self.class_attr(class, attr, 0).kind == Kind::Module
                    }))
        });
        runs_forward
            && !self
                .events(f)
                .iter()
                .any(|e| matches!(e.kind, EventKind::Backward | EventKind::Step))
    }

    /// Does calling an instance of class `c` differentiate: its `forward` (or a function it
    /// calls) runs `backward()` or `torch.autograd.grad(...)`? An adversarial-attack wrapper
    /// (PGD around a classifier) or a model that takes input gradients in its forward needs
    /// autograd on even when it is evaluated.
    pub fn forward_differentiates(&self, c: ClassId) -> bool {
        let Some(f) = self.method(c, "forward", 0) else {
            return false;
        };
        self.grad_flow(f).differentiates
            || self.events(f).iter().any(|e| e.kind == EventKind::Backward)
    }

    /// Does class `c`'s `forward` (its own or a project base's) turn autograd off for a block
    /// of its own ([`summary::FunctionSummary::grad_off_block`])?
    pub fn forward_turns_grad_off(&self, c: ClassId) -> bool {
        self.method(c, "forward", 0)
            .is_some_and(|f| self.func(f).grad_off_block)
    }

    /// Is the function called anywhere in the project?
    pub fn is_called(&self, f: FuncId) -> bool {
        self.called[f.file as usize][f.index as usize]
    }

    /// The training events of a function, including those of the functions it calls.
    pub fn events(&self, f: FuncId) -> &[FlatEvent] {
        self.events
            .get(f.file as usize)
            .and_then(|e| e.get(f.index as usize))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// A digest of everything the analysis of file `id` can read from the rest of the project:
    /// what its imports and references resolve to (and those classes' and functions' facts),
    /// what its parameters receive at call sites in other files (kinds and literal values),
    /// which of its functions are called under `no_grad` or after `eval()`, and its gates. Two runs where this digest and
    /// the file's own content are equal give the same findings for the file, whatever else
    /// changed (the cache's dependency fingerprint; an edit that changes no fact another file
    /// reads re-checks only the edited file).
    pub fn view_digest(&self, id: FileId) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        let f = &self.files[id as usize];
        let entity_facts = |e: &Option<Entity>, h: &mut rustc_hash::FxHasher| match e {
            None => 0u8.hash(h),
            Some(Entity::External(q)) => {
                1u8.hash(h);
                q.hash(h);
            }
            Some(Entity::Module(m)) => {
                2u8.hash(h);
                self.files[*m as usize].path.hash(h);
            }
            Some(Entity::Class(c)) => {
                3u8.hash(h);
                self.class_facts(*c, h);
            }
            Some(Entity::Function(g)) => {
                4u8.hash(h);
                self.files[g.file as usize].path.hash(h);
                self.func(*g).name.hash(h);
                let r =
                    self.resolve_val_in(*g, &self.func(*g).returns, 1, &|_| Resolved::default());
                self.hash_resolved(&r, h);
                self.func(*g).return_props.hash(h);
                self.func(*g).return_forward_props.hash(h);
                self.func(*g).returns_differentiated.hash(h);
                self.events(*g).hash(h);
                // A factory of classes: what calling what it returns gives.
                let invoked = Val::Invoke(Box::new(self.func(*g).returns.clone()));
                self.hash_resolved(&self.resolve_val(*g, &invoked, 1), h);
            }
            Some(Entity::Global(m, name)) => {
                5u8.hash(h);
                self.files[*m as usize].path.hash(h);
                self.hash_resolved(&self.global(*m, name, 0), h);
                // A registry: what calling its values gives.
                let invoked = Val::Invoke(Box::new(Val::Item(
                    Box::new(Val::Ref(summary::Ref::Local(name.clone()))),
                    None,
                )));
                self.hash_resolved(
                    &self.resolve_val(FuncId { file: *m, index: 0 }, &invoked, 1),
                    h,
                );
            }
        };
        for q in qualified_refs(f) {
            q.hash(&mut h);
            entity_facts(&self.qualified(id, q, 0), &mut h);
        }
        for (name, _) in &f.imports {
            name.hash(&mut h);
            entity_facts(&self.name_in_file(id, name, 0), &mut h);
        }
        // The torch names its star imports bring (the file was summarised with them).
        if !f.star_imports.is_empty() {
            self.star_torch_names_of(id, f).hash(&mut h);
        }
        for (gi, g) in f.functions.iter().enumerate() {
            for c in &g.calls {
                if let Ref::Local(n) = &c.callee {
                    n.hash(&mut h);
                    entity_facts(&self.name_in_file(id, n, 0), &mut h);
                }
            }
            // `obj.method()` runs the one module class method of that name (in any file).
            for oc in g.object_method_calls.iter() {
                oc.name.hash(&mut h);
                for m in self.object_call_methods(
                    FuncId {
                        file: id,
                        index: gi as u32,
                    },
                    oc,
                ) {
                    entity_facts(&Some(Entity::Function(m)), &mut h);
                }
            }
        }
        for (gi, _) in f.functions.iter().enumerate() {
            let fid = FuncId {
                file: id,
                index: gi as u32,
            };
            for r in self.params[id as usize][gi].iter() {
                self.hash_resolved(r.as_deref().unwrap_or(&Resolved::default()), &mut h);
            }
            self.call_sites_no_grad(fid).hash(&mut h);
            self.call_site_with_grad(fid)
                .map(|(file, range)| (&self.files[file as usize].path, range))
                .hash(&mut h);
            self.method_called_without_grad(fid).hash(&mut h);
            (self.result_differentiated(fid), self.runs_without_grad(fid)).hash(&mut h);
            for i in 0..f.functions[gi].params.len() {
                self.param_evaled_by_callers(fid, i).hash(&mut h);
                self.param_literals(fid, i).hash(&mut h);
                self.param_frozen_by_callers(fid, i).hash(&mut h);
                self.param_left_default(fid, i).hash(&mut h);
            }
            self.is_called(fid).hash(&mut h);
            self.events(fid).hash(&mut h);
        }
        for ci in 0..f.classes.len() {
            let c = ClassId {
                file: id,
                index: ci as u32,
            };
            self.class_facts(c, &mut h);
            // How other files use its instances (see [`UseIndex`]).
            (self.instance_called(c), self.instance_used_as_module(c)).hash(&mut h);
        }
        // Its names other files compare.
        self.uses().compared.get(&id).hash(&mut h);
        (
            self.relevant[id as usize],
            self.sees_probabilities[id as usize],
            self.trains[id as usize],
            f.test_code,
        )
            .hash(&mut h);
        (
            self.any_reads_local_rank_env(),
            self.any_reads_shared_local_rank_attr(),
            self.any_may_set_cuda_default(),
        )
            .hash(&mut h);
        // Registries changed in place anywhere (few names; rarely changes).
        let mut mutated: Vec<&str> = self.mutated_registries.iter().map(|n| &**n).collect();
        mutated.sort_unstable();
        mutated.hash(&mut h);
        h.finish()
    }

    fn class_facts(&self, c: ClassId, h: &mut rustc_hash::FxHasher) {
        use std::hash::Hash;
        let cs = self.class_summary(c);
        self.files[c.file as usize].path.hash(h);
        cs.name.hash(h);
        self.is_module(c).hash(h);
        self.is_dataset(c).hash(h);
        self.is_loss_class(c).hash(h);
        self.is_parameter_free_class(c).hash(h);
        self.class_freezes_itself(c).hash(h);
        self.evals_attributes_by_name(c).hash(h);
        self.mode_layer(c)
            .map(|(k, at)| (k, self.files[at.file as usize].path.clone(), at.index))
            .hash(h);
        self.forward_props(c).0.hash(h);
        self.forward_element_props(c).hash(h);
        for (a, _, _) in &cs.attrs {
            a.hash(h);
            self.hash_resolved(&self.class_attr(c, a, 0), h);
        }
    }

    /// Hash a resolved value with paths in place of file ids (ids are not stable across runs).
    fn hash_resolved(&self, r: &Resolved, h: &mut rustc_hash::FxHasher) {
        use std::hash::Hash;
        r.kind.hash(h);
        match &r.class {
            Some(ClassRef::Project(c)) => {
                self.files[c.file as usize].path.hash(h);
                c.index.hash(h);
                self.class_summary(*c).name.hash(h);
                self.class_freezes_itself(*c).hash(h);
            }
            other => other.hash(h),
        }
        r.loader.hash(h);
        r.props.hash(h);
        r.props_from
            .map(|g| (self.files[g.file as usize].path.clone(), g.index))
            .hash(h);
        if let Some((g, props)) = &r.forward {
            (self.files[g.file as usize].path.clone(), g.index).hash(h);
            props.hash(h);
        }
        if let Some(els) = &r.elements {
            for e in els {
                self.hash_resolved(e, h);
            }
        }
        r.zero_dim_call.hash(h);
        // What the builder of a library model or torch container built into it
        // (`value_mode_layer`, `library_head_replaced`).
        r.built_by
            .map(|g| {
                let f = self.func(g);
                (f.mode_layer.map(|(k, _)| k), f.returns_head_replaced)
            })
            .hash(h);
        if let Some(alts) = &r.alternatives {
            alts.len().hash(h);
            for a in alts {
                self.hash_resolved(a, h);
            }
        }
    }

    /// Summarise again, with the torch names their star imports bring, the checked files
    /// that star-import a project module binding `torch` (`from util import *` where util
    /// does `import torch`), and relink once; `resummarise` parses the file (its id, the
    /// names) and returns the new summary (`None`: keep the old one). Phase 1 summarises
    /// each file alone, so only the linked model knows what a star import brings; without
    /// this, saves, loads and training events of such files have no facts. Two rounds
    /// follow a star import of a star import. The model itself when nothing changes.
    pub fn with_star_torch_names(
        self: Arc<Self>,
        resummarise: &(dyn Fn(FileId, &[ImportedName]) -> Option<FileSummary> + Sync),
    ) -> Arc<Self> {
        let mut m = self;
        for _ in 0..2 {
            let new = m.star_resummaries(resummarise);
            if new.is_empty() {
                break;
            }
            match m.rebuild_with_all(new) {
                Some(r) => m = Arc::new(r),
                None => break,
            }
        }
        m
    }

    /// What a qualified name `q` refers to in the project, from `file` (see
    /// [`ProjectFile::entity`]).
    fn entity_in(&self, file: FileId, q: &str) -> Option<Entity> {
        if summary_is_external(q) {
            return None;
        }
        if !q.starts_with('.') {
            let first = q.split('.').next().unwrap_or(q);
            if !self.project_tops.contains(first) {
                return None;
            }
        }
        let cache = &self.cache[file as usize];
        if let Some(e) = cache.read().ok().and_then(|c| c.get(q).cloned()) {
            return e;
        }
        let e = self
            .qualified(file, q, 0)
            .filter(|e| !matches!(e, Entity::External(_)));
        if let Ok(mut c) = cache.write() {
            c.insert(q.into(), e.clone());
        }
        e
    }

    /// [`ProjectFile::star_imported_torch_names`] of `file` with this summary.
    fn star_torch_names_of(&self, file: FileId, summary: &FileSummary) -> Vec<ImportedName> {
        let mut out = Vec::new();
        for star in &summary.star_imports {
            let Some(Entity::Module(m)) = self.entity_in(file, star) else {
                out.extend(self.agreed_star_torch_names(file, star));
                continue;
            };
            for (name, q) in &self.file(m).imports {
                if q.starts_with("torch") {
                    out.push((name.clone(), q.clone()));
                }
            }
        }
        out
    }

    /// [`ProjectFile::missing_star_torch_names`] of `file` with this summary.
    fn missing_star_torch_names_of(
        &self,
        file: FileId,
        summary: &FileSummary,
    ) -> Vec<ImportedName> {
        if summary.star_imports.is_empty() {
            return Vec::new();
        }
        let own = &summary.imports;
        let mut names = self.star_torch_names_of(file, summary);
        names.retain(|(n, _)| !own.iter().any(|(m, _)| m == n));
        names.sort();
        names.dedup_by(|a, b| a.0 == b.0);
        names
    }

    /// Every file id.
    pub fn files(&self) -> impl Iterator<Item = FileId> {
        0..self.files.len() as FileId
    }
}

impl ProjectFile {
    /// The torch names (`torch`, `nn`, `F`, `optim`...) that the file's module-level star
    /// imports of project modules bring in, with their qualified names (one level).
    pub fn star_imported_torch_names(&self) -> Vec<(Box<str>, Box<str>)> {
        self.model.star_torch_names_of(self.file, self.summary())
    }

    /// The torch names the file's star imports bring that its summary does not bind yet
    /// (empty for almost every file): re-summarise it with them
    /// ([`summarise_source_with`]) so phase-1 facts see `torch` there.
    pub fn missing_star_torch_names(&self) -> Vec<(Box<str>, Box<str>)> {
        self.model
            .missing_star_torch_names_of(self.file, self.summary())
    }

    /// Summarise a new text of this file the way the model summarised it (with the torch
    /// names its star imports bring, see [`ProjectFile::missing_star_torch_names`]).
    pub fn summarise_text(
        &self,
        source: &torchvet_python::SourceFile,
        module: &ast::ModModule,
    ) -> FileSummary {
        let mut names = self.star_imported_torch_names();
        names.sort();
        names.dedup_by(|a, b| a.0 == b.0);
        summarise_source_with(&self.summary().path, source, module, &names)
    }

    /// The same view, with a newer summary of this file (its text changed since the model
    /// was built, e.g. between rounds of fixes).
    pub fn with_overlay(&self, summary: FileSummary) -> ProjectFile {
        ProjectFile {
            overlay: Some(Arc::new(summary)),
            ..self.clone()
        }
    }

    /// Has function `f` of this file turned autograd off before the offset `at` of its body:
    /// a `torch.set_grad_enabled(False)` statement (or a no-grad context entered by hand) for
    /// the rest of the process, or one earlier in the suite (loop body, branch) that holds
    /// `at`? Read from this file's summary (the overlay's offsets when there is one).
    pub fn grad_disabled_before(&self, f: FuncId, at: ruff_text_size::TextSize) -> bool {
        let summary = self.summary();
        if summary.functions.get(f.index as usize).is_none() {
            return false;
        }
        let g = summary.grad_flow(f.index);
        g.grad_disabled_at.is_some_and(|d| d < at)
            || g.grad_disabled_spans
                .iter()
                .any(|s| s.start() < at && at < s.end())
    }

    /// This file's summary (the overlay when there is one).
    pub fn summary(&self) -> &FileSummary {
        match &self.overlay {
            Some(o) => o,
            None => self.model.file(self.file),
        }
    }

    /// Should this file be analysed at all?
    pub fn is_relevant(&self) -> bool {
        self.model.is_relevant(self.file)
    }

    /// What a qualified name (as this file's scopes resolve it: `pkg.models.Net`,
    /// `.models.Net`) refers to in the project. `None` for names outside the project.
    pub fn entity(&self, q: &str) -> Option<Entity> {
        self.model.entity_in(self.file, q)
    }

    /// A module-level name of this file (class, function or object).
    pub fn local(&self, name: &str) -> Option<Entity> {
        self.model.name_in_file(self.file, name, 0)
    }

    /// [`Self::local`] as the code at `at` sees it: of a function the file defines more than
    /// once at module level (a notebook that redefines `get_model` in a later cell), the last
    /// definition above `at` when `at` is module-level code (cells run in order); inside a
    /// function (run later), the name's binding as [`Self::local`] finds it.
    pub fn local_at(&self, name: &str, at: ruff_text_size::TextSize) -> Option<Entity> {
        let f = &self.model.files[self.file as usize];
        if f.functions.iter().skip(1).any(|g| g.range.contains(at)) {
            return self.local(name);
        }
        let def = |g: &summary::FunctionSummary| &*g.name == name && g.is_module_level();
        let redefined = f
            .functions
            .iter()
            .skip(1)
            .filter(|g| def(g))
            .nth(1)
            .is_some();
        let above = f
            .functions
            .iter()
            .enumerate()
            .skip(1)
            .rfind(|(_, g)| def(g) && g.range.start() < at);
        match above {
            Some((index, _)) if redefined => Some(Entity::Function(FuncId {
                file: self.file,
                index: index as u32,
            })),
            _ => self.local(name),
        }
    }

    /// A name this file has only through a star import of a project module (`from
    /// utils.eval_utils import *` bringing `initiate_model`): not defined, imported by name or
    /// assigned in the file itself.
    pub fn star_imported(&self, name: &str) -> Option<Entity> {
        let f = &self.model.files[self.file as usize];
        if f.star_imports.is_empty()
            || f.class(name).is_some()
            || f.function(name).is_some()
            || f.import(name).is_some()
            || f.global(name).is_some()
        {
            return None;
        }
        self.local(name)
    }

    /// What calling the project name `q` gives.
    pub fn call_result(&self, q: &str) -> Resolved {
        match self.entity(q) {
            Some(e) => self.resolve_entity_call(e),
            None => Resolved::default(),
        }
    }

    /// What calling a project entity (with arguments the model cannot see) gives.
    pub fn resolve_entity_call(&self, e: Entity) -> Resolved {
        self.model.entity_call(e, 0)
    }

    /// The kind calling the project name `q` gives (`Unknown` outside the project).
    pub fn call_kind(&self, q: &str) -> Kind {
        self.call_result(q).kind
    }

    /// Is `q` a project class deriving from `nn.Module`?
    pub fn is_module_class(&self, q: &str) -> bool {
        matches!(self.entity(q), Some(Entity::Class(c)) if self.model.is_module(c))
    }

    /// Is `q` (as this file's scopes resolve it) a loss class: a project loss class in any
    /// file (see [`ProjectModel::is_loss_class`]), or a torch or library loss
    /// ([`crate::is_known_loss_class`])?
    pub fn is_loss_class(&self, q: &str) -> bool {
        match self.entity(q) {
            Some(Entity::Class(c)) => self.model.is_loss_class(c),
            Some(_) => false,
            None => crate::is_known_loss_class(q),
        }
    }

    /// Is `q` a project class deriving from a `Dataset`?
    pub fn is_dataset_class(&self, q: &str) -> bool {
        matches!(self.entity(q), Some(Entity::Class(c)) if self.model.is_dataset(c))
    }

    /// The class defined in this file whose statement starts at `start`.
    pub fn class_at(&self, start: ruff_text_size::TextSize) -> Option<ClassId> {
        let index = self.summary().class_at(start)?;
        let base = self.model.file(self.file);
        (base.classes.get(index as usize)?.name == self.summary().classes[index as usize].name)
            .then_some(ClassId {
                file: self.file,
                index,
            })
    }

    /// The function defined in this file whose `def` starts at `start`.
    pub fn function_at(&self, start: ruff_text_size::TextSize) -> Option<FuncId> {
        let index = self.summary().function_at(start)?;
        let base = self.model.file(self.file);
        (base.functions.get(index as usize)?.name == self.summary().functions[index as usize].name)
            .then_some(FuncId {
                file: self.file,
                index,
            })
    }

    /// Is this file unit-test code (by path and pytest/unittest conventions)?
    pub fn is_test_code(&self) -> bool {
        self.summary().test_code
    }
}

/// A reference's kind as an annotation (`torch.Tensor`, `Optimizer`, `DataLoader`).
fn annotation_kind(q: &str) -> Kind {
    match q {
        "torch.Tensor" | "torch.nn.Parameter" | "torch.nn.parameter.Parameter" => Kind::Tensor,
        "torch.optim.Optimizer" | "torch.optim.optimizer.Optimizer" => {
            Kind::Optimizer("Optimizer".into())
        }
        "torch.utils.data.DataLoader" | "torch.utils.data.dataloader.DataLoader" => {
            Kind::DataLoader
        }
        q if is_module_base(q) => Kind::Module,
        _ => Kind::Unknown,
    }
}

/// Qualified names a summary mentions (imports, bases, callees, annotations).
/// Record the first name of an absolute reference `q` that resolved to no project file.
fn note_unresolved(q: &str, unresolved: &mut FxHashSet<Box<str>>) {
    if !q.starts_with('.') {
        let first = q.split('.').next().unwrap_or(q);
        if !unresolved.contains(first) {
            unresolved.insert(first.into());
        }
    }
}

/// The classes a resolved object may be an instance of: its class, or, when that is not
/// known, each of its alternatives' (`None` entries where those are not known either).
fn receiver_classes(r: &Resolved) -> Vec<&Option<ClassRef>> {
    match (&r.class, &r.alternatives) {
        (None, Some(alts)) => alts.iter().map(|a| &a.class).collect(),
        _ => vec![&r.class],
    }
}

fn qualified_refs(f: &FileSummary) -> impl Iterator<Item = &str> {
    let imports = f.imports.iter().map(|(_, q)| &**q);
    let stars = f.star_imports.iter().map(|q| &**q);
    let bases = f
        .classes
        .iter()
        .flat_map(|c| c.bases.iter().chain(c.submodules.iter()));
    let calls = f
        .functions
        .iter()
        .flat_map(|g| g.calls.iter().map(|c| &c.callee));
    let refs = bases.chain(calls).filter_map(|r| match r {
        Ref::Qualified(q) => Some(&**q),
        _ => None,
    });
    imports.chain(stars).chain(refs)
}

/// A callee's event target seen from a call on the object `recv` (an instance call
/// `model(x)`, a method call `pi.train_policy()`): its `self` (and `self.<attr>`) is `recv`
/// (and `recv.<attr>`); other targets stay as they are. Targets of the callee's other
/// parameters are the caller's business (its arguments).
fn on_object(recv: &Target, t: &Target) -> Target {
    match t {
        Target::SelfAttr(a) => extend_target(recv, a).unwrap_or(Target::None),
        Target::Param(0, path) => {
            extend_target(recv, path.trim_start_matches('.')).unwrap_or(Target::None)
        }
        t => t.clone(),
    }
}

/// `obj` (as the caller's target) followed by the attribute path `attr` of a method's
/// `self.<attr>` (`""` for `self` itself).
fn extend_target(recv: &Target, attr: &str) -> Option<Target> {
    let join = |base: &str, sep: &str| -> Box<str> {
        match (base.is_empty(), attr.is_empty()) {
            (_, true) => base.into(),
            (true, false) => attr.into(),
            (false, false) => format!("{base}{sep}{attr}").into(),
        }
    };
    Some(match recv {
        Target::Param(i, path) => {
            let path = if attr.is_empty() {
                path.clone()
            } else {
                format!("{path}.{attr}").into()
            };
            Target::Param(*i, path)
        }
        Target::SelfAttr(a) => Target::SelfAttr(join(a, ".")),
        Target::Global(k) => Target::Global(join(k, ".")),
        Target::Local(k) => Target::Local(join(k, ".")),
        Target::None => return None,
    })
}

/// Names that never resolve to project files: the standard library's common modules and
/// torch itself (cheap rejection before any resolution).
pub(crate) fn summary_is_external(q: &str) -> bool {
    // The first segment, by a byte scan (hot: asked for every reference the link resolves).
    let first = q
        .as_bytes()
        .iter()
        .position(|&b| b == b'.')
        .map_or(q, |i| &q[..i]);
    !first.is_empty()
        && matches!(
            first,
            "torch"
                | "numpy"
                | "os"
                | "sys"
                | "math"
                | "random"
                | "time"
                | "json"
                | "re"
                | "logging"
                | "argparse"
                | "collections"
                | "functools"
                | "itertools"
                | "typing"
                | "pathlib"
                | "copy"
                | "pickle"
                | "warnings"
                | "shutil"
                | "builtins"
                | "dataclasses"
                | "abc"
                | "enum"
                | "contextlib"
                | "subprocess"
                | "__future__"
                | "typing_extensions"
                | "inspect"
                | "importlib"
                | "glob"
                | "datetime"
                | "csv"
                | "io"
                | "string"
                | "threading"
                | "multiprocessing"
                | "unittest"
                | "pytest"
        )
}

#[cfg(test)]
mod tests;

/// Wall time of the link's steps on stderr, with `TORCHVET_TIMING=1`.
/// What one evaluation of a callee's call sites gives (see
/// [`ProjectModel::evaluate_param_sites`]): changed parameters, and the functions read.
type SiteEvaluation = (Vec<(usize, Resolved)>, Vec<FuncId>);

pub(super) struct Laps(Option<std::time::Instant>);

impl Laps {
    pub(super) fn start() -> Self {
        Laps(std::env::var_os("TORCHVET_TIMING").map(|_| std::time::Instant::now()))
    }

    fn off() -> Self {
        Laps(None)
    }

    pub(super) fn lap(&mut self, step: &str) {
        if let Some(t) = &mut self.0 {
            eprintln!("link: {step} {:.3}s", t.elapsed().as_secs_f64());
            *t = std::time::Instant::now();
        }
    }
}
