//! Glue between the syntax tree a rule sees and the project facts
//! (`torchvet_semantic::project::facts`): the model's id of the function being visited, and
//! where the value of a call goes in its statement. The facts themselves (where values go,
//! what loops do, what checkpoints hold) are the model's; nothing here re-derives them.
use crate::checker::Checker;
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;
use torchvet_semantic::project::facts::Fate;
use torchvet_semantic::project::{FuncId, ProjectFile, Target};

/// Where the value a call creates goes in its statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Bound to a name or `self.<attr>` (a [`Target`] of the function).
    Bound(Target),
    /// Returned, whole or as an element of a returned tuple.
    Returned(Option<u16>),
}

/// The model's id of the function being visited (the module body at module level).
pub(crate) fn current_function(checker: &Checker, p: &ProjectFile) -> Option<FuncId> {
    function_id(p, checker.function())
}

/// The model's id of a function definition of the file (the module body for `None`).
fn function_id(p: &ProjectFile, def: Option<&ruff_python_ast::StmtFunctionDef>) -> Option<FuncId> {
    match def {
        Some(f) => p.function_at(f.range.start()),
        None => Some(FuncId {
            file: p.file,
            index: 0,
        }),
    }
}

/// The enclosing function's parameter that `e` names, when the body never binds that name
/// again (an assignment, augmented assignment, loop or `with` target): the model's id of the
/// function and the parameter's position, for the call-site queries (`param_left_default`,
/// `param_always_falsy`), and the parameter's default.
pub(crate) fn unrebound_param<'a>(
    checker: &Checker<'a>,
    p: &ProjectFile,
    e: &Expr,
) -> Option<(FuncId, usize, Option<&'a Expr>)> {
    use ruff_python_ast::visitor::{self, Visitor};
    let Expr::Name(n) = e else { return None };
    let f = checker.function()?;
    let (i, param) = f
        .parameters
        .iter()
        .enumerate()
        .find(|(_, q)| q.name().as_str() == n.id.as_str())?;
    struct Stores<'n>(&'n str, bool);
    impl<'x> Visitor<'x> for Stores<'_> {
        fn visit_expr(&mut self, e: &'x Expr) {
            if let Expr::Name(m) = e {
                if m.id.as_str() == self.0 && m.ctx == ruff_python_ast::ExprContext::Store {
                    self.1 = true;
                }
            }
            visitor::walk_expr(self, e);
        }
    }
    let mut stores = Stores(n.id.as_str(), false);
    stores.visit_body(&f.body);
    if stores.1 {
        return None;
    }
    Some((current_function(checker, p)?, i, param.default()))
}

/// Where the value of `call` goes: `x = call(...)`, `self.x = call(...)`, `return call(...)`
/// or `return a, call(...)`. `None` for anything else (an argument, an element of a
/// container, an expression statement...).
pub(crate) fn origin_of(checker: &Checker, call: &ExprCall) -> Option<Origin> {
    origin_in(checker.current_stmt()?, call)
}

/// [`origin_of`], in the statement `stmt` that holds the call.
fn origin_in(stmt: &Stmt, call: &ExprCall) -> Option<Origin> {
    let is_call = |e: &Expr| e.range() == call.range();
    match stmt {
        Stmt::Assign(a) if is_call(&a.value) => match a.targets.as_slice() {
            [Expr::Name(n)] => Some(Origin::Bound(Target::Local(n.id.as_str().into()))),
            [t] => helpers::self_attribute(t).map(|a| Origin::Bound(Target::SelfAttr(a.into()))),
            _ => None,
        },
        Stmt::AnnAssign(a) if a.value.as_deref().is_some_and(is_call) => match &*a.target {
            Expr::Name(n) => Some(Origin::Bound(Target::Local(n.id.as_str().into()))),
            t => helpers::self_attribute(t).map(|a| Origin::Bound(Target::SelfAttr(a.into()))),
        },
        Stmt::Return(r) => match r.value.as_deref()? {
            e if is_call(e) => Some(Origin::Returned(None)),
            Expr::Tuple(t) => t
                .elts
                .iter()
                .position(is_call)
                .map(|i| Origin::Returned(Some(i as u16))),
            _ => None,
        },
        _ => None,
    }
}

/// Every place the value `call` of function `func` creates ends up ([`Fate`]s), bound or
/// returned as `origin` says.
pub(crate) fn fates_of(
    p: &ProjectFile,
    func: FuncId,
    origin: &Origin,
    call: &ExprCall,
) -> Vec<Fate> {
    match origin {
        Origin::Bound(t) => p.model.fates(func, t),
        Origin::Returned(e) => p.model.fates_of_return(func, *e, call.range()),
    }
}

/// The evaluation places of the loader `call` builds, when it is used only for evaluation
/// (`ProjectModel::evaluation_only`). It finds the call's statement and function itself, so
/// it answers in any hook (an `end` hook too).
pub(crate) fn loader_used_only_for_evaluation(
    checker: &Checker,
    p: &ProjectFile,
    call: &ExprCall,
) -> Option<Vec<(FuncId, ruff_text_size::TextRange, String)>> {
    let (def, stmt) = helpers::location_at(&checker.module().body, call.start());
    let origin = origin_in(stmt?, call)?;
    let func = function_id(p, def)?;
    p.model.evaluation_only(&fates_of(p, func, &origin, call))
}

/// Where a place of the model is, as messages name it: `line 12` in the file being checked,
/// `train.py:12` in another; a notebook's places by cell (`cell 4, line 2`, or
/// `demo.ipynb cell 4, line 2`), as the user finds them.
pub(crate) fn site(
    p: &ProjectFile,
    file: torchvet_semantic::project::FileId,
    at: ruff_text_size::TextRange,
) -> String {
    let (cell, row) = p.model.file(file).place(at.start());
    let here = file == p.file;
    match cell {
        Some(c) if here => format!("cell {c}, line {row}"),
        Some(c) => format!("{} cell {c}, line {row}", file_label(p, file)),
        None if here => format!("line {row}"),
        None => format!("{}:{row}", file_label(p, file)),
    }
}

/// The file name of a file of the model, as messages show it (relative when below the
/// current directory).
fn file_label(p: &ProjectFile, file: torchvet_semantic::project::FileId) -> String {
    let path = &p.model.file(file).path;
    let shown = crate::checker::display_path(path);
    // The bare file name is enough when it is not ambiguous in a message.
    std::path::Path::new(&shown)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|_| shown.len() > 40)
        .unwrap_or(shown)
}

// ----- loads and the saves they read (TV007, TV126, TV127) -----

/// Methods that only an `nn.Module` has: a loaded object they are called on is a whole module.
/// (`to`, `cuda`, `cpu`, `half`, `float` and `requires_grad_` are Tensor methods too: a loaded
/// feature tensor moved with `.cuda()` is no module.)
const MODULE_METHODS: &[&str] = &[
    "eval",
    "train",
    "parameters",
    "named_parameters",
    "modules",
    "children",
    "forward",
    "state_dict",
    "zero_grad",
];

/// A `torch.load` of the file being visited, and the project's saves it may read.
pub(crate) struct LoadInfo {
    /// The model's view.
    pub project: ProjectFile,
    /// The saves it may read.
    pub pairs: Vec<torchvet_semantic::project::facts::PairedSave>,
    /// The keys read, where (in the function's file, or another file for a helper's caller).
    pub key_uses: Vec<(FuncId, Box<str>, ruff_text_size::TextRange)>,
    /// Where the loaded value ends up.
    pub fates: Vec<Fate>,
    /// The loaded value is used as a module (`.eval()`, called).
    pub as_module: bool,
    /// The path is a download, here or at a call site that fills the parameter it is.
    pub downloaded: bool,
    /// The code tests whether a key it reads is there (`if "model" in sd: sd = sd["model"]`):
    /// the load takes files of more than one layout, so keys alone do not tell which of the
    /// saves that hold them it reads.
    pub tested_keys: bool,
}

/// Why a weights-only load of a checkpoint fails.
pub(crate) struct Failure<'i> {
    /// The save.
    pub pair: &'i torchvet_semantic::project::facts::PairedSave,
    /// The object the unpickler rejects.
    pub kind: torchvet_semantic::saves::RejectedKind,
    /// The key that holds it, in a dict checkpoint.
    pub key: Option<Box<str>>,
    /// Known only from the load's use of what it reads (a model).
    pub from_use: bool,
}

/// The load `call` (a `torch.load`): its path, what is read from its result (keys, module
/// use; through the callers when the function returns it), and the saves it may read.
pub(crate) fn load_info(checker: &Checker, call: &ExprCall) -> Option<LoadInfo> {
    // `torch.load(p)["model"]`
    let inline = match checker.parent_expr() {
        Some(Expr::Subscript(s)) if s.value.range() == call.range() => {
            helpers::str_value(&s.slice).map(|k| (Box::<str>::from(k), s.range()))
        }
        _ => None,
    };
    load_info_at(checker, call, origin_of(checker, call), inline)
}

/// [`load_info`] for a load that is not the node being visited: where its value goes and
/// the key read inline, given.
pub(crate) fn load_info_at(
    checker: &Checker,
    call: &ExprCall,
    origin: Option<Origin>,
    inline: Option<(Box<str>, ruff_text_size::TextRange)>,
) -> Option<LoadInfo> {
    use torchvet_semantic::project::facts::{path_shape, LoadDesc, PathShape, UseHow};
    let p = checker.project_or_file()?.clone();
    let func = current_function(checker, &p)?;
    let (body, params): (&[Stmt], Vec<&str>) = match checker.function() {
        Some(f) => (
            &f.body,
            f.parameters.iter().map(|p| p.name().as_str()).collect(),
        ),
        None => (&checker.module().body, Vec::new()),
    };
    let path = helpers::argument(call, "f", 0).map_or(PathShape::Unknown, |e| {
        path_shape(e, body, &params, &checker.scopes, call.start())
    });
    let mut keys: Vec<Box<str>> = Vec::new();
    let mut key_uses = Vec::new();
    let mut as_module = false;
    // Keys whose presence the code tests (`if "model" in sd: sd = sd["model"]`): the load
    // accepts files with and without them (see `LoadInfo::tested_keys`).
    let mut tested: Vec<Box<str>> = Vec::new();
    if let Some((k, r)) = inline {
        keys.push(k.clone());
        key_uses.push((func, k, r));
    }
    let fates = match origin {
        Some(Origin::Bound(t)) => p.model.fates(func, &t),
        Some(Origin::Returned(e)) => p.model.fates_of_return(func, e, call.range()),
        None => Vec::new(),
    };
    for f in &fates {
        if let Fate::Use {
            func: at,
            how,
            at: r,
        } = f
        {
            match how {
                UseHow::Key(k) => {
                    if !keys.contains(k) {
                        keys.push(k.clone());
                    }
                    key_uses.push((*at, k.clone(), *r));
                }
                UseHow::KeyTested(k) => tested.push(k.clone()),
                UseHow::Method(m) if MODULE_METHODS.contains(&&**m) => as_module = true,
                UseHow::Called => as_module = true,
                _ => {}
            }
        }
    }
    let tested_keys = keys.iter().any(|k| tested.contains(k));
    let desc = LoadDesc {
        func,
        path,
        keys,
        as_module,
        at: Some(call.start()),
    };
    let pairs = p.model.saves_for_load(&desc);
    let downloaded = p.model.path_downloaded(func, &desc.path);
    let as_module = desc.as_module;
    Some(LoadInfo {
        project: p,
        pairs,
        key_uses,
        fates,
        as_module,
        downloaded,
        tested_keys,
    })
}

/// Would a weights-only load of what the paired saves write fail? The save (and what it
/// writes) that holds an object the weights-only unpickler rejects: for saves paired by path,
/// helper module or module use, any of them; for saves paired by keys only, all of them must
/// (the load may read any). A load whose result is used as a model reads a whole module
/// when the paired save's content is not known otherwise.
pub(crate) fn weights_only_failure(info: &LoadInfo) -> Option<Failure<'_>> {
    use torchvet_semantic::project::facts::PairBy;
    use torchvet_semantic::saves::{RejectedKind, Saved};
    let failure = |ps: &torchvet_semantic::project::facts::PairedSave| -> Option<(RejectedKind, Option<Box<str>>, bool)> {
        match &ps.content.saved {
            Saved::Rejected(kind, _) => {
                let key = ps.content.keys.as_ref().and_then(|ks| {
                    ks.iter()
                        .find(|(_, s, _)| matches!(s, Saved::Rejected(k, _) if k == kind))
                        .map(|(k, _, _)| k.clone())
                });
                Some((kind.clone(), key, false))
            }
            Saved::Unknown if info.as_module && ps.content.keys.is_none() => {
                Some((RejectedKind::Module, None, true))
            }
            _ => None,
        }
    };
    // A claim that the load fails rests on the nearest saves (see `saves_for_load`); for a
    // load paired by keys whose presence it tests, on every save that holds them, near or
    // far: such a load reads files of more than one layout (a bare state dict, or one under
    // "model"), and the nearest save holding the key need not be the one it reads. When the
    // program also saves bare weights, the keys do not tell that it reads a checkpoint that
    // holds them at all (a fine-tuning step given the run's `best_model.pt` state dict, not
    // its resume state): no save is evidence that it fails.
    let keys_only = info.pairs.first().is_some_and(|ps| ps.by == PairBy::Keys);
    if keys_only
        && info.tested_keys
        && info
            .project
            .model
            .program_saves_bare_weights(info.project.file)
    {
        return None;
    }
    let near: Vec<&torchvet_semantic::project::facts::PairedSave> = info
        .pairs
        .iter()
        .filter(|ps| ps.near || (keys_only && info.tested_keys))
        .collect();
    let first = *near.first()?;
    let (pair, (kind, key, from_use)) = match first.by {
        PairBy::Keys => {
            let all: Option<Vec<_>> = near.iter().map(|ps| failure(ps)).collect();
            (first, all?.into_iter().next()?)
        }
        _ => near.iter().find_map(|ps| failure(ps).map(|f| (*ps, f)))?,
    };
    Some(Failure {
        pair,
        kind,
        key,
        from_use,
    })
}

/// Does `checkpoint-fails-weights-only-load` apply to this load: `weights_only=True`, or no
/// `weights_only` with a target torch of 2.6 or later (where that is the default)? The
/// second value tells whether the argument is explicit.
pub(crate) fn weights_only_in_effect(checker: &Checker, call: &ExprCall) -> Option<bool> {
    if helpers::has_kwargs_splat(call) {
        return None;
    }
    match helpers::keyword(call, "weights_only") {
        Some(v) => (helpers::is_truthy(v) == Some(true)).then_some(true),
        None => (checker.torch_at_least(2, 6) && !checker.in_version_guard()).then_some(false),
    }
}

/// Will `checkpoint-fails-weights-only-load` report this load? (`torch-load-without-weights-only`
/// defers to it, so the two never report one call.)
pub(crate) fn load_fails_weights_only(checker: &Checker, call: &ExprCall) -> bool {
    if weights_only_in_effect(checker, call).is_none() || checker.mentions("safe_globals") {
        return false;
    }
    let Some(info) = load_info(checker, call) else {
        return false;
    };
    !info.project.model.allows_safe_globals() && weights_only_failure(&info).is_some()
}

/// Is the module `model` (a name or `self.net`) frozen whole before `at`: by the function
/// being visited (`model.requires_grad_(False)`, or `p.requires_grad = False` over its
/// parameters), or, for a parameter, by a caller before the call? A frozen module on inputs
/// that need no grad records no graph (the model's frozen-module facts).
pub(crate) fn module_frozen_at(
    checker: &mut Checker,
    model: &Expr,
    at: ruff_text_size::TextSize,
) -> bool {
    helpers::dotted(model).is_some_and(|name| name_frozen_at(checker, &name, at))
        || frozen_by_its_class(checker, model)
}

/// Is `model` (a parameter or `self.<attr>`) an instance of a project class whose
/// constructor freezes its own parameters ([`ProjectModel::class_freezes_itself`])?
///
/// [`ProjectModel::class_freezes_itself`]: torchvet_semantic::project::ProjectModel::class_freezes_itself
fn frozen_by_its_class(checker: &mut Checker, model: &Expr) -> bool {
    // The class as the model resolves the value, else as the file's dataflow builds it
    // (`enc = VGG19Encoder()`).
    let Some(c) = checker.project_class_of(model) else {
        return false;
    };
    checker
        .project_or_file()
        .is_some_and(|p| p.model.class_freezes_itself(c))
}

/// Is the value of `expr` (a name or `self.<attr>`) an instance of a project class that
/// satisfies `pred`?
fn project_class_is(
    checker: &Checker,
    expr: &Expr,
    pred: impl Fn(&ProjectFile, torchvet_semantic::project::ClassId) -> bool,
) -> bool {
    use torchvet_semantic::project::ClassRef;
    let Some(p) = checker.project() else {
        return false;
    };
    matches!(
        checker.value_resolved(expr).and_then(|r| r.class),
        Some(ClassRef::Project(c)) if pred(p, c)
    )
}

/// Is the called object (a name or `self.<attr>`) an instance of a project class that
/// defines its own `__call__`, itself or through a project base
/// ([`ProjectModel::class_defines_call`])? Calling it runs that method, not `forward` in the
/// caller's grad and train/eval mode: Ultralytics' `Model.__call__` runs a predictor that
/// switches the network to eval mode and turns autograd off itself.
///
/// [`ProjectModel::class_defines_call`]: torchvet_semantic::project::ProjectModel::class_defines_call
pub(crate) fn runs_own_call(checker: &Checker, func: &Expr) -> bool {
    project_class_is(checker, func, |p, c| p.model.class_defines_call(c))
}

/// [`module_frozen_at`] for the module's dotted name (`encoder`, `self.G`).
pub(crate) fn name_frozen_at(checker: &Checker, name: &str, at: ruff_text_size::TextSize) -> bool {
    let Some(p) = checker.project_or_file() else {
        return false;
    };
    let Some(here) = current_function(checker, p) else {
        return false;
    };
    if p.model.frozen_before(here, name, at) {
        return true;
    }
    let Some(f) = checker.function() else {
        return false;
    };
    // A module-level model the function reads as a global (a notebook's `model`, frozen in
    // an earlier cell): frozen by the module body, which runs before any call of the function.
    let root = name.split('.').next().unwrap_or(name);
    if !checker
        .scopes
        .current()
        .is_some_and(|s| s.binds_locally(root))
        && p.model.frozen_before(
            FuncId {
                file: p.file,
                index: 0,
            },
            name,
            ruff_text_size::TextSize::new(u32::MAX),
        )
    {
        return true;
    }
    f.parameters
        .iter()
        .position(|q| q.name().as_str() == name)
        .is_some_and(|i| p.model.param_frozen_by_callers(here, i))
}
