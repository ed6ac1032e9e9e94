//! Project facts for the rules that need several files at once: checkpoints (what each
//! `torch.save` writes, under which keys, to which path), where objects go (learning-rate
//! schedulers, data loaders, loaded checkpoints: through names, calls, returns and
//! `self.<attr>`), what each loop does (trains or evaluates), which modules each optimizer
//! trains, and which functions return 0-dimensional tensors.
//!
//! Phase 1 records them per function ([`FunctionFacts`], extracted with the rest of the
//! summary, see `summary/facts_extract.rs`). The queries here follow them across functions
//! and files:
//!
//! - [`ProjectModel::fates`]: every place a value created in one function ends up (a method
//!   called on it, a loop that iterates it, a call the model cannot see into, ...), following
//!   aliases, calls into project functions (parameter by parameter), returns (into the
//!   callers that bind the result) and `self.<attr>` (every method of the class, its bases
//!   and subclasses). Anything the facts do not cover is an [`Fate::Unknown`]: rules stay
//!   silent on those.
//! - [`ProjectModel::loop_role`]: does a loop train (backward / step, directly or through the
//!   project functions it calls) or evaluate (under `no_grad`, or after `.eval()`)?
//! - [`ProjectModel::saves_for_load`]: the project's `torch.save` calls a `torch.load` may
//!   read: the same path (literal, module-level constant, format template, file name), the
//!   same helper module (a save helper and a load helper that both take the path), the same
//!   keys, or (for a load used as a module) saves of whole modules. Their content is resolved
//!   through call sites (a save helper that saves its parameter gets what each caller passes).
//! - [`ProjectModel::optimizer_modules`]: the modules an optimizer trains (`Adam(D.parameters())`,
//!   `self.opt_d = Adam(self.D.parameters())`, `{k: Adam(v.parameters()) for k, v in nets.items()}`,
//!   and a parameter through its call sites).
//! - [`ProjectModel::returns_zero_dim`]: does a function (or a module's `forward`) return a
//!   reduced, 0-dimensional tensor (a loss with the default reduction, `x.mean()`)?
//!
//! Every query has a depth and size budget; precision first: what is not known is unknown.
use super::summary::{FunctionSummary, Ref, RoleTag, Target, Val};
use super::{ClassId, ClassRef, Entity, FileId, FuncId, ProjectModel, Resolved, MAX_DEPTH};
use crate::flow::EventKind;
use crate::helpers;
use crate::kinds::Kind;
use crate::saves::{RejectedKind, Saved};
use ruff_python_ast::{self as ast, Expr, Operator, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use rustc_hash::{FxHashMap, FxHashSet};

// ----- facts recorded per function (phase 1) -----

/// Where an argument goes in a call.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ArgPos {
    /// Positional, 0-based (as written at the call, `self` not counted).
    Pos(u16),
    /// By keyword.
    Kw(Box<str>),
}

/// One use of a followed value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum UseHow {
    /// `x.m(...)`.
    Method(Box<str>),
    /// `x.attr`, read without a call.
    Attribute(Box<str>),
    /// `x["key"]` or `x.get("key", ...)`.
    Key(Box<str>),
    /// `x(...)`.
    Called,
    /// `for ... in x` (also through `enumerate`, `tqdm`, `zip`): the loop, by index in
    /// [`FunctionFacts::loops`].
    Iterated(u32),
    /// An argument of a call.
    Arg {
        /// The call.
        call: TextRange,
        /// Which argument.
        pos: ArgPos,
        /// The callee as written or resolved (`evaluate`, `torch.optim.lr_scheduler.SequentialLR`).
        callee: Box<str>,
        /// The summary records the call (a project function, class or method may run it).
        project: bool,
    },
    /// Returned, whole (`None`) or as an element of a returned tuple.
    Returned(Option<u16>),
    /// `self.<attr> = x`.
    StoredSelf(Box<str>),
    /// `y = x`: the new name.
    Alias(Box<str>),
    /// `y = tqdm(enumerate(x), total=len(x))` (wrappers of [`crate::iterables`], nested):
    /// the new name iterates `x`; its progress-bar methods and attributes
    /// (`y.set_description(...)`) are the wrapper's, not `x`'s.
    Wrapped(Box<str>),
    /// `if x`, `x is None`, a comparison, `assert x`.
    Tested,
    /// `"key" in x` (or `not in`): whether the key is there is tested.
    KeyTested(Box<str>),
    /// An operand of arithmetic or formatting.
    Operand,
    /// Anything else: stored in a container or another object, captured by a closure,
    /// subscripted with a computed key, starred...
    Escapes,
}

/// One use of a value, where.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ValueUse {
    /// How.
    pub how: UseHow,
    /// The occurrence of the value.
    pub range: TextRange,
}

/// A local bound from a call: `x = f(...)`, `a, x = f(...)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Binding {
    /// The call.
    pub call: TextRange,
    /// The element of the call's result, for tuple unpacking.
    pub element: Option<u16>,
    /// The callee as written or resolved.
    pub callee: Box<str>,
    /// The summary records the call (see [`UseHow::Arg::project`]).
    pub project: bool,
}

/// A value a function can name, and everything the function does with it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TrackedValue {
    /// `Local(name)` (bound from a call, or an alias of one), `Param(i, "")`, `SelfAttr(attr)`,
    /// or `Global(name)` (a module-level tracked name used in a function).
    pub target: Target,
    /// For a local: the calls it is bound from.
    pub bound: Vec<Binding>,
    /// Its uses, in source order.
    pub uses: Vec<ValueUse>,
}

/// A `for` loop of a function.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LoopFact {
    /// The whole statement.
    pub range: TextRange,
    /// Inside `with torch.no_grad()` / `inference_mode()` (or a decorated function).
    pub no_grad: bool,
    /// A module was switched to eval mode earlier in the function (`m.eval()` /
    /// `m.train(False)`) and not back to training before the loop.
    pub eval_before: bool,
    /// Its body calls `.backward(...)` itself.
    pub backward: bool,
}

/// What a saved value (or one key of a saved dict) holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KeyContent {
    /// The key.
    pub key: Box<str>,
    /// What the weights-only unpickler sees, as far as the function alone tells.
    pub saved: Saved,
    /// The value is a parameter or `self.<attr>` of the function (its kind comes from the
    /// call sites / the class).
    pub value: Option<Val>,
    /// The value is `<x>.state_dict()`: `x` (its kind tells optimizer, scheduler or model
    /// state).
    pub state_of: Option<Val>,
}

/// What a saved object holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Content {
    /// The whole object, as far as the function alone tells.
    pub saved: Saved,
    /// The object is this parameter of the function (a save helper): the content is what the
    /// callers pass.
    pub param: Option<u16>,
    /// The object is a parameter or `self.<attr>` (resolved through the project).
    pub value: Option<Val>,
    /// A dict with literal string keys: each key's content.
    pub keys: Option<Vec<KeyContent>>,
}

/// The shape of a checkpoint path expression, for pairing saves with loads.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PathShape {
    /// A string literal.
    Literal(Box<str>),
    /// A module-level name (of the file, or imported from another): `MODEL_PATH`,
    /// `config.MODEL_PATH`.
    Global(Ref),
    /// A parameter of the function.
    Param(u16),
    /// An attribute chain (`args.ckpt`, `self.ckpt_path`).
    Attr(Box<str>),
    /// A format template's literal text (`"./ckpt/{}-{}.t7".format(...)`, f-strings, `%`).
    Template(Box<str>),
    /// `os.path.join(..., "last.pt")` (or `dir / "last.pt"`): the final literal component.
    JoinTail(Box<str>),
    /// `os.path.join(..., self.training_file)`: the final component is an attribute chain
    /// (a file name the class or a config holds); the same chain in the same file (and, for
    /// `self.`, the same class) names the same file below some directory.
    JoinTailAttr(Box<str>),
    /// The result of a download call (`hf_hub_download(...)`, see [`DOWNLOAD_CALLS`]): a file
    /// that comes from outside the project.
    Download,
    /// A file object bound by a `with` statement (at this offset) other than `open(path)`:
    /// `with tempfile.NamedTemporaryFile() as f:`, `with io.BytesIO() as buf:`. A save and a
    /// load of the same handle in one function use the same file.
    Handle(u32),
    /// Anything else.
    Unknown,
}

/// Two templates naming one file below directories the code computes
/// (`os.path.join(opt.checkpoints_dir, opt.name, f"{epoch}_net_{label}.pth")` and
/// `os.path.join(save_dir, f"{epoch}_net_{label}.pth")`: `{}/{}/{}_net_{}.pth` and
/// `{}/{}_net_{}.pth`): the directories only holes, the same file name with literal text of
/// its own, as a join and a template are paired by file name.
fn same_name_below_holes(a: &str, b: &str) -> bool {
    fn split(t: &str) -> Option<&str> {
        let (dir, name) = t.rsplit_once('/')?;
        let holes_only = dir.split('/').all(|c| c == "{}");
        let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
        (holes_only && name.contains('.') && !stem.replace("{}", "").is_empty()).then_some(name)
    }
    a != b && split(a).is_some_and(|n| split(b) == Some(n))
}

/// Do the callers pass a path the model can compare: every variant a literal, a template,
/// a join or a module-level name (none unknown, none an attribute)?
fn known_paths(variants: &[(FuncId, PathShape)]) -> bool {
    !variants.is_empty()
        && variants.iter().all(|(_, p)| {
            matches!(
                p,
                PathShape::Literal(_)
                    | PathShape::Template(_)
                    | PathShape::JoinTail(_)
                    | PathShape::Global(_)
            )
        })
}

/// Does a template spell this literal path, each hole standing for some text within one path
/// component (`model_ckpts/model_{}_epochs_trained.pt` and
/// `model_ckpts/model_20_epochs_trained.pt`)? The template's file name must keep literal
/// text of its own (three characters besides the extension), so `{}.pt` spells nothing.
fn template_spells(t: &str, l: &str) -> bool {
    let t = t.trim_start_matches("./");
    let l = l.trim_start_matches("./");
    let name = t.rsplit('/').next().unwrap_or(t);
    let Some((stem, _)) = name.rsplit_once('.') else {
        return false;
    };
    if !t.contains("{}") || stem.replace("{}", "").len() < 3 {
        return false;
    }
    let parts: Vec<&str> = t.split("{}").collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    let Some(mut rest) = l.strip_prefix(first) else {
        return false;
    };
    for (i, part) in parts.iter().enumerate().skip(1) {
        // A hole: some text with no `/`, then the next literal part (the last one ends the
        // path).
        let at = if i == parts.len() - 1 {
            match rest.strip_suffix(last) {
                Some(hole) if rest.len() >= last.len() => Some(hole.len()),
                _ => None,
            }
        } else {
            rest.find(part)
        };
        let Some(at) = at.filter(|&at| at > 0 && !rest[..at].contains('/')) else {
            return false;
        };
        rest = &rest[at + part.len()..];
    }
    rest.is_empty()
}

/// Two relative paths that name the same file from different working directories: equal
/// once their leading `./` and `../` components are dropped, with a directory and a file
/// name left (`../models/x_{}.pth` written by a script run from `trainers/`, `models/x_{}.pth`
/// read by one run from the repository root). Absolute and home paths are never rewritten.
pub fn same_relative_path(a: &str, b: &str) -> bool {
    fn strip(p: &str) -> Option<&str> {
        if p.starts_with(['/', '~', '\\']) || p.contains(':') {
            return None;
        }
        let mut rest = p;
        loop {
            if let Some(r) = rest.strip_prefix("./") {
                rest = r;
            } else if let Some(r) = rest.strip_prefix("../") {
                rest = r;
            } else {
                break;
            }
        }
        // A directory and a file name, the name not only a hole.
        let (dir, name) = rest.rsplit_once('/')?;
        (!dir.is_empty() && !dir.starts_with('{') && name.len() > 3 && name.contains('.'))
            .then_some(rest)
    }
    a != b && strip(a).is_some_and(|x| strip(b) == Some(x))
}

/// Calls (by their last name) whose result is downloaded data or a downloaded file.
pub const DOWNLOAD_CALLS: &[&str] = &[
    "urlopen",
    "urlretrieve",
    "download",
    "hf_hub_download",
    "cached_download",
    "cached_path",
    "download_url",
    "download_url_to_file",
    "get_file",
    "snapshot_download",
];

/// Is `call` a download call (its callee's last name is one of [`DOWNLOAD_CALLS`])?
pub fn is_download_call(call: &ast::ExprCall) -> bool {
    let last = match &*call.func {
        Expr::Name(n) => n.id.as_str(),
        Expr::Attribute(a) => a.attr.as_str(),
        _ => return false,
    };
    DOWNLOAD_CALLS.contains(&last)
}

/// One `torch.save(obj, path)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SaveFact {
    /// The call.
    pub call: TextRange,
    /// The saved object.
    pub object: TextRange,
    /// What it holds.
    pub content: Content,
    /// Where it goes.
    pub path: PathShape,
}

/// An argument of a project call, classified as checkpoint content (for save helpers that
/// save a parameter).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArgContent {
    /// The call.
    pub call: TextRange,
    /// Which argument.
    pub pos: ArgPos,
    /// Its content.
    pub content: Content,
    /// The argument expression.
    pub range: TextRange,
}

/// A path-like argument of a project call (`save_checkpoint(state, "last.pt")`), for save
/// and load helpers that take the path as a parameter.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArgPath {
    /// The call.
    pub call: TextRange,
    /// Which argument.
    pub pos: ArgPos,
    /// Its shape.
    pub path: PathShape,
}

/// An optimizer built in a function, and the modules whose parameters it takes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OptimizerFact {
    /// The name it is bound to: `Local("opt_d")`, `SelfAttr("D_optimizer")`,
    /// `Local("opts[D]")` (a dict literal), `Local("opts[*]")` (a dict comprehension).
    pub target: Target,
    /// The modules: `Local("D")`, `SelfAttr("D")`, `Global("disc")`, `Param(1, "")`,
    /// `Local("nets[*]")` (with a comprehension's wildcard).
    pub modules: Vec<Target>,
    /// The constructor call.
    pub range: TextRange,
}

/// The `shuffle=` argument of a `DataLoader(...)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ShuffleArg {
    /// A literal, where.
    Literal(bool, TextRange),
    /// A parameter of the function (a loader factory), where.
    Param(u16, TextRange),
    /// Not given.
    Absent,
    /// Something else.
    Other,
}

/// A `DataLoader(...)` built in a function.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LoaderFact {
    /// The call.
    pub call: TextRange,
    /// Its `shuffle=`.
    pub shuffle: ShuffleArg,
    /// A `sampler=` / `batch_sampler=` is given.
    pub sampler: bool,
}

/// Whether a function returns a reduced, 0-dimensional tensor.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum ZeroDim {
    /// No, or not known.
    #[default]
    No,
    /// Every `return` gives one.
    Whole,
    /// Every `return` gives a tuple; these elements are 0-dimensional.
    Elements(Vec<bool>),
}

/// `x.attr.method(...)` where `x` is a followed value: the value's use is
/// [`UseHow::Attribute`]`(attr)` at `at`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AttrMethod {
    /// The occurrence of the followed value (`x`).
    pub at: TextRange,
    /// The attribute read on it.
    pub attr: Box<str>,
    /// The method called on the attribute.
    pub method: Box<str>,
}

/// The facts of one function (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FunctionFacts {
    /// The uses of values were recorded for this function. When `false` (methods of
    /// `nn.Module` classes, files that are not analysed), queries that need every use of a
    /// value treat the function as unknown.
    pub recorded: bool,
    /// Followed values and their uses.
    pub values: Vec<TrackedValue>,
    /// `for` and `while` loops, in source order (a `while` loop iterates nothing).
    pub loops: Vec<LoopFact>,
    /// `torch.save` calls.
    pub saves: Vec<SaveFact>,
    /// Dict / Namespace / module arguments of project calls, as checkpoint content.
    pub arg_contents: Vec<ArgContent>,
    /// Path-like arguments of project calls.
    pub arg_paths: Vec<ArgPath>,
    /// Optimizers built here.
    pub optimizers: Vec<OptimizerFact>,
    /// DataLoaders built here.
    pub loaders: Vec<LoaderFact>,
    /// Methods called on an attribute of a followed value (`loader.sampler.set_epoch(e)`),
    /// in source order. Recorded only when `recorded` is.
    pub attr_methods: Vec<AttrMethod>,
    /// What its returns are.
    pub zero_dim: ZeroDim,
    /// Its `*args` / `**kwargs` parameters, by index.
    pub star_params: Vec<u16>,
    /// Every `return` gives the parsed command line (an `argparse.Namespace`).
    pub returns_namespace: bool,
}

/// Facts of a whole file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FileFacts {
    /// The file allow-lists classes for the weights-only unpickler
    /// (`torch.serialization.add_safe_globals` / `safe_globals`).
    pub safe_globals: bool,
    /// How the file loads model state dicts (see [`StateDictLoads`]).
    pub state_dict_loads: StateDictLoads,
    /// The state-dict loads whose checkpoint path is known (`m.load_state_dict(torch.load(
    /// path))`): which checkpoint goes into which kind of model.
    pub state_dict_load_paths: Vec<StateDictLoadPath>,
    /// The state-dict loads into what may be a bare model, one per load (see
    /// [`BareStateDictLoad`]).
    pub bare_state_dict_loads: Vec<BareStateDictLoad>,
    /// How the file takes part in a distributed launch (see [`LaunchFacts`]).
    pub launch: LaunchFacts,
    /// The file may make CUDA the default for new tensors: `set_default_tensor_type` with a
    /// CUDA type (`torch.cuda.HalfTensor`, `"torch.cuda.FloatTensor"`) or with an argument
    /// that is not a literal CPU type, or `set_default_device` with anything but `"cpu"`.
    pub may_set_cuda_default: bool,
}

/// What a file says about how its processes learn their local rank.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LaunchFacts {
    /// Reads the `LOCAL_RANK` environment variable (`os.environ["LOCAL_RANK"]`,
    /// `os.environ.get("LOCAL_RANK")`, `os.getenv("LOCAL_RANK")`): the program expects
    /// `torchrun` / `torch.distributed.launch --use_env`, which set it.
    pub reads_local_rank_env: bool,
    /// Reads an attribute `.local_rank` anywhere (`args.local_rank`).
    pub reads_local_rank_attr: bool,
    /// Reads `.local_rank` on something another file can hand over: a parameter
    /// (`def setup(args): args.local_rank`, `self.args.local_rank`) or a module-level name
    /// (`cfg.local_rank`), not a local bound in the same function
    /// (`env = submitit.JobEnvironment(); env.local_rank`).
    pub reads_shared_local_rank_attr: bool,
    /// The file's own text (a usage docstring, a comment) starts this file, by its name,
    /// with the legacy launcher (`python -m torch.distributed.launch ... train.py`, no
    /// `--use_env`), which passes the rank as a command-line option.
    pub documents_legacy_launch: bool,
    /// The file's own text starts this file with `torchrun`, `python -m
    /// torch.distributed.run` or the legacy launcher with `--use_env`, which pass no rank
    /// option (`$ python -m torch.distributed.run --nproc_per_node 4 train.py`).
    pub documents_env_launch: bool,
}

/// `m.load_state_dict(torch.load(path))` of what may be a model, with the path.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StateDictLoadPath {
    /// The `def` of the function holding it (`None`: the module body).
    pub def: Option<TextSize>,
    /// The path loaded.
    pub path: PathShape,
    /// Where the `torch.load` call starts.
    pub at: TextSize,
    /// `m` is a DataParallel/DDP wrapper (as [`StateDictLoads::into_wrapper`] counts).
    pub wrapped: bool,
    /// The load sits in a top-level function whose name is never read in its file (see
    /// [`BareStateDictLoad::unreferenced`]).
    pub unreferenced: bool,
}

/// `m.load_state_dict(..)` into what may be a bare model (not a DataParallel/DDP wrapper),
/// counted in [`StateDictLoads::into_other`], with where it is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BareStateDictLoad {
    /// The `def` of the function holding it (`None`: the module body).
    pub def: Option<TextSize>,
    /// The function is a top-level `def` of a script (a file with an `if __name__ ==
    /// "__main__":` block) whose name is never read in its file (no call, no reference as a
    /// callback): with no caller elsewhere in the project either, the load never runs
    /// (`load_net(net, name)` whose calls are commented out). Functions of library modules
    /// may be called from outside the project and always count.
    pub unreferenced: bool,
}

/// How one file loads model state dicts: tells whether checkpoints saved from a wrapper
/// (keys prefixed `module.` / `_orig_mod.`) load back in this project.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StateDictLoads {
    /// `m.load_state_dict(..)` where `m` was last bound (in the same function, before the
    /// call) to a `DataParallel` / `DistributedDataParallel` wrapper.
    pub into_wrapper: u32,
    /// Other `m.load_state_dict(..)` of what may be a model: not an optimizer, scheduler or
    /// scaler by its name, and not a copy of an in-memory `other.state_dict()`.
    pub into_other: u32,
    /// Strips the `module.` prefix from loaded keys (a `"module."` string literal, as in
    /// `k.replace("module.", "")`, or `consume_prefix_in_state_dict_if_present`).
    pub strips_module_prefix: bool,
    /// Strips the `_orig_mod.` prefix of `torch.compile` wrappers (a `"_orig_mod."` literal).
    pub strips_compile_prefix: bool,
}

// ----- queries -----

/// Where a followed value ends up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fate {
    /// A use that ends the path: a method, an attribute, a key, a call of it, a test, an
    /// operand, or an argument of a call the facts cannot follow (`project` false).
    Use {
        /// In which function.
        func: FuncId,
        /// How.
        how: UseHow,
        /// Where (in `func`'s file).
        at: TextRange,
    },
    /// Iterated by a loop.
    Loop {
        /// The function.
        func: FuncId,
        /// The loop, by index in its [`FunctionFacts::loops`].
        index: u32,
        /// Where the value is iterated.
        at: TextRange,
    },
    /// Returned from a framework hook that takes it over (`configure_optimizers`,
    /// `train_dataloader`, `val_dataloader`, ...): the hook's name.
    Framework {
        /// The hook.
        func: FuncId,
        /// Its name.
        hook: Box<str>,
        /// Where it is returned.
        at: TextRange,
    },
    /// Not followed: why and where.
    Unknown {
        /// The function.
        func: FuncId,
        /// Where.
        at: TextRange,
        /// Why.
        why: &'static str,
    },
}

impl Fate {
    /// The function and range of the fate.
    pub fn place(&self) -> (FuncId, TextRange) {
        match self {
            Fate::Use { func, at, .. }
            | Fate::Loop { func, at, .. }
            | Fate::Framework { func, at, .. }
            | Fate::Unknown { func, at, .. } => (*func, *at),
        }
    }
}

/// Whether `set_epoch` reaches a `DistributedSampler` (see
/// [`ProjectModel::sampler_epochs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpochReach {
    /// Some path calls `set_epoch` on it.
    Set,
    /// Every place it goes is known, and none calls `set_epoch`.
    Never,
    /// It goes somewhere the model cannot follow.
    Unknown,
}

/// The answer of [`ProjectModel::sampler_epochs`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SamplerEpochs {
    /// Does `set_epoch` reach it?
    pub reach: EpochReach,
    /// The loops that iterate it or a loader built on it: function and index in its
    /// [`FunctionFacts::loops`].
    pub loops: Vec<(FuncId, u32)>,
}

/// What a loop does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopRole {
    /// A backward pass or an optimizer step runs in it (directly or through project calls).
    Train,
    /// No training, and it runs under `no_grad` or after `.eval()`.
    Eval,
    /// Not known.
    Unknown,
}

/// What a saved value holds, resolved through the project (kinds of parameters from their
/// call sites).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedContent {
    /// The whole object.
    pub saved: Saved,
    /// For a dict: each key, what it holds, and whose state it is when it is a
    /// `state_dict()`.
    pub keys: Option<Vec<(Box<str>, Saved, StateRole)>>,
    /// Where the object (or the rejected part of it) is written in the code: the file and
    /// range, when it is not the save's own file (a helper's caller).
    pub origin: Option<(FileId, TextRange)>,
}

/// Whose `state_dict()` a checkpoint key holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateRole {
    /// An optimizer's.
    Optimizer,
    /// An LR scheduler's.
    Scheduler,
    /// A GradScaler's.
    Scaler,
    /// A module's.
    Module,
    /// Not a state_dict, or not known.
    None,
}

/// How a load was paired with a save.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairBy {
    /// The same path (literal, constant, template or file name).
    Path,
    /// A save helper and a load helper of one module, both taking the path as a parameter.
    Helper,
    /// The keys the load reads are all keys the save writes.
    Keys,
    /// The load is used as a module, and the save writes a whole module.
    ModuleUse,
}

/// A load, as the pairing query needs it.
#[derive(Clone, Debug)]
pub struct LoadDesc {
    /// The function the load is in.
    pub func: FuncId,
    /// Its path.
    pub path: PathShape,
    /// The keys read from what it returns (here and in the callers it is returned to).
    pub keys: Vec<Box<str>>,
    /// What it returns is used as an `nn.Module` (`.eval()`, called, `.parameters()`).
    pub as_module: bool,
    /// Where the `torch.load` call starts in its function, when known: a save of the same
    /// path earlier in the same function is what it reads, not one written after it.
    pub at: Option<TextSize>,
}

/// A save a load may read.
#[derive(Clone, Debug)]
pub struct PairedSave {
    /// The function holding the `torch.save`.
    pub func: FuncId,
    /// The save, by index in the function's [`FunctionFacts::saves`].
    pub index: usize,
    /// How it was paired.
    pub by: PairBy,
    /// What it writes (one variant per call site of a save helper).
    pub content: ResolvedContent,
    /// Among the nearest saves of its kind of pairing (see
    /// [`ProjectModel::saves_for_load`]): what a message names and what a claim that the load
    /// fails rests on. The farther ones still count for a fix's safety.
    pub near: bool,
}

impl PairedSave {
    /// The save's call range (in `func`'s file).
    pub fn call<'m>(&self, model: &'m ProjectModel) -> &'m SaveFact {
        &model.func(self.func).facts.saves[self.index]
    }
}

/// Indices built on first use (callers of each function).
#[derive(Debug, Default)]
pub struct FactsIndex {
    callers: FxHashMap<FuncId, Vec<(FuncId, usize)>>,
    /// Attribute names read on followed values anywhere in the project (`trainer.scheduler`).
    outside_attrs: FxHashSet<Box<str>>,
}

/// What queries would otherwise find by scanning every file of the project, each time they
/// are asked (once per call site of every checked file: quadratic in the project's size).
/// Built on first use.
#[derive(Debug, Default)]
pub struct ScanIndex {
    /// Functions of checked files that save something, in file and function order.
    save_funcs: Vec<FuncId>,
    /// Every name in any file's [`FileSummary::no_grad_calls`].
    pub(super) no_grad_calls: FxHashSet<Box<str>>,
    /// Some file allow-lists classes for the weights-only unpickler.
    safe_globals: bool,
    /// Some file calls `set_epoch`.
    pub(super) set_epoch: bool,
    /// Some file reads the `LOCAL_RANK` environment variable.
    pub(super) reads_local_rank_env: bool,
    /// Some file reads `.local_rank` on a value another file can hand over.
    pub(super) reads_shared_local_rank_attr: bool,
    /// Some file may make CUDA the default for new tensors.
    pub(super) may_set_cuda_default: bool,
    /// Some checked file builds `Variable(..., volatile=...)` (see
    /// [`super::FunctionSummary::volatile_inputs`]).
    pub(super) volatile_flag: bool,
    /// Per file: the program it belongs to (see [`ProjectModel::same_program`]), a
    /// representative file of its import-graph component among the checked files.
    programs: Vec<FileId>,
}

/// Most fates a query collects before giving up (the rest is one `Unknown`).
const MAX_FATES: usize = 512;

/// Builtins whose arguments are only looked at.
pub const HARMLESS_CALLEES: &[&str] = &[
    "len",
    "print",
    "str",
    "repr",
    "isinstance",
    "type",
    "id",
    "format",
    "bool",
    "hash",
    "logging.info",
    "logging.debug",
    "logging.warning",
];

impl ProjectModel {
    pub(super) fn scan(&self) -> &ScanIndex {
        self.scan_index.get_or_init(|| {
            let mut idx = ScanIndex::default();
            for (fi, f) in self.files.iter().enumerate() {
                idx.safe_globals |= f.facts.safe_globals;
                idx.set_epoch |= f.vocab.set_epoch;
                idx.reads_local_rank_env |= f.facts.launch.reads_local_rank_env;
                idx.reads_shared_local_rank_attr |= f.facts.launch.reads_shared_local_rank_attr;
                idx.may_set_cuda_default |= f.facts.may_set_cuda_default;
                idx.no_grad_calls.extend(f.no_grad_calls.iter().cloned());
                if !self.checked[fi] {
                    continue;
                }
                for (gi, g) in f.functions.iter().enumerate() {
                    idx.volatile_flag |= g.volatile_inputs;
                    if !g.facts.saves.is_empty() {
                        idx.save_funcs.push(FuncId {
                            file: fi as FileId,
                            index: gi as u32,
                        });
                    }
                }
            }
            idx.programs = self.program_components();
            idx
        })
    }

    /// The components of the checked files' dependency graph (imports and calls, either
    /// way): per file, the smallest file id of its component. Files outside the checked set
    /// (loaded to resolve an import) join no two components.
    fn program_components(&self) -> Vec<FileId> {
        let n = self.files.len();
        let mut parent: Vec<FileId> = (0..n as FileId).collect();
        fn find(parent: &mut [FileId], mut x: FileId) -> FileId {
            while parent[x as usize] != x {
                let up = parent[parent[x as usize] as usize];
                parent[x as usize] = up;
                x = up;
            }
            x
        }
        for a in 0..n {
            if !self.checked[a] {
                continue;
            }
            for &b in &self.deps[a] {
                if !self.checked[b as usize] {
                    continue;
                }
                let (ra, rb) = (find(&mut parent, a as FileId), find(&mut parent, b));
                if ra != rb {
                    let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
                    parent[hi as usize] = lo;
                }
            }
        }
        (0..n as FileId).map(|x| find(&mut parent, x)).collect()
    }

    /// Do two files belong to the same program, so that a checkpoint one writes may be the
    /// file the other reads? The same file; files in one directory, or one in a directory
    /// above the other's (`train.py` and `tools/eval.py`); or files connected through the
    /// project's imports and calls (`predict.py` and `train.py` both importing `model.py`).
    /// A repository that collects independent code bases (`2023/MethodA/train.py`,
    /// `2024/MethodB/main.py`) holds several programs: a save of one is never the checkpoint
    /// a load of another reads, even with the same file name.
    pub fn same_program(&self, a: FileId, b: FileId) -> bool {
        if a == b {
            return true;
        }
        let (Some(da), Some(db)) = (
            self.files[a as usize].path.parent(),
            self.files[b as usize].path.parent(),
        ) else {
            return true;
        };
        if da.starts_with(db) || db.starts_with(da) {
            return true;
        }
        let programs = &self.scan().programs;
        programs.get(a as usize) == programs.get(b as usize)
    }

    fn index(&self) -> &FactsIndex {
        self.facts_index.get_or_init(|| {
            // The link's call sites, subclass dispatch included (`self.validate()` in a base
            // class runs the subclasses' overrides): one call graph for every query.
            let mut idx = FactsIndex {
                callers: self
                    .sites
                    .iter()
                    .map(|(&callee, list)| {
                        (
                            callee,
                            list.iter().map(|&(caller, ci, _)| (caller, ci)).collect(),
                        )
                    })
                    .collect(),
                outside_attrs: FxHashSet::default(),
            };
            for fi in 0..self.files.len() {
                for g in &self.files[fi].functions {
                    for v in &g.facts.values {
                        if matches!(v.target, Target::Local(_) | Target::Param(..)) {
                            for u in &v.uses {
                                if let UseHow::Attribute(a) = &u.how {
                                    idx.outside_attrs.insert(a.clone());
                                }
                            }
                        }
                    }
                }
            }
            idx
        })
    }

    /// The facts of a function.
    pub fn facts(&self, f: FuncId) -> &FunctionFacts {
        &self.func(f).facts
    }

    /// The project calls of a function: (caller, index in the caller's `calls`).
    pub fn callers(&self, f: FuncId) -> &[(FuncId, usize)] {
        self.index()
            .callers
            .get(&f)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The `forward` of a project module class that runs `f` through project calls that no
    /// device test guards (`if x.is_cuda:`), up to three calls up (`forward` ->
    /// `self.log_likelihood(x)` -> a free helper), subclass dispatch included. `None` when
    /// none does (or `f` is such a `forward` itself).
    pub fn forward_caller(&self, f: FuncId) -> Option<FuncId> {
        let mut seen: FxHashSet<FuncId> = FxHashSet::default();
        let mut level = vec![f];
        for _ in 0..3 {
            let mut next = Vec::new();
            for g in level {
                for &(caller, ci) in self.callers(g) {
                    if self
                        .func(caller)
                        .calls
                        .get(ci)
                        .is_none_or(|c| c.device_conditional)
                        || !seen.insert(caller)
                    {
                        continue;
                    }
                    if &*self.func(caller).name == "forward"
                        && self.class_of(caller).is_some_and(|c| self.is_module(c))
                    {
                        return Some(caller);
                    }
                    next.push(caller);
                }
            }
            level = next;
        }
        None
    }

    /// A function's name as findings show it: `VAE.forward` for a method, `train` otherwise.
    pub fn function_label(&self, f: FuncId) -> String {
        let name = &self.func(f).name;
        match self.class_of(f) {
            Some(c) => format!("{}.{name}", self.class_name(c).0),
            None => name.to_string(),
        }
    }

    /// The class of a method.
    pub fn class_of(&self, f: FuncId) -> Option<ClassId> {
        self.func(f).class.map(|index| ClassId {
            file: f.file,
            index,
        })
    }

    /// A class, its project bases and its project subclasses (transitively, bounded).
    pub fn class_family(&self, c: ClassId) -> Vec<ClassId> {
        let mut out = vec![c];
        let mut i = 0;
        while i < out.len() && out.len() < 64 {
            let cur = out[i];
            let cs = self.class_summary(cur);
            for b in &cs.bases {
                if let Some(Entity::Class(bc)) = self.entity_of_ref(cur.file, b, None, 0) {
                    if !out.contains(&bc) {
                        out.push(bc);
                    }
                }
            }
            if let Some(subs) = self.subclasses.get(&cur) {
                for s in subs {
                    if !out.contains(s) {
                        out.push(*s);
                    }
                }
            }
            i += 1;
        }
        out
    }

    /// The project subclasses of `c`, transitively: the classes whose instances a method of
    /// `c` may run on. Empty for a base of more than 16 classes (a library's model base
    /// class: the budget of the link).
    pub fn descendants(&self, c: ClassId) -> Vec<ClassId> {
        const MAX_FAMILY: usize = 16;
        let mut seen = vec![c];
        let mut i = 0;
        while i < seen.len() {
            if seen.len() > MAX_FAMILY {
                return Vec::new();
            }
            for &s in self.subclasses.get(&seen[i]).into_iter().flatten() {
                if !seen.contains(&s) {
                    seen.push(s);
                }
            }
            i += 1;
        }
        seen.remove(0);
        seen
    }

    /// The methods defined in a class (not its bases).
    pub fn class_methods(&self, c: ClassId) -> Vec<FuncId> {
        self.class_summary(c)
            .methods
            .iter()
            .map(|(_, i)| FuncId {
                file: c.file,
                index: *i,
            })
            .collect()
    }

    /// The methods of a class family.
    fn family_methods(&self, c: ClassId) -> Vec<FuncId> {
        self.class_family(c)
            .into_iter()
            .flat_map(|c| {
                self.class_summary(c)
                    .methods
                    .iter()
                    .map(move |(_, i)| FuncId {
                        file: c.file,
                        index: *i,
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Every place the value `target` of function `func` ends up (see [`Fate`]). For a
    /// `SelfAttr` target, the uses of `self.<attr>` in every method of the class family; for a
    /// module-level local (`func` is the module body), its uses in the file's functions too.
    pub fn fates(&self, func: FuncId, target: &Target) -> Vec<Fate> {
        let mut out = Vec::new();
        let mut seen: FxHashSet<(FuncId, Target)> = FxHashSet::default();
        self.follow(func, target, 0, &mut seen, &mut out);
        out
    }

    /// The fates of what a function returns (whole, or one element of a returned tuple).
    pub fn fates_of_return(&self, func: FuncId, element: Option<u16>, at: TextRange) -> Vec<Fate> {
        let mut out = Vec::new();
        let mut seen: FxHashSet<(FuncId, Target)> = FxHashSet::default();
        self.follow_return(func, element, at, 0, &mut seen, &mut out);
        out
    }

    fn follow(
        &self,
        func: FuncId,
        target: &Target,
        depth: u32,
        seen: &mut FxHashSet<(FuncId, Target)>,
        out: &mut Vec<Fate>,
    ) {
        if out.len() >= MAX_FATES || !seen.insert((func, target.clone())) {
            return;
        }
        let whole = self.func(func).range;
        if depth > MAX_DEPTH * 2 {
            out.push(Fate::Unknown {
                func,
                at: whole,
                why: "too deep",
            });
            return;
        }
        if let Target::SelfAttr(attr) = target {
            if !seen.insert((func, Target::SelfAttr(format!("<family>{attr}").into()))) {
                return;
            }
            self.follow_self_attr(func, attr, depth, seen, out);
            return;
        }
        let facts = self.facts(func);
        if !facts.recorded {
            out.push(Fate::Unknown {
                func,
                at: whole,
                why: "the function's uses are not recorded",
            });
            return;
        }
        let tracked = facts.values.iter().find(|v| v.target == *target);
        match (tracked, target) {
            (Some(v), _) => {
                for u in &v.uses {
                    self.follow_use(func, u, depth, seen, out);
                }
            }
            (None, Target::Param(..)) => {}
            (None, _) => out.push(Fate::Unknown {
                func,
                at: whole,
                why: "the value is not followed",
            }),
        }
        // A module-level name: its uses in the file's functions (and other files importing it).
        if func.index == 0 {
            if let Target::Local(name) = target {
                self.follow_global(func.file, name, depth, seen, out);
            }
        }
    }

    fn follow_global(
        &self,
        file: FileId,
        name: &str,
        depth: u32,
        seen: &mut FxHashSet<(FuncId, Target)>,
        out: &mut Vec<Fate>,
    ) {
        let f = &self.files[file as usize];
        let global = Target::Global(name.into());
        for gi in 1..f.functions.len() {
            let g = FuncId {
                file,
                index: gi as u32,
            };
            let facts = &f.functions[gi].facts;
            if let Some(v) = facts.values.iter().find(|v| v.target == global) {
                if !seen.insert((g, global.clone())) {
                    continue;
                }
                for u in &v.uses {
                    self.follow_use(g, u, depth + 1, seen, out);
                }
            }
        }
        // Imported elsewhere (`from train import scheduler`): not followed.
        for (other, of) in self.files.iter().enumerate() {
            if other == file as usize {
                continue;
            }
            if of.imports.iter().any(|(n, q)| {
                &**n == name
                    && q.rsplit('.').next() == Some(name)
                    && matches!(self.qualified(other as FileId, q, 0), Some(Entity::Global(gf, ref gn)) if gf == file && &**gn == name)
            }) {
                out.push(Fate::Unknown {
                    func: FuncId { file, index: 0 },
                    at: f.functions[0].range,
                    why: "imported by another file",
                });
            }
        }
    }

    fn follow_self_attr(
        &self,
        func: FuncId,
        attr: &str,
        depth: u32,
        seen: &mut FxHashSet<(FuncId, Target)>,
        out: &mut Vec<Fate>,
    ) {
        let whole = self.func(func).range;
        let Some(class) = self.class_of(func) else {
            out.push(Fate::Unknown {
                func,
                at: whole,
                why: "self outside a class",
            });
            return;
        };
        if self.index().outside_attrs.contains(attr) {
            out.push(Fate::Unknown {
                func,
                at: whole,
                why: "the attribute is read from outside the class",
            });
        }
        let target = Target::SelfAttr(attr.into());
        for m in self.family_methods(class) {
            let facts = self.facts(m);
            let g = self.func(m);
            if !facts.recorded {
                out.push(Fate::Unknown {
                    func: m,
                    at: g.range,
                    why: "a method's uses are not recorded",
                });
                continue;
            }
            // `self` handed to other code: it may reach the attribute.
            if let Some(selfv) = facts
                .values
                .iter()
                .find(|v| v.target == Target::Param(0, "".into()))
            {
                if g.params.first().is_some_and(|p| &**p == "self") {
                    for u in &selfv.uses {
                        let harmless = matches!(&u.how, UseHow::Arg { callee, .. } if HARMLESS_CALLEES.contains(&&**callee) || &**callee == "super")
                            || matches!(
                                u.how,
                                UseHow::Tested | UseHow::KeyTested(_) | UseHow::Operand
                            );
                        if !harmless {
                            out.push(Fate::Unknown {
                                func: m,
                                at: u.range,
                                why: "self is passed on",
                            });
                        }
                    }
                }
            }
            if let Some(v) = facts.values.iter().find(|v| v.target == target) {
                seen.insert((m, target.clone()));
                for u in &v.uses {
                    self.follow_use(m, u, depth + 1, seen, out);
                }
            }
        }
    }

    fn follow_use(
        &self,
        func: FuncId,
        u: &ValueUse,
        depth: u32,
        seen: &mut FxHashSet<(FuncId, Target)>,
        out: &mut Vec<Fate>,
    ) {
        match &u.how {
            UseHow::Alias(name) => {
                self.follow(func, &Target::Local(name.clone()), depth + 1, seen, out);
            }
            UseHow::Wrapped(name) => self.follow_wrapper(func, name, depth + 1, seen, out),
            UseHow::Iterated(i) => out.push(Fate::Loop {
                func,
                index: *i,
                at: u.range,
            }),
            UseHow::Returned(k) => self.follow_return(func, *k, u.range, depth + 1, seen, out),
            UseHow::StoredSelf(attr) => match self.class_of(func) {
                Some(_) => self.follow(func, &Target::SelfAttr(attr.clone()), depth + 1, seen, out),
                None => out.push(Fate::Unknown {
                    func,
                    at: u.range,
                    why: "stored outside a class",
                }),
            },
            UseHow::Escapes => out.push(Fate::Unknown {
                func,
                at: u.range,
                why: "escapes",
            }),
            UseHow::Arg {
                call,
                pos,
                project: true,
                ..
            } => {
                let g = self.func(func);
                let Some(sc) = g.calls.iter().find(|c| c.range == *call) else {
                    out.push(Fate::Unknown {
                        func,
                        at: u.range,
                        why: "call not summarised",
                    });
                    return;
                };
                let Some((callee, shift)) = self.callee_function(func, &sc.callee) else {
                    out.push(Fate::Use {
                        func,
                        how: u.how.clone(),
                        at: u.range,
                    });
                    return;
                };
                let cs = self.func(callee);
                let index = match pos {
                    ArgPos::Pos(i) => Some(*i as usize + shift),
                    ArgPos::Kw(k) => cs.params.iter().position(|p| p == k),
                };
                // `*args` / `**kwargs` parameters are not named in `params`: beyond them, unknown.
                match index {
                    Some(i) if i < cs.params.len() && !self.star_at_or_before(callee, i) => self
                        .follow(
                            callee,
                            &Target::Param(i as u16, "".into()),
                            depth + 1,
                            seen,
                            out,
                        ),
                    _ => out.push(Fate::Unknown {
                        func,
                        at: u.range,
                        why: "argument not matched to a parameter",
                    }),
                }
            }
            how => out.push(Fate::Use {
                func,
                how: how.clone(),
                at: u.range,
            }),
        }
    }

    /// The uses of a local holding a wrapper of the followed value (`pbar = tqdm(loader)`):
    /// iterating it iterates the value; its progress-bar methods, attributes and tests are the
    /// wrapper's; anything else is followed as a use of the value.
    fn follow_wrapper(
        &self,
        func: FuncId,
        name: &str,
        depth: u32,
        seen: &mut FxHashSet<(FuncId, Target)>,
        out: &mut Vec<Fate>,
    ) {
        let target = Target::Local(name.into());
        if out.len() >= MAX_FATES || !seen.insert((func, target.clone())) {
            return;
        }
        let Some(v) = self.facts(func).values.iter().find(|v| v.target == target) else {
            return;
        };
        // A progress bar's own methods; anything else (`it.next()` on `it = iter(loader)`
        // draws a batch) is a use of the value.
        const BAR_METHODS: &[&str] = &[
            "set_description",
            "set_description_str",
            "set_postfix",
            "set_postfix_str",
            "update",
            "refresh",
            "close",
            "write",
            "clear",
        ];
        for u in &v.uses {
            match &u.how {
                UseHow::Method(m) if BAR_METHODS.contains(&&**m) => {}
                UseHow::Attribute(_) | UseHow::Tested | UseHow::KeyTested(_) | UseHow::Operand => {}
                UseHow::Alias(n) | UseHow::Wrapped(n) => {
                    self.follow_wrapper(func, n, depth + 1, seen, out)
                }
                _ => self.follow_use(func, u, depth, seen, out),
            }
        }
    }

    /// Is parameter `i` of the function, or one before it, a `*args` / `**kwargs`?
    fn star_at_or_before(&self, f: FuncId, i: usize) -> bool {
        self.func(f)
            .facts
            .star_params
            .iter()
            .any(|&s| s as usize <= i)
    }

    fn follow_return(
        &self,
        func: FuncId,
        element: Option<u16>,
        at: TextRange,
        depth: u32,
        seen: &mut FxHashSet<(FuncId, Target)>,
        out: &mut Vec<Fate>,
    ) {
        let g = self.func(func);
        if g.class.is_some()
            && matches!(
                &*g.name,
                "configure_optimizers"
                    | "train_dataloader"
                    | "val_dataloader"
                    | "test_dataloader"
                    | "predict_dataloader"
            )
        {
            out.push(Fate::Framework {
                func,
                hook: g.name.clone(),
                at,
            });
            return;
        }
        if !seen.insert((func, Target::Local(format!("<return {element:?}>").into()))) {
            return;
        }
        let callers = self.callers(func);
        if callers.is_empty() {
            out.push(Fate::Unknown {
                func,
                at,
                why: "returned, and no caller in the project",
            });
            return;
        }
        for &(caller, ci) in callers {
            let call = &self.func(caller).calls[ci];
            let facts = self.facts(caller);
            let mut bound = false;
            for v in &facts.values {
                for b in &v.bound {
                    if b.call != call.range {
                        continue;
                    }
                    match (element, b.element) {
                        (None, None) => {}
                        (Some(k), Some(e)) if k == e => {}
                        _ => continue,
                    }
                    bound = true;
                    self.follow(caller, &v.target, depth + 1, seen, out);
                }
            }
            if !bound {
                out.push(Fate::Unknown {
                    func: caller,
                    at: call.range,
                    why: "the returned value is not bound to a name",
                });
            }
        }
    }

    /// What a loop does (see [`LoopRole`]).
    pub fn loop_role(&self, func: FuncId, index: u32) -> LoopRole {
        let g = self.func(func);
        let Some(l) = g.facts.loops.get(index as usize) else {
            return LoopRole::Unknown;
        };
        let inside = |r: TextRange| l.range.contains_range(r);
        let trains = l.backward
            || g.events.iter().any(|e| {
                inside(e.range) && matches!(e.kind, EventKind::Backward | EventKind::Step)
            })
            || g.calls.iter().any(|c| {
                inside(c.range)
                    && self
                        .callee_function(func, &c.callee)
                        .is_some_and(|(callee, _)| {
                            self.events(callee)
                                .iter()
                                .any(|e| matches!(e.kind, EventKind::Backward | EventKind::Step))
                        })
            });
        if trains {
            return LoopRole::Train;
        }
        let callers = self.callers(func);
        let called_without_grad = !callers.is_empty()
            && callers
                .iter()
                .all(|&(c, ci)| self.func(c).calls[ci].no_grad);
        if l.no_grad || g.no_grad || l.eval_before || called_without_grad {
            LoopRole::Eval
        } else {
            LoopRole::Unknown
        }
    }

    /// Where a followed value (its [`Fate`]s, from [`ProjectModel::fates`] or
    /// [`ProjectModel::fates_of_return`]) is used for evaluation, when that is all it is used
    /// for: every loop over it is an evaluation loop ([`LoopRole::Eval`]), or a Lightning
    /// `val_dataloader` / `test_dataloader` / `predict_dataloader` hook returns it, and every
    /// other use only looks at it (an attribute, a test, an operand, a
    /// [`HARMLESS_CALLEES`] argument). `None` when any fate is training or not known, or when
    /// there is no evaluation at all. The places come in fate order, each with a note for
    /// messages ("iterated for evaluation in `validate` here").
    pub fn evaluation_only(&self, fates: &[Fate]) -> Option<Vec<(FuncId, TextRange, String)>> {
        let mut evals = Vec::new();
        for f in fates {
            match f {
                Fate::Loop { func, index, at } => match self.loop_role(*func, *index) {
                    LoopRole::Eval => {
                        let owner = &self.function(*func).name;
                        evals.push((
                            *func,
                            *at,
                            format!("iterated for evaluation in `{owner}` here"),
                        ));
                    }
                    _ => return None,
                },
                Fate::Framework { func, hook, at } => {
                    if matches!(
                        &**hook,
                        "val_dataloader" | "test_dataloader" | "predict_dataloader"
                    ) {
                        evals.push((
                            *func,
                            *at,
                            format!("returned by `{hook}` (Lightning evaluates with it)"),
                        ));
                    } else {
                        return None;
                    }
                }
                Fate::Use { how, .. } => match how {
                    UseHow::Attribute(_)
                    | UseHow::Tested
                    | UseHow::KeyTested(_)
                    | UseHow::Operand => {}
                    UseHow::Arg { callee, .. } if HARMLESS_CALLEES.contains(&&**callee) => {}
                    _ => return None,
                },
                Fate::Unknown { .. } => return None,
            }
        }
        (!evals.is_empty()).then_some(evals)
    }

    // ----- samplers -----

    /// Does `set_epoch` reach a `DistributedSampler`, given the fates of the sampler itself
    /// (`loader` false) or of a `DataLoader` built on it (`loader` true)? Followed: a loader
    /// built from the sampler (`DataLoader(ds, sampler=s)` bound to a name), and through the
    /// fates everything they follow (aliases, project calls parameter by parameter, returns,
    /// `self.<attr>` in every method of the class family). `s.set_epoch(e)` and
    /// `loader.sampler.set_epoch(e)` set it; iterating, `len`, tests and attribute reads do
    /// not; anything else (a call the model cannot see into, a container, a bare read of
    /// `loader.sampler`, a framework hook) makes the answer [`EpochReach::Unknown`] unless some
    /// path sets it.
    pub fn sampler_epochs(&self, fates: &[Fate], loader: bool) -> SamplerEpochs {
        let mut out = SamplerEpochs {
            reach: EpochReach::Never,
            loops: Vec::new(),
        };
        let (mut set, mut unknown) = (false, false);
        self.sampler_epochs_in(fates, loader, &mut set, &mut unknown, &mut out.loops);
        out.reach = if set {
            EpochReach::Set
        } else if unknown {
            EpochReach::Unknown
        } else {
            EpochReach::Never
        };
        out
    }

    fn sampler_epochs_in(
        &self,
        fates: &[Fate],
        loader: bool,
        set: &mut bool,
        unknown: &mut bool,
        loops: &mut Vec<(FuncId, u32)>,
    ) {
        for f in fates {
            match f {
                Fate::Loop { func, index, .. } => loops.push((*func, *index)),
                Fate::Framework { .. } | Fate::Unknown { .. } => *unknown = true,
                Fate::Use { func, how, at } => match how {
                    UseHow::Method(m) if &**m == "set_epoch" => *set = true,
                    UseHow::Method(_)
                    | UseHow::Tested
                    | UseHow::KeyTested(_)
                    | UseHow::Operand
                    | UseHow::Key(_) => {}
                    UseHow::Attribute(a)
                        if loader && matches!(&**a, "sampler" | "batch_sampler") =>
                    {
                        // `loader.sampler.set_epoch(e)`; a bare `loader.sampler` may be kept
                        // and set later under another name.
                        let calls: Vec<&AttrMethod> = self
                            .facts(*func)
                            .attr_methods
                            .iter()
                            .filter(|c| c.at == *at && c.attr == *a)
                            .collect();
                        if calls.iter().any(|c| &*c.method == "set_epoch") {
                            *set = true;
                        } else if calls.is_empty() || &**a == "batch_sampler" {
                            *unknown = true;
                        }
                    }
                    UseHow::Attribute(_) => {}
                    // Looked at, or a batch drawn (`next(iter(loader))`): no reseeding.
                    UseHow::Arg { callee, .. }
                        if HARMLESS_CALLEES.contains(&&**callee)
                            || matches!(&**callee, "iter" | "next" | "enumerate" | "zip") => {}
                    UseHow::Arg {
                        call, pos, callee, ..
                    } if !loader
                        && matches!(
                            &**callee,
                            "torch.utils.data.DataLoader"
                                | "torch.utils.data.dataloader.DataLoader"
                        )
                        && (matches!(pos, ArgPos::Kw(k) if &**k == "sampler")
                            || matches!(pos, ArgPos::Pos(3))) =>
                    {
                        // The loader built on the sampler, when it is bound to a name.
                        let bound = self.facts(*func).values.iter().find(|v| {
                            v.bound
                                .iter()
                                .any(|b| b.call == *call && b.element.is_none())
                        });
                        match bound {
                            Some(v) => {
                                let fates = self.fates(*func, &v.target);
                                self.sampler_epochs_in(&fates, true, set, unknown, loops);
                            }
                            None => *unknown = true,
                        }
                    }
                    _ => *unknown = true,
                },
            }
        }
    }

    // ----- optimizers -----

    /// The modules an optimizer trains, as targets in the function `func` where `opt` is
    /// named: its construction in `func` (or at module level for a global, in `__init__` and
    /// the other methods of the class for `self.<attr>`), or for a parameter, what every call
    /// site passes (translated back when the callers' modules are the callee's own
    /// parameters or module-level names). `None` when not known.
    pub fn optimizer_modules(&self, func: FuncId, opt: &Target) -> Option<Vec<Target>> {
        self.optimizer_modules_at(func, opt, 0)
    }

    /// [`Self::optimizer_modules`] for an optimizer and modules written as text in `func`:
    /// `opt`, `self.opt_d`, `opts[D]` or a parameter's name in, `model`, `self.D`, a
    /// parameter's name out, leaving out the modules that cannot be named in `func`. `None`
    /// when the optimizer's modules are not known.
    pub fn optimizer_module_keys(&self, func: FuncId, opt: &str) -> Option<Vec<String>> {
        let params = &self.function(func).params;
        let target = match opt.strip_prefix("self.") {
            Some(attr) if !attr.contains(['.', '[']) => Target::SelfAttr(attr.into()),
            Some(_) => return None,
            None => match params.iter().position(|p| &**p == opt) {
                Some(i) => Target::Param(i as u16, "".into()),
                None => Target::Local(opt.into()),
            },
        };
        let modules = self.optimizer_modules(func, &target)?;
        let keys = modules
            .iter()
            .filter_map(|m| match m {
                Target::Local(n) | Target::Global(n) => Some(n.to_string()),
                Target::SelfAttr(a) => Some(format!("self.{a}")),
                Target::Param(i, path) if path.is_empty() => {
                    params.get(*i as usize).map(|n| n.to_string())
                }
                _ => None,
            })
            .collect();
        Some(keys)
    }

    fn optimizer_modules_at(&self, func: FuncId, opt: &Target, depth: u32) -> Option<Vec<Target>> {
        if depth > 3 {
            return None;
        }
        let find = |f: FuncId, t: &Target| -> Option<Vec<Target>> {
            let facts = self.facts(f);
            let hits: Vec<&OptimizerFact> =
                facts.optimizers.iter().filter(|o| o.target == *t).collect();
            match hits.as_slice() {
                [] => None,
                [one] => Some(one.modules.clone()),
                many => {
                    // Rebound: every construction must agree.
                    let first = &many[0].modules;
                    many.iter()
                        .all(|o| o.modules == *first)
                        .then(|| first.clone())
                }
            }
        };
        let wildcard = |t: &Target| -> Option<(Box<str>, Box<str>)> {
            // `opts[D]` -> ("opts", "D")
            let (Target::Local(k) | Target::Global(k)) = t else {
                return None;
            };
            let (base, rest) = k.split_once('[')?;
            Some((base.into(), rest.trim_end_matches(']').into()))
        };
        match opt {
            Target::SelfAttr(attr) => {
                let class = self.class_of(func)?;
                let t = Target::SelfAttr(attr.clone());
                let mut found: Option<Vec<Target>> = None;
                for m in self.family_methods(class) {
                    if let Some(ms) = find(m, &t) {
                        match &found {
                            Some(prev) if *prev != ms => return None,
                            _ => found = Some(ms),
                        }
                    }
                }
                found
            }
            Target::Param(i, path) if path.is_empty() => {
                let callers = self.callers(func);
                if callers.is_empty() {
                    return None;
                }
                let g = self.func(func);
                let mut found: Option<Vec<Target>> = None;
                for &(caller, ci) in callers {
                    let call = &self.func(caller).calls[ci];
                    let shift = usize::from(
                        call.callee.binds_self()
                            && g.params.first().is_some_and(|p| &**p == "self"),
                    );
                    let i = *i as usize;
                    // Which name the caller passes: its use of that name as this argument.
                    let pname = g.params.get(i)?;
                    let passed = self.facts(caller).values.iter().find(|v| {
                        v.uses.iter().any(|u| match &u.how {
                            UseHow::Arg { call: c, pos, .. } if *c == call.range => match pos {
                                ArgPos::Pos(p) => *p as usize + shift == i,
                                ArgPos::Kw(k) => k == pname,
                            },
                            _ => false,
                        })
                    });
                    let passed = passed?.target.clone();
                    let ms = self.optimizer_modules_at(caller, &passed, depth + 1)?;
                    // Translate the caller's module targets into the callee's terms: module-level
                    // names stay (same file), arguments passed to the callee become its
                    // parameters.
                    let mut translated = Vec::new();
                    for m in ms {
                        let t = match &m {
                            Target::Global(_) if caller.file == func.file => m.clone(),
                            Target::Local(n) if caller.index == 0 && caller.file == func.file => {
                                Target::Global(n.clone())
                            }
                            _ => {
                                // Passed as an argument of the same call?
                                let mut as_param = None;
                                if let Some(v) =
                                    self.facts(caller).values.iter().find(|v| v.target == m)
                                {
                                    for u in &v.uses {
                                        if let UseHow::Arg { call: c, pos, .. } = &u.how {
                                            if *c == call.range {
                                                let j = match pos {
                                                    ArgPos::Pos(p) => Some(*p as usize + shift),
                                                    ArgPos::Kw(k) => {
                                                        g.params.iter().position(|q| q == k)
                                                    }
                                                };
                                                if let Some(j) = j {
                                                    as_param =
                                                        Some(Target::Param(j as u16, "".into()));
                                                }
                                            }
                                        }
                                    }
                                }
                                as_param?
                            }
                        };
                        translated.push(t);
                    }
                    match &found {
                        Some(prev) if *prev != translated => return None,
                        _ => found = Some(translated),
                    }
                }
                found
            }
            Target::Local(_) | Target::Global(_) => {
                if let Some(ms) = find(func, opt) {
                    return Some(ms);
                }
                // `opts["D"]` built by a comprehension `{k: Adam(v.parameters()) for k, v in nets.items()}`.
                if let Some((base, key)) = wildcard(opt) {
                    let star = Target::Local(format!("{base}[*]").into());
                    let ms = find(func, &star).or_else(|| {
                        (func.index != 0)
                            .then(|| {
                                find(
                                    FuncId {
                                        file: func.file,
                                        index: 0,
                                    },
                                    &star,
                                )
                            })
                            .flatten()
                    })?;
                    return Some(
                        ms.into_iter()
                            .map(|m| match &m {
                                Target::Local(n) | Target::Global(n) if n.ends_with("[*]") => {
                                    Target::Local(
                                        format!("{}[{key}]", n.trim_end_matches("[*]")).into(),
                                    )
                                }
                                _ => m,
                            })
                            .collect(),
                    );
                }
                // A module-level optimizer used in a function.
                if func.index != 0 {
                    let name = match opt {
                        Target::Local(n) | Target::Global(n) => n.clone(),
                        _ => return None,
                    };
                    let ms = find(
                        FuncId {
                            file: func.file,
                            index: 0,
                        },
                        &Target::Local(name),
                    )?;
                    return Some(
                        ms.into_iter()
                            .map(|m| match m {
                                Target::Local(n) => Target::Global(n),
                                t => t,
                            })
                            .collect(),
                    );
                }
                None
            }
            _ => None,
        }
    }

    // ----- 0-dim returns -----

    /// Does calling this function give a reduced 0-dim tensor (`Whole`), or a tuple with
    /// 0-dim elements? Follows returns of other project functions and module calls.
    pub fn returns_zero_dim(&self, f: FuncId) -> ZeroDim {
        self.zero_dim_at(f, 0)
    }

    fn zero_dim_at(&self, f: FuncId, depth: u32) -> ZeroDim {
        if depth > MAX_DEPTH {
            return ZeroDim::No;
        }
        let g = self.func(f);
        if g.facts.zero_dim != ZeroDim::No {
            return g.facts.zero_dim.clone();
        }
        if let Val::Call { callee, .. } = &g.returns {
            match self.entity_of_ref(f.file, callee, Some(f), 0) {
                Some(Entity::Function(h)) if h != f => return self.zero_dim_at(h, depth + 1),
                _ => {}
            }
        }
        ZeroDim::No
    }

    /// Does calling a value give a 0-dim tensor on every path: a torch loss module that
    /// reduces, an instance of a project module whose `forward` returns one, or one of
    /// several such (a criterion chosen in `if`/`else`)? For a parameter (`criterion` of
    /// `evaluate(model, criterion)`), `r` is what its call sites pass, joined.
    pub fn call_gives_zero_dim(&self, r: &Resolved) -> bool {
        if r.zero_dim_call {
            return true;
        }
        if let Some(alts) = &r.alternatives {
            return !alts.is_empty() && alts.iter().all(|a| self.call_gives_zero_dim(a));
        }
        match &r.class {
            Some(ClassRef::Project(c)) => self.forward_zero_dim(*c) == ZeroDim::Whole,
            _ => false,
        }
    }

    /// What calling an instance of a module class gives (its `forward`).
    pub fn forward_zero_dim(&self, c: ClassId) -> ZeroDim {
        match self.method(c, "forward", 0) {
            Some(f) => self.returns_zero_dim(f),
            None => ZeroDim::No,
        }
    }

    // ----- checkpoints -----

    /// Does any file of the project allow-list classes for the weights-only unpickler?
    pub fn allows_safe_globals(&self) -> bool {
        self.scan().safe_globals
    }

    /// Do checkpoints whose keys carry the `module.` prefix of a DataParallel/DDP wrapper load
    /// in this project? True when some file strips the prefix, or when the project loads
    /// state dicts into wrapped models and into nothing else that may be a model.
    pub fn loads_wrapper_prefixed_state_dicts(&self) -> bool {
        let (mut wrapped, mut other) = (0u32, 0u32);
        for f in &self.files {
            let l = &f.facts.state_dict_loads;
            if l.strips_module_prefix {
                return true;
            }
            wrapped += l.into_wrapper;
        }
        for (fi, f) in self.files.iter().enumerate() {
            other += f
                .facts
                .bare_state_dict_loads
                .iter()
                .filter(|l| !self.load_never_runs(fi as FileId, l.def, l.unreferenced))
                .count() as u32;
        }
        wrapped > 0 && other == 0
    }

    /// A load in a top-level function of `file` (at `def`) whose name its file never reads
    /// and that no function of the project calls: it never runs.
    fn load_never_runs(&self, file: FileId, def: Option<TextSize>, unreferenced: bool) -> bool {
        let (Some(at), true) = (def, unreferenced) else {
            return false;
        };
        let f = &self.files[file as usize];
        f.function_at(at)
            .is_some_and(|index| self.callers(FuncId { file, index }).is_empty())
    }

    /// The state-dict loads of the project that read what a save writes (`save` is the
    /// function holding the save, `at` the save call): for each, whether it loads into a
    /// DataParallel/DDP wrapper. In the save's own function (a script's or notebook's module
    /// body) only the loads after the save and before the next save of the same path read
    /// it. Empty when no load with a known path matches.
    pub fn state_dict_loads_of_path(
        &self,
        save: FuncId,
        at: TextRange,
        path: &PathShape,
    ) -> Vec<bool> {
        let save_variants = self.path_variants(save, path, 0);
        let same = |f: FuncId, p: &PathShape| {
            self.path_variants(f, p, 0).iter().any(|(fa, pa)| {
                save_variants
                    .iter()
                    .any(|(fb, pb)| self.same_path_shape(*fa, pa, *fb, pb))
            })
        };
        let mut out = Vec::new();
        for (fi, f) in self.files.iter().enumerate() {
            for l in &f.facts.state_dict_load_paths {
                let index = match l.def {
                    None => Some(0),
                    Some(at) => f.function_at(at),
                };
                let Some(index) = index else { continue };
                let lf = FuncId {
                    file: fi as FileId,
                    index,
                };
                if !same(lf, &l.path) || self.load_never_runs(fi as FileId, l.def, l.unreferenced) {
                    continue;
                }
                if lf == save {
                    if l.at < at.end() {
                        continue;
                    }
                    let overwritten = self.func(save).facts.saves.iter().any(|s2| {
                        s2.call.start() > at.end() && s2.call.start() < l.at && same(save, &s2.path)
                    });
                    if overwritten {
                        continue;
                    }
                }
                out.push(l.wrapped);
            }
        }
        out
    }

    /// Does some file of the project strip the `_orig_mod.` prefix of `torch.compile`d
    /// models from loaded keys?
    pub fn strips_compile_prefix(&self) -> bool {
        self.files
            .iter()
            .any(|f| f.facts.state_dict_loads.strips_compile_prefix)
    }

    /// The saves a load may read (see the module docs). Precedence: path matches, else saves
    /// of the same helper module, else key matches, else (for a load used as a module) saves
    /// of whole modules.
    ///
    /// Within each kind of pairing the saves come nearest first, and the nearest are marked
    /// [`PairedSave::near`]: a save in the load's own file, else (path matches) one in the file
    /// whose call passes the path the save matches (`evaluate(model_path)` called by the
    /// training script that wrote `model_path`), else one in the load's directory, else any.
    /// Two entry scripts that build the same path shape from their own arguments
    /// (`args.checkpoint_dir / "checkpoint.pth"` with different parsers) do not claim each
    /// other's checkpoints when each writes its own, and a sibling sub-project's save is not
    /// named when the load's own directory saves one; the farther saves are kept for the
    /// safety of fixes (the load may still read them).
    pub fn saves_for_load(&self, load: &LoadDesc) -> Vec<PairedSave> {
        let load_variants = self.path_variants(load.func, &load.path, 0);
        let load_dir = self.files[load.func.file as usize].path.parent();
        // 0: the load's file; 1: the file of the caller whose path matched; 2: the load's
        // directory; 3: elsewhere.
        let near = |file: FileId| {
            if file == load.func.file {
                0u8
            } else if self.files[file as usize].path.parent() == load_dir {
                2
            } else {
                3
            }
        };
        let mut by_path: Vec<(u8, PairedSave)> = Vec::new();
        let mut by_helper = Vec::new();
        let mut by_keys: Vec<(u8, PairedSave)> = Vec::new();
        let mut by_module: Vec<(u8, PairedSave)> = Vec::new();
        for &sf in &self.scan().save_funcs {
            // A save of another program of a collection repository is never this file.
            if !self.same_program(load.func.file, sf.file) {
                continue;
            }
            let g = self.func(sf);
            for (si, s) in g.facts.saves.iter().enumerate() {
                let save_variants = self.path_variants(sf, &s.path, 0);
                // How near the save is (0 best), when its path matches the load's.
                let nearness = load_variants
                    .iter()
                    .filter(|(fa, pa)| {
                        save_variants
                            .iter()
                            .any(|(fb, pb)| self.same_path_shape(*fa, pa, *fb, pb))
                    })
                    .map(|(fa, _)| {
                        if sf.file != load.func.file && fa.file == sf.file {
                            1
                        } else {
                            near(sf.file)
                        }
                    })
                    .min();
                let path_match = nearness.is_some();
                // A save helper and a load helper of one module, each passing its path
                // parameter through; not when the callers of both pass paths that are known
                // and differ (`convert("weights.pt", ...)` reads no file
                // `save_model(net, "net.pt")` writes).
                let helper = !path_match
                    && sf.file == load.func.file
                    && matches!(load.path, PathShape::Param(_))
                    && matches!(s.path, PathShape::Param(_))
                    && !(known_paths(&load_variants) && known_paths(&save_variants));
                for content in self.resolve_content(sf, &s.content, 0) {
                    let keys_match = !load.keys.is_empty()
                        && content.keys.as_ref().is_some_and(|ks| {
                            load.keys
                                .iter()
                                .all(|k| ks.iter().any(|(sk, _, _)| sk == k))
                        });
                    // A helper pair must not contradict the keys the load reads.
                    let keys_contradict =
                        !load.keys.is_empty() && content.keys.is_some() && !keys_match;
                    let paired = |by| PairedSave {
                        func: sf,
                        index: si,
                        by,
                        content: content.clone(),
                        near: false,
                    };
                    if path_match && !keys_contradict {
                        by_path.push((nearness.unwrap_or(3), paired(PairBy::Path)));
                    } else if helper && !keys_contradict {
                        by_helper.push(paired(PairBy::Helper));
                    } else if keys_match {
                        by_keys.push((near(sf.file), paired(PairBy::Keys)));
                    } else if load.as_module
                        && matches!(content.saved, Saved::Rejected(RejectedKind::Module, _))
                        && content.keys.is_none()
                    {
                        by_module.push((near(sf.file), paired(PairBy::ModuleUse)));
                    }
                }
            }
        }
        // A script that saves, loads, and saves again to the same path (`torch.save(net.
        // state_dict(), p); net.load_state_dict(torch.load(p)); torch.save(net, p)`): the
        // load reads the save before it; the one after it is farther.
        if let Some(at) = load.at {
            let own = |p: &PairedSave| p.func == load.func;
            let call_of = |p: &PairedSave| self.func(p.func).facts.saves[p.index].call;
            if by_path
                .iter()
                .any(|(_, p)| own(p) && call_of(p).end() <= at)
            {
                for (n, p) in by_path.iter_mut() {
                    if own(p) && call_of(p).start() > at && *n == 0 {
                        *n = 1;
                    }
                }
            }
        }
        fn nearest(mut v: Vec<(u8, PairedSave)>) -> Vec<PairedSave> {
            v.sort_by_key(|(n, _)| *n);
            let best = v.first().map(|(n, _)| *n);
            v.into_iter()
                .map(|(n, mut p)| {
                    p.near = Some(n) == best;
                    p
                })
                .collect()
        }
        let by_helper = by_helper
            .into_iter()
            .map(|p| (0, p))
            .collect::<Vec<(u8, PairedSave)>>();
        for v in [
            nearest(by_path),
            nearest(by_helper),
            nearest(by_keys),
            nearest(by_module),
        ] {
            if !v.is_empty() {
                return v;
            }
        }
        Vec::new()
    }

    /// Does the program of `file` (see [`ProjectModel::same_program`]) save plain weights
    /// outside a dict with literal keys (`torch.save(model.state_dict(), path)`, a tensor)?
    /// A load that takes a bare state dict as well as a checkpoint holding it under a key
    /// (`if "model_state" in sd: sd = sd["model_state"]`) may then be given either file: the
    /// key it tests does not tell that it reads the checkpoint.
    pub fn program_saves_bare_weights(&self, file: FileId) -> bool {
        self.scan().save_funcs.iter().any(|&sf| {
            self.same_program(file, sf.file)
                && self.func(sf).facts.saves.iter().any(|s| {
                    self.resolve_content(sf, &s.content, 0)
                        .iter()
                        .any(|c| c.saved == Saved::WeightsOnly && c.keys.is_none())
                })
        })
    }

    /// Does the path come from a download, here or (for a parameter) at some call site
    /// (`evaluate(hf_hub_download(repo, name))` in a script's `__main__`)?
    pub fn path_downloaded(&self, f: FuncId, p: &PathShape) -> bool {
        self.path_variants(f, p, 0)
            .iter()
            .any(|(_, s)| matches!(s, PathShape::Download))
    }

    /// The shapes a path may take: itself, or for a parameter what each caller passes.
    fn path_variants(&self, f: FuncId, p: &PathShape, depth: u32) -> Vec<(FuncId, PathShape)> {
        let PathShape::Param(i) = p else {
            return vec![(f, p.clone())];
        };
        if depth > 3 {
            return Vec::new();
        }
        let g = self.func(f);
        let pname = g.params.get(*i as usize).cloned();
        let mut out = Vec::new();
        for &(caller, ci) in self.callers(f) {
            let call = &self.func(caller).calls[ci];
            let shift = usize::from(
                call.callee.binds_self() && g.params.first().is_some_and(|p| &**p == "self"),
            );
            for ap in &self.facts(caller).arg_paths {
                let hit = ap.call == call.range
                    && match &ap.pos {
                        ArgPos::Pos(p) => *p as usize + shift == *i as usize,
                        ArgPos::Kw(k) => Some(k) == pname.as_ref(),
                    };
                if hit {
                    out.extend(self.path_variants(caller, &ap.path, depth + 1));
                }
            }
        }
        out
    }

    fn same_path_shape(&self, a_in: FuncId, a: &PathShape, b_in: FuncId, b: &PathShape) -> bool {
        match (a, b) {
            (PathShape::Literal(x), PathShape::Literal(y)) => x == y || same_relative_path(x, y),
            (PathShape::Template(x), PathShape::Template(y)) => {
                (x == y && x.len() > 3) || same_relative_path(x, y) || same_name_below_holes(x, y)
            }
            (PathShape::JoinTail(x), PathShape::JoinTail(y)) => x == y && x.contains('.'),
            (PathShape::JoinTail(x), PathShape::Literal(y))
            | (PathShape::Literal(y), PathShape::JoinTail(x)) => {
                x.contains('.') && y.rsplit(['/', '\\']).next() == Some(&**x)
            }
            // `f"{tmp}/step-2/snapshot.pt"` and `os.path.join(folder, "snapshot.pt")`: the
            // same file name below some directory.
            (PathShape::JoinTail(x), PathShape::Template(t))
            | (PathShape::Template(t), PathShape::JoinTail(x)) => {
                x.contains('.')
                    && !x.contains("{}")
                    && t.rsplit_once('/').is_some_and(|(_, name)| name == &**x)
            }
            // `architecture + "/model_cifar.pt"` in a function that reads the module-level
            // name, and the same at module level, where the name is the literal
            // `"CNN6_FC2"`: the same file name (with literal text of its own) below a
            // directory the template leaves open.
            (PathShape::Template(t), PathShape::Literal(l))
            | (PathShape::Literal(l), PathShape::Template(t)) => {
                t.rsplit_once('/').is_some_and(|(dir, name)| {
                    dir.split('/').all(|c| c == "{}" || !c.contains("{}"))
                        && name.contains('.')
                        && !name.contains("{}")
                        && l.rsplit_once('/').is_some_and(|(_, lname)| lname == name)
                }) || template_spells(t, l)
            }
            (PathShape::Handle(x), PathShape::Handle(y)) => x == y && a_in == b_in,
            (PathShape::Attr(x), PathShape::Attr(y))
            | (PathShape::JoinTailAttr(x), PathShape::JoinTailAttr(y)) => {
                x == y
                    && a_in.file == b_in.file
                    && (!x.starts_with("self.") || self.func(a_in).class == self.func(b_in).class)
            }
            (PathShape::Global(Ref::Qualified(x)), PathShape::Global(Ref::Qualified(y)))
                if x == y && !x.starts_with('.') =>
            {
                true
            }
            (PathShape::Global(x), PathShape::Global(y)) => {
                let ex = self.entity_of_ref(a_in.file, x, Some(a_in), 0);
                let ey = self.entity_of_ref(b_in.file, y, Some(b_in), 0);
                matches!(
                    (&ex, &ey),
                    (Some(Entity::Global(..)), Some(Entity::Global(..)))
                ) && ex == ey
            }
            _ => false,
        }
    }

    /// What a save's content is, through the project: one variant per call site when the
    /// saved object is a parameter of a helper.
    pub fn resolve_content(&self, f: FuncId, c: &Content, depth: u32) -> Vec<ResolvedContent> {
        if let Some(i) = c.param {
            if depth > 3 {
                return vec![ResolvedContent {
                    saved: Saved::Unknown,
                    keys: None,
                    origin: None,
                }];
            }
            let g = self.func(f);
            let pname = g.params.get(i as usize).cloned();
            let mut out = Vec::new();
            for &(caller, ci) in self.callers(f) {
                let call = &self.func(caller).calls[ci];
                let shift = usize::from(
                    call.callee.binds_self() && g.params.first().is_some_and(|p| &**p == "self"),
                );
                let arg = self.facts(caller).arg_contents.iter().find(|a| {
                    a.call == call.range
                        && match &a.pos {
                            ArgPos::Pos(p) => *p as usize + shift == i as usize,
                            ArgPos::Kw(k) => Some(k) == pname.as_ref(),
                        }
                });
                match arg {
                    Some(a) => {
                        for mut r in self.resolve_content(caller, &a.content, depth + 1) {
                            r.origin.get_or_insert((caller.file, a.range));
                            out.push(r);
                        }
                    }
                    None => {
                        let r = self.param_at(f, i as usize);
                        out.push(ResolvedContent {
                            saved: saved_of_kind(&r.kind, g.range),
                            keys: None,
                            origin: None,
                        });
                    }
                }
            }
            if out.is_empty() {
                out.push(ResolvedContent {
                    saved: Saved::Unknown,
                    keys: None,
                    origin: None,
                });
            }
            return out;
        }
        let keys = c.keys.as_ref().map(|ks| {
            ks.iter()
                .map(|k| {
                    let saved = match (&k.saved, &k.value) {
                        (Saved::Unknown, Some(Val::Param(i))) => self.param_content(f, *i, 0),
                        (Saved::Unknown, Some(v)) => self.saved_of_val(f, v),
                        (s, _) => s.clone(),
                    };
                    let role = match &k.state_of {
                        Some(v) => match state_role(&self.resolve_val(f, v, 0).kind) {
                            StateRole::None => self.usage_role(f, v),
                            r => r,
                        },
                        None => StateRole::None,
                    };
                    (k.key.clone(), saved, role)
                })
                .collect::<Vec<_>>()
        });
        let whole = match (&c.saved, &c.value) {
            (Saved::Unknown, Some(v)) if c.param.is_none() => self.saved_of_val(f, v),
            (s, _) => s.clone(),
        };
        let saved = match &keys {
            Some(ks) if matches!(whole, Saved::Unknown | Saved::WeightsOnly) => ks
                .iter()
                .fold(Saved::WeightsOnly, |acc, (_, s, _)| acc.and(s.clone())),
            _ => whole,
        };
        vec![ResolvedContent {
            saved,
            keys,
            origin: None,
        }]
    }

    /// Whose state an object is, from what the code does with it when its kind is not known:
    /// `self.<attr>` stepped and zeroed in the methods of its class family is an optimizer,
    /// one whose `.step()` is a scheduler step a scheduler.
    fn usage_role(&self, f: FuncId, v: &Val) -> StateRole {
        let Val::SelfAttr(attr) = v else {
            return StateRole::None;
        };
        let Some(c) = self.class_of(f) else {
            return StateRole::None;
        };
        let target = Target::SelfAttr(attr.clone());
        let mut seen = Vec::new();
        for m in self.family_methods(c) {
            for e in self.events(m) {
                if e.target == target {
                    seen.push((e.kind, e.role));
                }
            }
        }
        if seen.iter().any(|(k, _)| *k == EventKind::SchedulerStep)
            || seen.iter().any(|(_, r)| *r == RoleTag::Scheduler)
        {
            return StateRole::Scheduler;
        }
        if seen.iter().any(|(k, _)| *k == EventKind::Step)
            && seen.iter().any(|(k, _)| *k == EventKind::ZeroGrad)
        {
            return StateRole::Optimizer;
        }
        if seen.iter().any(|(_, r)| *r == RoleTag::Optimizer) {
            return StateRole::Optimizer;
        }
        StateRole::None
    }

    /// What a parameter holds as checkpoint content: what the call sites pass (a Namespace,
    /// a module...), joined; unknown when they disagree or nothing is known.
    fn param_content(&self, f: FuncId, i: u16, depth: u32) -> Saved {
        let g = self.func(f);
        let pname = g.params.get(i as usize).cloned();
        let mut acc: Option<Saved> = None;
        for &(caller, ci) in self.callers(f) {
            let call = &self.func(caller).calls[ci];
            let shift = usize::from(
                call.callee.binds_self() && g.params.first().is_some_and(|p| &**p == "self"),
            );
            let arg = self.facts(caller).arg_contents.iter().find(|a| {
                a.call == call.range
                    && match &a.pos {
                        ArgPos::Pos(p) => *p as usize + shift == i as usize,
                        ArgPos::Kw(k) => Some(k) == pname.as_ref(),
                    }
            });
            let s = match arg {
                Some(a) if a.content.param.is_some() && depth < 3 => {
                    self.param_content(caller, a.content.param.unwrap_or(0), depth + 1)
                }
                Some(a) => match (&a.content.saved, &a.content.value) {
                    (Saved::Rejected(k, _), _) => Saved::Rejected(k.clone(), g.range),
                    (Saved::Unknown, Some(v)) => self.saved_of_val(caller, v),
                    (s, _) => s.clone(),
                },
                None => Saved::Unknown,
            };
            acc = Some(match acc {
                None => s,
                Some(prev) if prev == s => prev,
                Some(Saved::Rejected(k, r)) if matches!(&s, Saved::Rejected(k2, _) if *k2 == k) => {
                    Saved::Rejected(k, r)
                }
                Some(_) => Saved::Unknown,
            });
        }
        match acc {
            Some(Saved::Unknown) | None => {
                let r = self.param_at(f, i as usize);
                saved_of_kind(&r.kind, g.range)
            }
            Some(s) => s,
        }
    }

    /// A function's summary and facts, by id (for rules that need both).
    pub fn function_summary(&self, f: FuncId) -> &FunctionSummary {
        self.func(f)
    }

    /// The role of an object a function names, from the events it is the target of.
    pub fn role_in(&self, f: FuncId, t: &Target) -> RoleTag {
        self.func(f)
            .events
            .iter()
            .find(|e| e.target == *t)
            .map_or(RoleTag::Unknown, |e| e.role)
    }
}

/// The shape of a path expression (see [`PathShape`]), following a local name to the value
/// it was last assigned before `at` (a few steps).
pub fn path_shape(
    e: &Expr,
    body: &[Stmt],
    params: &[&str],
    scopes: &crate::bindings::Scopes,
    at: TextSize,
) -> PathShape {
    path_shape_in(e, body, &NameBindings::of(body), params, scopes, at)
}

/// [`path_shape`] with the body's [`NameBindings`] built once (a function asks for the shapes
/// of many arguments).
pub fn path_shape_in(
    e: &Expr,
    body: &[Stmt],
    names: &NameBindings,
    params: &[&str],
    scopes: &crate::bindings::Scopes,
    at: TextSize,
) -> PathShape {
    path_shape_at(e, body, names, params, scopes, at, 0)
}

/// The statements of a body (not of nested definitions) that bind a plain name as
/// [`path_shape`] follows it, by name, in source order: `name = value` (one entry per
/// statement) and `with ... as name` (one per item).
#[derive(Default)]
pub struct NameBindings<'a> {
    by_name: FxHashMap<&'a str, Vec<NameBinding<'a>>>,
}

enum NameBinding<'a> {
    Assign(&'a ast::StmtAssign),
    With(&'a ast::StmtWith, &'a ast::WithItem),
}

impl<'a> NameBindings<'a> {
    /// The bindings of `body`.
    pub fn of(body: &'a [Stmt]) -> Self {
        let mut out = NameBindings::default();
        super::summary::for_each_own_stmt(body, &mut |s| match s {
            Stmt::Assign(a) => {
                for (i, t) in a.targets.iter().enumerate() {
                    let Some(n) = helpers::name_of(t) else {
                        continue;
                    };
                    // One entry per statement and name (`x = y = v` twice: once).
                    if a.targets[..i]
                        .iter()
                        .any(|u| helpers::name_of(u) == Some(n))
                    {
                        continue;
                    }
                    out.by_name
                        .entry(n)
                        .or_default()
                        .push(NameBinding::Assign(a));
                }
            }
            Stmt::With(w) => {
                for item in &w.items {
                    if let Some(n) = item.optional_vars.as_deref().and_then(helpers::name_of) {
                        out.by_name
                            .entry(n)
                            .or_default()
                            .push(NameBinding::With(w, item));
                    }
                }
            }
            _ => {}
        });
        out
    }
}

fn path_shape_at(
    e: &Expr,
    body: &[Stmt],
    names: &NameBindings,
    params: &[&str],
    scopes: &crate::bindings::Scopes,
    at: TextSize,
    depth: u32,
) -> PathShape {
    if depth > 4 {
        return PathShape::Unknown;
    }
    match e {
        Expr::StringLiteral(s) => PathShape::Literal(s.value.to_str().into()),
        Expr::FString(f) => {
            let mut lit = String::new();
            for part in f.value.elements() {
                match part {
                    ast::InterpolatedStringElement::Literal(l) => lit.push_str(&l.value),
                    ast::InterpolatedStringElement::Interpolation(_) => lit.push_str("{}"),
                }
            }
            PathShape::Template(lit.into())
        }
        Expr::BinOp(b) if b.op == Operator::Mod => match &*b.left {
            Expr::StringLiteral(s) => PathShape::Template(holes(s.value.to_str(), '%').into()),
            _ => PathShape::Unknown,
        },
        // `filename + "_critic"`, `"ckpt/" + name + ".pt"`: a template of the literal parts,
        // like the same path written as an f-string. A part that is a name bound to a literal
        // or a template (`MODEL_SAVE_PATH + MODEL_NAME` with `MODEL_NAME = "model.pt"`) gives
        // its text; a concatenation of literals only is that literal.
        Expr::BinOp(b) if b.op == Operator::Add => {
            // The text of the parts, `{}` for what is not known; whether any literal text
            // came in (a path of holes only says nothing).
            fn parts(
                e: &Expr,
                out: &mut String,
                literal: &mut bool,
                shape_of: &mut dyn FnMut(&Expr) -> PathShape,
            ) {
                let text = match e {
                    Expr::BinOp(b) if b.op == Operator::Add => {
                        parts(&b.left, out, literal, shape_of);
                        parts(&b.right, out, literal, shape_of);
                        return;
                    }
                    Expr::StringLiteral(s) => s.value.to_str().into(),
                    Expr::Name(_) => match shape_of(e) {
                        PathShape::Literal(t) | PathShape::Template(t) => t,
                        _ => Box::from("{}"),
                    },
                    _ => Box::from("{}"),
                };
                *literal |= &*text != "{}";
                out.push_str(&text);
            }
            let (mut t, mut literal) = (String::new(), false);
            parts(e, &mut t, &mut literal, &mut |x| {
                path_shape_at(x, body, names, params, scopes, at, depth + 1)
            });
            match (literal, t.contains("{}")) {
                (false, _) => PathShape::Unknown,
                (true, false) => PathShape::Literal(t.into()),
                (true, true) => PathShape::Template(t.into()),
            }
        }
        Expr::BinOp(b) if b.op == Operator::Div => match &*b.right {
            // `dir / "last.pt"` (pathlib)
            Expr::StringLiteral(s) => PathShape::JoinTail(s.value.to_str().into()),
            // `dir / MODEL_NAME` with `MODEL_NAME = "model_1.pth"`
            right => match path_shape_at(right, body, names, params, scopes, at, depth + 1) {
                PathShape::Literal(l) => PathShape::JoinTail(l),
                // `dir / f"model_{epoch}.pt"`: as `f"{dir}/model_{epoch}.pt"`.
                PathShape::Template(t) => {
                    join_template([&*b.left, right].into_iter(), &t, &mut |x| {
                        path_shape_at(x, body, names, params, scopes, at, depth + 1)
                    })
                }
                _ => PathShape::Unknown,
            },
        },
        Expr::Call(c) => {
            if let Some(("format", Expr::StringLiteral(s))) = helpers::method_call(c) {
                return PathShape::Template(holes(s.value.to_str(), '{').into());
            }
            if is_download_call(c) {
                return PathShape::Download;
            }
            // `Path(root).joinpath(f"fold_{k}", "best.pth")`: like `os.path.join`.
            if let Some(("joinpath", _)) = helpers::method_call(c) {
                return match c.arguments.args.last() {
                    Some(Expr::StringLiteral(s)) => PathShape::JoinTail(s.value.to_str().into()),
                    _ => PathShape::Unknown,
                };
            }
            let q = scopes.resolve(&c.func);
            match q.as_deref() {
                Some("os.path.join") | Some("posixpath.join") => match c.arguments.args.last() {
                    Some(Expr::StringLiteral(s)) => PathShape::JoinTail(s.value.to_str().into()),
                    Some(last) => {
                        match path_shape_at(last, body, names, params, scopes, at, depth + 1) {
                            PathShape::Literal(l) => PathShape::JoinTail(l),
                            // `os.path.join(dir, f"model_{epoch}.pt")`: as
                            // `f"{dir}/model_{epoch}.pt"` or `dir + "/model_" + ... + ".pt"`.
                            PathShape::Template(t) if !t.contains('/') => {
                                join_template(c.arguments.args.iter(), &t, &mut |x| {
                                    path_shape_at(x, body, names, params, scopes, at, depth + 1)
                                })
                            }
                            PathShape::Attr(a) => PathShape::JoinTailAttr(a),
                            _ => PathShape::Unknown,
                        }
                    }
                    None => PathShape::Unknown,
                },
                Some("str") | None
                    if helpers::name_of(&c.func) == Some("str") && c.arguments.args.len() == 1 =>
                {
                    path_shape_at(
                        &c.arguments.args[0],
                        body,
                        names,
                        params,
                        scopes,
                        at,
                        depth + 1,
                    )
                }
                _ => PathShape::Unknown,
            }
        }
        Expr::Name(n) => {
            let id = n.id.as_str();
            // The last assignment before `at` in this body.
            let mut last: Option<&Expr> = None;
            // Bound by `with`: the opened path, or the handle's `with` offset.
            let mut handle: Option<Result<&Expr, u32>> = None;
            let mut assigned = false;
            for b in names.by_name.get(id).map_or(&[][..], Vec::as_slice) {
                match *b {
                    NameBinding::Assign(a) => {
                        assigned = true;
                        if a.start() < at {
                            last = Some(&a.value);
                            handle = None;
                        }
                    }
                    // `with open(path, "rb") as f:`: the handle stands for the file at `path`.
                    NameBinding::With(w, item) => {
                        assigned = true;
                        if w.start() < at {
                            handle = match &item.context_expr {
                                Expr::Call(c) if helpers::name_of(&c.func) == Some("open") => {
                                    c.arguments.args.first().map(Ok)
                                }
                                _ => Some(Err(w.start().to_u32())),
                            };
                            last = None;
                        }
                    }
                }
            }
            if let Some(v) = last {
                return path_shape_at(v, body, names, params, scopes, v.start(), depth + 1);
            }
            match handle {
                Some(Ok(path)) => {
                    return path_shape_at(
                        path,
                        body,
                        names,
                        params,
                        scopes,
                        path.start(),
                        depth + 1,
                    )
                }
                Some(Err(at)) => return PathShape::Handle(at),
                None => {}
            }
            if assigned {
                return PathShape::Unknown;
            }
            if let Some(i) = params.iter().position(|p| *p == id) {
                return PathShape::Param(i as u16);
            }
            match scopes.lookup_str(id) {
                Some(q) => PathShape::Global(Ref::Qualified(q.into())),
                None => PathShape::Global(Ref::Local(id.into())),
            }
        }
        Expr::Attribute(_) => {
            // `config.MODEL_PATH` through an import is a module-level name of another file.
            if let Some(q) = scopes.resolve(e) {
                if q.contains('.') && !q.starts_with("torch") {
                    let first = helpers::dotted(e).unwrap_or_default();
                    let root = first.split('.').next().unwrap_or("");
                    if scopes.lookup_str(root).is_some() {
                        return PathShape::Global(Ref::Qualified(q.into()));
                    }
                }
            }
            // `cfg.modelpath = cfg.output_dir + '/model.pt'; torch.load(cfg.modelpath)`: the
            // value last stored to the same attribute chain before `at` in this body.
            if let Some(dotted) = helpers::dotted(e) {
                let mut last: Option<&Expr> = None;
                super::summary::for_each_own_stmt(body, &mut |s| {
                    if let Stmt::Assign(a) = s {
                        if a.start() < at
                            && a.targets.iter().any(|t| {
                                matches!(t, Expr::Attribute(_)) && helpers::is_dotted(t, &dotted)
                            })
                        {
                            last = Some(&a.value);
                        }
                    }
                });
                if let Some(v) = last {
                    return path_shape_at(v, body, names, params, scopes, v.start(), depth + 1);
                }
            }
            match helpers::dotted(e) {
                Some(t) => PathShape::Attr(t.into()),
                None => PathShape::Unknown,
            }
        }
        _ => PathShape::Unknown,
    }
}

/// A `%` or `str.format` template with each field written `{}`, as f-strings and
/// concatenations are (`"%s/ckpt_%03d.pt"` and `"{}/ckpt_{:03d}.pt"` -> `{}/ckpt_{}.pt`), so the
/// three spellings of one path share a key. `style` is `%` or `{`.
fn holes(t: &str, style: char) -> String {
    let mut out = String::with_capacity(t.len());
    let mut it = t.chars().peekable();
    while let Some(ch) = it.next() {
        match (style, ch) {
            ('%', '%') => {
                if it.peek() == Some(&'%') {
                    it.next();
                    out.push('%');
                    continue;
                }
                if it.peek() == Some(&'(') {
                    for c in it.by_ref() {
                        if c == ')' {
                            break;
                        }
                    }
                }
                while it
                    .peek()
                    .is_some_and(|c| matches!(c, '-' | '+' | ' ' | '#' | '*' | '.' | '0'..='9'))
                {
                    it.next();
                }
                it.next();
                out.push_str("{}");
            }
            ('{', '{') => {
                if it.peek() == Some(&'{') {
                    it.next();
                    out.push('{');
                    continue;
                }
                for c in it.by_ref() {
                    if c == '}' {
                        break;
                    }
                }
                out.push_str("{}");
            }
            _ => out.push(ch),
        }
    }
    out
}

/// The template of a path joined from parts (`os.path.join(a, "sub", f"m_{e}.pt")`,
/// `Path(a) / f"m_{e}.pt"`) whose last part is the template `last`: the parts' literal text,
/// `{}` for the others, joined by `/` (`{}/sub/m_{}.pt`), the same key a concatenation or an
/// f-string of that path gets. A last part with no literal text of its own besides the
/// extension (`f"{name}.pt"`) stays its own template, as before (a directory of holes would
/// pair unrelated files).
fn join_template<'e>(
    parts: impl Iterator<Item = &'e Expr>,
    last: &str,
    shape: &mut dyn FnMut(&Expr) -> PathShape,
) -> PathShape {
    let stem = last.rsplit_once('.').map_or(last, |(s, _)| s);
    if stem.replace("{}", "").is_empty() {
        return PathShape::Template(last.into());
    }
    let parts: Vec<&Expr> = parts.collect();
    let mut out = String::new();
    for (i, p) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            out.push_str(last);
            break;
        }
        let text = match shape(p) {
            PathShape::Literal(l) => l.to_string(),
            PathShape::Template(t) => t.to_string(),
            PathShape::JoinTail(x) => format!("{{}}/{x}"),
            _ => "{}".to_string(),
        };
        out.push_str(text.trim_end_matches('/'));
        out.push('/');
    }
    PathShape::Template(out.into())
}

impl ProjectModel {
    /// Checkpoint content of a summary value seen from `f`: an instance of a project class
    /// that is not a module (a vocabulary, a config object), the parsed command line (a
    /// project function returning `parser.parse_args()`), or what its kind implies.
    pub fn saved_of_val(&self, f: FuncId, v: &Val) -> Saved {
        let at = self.func(f).range;
        if let Val::Call { callee, .. } = v {
            if let Some(Entity::Function(g)) = self.entity_of_ref(f.file, callee, Some(f), 0) {
                if self.func(g).facts.returns_namespace {
                    return Saved::Rejected(RejectedKind::Namespace, at);
                }
            }
        }
        let r = self.resolve_val(f, v, 0);
        if let Some(super::ClassRef::Project(c)) = &r.class {
            if !self.is_module(*c) {
                let name = self.class_summary(*c).name.to_string();
                return Saved::Rejected(RejectedKind::CustomClass(name), at);
            }
        }
        saved_of_kind(&r.kind, at)
    }
}

/// Checkpoint content implied by a value kind (from call sites): whole modules, optimizer and
/// scheduler objects are rejected by the weights-only unpickler.
fn saved_of_kind(kind: &Kind, at: TextRange) -> Saved {
    match kind {
        Kind::Module => Saved::Rejected(RejectedKind::Module, at),
        Kind::Optimizer(_) => Saved::Rejected(RejectedKind::Optimizer, at),
        Kind::Scheduler(_) => Saved::Rejected(RejectedKind::Scheduler, at),
        Kind::GradScaler => Saved::Rejected(RejectedKind::GradScaler, at),
        Kind::DataLoader => Saved::Rejected(RejectedKind::DataLoader, at),
        Kind::Tensor => Saved::WeightsOnly,
        _ => Saved::Unknown,
    }
}

fn state_role(kind: &Kind) -> StateRole {
    match kind {
        Kind::Optimizer(_) => StateRole::Optimizer,
        Kind::Scheduler(_) => StateRole::Scheduler,
        Kind::GradScaler => StateRole::Scaler,
        Kind::Module => StateRole::Module,
        _ => StateRole::None,
    }
}

impl ProjectModel {
    /// The library class (qualified name) a call bound in function `func` creates: the
    /// callee itself (`torchvision.datasets.MNIST`), or what the project function it calls
    /// returns (followed through project functions). `None` for project classes and anything
    /// not known.
    pub fn binding_class(&self, func: FuncId, b: &Binding) -> Option<Box<str>> {
        if b.element.is_some() {
            return None;
        }
        if !b.project {
            return Some(b.callee.clone());
        }
        let call = self.func(func).calls.iter().find(|c| c.range == b.call)?;
        self.ref_class(func, &call.callee, 0)
    }

    fn ref_class(&self, ctx: FuncId, r: &Ref, depth: u32) -> Option<Box<str>> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.entity_of_ref(ctx.file, r, Some(ctx), 0)? {
            Entity::External(q) => Some(q),
            Entity::Function(g) => match &self.func(g).returns {
                Val::Call { callee, .. } => self.ref_class(g, callee, depth + 1),
                _ => None,
            },
            _ => None,
        }
    }

    /// The bindings of a followed local of a function (or of the module-level name a
    /// function uses), with the function they are in.
    pub fn bindings_of(&self, func: FuncId, name: &str) -> Option<(FuncId, &[Binding])> {
        let facts = self.facts(func);
        if let Some(v) = facts
            .values
            .iter()
            .find(|v| matches!(&v.target, Target::Local(n) if &**n == name))
        {
            return Some((func, &v.bound));
        }
        if facts
            .values
            .iter()
            .any(|v| matches!(&v.target, Target::Global(n) if &**n == name))
            || func.index == 0
        {
            let module = FuncId {
                file: func.file,
                index: 0,
            };
            let v = self
                .facts(module)
                .values
                .iter()
                .find(|v| matches!(&v.target, Target::Local(n) if &**n == name))?;
            return Some((module, &v.bound));
        }
        None
    }
}

impl ProjectModel {
    /// What a callee of a summarised call of function `ctx` refers to.
    pub fn callee_entity(&self, ctx: FuncId, callee: &Ref) -> Option<Entity> {
        self.entity_of_ref(ctx.file, callee, Some(ctx), 0)
    }
}

/// Is the path a file that ships with the code: built from the module's own location
/// (`os.path.join(os.path.dirname(__file__), "../data/pnet.pt")`, `Path(__file__).parent /
/// "weights.pt"`, `HERE / "w.pt"` with `HERE = Path(__file__).resolve().parent`) and string
/// literals only? The range of the `__file__` it starts from. Names are looked up through
/// their last assignment before `at` in `bodies` (the function's, then the module's);
/// `resolve` qualifies callee names. A part that is anything else (a parameter, an
/// argument, a config value) makes it `None`: such a path can point anywhere.
pub fn shipped_path(
    e: &Expr,
    bodies: &[&[Stmt]],
    resolve: &dyn Fn(&Expr) -> Option<String>,
    at: TextSize,
) -> Option<TextRange> {
    struct Cx<'b, 'r> {
        bodies: &'b [&'b [Stmt]],
        resolve: &'r dyn Fn(&Expr) -> Option<String>,
        at: TextSize,
    }
    impl<'b> Cx<'b, '_> {
        /// The value last assigned to `name` before `at`.
        fn value_of(&self, name: &str) -> Option<&'b Expr> {
            self.bodies.iter().find_map(|body| {
                let mut found: Option<&'b Expr> = None;
                helpers::for_each_own_stmt(body, &mut |s| {
                    if let Stmt::Assign(a) = s {
                        if a.start() < self.at
                            && a.targets.iter().any(|t| helpers::name_of(t) == Some(name))
                        {
                            found = Some(&a.value);
                        }
                    }
                });
                found
            })
        }
        /// A constant piece of a path: a string literal, or a name bound to one.
        fn literal(&self, e: &Expr, depth: u32) -> bool {
            match e {
                Expr::StringLiteral(_) => true,
                Expr::FString(f) => f
                    .value
                    .elements()
                    .all(|p| matches!(p, ast::InterpolatedStringElement::Literal(_))),
                Expr::Name(n) if depth < 4 => self
                    .value_of(n.id.as_str())
                    .is_some_and(|v| self.literal(v, depth + 1)),
                _ => false,
            }
        }
        /// A location derived from `__file__` plus constant pieces: the `__file__` range.
        fn file_based(&self, e: &Expr, depth: u32) -> Option<TextRange> {
            if depth > 6 {
                return None;
            }
            match e {
                Expr::Name(n) if n.id.as_str() == "__file__" => Some(n.range()),
                Expr::Name(n) => self.file_based(self.value_of(n.id.as_str())?, depth + 1),
                // `Path(__file__).parent`, `.parents[1]`
                Expr::Attribute(a) if a.attr.as_str() == "parent" => {
                    self.file_based(&a.value, depth + 1)
                }
                Expr::Subscript(s) => match &*s.value {
                    Expr::Attribute(a) if a.attr.as_str() == "parents" => {
                        self.file_based(&a.value, depth + 1)
                    }
                    _ => None,
                },
                Expr::BinOp(b) if matches!(b.op, Operator::Div | Operator::Add) => {
                    let base = self.file_based(&b.left, depth + 1)?;
                    self.literal(&b.right, 0).then_some(base)
                }
                Expr::FString(f) => {
                    let mut base = None;
                    for p in f.value.elements() {
                        if let ast::InterpolatedStringElement::Interpolation(i) = p {
                            match self.file_based(&i.expression, depth + 1) {
                                Some(r) if base.is_none() => base = Some(r),
                                _ if self.literal(&i.expression, 0) => {}
                                _ => return None,
                            }
                        }
                    }
                    base
                }
                Expr::Call(c) => {
                    let args = &c.arguments.args;
                    if !c.arguments.keywords.is_empty() {
                        return None;
                    }
                    let first_then_literals = |first: &Expr, rest: &[Expr]| {
                        let base = self.file_based(first, depth + 1)?;
                        rest.iter().all(|r| self.literal(r, 0)).then_some(base)
                    };
                    if let Some((m, recv)) = helpers::method_call(c) {
                        if matches!(m, "resolve" | "absolute" | "expanduser") && args.is_empty() {
                            return self.file_based(recv, depth + 1);
                        }
                        if matches!(m, "joinpath" | "with_name" | "with_suffix") {
                            return first_then_literals(recv, args);
                        }
                    }
                    let q = (self.resolve)(&c.func).or_else(|| {
                        (helpers::name_of(&c.func) == Some("str")).then(|| "str".to_string())
                    })?;
                    match q.as_str() {
                        "os.path.dirname" | "os.path.abspath" | "os.path.realpath"
                        | "os.path.normpath" | "posixpath.dirname" | "posixpath.abspath"
                        | "posixpath.realpath" | "str" | "os.fspath" | "pathlib.Path"
                        | "pathlib.PurePath" | "pathlib.PosixPath"
                            if args.len() == 1 =>
                        {
                            self.file_based(&args[0], depth + 1)
                        }
                        "os.path.join" | "posixpath.join" | "pathlib.Path" | "pathlib.PurePath"
                            if !args.is_empty() =>
                        {
                            first_then_literals(&args[0], &args[1..])
                        }
                        _ => None,
                    }
                }
                _ => None,
            }
        }
    }
    Cx {
        bodies,
        resolve,
        at,
    }
    .file_based(e, 0)
}

/// Is the path inside a fresh temporary directory that this code creates itself
/// (`tempfile.mkdtemp()`, `tempfile.TemporaryDirectory()` bound by `with` or its `.name`,
/// `tmp_path_factory.mktemp(...)`, the pytest `tmp_path` / `tmpdir` fixtures, or a
/// `self.<attr>` that a method of the class, usually `setUp`, sets to one of these)? The
/// range of the expression that creates (or names) the directory.
///
/// Such a directory is private to the process (created with mode 0700, a fresh random
/// name): what is in it was written by this code. The components joined below it must be
/// literals, f-strings, names or attributes (a test's `self._testMethodName`); a call or a
/// subscript, which may give an absolute path that `os.path.join` would put in place of the
/// directory, makes it `None`. Names are looked up through their last assignment before `at`
/// in `bodies` (the function's, then the module's) or a `with ... as name` binding;
/// `self.<attr>` through the assignments in `methods` (the bodies of the class's methods,
/// every one of which must give a temporary directory). `params` are the function's own
/// parameter names.
pub fn temp_dir_path(
    e: &Expr,
    bodies: &[&[Stmt]],
    methods: &[&[Stmt]],
    params: &[&str],
    resolve: &dyn Fn(&Expr) -> Option<String>,
    at: TextSize,
) -> Option<TextRange> {
    struct Cx<'b, 'r> {
        bodies: &'b [&'b [Stmt]],
        methods: &'b [&'b [Stmt]],
        params: &'b [&'b str],
        resolve: &'r dyn Fn(&Expr) -> Option<String>,
        at: TextSize,
        /// Inside a helper function called with the path's directory: its own parameters
        /// are roots that the caller's arguments fill.
        in_callee: bool,
    }
    /// Where a path is rooted: a directory created at this range, or (inside a helper)
    /// the helper's parameter of this name.
    enum Root {
        At(TextRange),
        Param(String),
    }
    /// What a name is bound to: an assigned value, or the context expression of a `with`.
    enum Bound<'b> {
        Value(&'b Expr),
        With(&'b Expr),
    }
    impl<'b> Cx<'b, '_> {
        fn bound(&self, name: &str) -> Option<Bound<'b>> {
            self.bodies.iter().find_map(|body| {
                let mut found: Option<Bound<'b>> = None;
                helpers::for_each_own_stmt(body, &mut |s| match s {
                    Stmt::Assign(a)
                        if a.start() < self.at
                            && a.targets.iter().any(|t| helpers::name_of(t) == Some(name)) =>
                    {
                        found = Some(Bound::Value(&a.value));
                    }
                    Stmt::With(w) if w.start() < self.at => {
                        for item in &w.items {
                            if item
                                .optional_vars
                                .as_deref()
                                .is_some_and(|v| helpers::name_of(v) == Some(name))
                            {
                                found = Some(Bound::With(&item.context_expr));
                            }
                        }
                    }
                    _ => {}
                });
                found
            })
        }
        /// The values every method of the class assigns to `self.<attr>` (none: unknown).
        fn self_values(&self, attr: &str) -> Vec<&'b Expr> {
            let mut out = Vec::new();
            for body in self.methods {
                helpers::for_each_own_stmt(body, &mut |s| {
                    if let Stmt::Assign(a) = s {
                        let hit = a.targets.iter().any(|t| match t {
                            Expr::Attribute(x) => {
                                x.attr.as_str() == attr
                                    && helpers::name_of(&x.value) == Some("self")
                            }
                            _ => false,
                        });
                        if hit {
                            out.push(&*a.value);
                        }
                    }
                });
            }
            out
        }
        /// The value last stored into `name.attr` before `at` in the first of the bodies
        /// (the function's own: `config.out_dir = tmp_path`), when nothing else can set
        /// attributes of `name` by a computed name (`setattr(config, key, value)`).
        fn stored(&self, a: &'b ast::ExprAttribute) -> Option<&'b Expr> {
            let Expr::Name(obj) = &*a.value else {
                return None;
            };
            let obj = obj.id.as_str();
            if obj == "self" {
                return None;
            }
            let body = self.bodies.first()?;
            let mut found = None;
            let mut setattr = false;
            helpers::for_each_own_stmt(body, &mut |s| match s {
                Stmt::Assign(x) if x.start() < self.at => {
                    for t in &x.targets {
                        if let Expr::Attribute(t) = t {
                            if t.attr.as_str() == a.attr.as_str()
                                && helpers::name_of(&t.value) == Some(obj)
                            {
                                found = Some(&*x.value);
                            }
                        }
                    }
                }
                Stmt::Expr(x) => {
                    if let Expr::Call(c) = &*x.value {
                        if helpers::name_of(&c.func) == Some("setattr")
                            && c.arguments.args.first().and_then(helpers::name_of) == Some(obj)
                        {
                            setattr = true;
                        }
                    }
                }
                _ => {}
            });
            found.filter(|_| !setattr)
        }
        /// A component joined below the directory that cannot replace it.
        fn tail(e: &Expr) -> bool {
            match e {
                Expr::StringLiteral(s) => !s.value.to_str().starts_with('/'),
                Expr::FString(f) => !matches!(
                    f.value.elements().next(),
                    Some(ast::InterpolatedStringElement::Literal(l)) if l.value.starts_with('/')
                ),
                Expr::Name(_) | Expr::Attribute(_) | Expr::NumberLiteral(_) => true,
                _ => false,
            }
        }
        /// A call that creates a temporary directory (`mkdtemp()`, `mktemp("x")` of the
        /// pytest factories), or a `TemporaryDirectory()` (whose `with` binding or `.name` is
        /// the directory).
        fn creates(&self, c: &ast::ExprCall, with: bool) -> bool {
            let q = (self.resolve)(&c.func);
            match q.as_deref() {
                Some("tempfile.mkdtemp") => true,
                Some("tempfile.TemporaryDirectory") => with,
                _ => matches!(
                    helpers::method_call(c),
                    Some(("mktemp", Expr::Name(n)))
                        if matches!(n.id.as_str(), "tmp_path_factory" | "tmpdir_factory")
                ),
            }
        }
        /// A function of these bodies (the enclosing function's nested defs, the module's
        /// functions) that `c` calls by name.
        fn helper(&self, c: &ast::ExprCall) -> Option<&'b ast::StmtFunctionDef> {
            let Expr::Name(n) = &*c.func else {
                return None;
            };
            self.bodies.iter().find_map(|body| {
                body.iter().rev().find_map(|s| match s {
                    Stmt::FunctionDef(f) if f.name.as_str() == n.id.as_str() => Some(f),
                    _ => None,
                })
            })
        }
        /// A helper's return value built below a temporary directory: every `return` of the
        /// helper must give one, rooted in a directory the helper creates or in one of its
        /// parameters, which the call's argument then fills (`path =
        /// _write_checkpoint(tmp_dir)` with `def _write_checkpoint(d): p = os.path.join(d,
        /// "ckpt.pt"); torch.save(sd, p); return p`).
        fn returned(&self, c: &ast::ExprCall, depth: u32) -> Option<Root> {
            let def = self.helper(c)?;
            if def.is_async || !def.decorator_list.is_empty() {
                return None;
            }
            let mut returns = Vec::new();
            helpers::for_each_own_stmt(&def.body, &mut |s| {
                if let Stmt::Return(r) = s {
                    returns.push(r.value.as_deref());
                }
            });
            if returns.is_empty() {
                return None;
            }
            let module = *self.bodies.last()?;
            let bodies: [&[Stmt]; 2] = [&def.body, module];
            let params: Vec<&str> = def.parameters.iter().map(|p| p.name().as_str()).collect();
            let inner = Cx {
                bodies: &bodies,
                methods: &[],
                params: &params,
                resolve: self.resolve,
                at: def.end(),
                in_callee: true,
            };
            let mut first = None;
            for r in returns {
                let root = match inner.rooted(r?, depth + 1)? {
                    Root::At(range) => Root::At(range),
                    Root::Param(name) => {
                        let arg = call_argument(c, def, &name)?;
                        self.rooted(arg, depth + 1)?
                    }
                };
                first.get_or_insert(root);
            }
            first
        }
        fn rooted(&self, e: &Expr, depth: u32) -> Option<Root> {
            if depth > 8 {
                return None;
            }
            match e {
                Expr::Name(n) => {
                    let id = n.id.as_str();
                    match self.bound(id) {
                        Some(Bound::Value(v)) => self.rooted(v, depth + 1),
                        Some(Bound::With(c)) => match c {
                            Expr::Call(call) if self.creates(call, true) => {
                                Some(Root::At(c.range()))
                            }
                            _ => None,
                        },
                        None if self.in_callee && self.params.contains(&id) => {
                            Some(Root::Param(id.to_string()))
                        }
                        None if matches!(id, "tmp_path" | "tmpdir")
                            && self.params.contains(&id) =>
                        {
                            Some(Root::At(n.range()))
                        }
                        None => None,
                    }
                }
                Expr::Attribute(a) => {
                    if helpers::name_of(&a.value) == Some("self") {
                        let values = self.self_values(a.attr.as_str());
                        let first = *values.first()?;
                        // Every assignment must give a temporary directory.
                        let r = self.rooted(first, depth + 1)?;
                        return values[1..]
                            .iter()
                            .all(|v| self.rooted(v, depth + 1).is_some())
                            .then_some(r);
                    }
                    // `config.out_dir` after `config.out_dir = tmp_path` in this function.
                    if let Some(v) = self.stored(a) {
                        return self.rooted(v, depth + 1);
                    }
                    // `TemporaryDirectory().name`, `tmp.name` with `tmp = TemporaryDirectory()`
                    if a.attr.as_str() == "name" {
                        let call = match &*a.value {
                            Expr::Call(c) => Some(c),
                            Expr::Name(n) => match self.bound(n.id.as_str()) {
                                Some(Bound::Value(Expr::Call(c))) => Some(c),
                                _ => None,
                            },
                            _ => None,
                        };
                        return call
                            .filter(|c| {
                                (self.resolve)(&c.func).as_deref()
                                    == Some("tempfile.TemporaryDirectory")
                            })
                            .map(|c| Root::At(c.range()));
                    }
                    None
                }
                Expr::BinOp(b) if b.op == Operator::Div => {
                    let base = self.rooted(&b.left, depth + 1)?;
                    Self::tail(&b.right).then_some(base)
                }
                Expr::FString(f) => match f.value.elements().next() {
                    Some(ast::InterpolatedStringElement::Interpolation(i)) => {
                        self.rooted(&i.expression, depth + 1)
                    }
                    _ => None,
                },
                Expr::Call(c) => {
                    if self.creates(c, false) {
                        return Some(Root::At(c.range()));
                    }
                    if let Some(root) = self.returned(c, depth) {
                        return Some(root);
                    }
                    let args = &c.arguments.args;
                    if let Some((m, recv)) = helpers::method_call(c) {
                        if matches!(m, "resolve" | "absolute") && args.is_empty() {
                            return self.rooted(recv, depth + 1);
                        }
                        if m == "joinpath" && args.iter().all(Self::tail) {
                            return self.rooted(recv, depth + 1);
                        }
                    }
                    let q = (self.resolve)(&c.func).or_else(|| {
                        (helpers::name_of(&c.func) == Some("str")).then(|| "str".to_string())
                    })?;
                    match q.as_str() {
                        "str" | "os.fspath" | "os.path.abspath" | "os.path.realpath"
                        | "os.path.normpath" | "pathlib.Path"
                            if args.len() == 1 =>
                        {
                            self.rooted(&args[0], depth + 1)
                        }
                        "os.path.join" | "posixpath.join" | "pathlib.Path"
                            if !args.is_empty() && args[1..].iter().all(Self::tail) =>
                        {
                            self.rooted(&args[0], depth + 1)
                        }
                        _ => None,
                    }
                }
                _ => None,
            }
        }
    }
    match (Cx {
        bodies,
        methods,
        params,
        resolve,
        at,
        in_callee: false,
    })
    .rooted(e, 0)?
    {
        Root::At(range) => Some(range),
        Root::Param(_) => None,
    }
}

/// The argument of `call` that fills parameter `name` of `def` (by keyword, or by position
/// among the positional parameters); `None` when it is not given (a default value).
fn call_argument<'c>(
    call: &'c ast::ExprCall,
    def: &ast::StmtFunctionDef,
    name: &str,
) -> Option<&'c Expr> {
    if let Some(k) = call
        .arguments
        .keywords
        .iter()
        .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == name))
    {
        return Some(&k.value);
    }
    let p = &def.parameters;
    let index = p
        .posonlyargs
        .iter()
        .chain(&p.args)
        .position(|a| a.parameter.name.as_str() == name)?;
    let args = &call.arguments.args;
    if args.iter().any(|a| matches!(a, Expr::Starred(_))) {
        return None;
    }
    args.get(index)
}

/// The `torch.save` of a helper function that returns the path it saved to (`def
/// _write_checkpoint(d): p = os.path.join(d, "ckpt.pt"); torch.save(sd, p); return p`), when
/// `e` is (a name bound to) a call of that helper, found by name in `bodies` (the enclosing
/// function's, then the module's); the range of the save. Names are looked up through their
/// last assignment before `at`.
pub fn helper_saved_path(
    e: &Expr,
    bodies: &[&[Stmt]],
    resolve: &dyn Fn(&Expr) -> Option<String>,
    at: TextSize,
) -> Option<TextRange> {
    let call = match e {
        Expr::Call(c) => c,
        Expr::Name(n) => {
            let mut found = None;
            for body in bodies {
                helpers::for_each_own_stmt(body, &mut |s| {
                    if let Stmt::Assign(a) = s {
                        if a.start() < at
                            && a.targets.iter().any(|t| helpers::name_of(t) == Some(&n.id))
                        {
                            found = Some(&*a.value);
                        }
                    }
                });
                if found.is_some() {
                    break;
                }
            }
            match found? {
                Expr::Call(c) => c,
                _ => return None,
            }
        }
        _ => return None,
    };
    let Expr::Name(callee) = &*call.func else {
        return None;
    };
    let def = bodies.iter().find_map(|body| {
        body.iter().rev().find_map(|s| match s {
            Stmt::FunctionDef(f) if f.name.as_str() == callee.id.as_str() => Some(f),
            _ => None,
        })
    })?;
    // The names the helper returns; every return must give one.
    let mut returned: Vec<&str> = Vec::new();
    let mut other = false;
    helpers::for_each_own_stmt(&def.body, &mut |s| {
        if let Stmt::Return(r) = s {
            match r.value.as_deref() {
                Some(Expr::Name(n)) => returned.push(n.id.as_str()),
                _ => other = true,
            }
        }
    });
    if other || returned.is_empty() {
        return None;
    }
    let mut save = None;
    helpers::for_each_own_stmt(&def.body, &mut |s| {
        let (Stmt::Expr(ast::StmtExpr { value, .. }) | Stmt::Assign(ast::StmtAssign { value, .. })) =
            s
        else {
            return;
        };
        let Expr::Call(c) = &**value else {
            return;
        };
        if resolve(&c.func).as_deref() != Some("torch.save") {
            return;
        }
        let target = helpers::argument(c, "f", 1);
        if target
            .and_then(helpers::name_of)
            .is_some_and(|t| returned.iter().all(|r| *r == t))
        {
            save.get_or_insert(c.range());
        }
    });
    save
}

#[cfg(test)]
mod path_tests {
    use super::template_spells;

    #[test]
    fn templates_spell_literal_paths_hole_by_hole() {
        assert!(template_spells(
            "model_ckpts/model_{}_epochs_trained.pt",
            "model_ckpts/model_20_epochs_trained.pt"
        ));
        assert!(template_spells(
            "./ckpt/resnet_{}_{}.t7",
            "ckpt/resnet_18_3.t7"
        ));
        // Too little literal text in the file name (`{}-{}.t7`).
        assert!(!template_spells("./ckpt/{}-{}.t7", "ckpt/resnet-12.t7"));
        // A hole stays within one path component.
        assert!(!template_spells(
            "model_ckpts/model_{}_epochs_trained.pt",
            "model_ckpts/a/model_20_epochs_trained.pt"
        ));
        // Every literal part must be there, in order.
        assert!(!template_spells(
            "model_ckpts/model_{}_epochs_trained.pt",
            "model_ckpts/model_20_epochs.pt"
        ));
        // A template whose file name is only a hole spells nothing.
        assert!(!template_spells("{}.pt", "best.pt"));
        assert!(!template_spells("out/{}.pth", "out/last.pth"));
    }
}
