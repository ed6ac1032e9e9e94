//! Phase 1 of the wave-3 project facts ([`crate::project::facts`]): what one function does
//! with the values it can name, its loops, `torch.save` calls, optimizers, DataLoaders and
//! returns, read from its syntax tree while the file is summarised.
//!
//! Values followed: the function's parameters, `self.<attr>` (in methods of classes that are
//! not `nn.Module`s), locals bound from calls that matter (project functions and classes,
//! schedulers, optimizers, DataLoaders, `torch.load`, torchvision datasets) and their aliases,
//! and the module-level followed names a function uses. Methods of `nn.Module` classes record
//! only the module-level names they use (`recorded` stays false: queries treat their other
//! uses as unknown).
use super::{Builder, Nested, Val};
use crate::bindings::Scopes;
use crate::helpers;
use crate::kinds::{qualified_call_kind, Kind, KindContext, KindTable};
use crate::project::facts::{
    ArgContent, ArgPath, ArgPos, AttrMethod, BareStateDictLoad, Binding, Content, FileFacts,
    FunctionFacts, KeyContent, LaunchFacts, LoaderFact, LoopFact, OptimizerFact, PathShape,
    SaveFact, ShuffleArg, StateDictLoadPath, StateDictLoads, TrackedValue, UseHow, ValueUse,
    ZeroDim,
};
use crate::project::summary::Target;
use crate::saves::{self, SaveContext, Saved};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, ExprCall, Operator, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use rustc_hash::{FxHashMap, FxHashSet};

/// Calls that wrap an iterable without consuming it (`for i, b in enumerate(tqdm(loader))`).
const WRAPPERS: &[&str] = &[
    "enumerate",
    "zip",
    "iter",
    "tqdm",
    "tqdm.tqdm",
    "tqdm.auto.tqdm",
    "tqdm.notebook.tqdm",
    "tqdm.autonotebook.tqdm",
    "tqdm.std.tqdm",
];

impl Builder<'_> {
    /// The launch commands the file's own text gives for itself (usage docstrings,
    /// comments): see [`LaunchFacts::documents_legacy_launch`].
    fn documented_launches(&self, launch: &mut LaunchFacts) {
        let Some(name) = self.out.path.file_name().and_then(|n| n.to_str()) else {
            return;
        };
        for (program, kind) in torchvet_python::launch::launched_programs(self.text) {
            if program == name {
                match kind {
                    torchvet_python::launch::Launcher::Legacy => {
                        launch.documents_legacy_launch = true;
                    }
                    torchvet_python::launch::Launcher::Env => launch.documents_env_launch = true,
                }
            }
        }
    }

    /// Facts of the module body (function 0) and of the whole file.
    pub(super) fn module_facts(&mut self, body: &[Stmt], vals: &FxHashMap<String, Val>) {
        let text = self.text.as_bytes();
        static STATE_DICT_LOADS: super::WordSet =
            super::WordSet::new(&["load_state_dict", "consume_prefix_in_state_dict"]);
        static LAUNCH: super::WordSet =
            super::WordSet::new(&["local_rank", "LOCAL_RANK", "set_default_"]);
        let state_dict_loads = if STATE_DICT_LOADS.any_in(text) {
            let mut v = StateDictLoadVisitor {
                scopes: &self.scopes,
                frames: vec![Vec::new()],
                bodies: vec![(body, Vec::new(), None)],
                out: StateDictLoads::default(),
                paths: Vec::new(),
                bare: Vec::new(),
                read_names: names_read(body),
                script: has_main_guard(body),
                classes: 0,
                unreferenced: vec![false],
            };
            for stmt in body {
                v.visit_stmt(stmt);
            }
            (v.out, v.paths, v.bare)
        } else {
            (StateDictLoads::default(), Vec::new(), Vec::new())
        };
        let (state_dict_loads, state_dict_load_paths, bare_state_dict_loads) = state_dict_loads;
        let has = |w: &[u8]| memchr::memmem::find(text, w).is_some();
        let (launch, may_set_cuda_default) = if LAUNCH.any_in(text) {
            let mut v = LaunchVisitor {
                scopes: &self.scopes,
                frames: Vec::new(),
                launch: LaunchFacts::default(),
                cuda_default: false,
            };
            v.visit_body(body);
            (v.launch, v.cuda_default)
        } else {
            (LaunchFacts::default(), false)
        };
        let mut launch = launch;
        self.documented_launches(&mut launch);
        self.out.facts = FileFacts {
            safe_globals: has(b"safe_globals"),
            state_dict_loads,
            state_dict_load_paths,
            bare_state_dict_loads,
            launch,
            may_set_cuda_default,
        };
        if !self.out.vocab.facts {
            return;
        }
        let facts = self.extract(0, body, None, &[], vals, None, None, false, true);
        self.out.functions[0].facts = facts;
    }

    /// Facts of a function (see the module docs).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn function_facts(
        &mut self,
        idx: u32,
        f: &ast::StmtFunctionDef,
        class: Option<u32>,
        params: &[&str],
        vals: &FxHashMap<String, Val>,
        nested: Option<&Nested>,
        no_grad: bool,
    ) {
        if !self.out.vocab.facts {
            if self.out.vocab.reductions {
                self.out.functions[idx as usize].facts.zero_dim =
                    zero_dim_returns(&f.body, &self.scopes);
            }
            return;
        }
        let full = class.is_none_or(|c| !self.out.classes[c as usize].local_module);
        let mut facts = self.extract(
            idx,
            &f.body,
            Some(&f.parameters),
            params,
            vals,
            nested,
            class,
            no_grad,
            full,
        );
        let p = &f.parameters;
        let mut stars = Vec::new();
        if let Some(v) = &p.vararg {
            if let Some(i) = params.iter().position(|n| *n == v.name.as_str()) {
                stars.push(i as u16);
            }
        }
        if let Some(k) = &p.kwarg {
            if let Some(i) = params.iter().position(|n| *n == k.name.as_str()) {
                stars.push(i as u16);
            }
        }
        facts.star_params = stars;
        self.out.functions[idx as usize].facts = facts;
    }

    #[allow(clippy::too_many_arguments)]
    fn extract(
        &self,
        idx: u32,
        body: &[Stmt],
        parameters: Option<&ast::Parameters>,
        params: &[&str],
        vals: &FxHashMap<String, Val>,
        nested: Option<&Nested>,
        class: Option<u32>,
        no_grad: bool,
        full: bool,
    ) -> FunctionFacts {
        let project_calls: FxHashSet<TextRange> = self.out.functions[idx as usize]
            .calls
            .iter()
            .map(|c| c.range)
            .collect();
        // Module-level followed names visible here (not bound locally).
        // (Borrowed: `str` hashes as `String` does, so the set iterates in the same order.)
        let mut globals: FxHashSet<&str> = FxHashSet::default();
        if idx != 0 {
            if let Some(scope) = self.scopes.current() {
                for v in &self.out.functions[0].facts.values {
                    if let Target::Local(n) = &v.target {
                        if !scope.binds_locally(n) && !params.contains(&&**n) {
                            globals.insert(n);
                        }
                    }
                }
            }
        }
        let mut x = Extract {
            b: self,
            params,
            project_calls: &project_calls,
            full,
            self_attrs: full && class.is_some(),
            method: class.is_some(),
            module: idx == 0,
            tracked: FxHashMap::default(),
            tracked_attrs: FxHashMap::default(),
            values: Vec::new(),
            loops: Vec::new(),
            no_grad: u32::from(no_grad),
            last_eval: None,
            last_train: None,
            saves: Vec::new(),
            optimizers: Vec::new(),
            loaders: Vec::new(),
            attr_methods: Vec::new(),
            project_arg_calls: Vec::new(),
            comprehension_vars: FxHashMap::default(),
        };
        if full {
            for (i, p) in params.iter().enumerate() {
                x.track(p, Target::Param(i as u16, "".into()));
            }
        }
        for g in &globals {
            x.track(g, Target::Global((*g).into()));
        }
        x.suite(body);
        let Extract {
            mut values,
            loops,
            saves: save_calls,
            optimizers,
            loaders,
            attr_methods,
            project_arg_calls,
            ..
        } = x;
        if !full {
            values.retain(|v| matches!(v.target, Target::Global(_)));
        }
        // Saves and save-helper arguments need the function's value kinds: computed only when
        // there is something to classify.
        let wants_args = !project_arg_calls.is_empty()
            && self.out.vocab.save
            && self.function_mentions_checkpoint(idx);
        // The body's name bindings, for the path shapes of the saves and arguments below.
        let names = std::cell::OnceCell::new();
        let names = || names.get_or_init(|| crate::project::facts::NameBindings::of(body));
        let mut saves = Vec::new();
        let mut arg_contents = Vec::new();
        // Paths handed to project helpers (`save_checkpoint(state, "last.pt")`).
        let mut arg_paths = Vec::new();
        if !project_arg_calls.is_empty() && (self.out.vocab.save || self.out.vocab.load) {
            for call in &project_arg_calls {
                let positional = call
                    .arguments
                    .args
                    .iter()
                    .take_while(|a| !matches!(a, Expr::Starred(_)))
                    .enumerate()
                    .map(|(i, a)| (ArgPos::Pos(i as u16), a));
                let keywords =
                    call.arguments.keywords.iter().filter_map(|k| {
                        Some((ArgPos::Kw(k.arg.as_ref()?.as_str().into()), &k.value))
                    });
                for (pos, a) in positional.chain(keywords) {
                    if !path_like(a) {
                        continue;
                    }
                    let path = crate::project::facts::path_shape_in(
                        a,
                        body,
                        names(),
                        params,
                        &self.scopes,
                        call.start(),
                    );
                    if !matches!(
                        path,
                        PathShape::Unknown | PathShape::Attr(_) | PathShape::JoinTailAttr(_)
                    ) {
                        arg_paths.push(ArgPath {
                            call: call.range(),
                            pos,
                            path,
                        });
                    }
                }
            }
        }
        if !save_calls.is_empty() || wants_args {
            let local = KindTable::infer(
                body,
                parameters,
                &self.scopes,
                self.classes,
                Some(self.module_kinds),
            );
            let outer = (idx != 0).then_some(self.module_kinds);
            // What a name holds at a save: the assignments that reach it in this body (not
            // every assignment of the name: `net = Net(); torch.save(net, p);
            // net = torch.load(p)`), else, for a name the function never binds, the
            // module-level value (the union of the module's assignments).
            let val_at = |n: &str, at: TextSize| -> Option<Val> {
                match crate::reaching::reaching(body, n, at) {
                    Some(defs) => defs
                        .iter()
                        .map(|d| match d {
                            crate::reaching::Def::Value(e) => {
                                Some(self.val(e, params, vals, nested))
                            }
                            _ => None,
                        })
                        .collect::<Option<Vec<Val>>>()?
                        .into_iter()
                        .reduce(Val::join),
                    None if idx != 0 && !vals.contains_key(n) => self
                        .out
                        .globals
                        .binary_search_by(|(g, _)| (**g).cmp(n))
                        .ok()
                        .map(|i| self.out.globals[i].1.clone()),
                    None => None,
                }
            };
            let cx = SaveContext {
                kinds: KindContext {
                    local: &local,
                    outer,
                    attrs: None,
                    scopes: &self.scopes,
                    classes: self.classes,
                },
                body,
                scopes: &self.scopes,
                classes: self.classes,
            };
            for call in save_calls {
                let Some(obj) = helpers::argument(call, "obj", 0) else {
                    continue;
                };
                let path = helpers::argument(call, "f", 1);
                saves.push(SaveFact {
                    call: call.range(),
                    object: obj.range(),
                    content: content_of(obj, &cx, params, &val_at, call.start()),
                    path: path.map_or(PathShape::Unknown, |p| {
                        crate::project::facts::path_shape_in(
                            p,
                            body,
                            names(),
                            params,
                            &self.scopes,
                            call.start(),
                        )
                    }),
                });
            }
            if wants_args {
                for call in project_arg_calls {
                    for (i, a) in call.arguments.args.iter().enumerate() {
                        if matches!(a, Expr::Starred(_)) {
                            break;
                        }
                        let c = content_of(a, &cx, params, &val_at, call.start());
                        if interesting(&c) {
                            arg_contents.push(ArgContent {
                                call: call.range(),
                                pos: ArgPos::Pos(i as u16),
                                content: c,
                                range: a.range(),
                            });
                        }
                    }
                    for k in &call.arguments.keywords {
                        let Some(name) = &k.arg else { continue };
                        let c = content_of(&k.value, &cx, params, &val_at, call.start());
                        if interesting(&c) {
                            arg_contents.push(ArgContent {
                                call: call.range(),
                                pos: ArgPos::Kw(name.as_str().into()),
                                content: c,
                                range: k.value.range(),
                            });
                        }
                    }
                }
            }
        }
        let zero_dim = zero_dim_returns(body, &self.scopes);
        let returns_namespace = idx != 0 && returns_namespace(body);
        let _ = nested;
        FunctionFacts {
            recorded: full,
            values,
            loops,
            saves,
            arg_contents,
            arg_paths,
            optimizers,
            loaders,
            attr_methods: if full { attr_methods } else { Vec::new() },
            zero_dim,
            star_params: Vec::new(),
            returns_namespace,
        }
    }

    fn function_mentions_checkpoint(&self, idx: u32) -> bool {
        let r = self.out.functions[idx as usize].range;
        let Some(t) = self.text.get(r.start().to_usize()..r.end().to_usize()) else {
            return false;
        };
        static CHECKPOINT: super::WordSet = super::WordSet::new(&["save", "ckpt", "checkpoint"]);
        CHECKPOINT.any_in(t.as_bytes())
    }
}

/// Could an argument be a file path (a string, an f-string, a join, a name)?
fn path_like(e: &Expr) -> bool {
    match e {
        Expr::StringLiteral(_) | Expr::FString(_) | Expr::Name(_) => true,
        Expr::BinOp(b) => matches!(b.op, Operator::Mod | Operator::Div),
        Expr::Call(c) => {
            matches!(helpers::method_call(c), Some(("format" | "join", _)))
                || crate::project::facts::is_download_call(c)
        }
        Expr::Attribute(_) => true,
        _ => false,
    }
}

/// Is an argument's content worth keeping for save helpers?
fn interesting(c: &Content) -> bool {
    c.keys.is_some()
        || matches!(c.saved, Saved::Rejected(..))
        || c.param.is_some()
        || c.value.is_some()
}

/// What a saved object holds (see [`Content`]).
fn content_of(
    obj: &Expr,
    cx: &SaveContext,
    params: &[&str],
    val_at: &dyn Fn(&str, TextSize) -> Option<Val>,
    at: TextSize,
) -> Content {
    let param_of = |e: &Expr| -> Option<u16> {
        let n = helpers::name_of(e)?;
        // A parameter not re-bound before the save.
        let i = params.iter().position(|p| *p == n)?;
        let mut rebound = false;
        crate::project::summary::for_each_own_stmt(cx.body, &mut |s| {
            if let Stmt::Assign(a) = s {
                if a.start() < at && a.targets.iter().any(|t| helpers::name_of(t) == Some(n)) {
                    rebound = true;
                }
            }
        });
        (!rebound).then_some(i as u16)
    };
    let value_of = |e: &Expr| -> Option<Val> {
        if let Some(i) = param_of(e) {
            return Some(Val::Param(i));
        }
        if let Some(n) = helpers::name_of(e) {
            // A local bound to a project call or a known kind (`vocab = CharVocab(text)`),
            // by the assignments that reach the use.
            return val_at(n, e.start()).filter(|v| {
                matches!(
                    v,
                    Val::Call { .. } | Val::Kind(_) | Val::Torch(_) | Val::Loss(_)
                )
            });
        }
        helpers::self_attribute(e).map(|a| Val::SelfAttr(a.into()))
    };
    let state_of = |e: &Expr| -> Option<Val> {
        let Expr::Call(c) = e else { return None };
        let ("state_dict", recv) = helpers::method_call(c)? else {
            return None;
        };
        if let Some(v) = value_of(recv) {
            return Some(v);
        }
        match cx.kinds.kind(recv) {
            Kind::Unknown => None,
            k => Some(Val::Kind(k)),
        }
    };
    let keys = saves::dict_items(obj, cx, at).map(|items| {
        items
            .into_iter()
            .map(|(k, v)| KeyContent {
                key: k.into(),
                saved: saves::classify(v, cx, at),
                value: value_of(v),
                state_of: state_of(v),
            })
            .collect()
    });
    Content {
        saved: saves::classify(obj, cx, at),
        param: param_of(obj),
        value: value_of(obj),
        keys,
    }
}

/// Does a function return a reduced 0-dim tensor on every path (see [`ZeroDim`])?
fn zero_dim_returns(body: &[Stmt], scopes: &crate::bindings::Scopes) -> ZeroDim {
    let mut acc: Option<ZeroDim> = None;
    let mut ok = true;
    crate::project::summary::for_each_own_stmt(body, &mut |s| {
        let Stmt::Return(r) = s else { return };
        let this = match r.value.as_deref() {
            None => ZeroDim::No,
            Some(Expr::Tuple(t)) => {
                let els: Vec<bool> = t
                    .elts
                    .iter()
                    .map(|e| is_zero_dim(e, body, scopes, 0))
                    .collect();
                if els.iter().any(|b| *b) {
                    ZeroDim::Elements(els)
                } else {
                    ZeroDim::No
                }
            }
            Some(e) => {
                if is_zero_dim(e, body, scopes, 0) {
                    ZeroDim::Whole
                } else {
                    ZeroDim::No
                }
            }
        };
        acc = Some(match acc.take() {
            None => this,
            Some(ZeroDim::Whole) if this == ZeroDim::Whole => ZeroDim::Whole,
            Some(ZeroDim::Elements(a)) => match this {
                ZeroDim::Elements(b) if a.len() == b.len() => {
                    ZeroDim::Elements(a.iter().zip(&b).map(|(x, y)| *x && *y).collect())
                }
                _ => {
                    ok = false;
                    ZeroDim::No
                }
            },
            Some(_) => {
                ok = false;
                ZeroDim::No
            }
        });
    });
    match acc {
        Some(ZeroDim::Elements(e)) if ok && e.iter().any(|b| *b) => ZeroDim::Elements(e),
        Some(ZeroDim::Whole) if ok => ZeroDim::Whole,
        _ => ZeroDim::No,
    }
}

/// Does every `return` give the parsed command line (`parser.parse_args()`,
/// `parse_known_args()[0]`, or a name bound to one)?
fn returns_namespace(body: &[Stmt]) -> bool {
    let mut any = false;
    let mut all = true;
    crate::project::summary::for_each_own_stmt(body, &mut |s| {
        let Stmt::Return(r) = s else { return };
        any = true;
        let ok = match r.value.as_deref() {
            Some(e) if helpers::parsed_cli_args(e) => true,
            Some(Expr::Name(n)) => {
                let mut found = false;
                let mut other = false;
                crate::project::summary::for_each_own_stmt(body, &mut |t| {
                    if let Stmt::Assign(a) = t {
                        if a.targets
                            .iter()
                            .any(|x| helpers::name_of(x) == Some(n.id.as_str()))
                        {
                            if helpers::parsed_cli_args(&a.value) {
                                found = true;
                            } else {
                                other = true;
                            }
                        }
                    }
                });
                found && !other
            }
            _ => false,
        };
        all &= ok;
    });
    any && all
}

/// Does a loss call keep the default (mean/sum) reduction?
fn reduces(call: &ExprCall) -> bool {
    if helpers::has_kwargs_splat(call) {
        return false;
    }
    if let Some(r) = call.arguments.find_keyword("reduction") {
        return matches!(helpers::str_value(&r.value), Some("mean" | "sum"));
    }
    if let Some(r) = call.arguments.find_keyword("reduce") {
        return helpers::is_truthy(&r.value) == Some(true);
    }
    true
}

/// Is `e` a reduced 0-dim tensor: a loss with the default reduction, `torch.mean(x)`,
/// `x.mean()` / `x.sum()`, arithmetic of one with numbers or names, or a name every
/// assignment of which is one?
fn is_zero_dim(e: &Expr, body: &[Stmt], scopes: &crate::bindings::Scopes, depth: u32) -> bool {
    if depth > 4 {
        return false;
    }
    match e {
        // The builtin `sum` of reduced values (as `tensor-data-zero-index` reads it).
        Expr::Call(c) if helpers::name_of(&c.func) == Some("sum") && !scopes.is_bound("sum") => {
            helpers::summed_elements(c, body, scopes).is_some_and(|elements| {
                !elements.is_empty()
                    && elements
                        .iter()
                        .all(|x| is_zero_dim(x, body, scopes, depth + 1))
            })
        }
        Expr::Call(c) => {
            if let Some(q) = scopes.resolve(&c.func) {
                if q.starts_with("torch.nn.functional.") {
                    return crate::is_functional_loss(&q) && reduces(c);
                }
                if matches!(q.as_str(), "torch.mean" | "torch.sum") {
                    return c.arguments.args.len() == 1 && c.arguments.keywords.is_empty();
                }
                return false;
            }
            if let Expr::Call(inner) = &*c.func {
                // `nn.MSELoss()(a, b)`
                if let Some(q) = scopes.resolve(&inner.func) {
                    return q.starts_with("torch.nn.") && q.ends_with("Loss") && reduces(inner);
                }
            }
            matches!(helpers::method_call(c), Some(("mean" | "sum", _))) && c.arguments.is_empty()
        }
        Expr::BinOp(b)
            if matches!(
                b.op,
                Operator::Add | Operator::Sub | Operator::Mult | Operator::Div
            ) =>
        {
            let scalarish =
                |x: &Expr| matches!(x, Expr::NumberLiteral(_)) || helpers::may_be_count(x, scopes);
            let l = is_zero_dim(&b.left, body, scopes, depth + 1);
            let r = is_zero_dim(&b.right, body, scopes, depth + 1);
            (l && (r || scalarish(&b.right))) || (r && scalarish(&b.left))
        }
        Expr::Name(n) => {
            let id = n.id.as_str();
            // The assignments that reach this use, when each is a plain one: an earlier
            // unreduced value rebound by its reduction (`loss = clamp(d); loss = loss.mean()`)
            // does not reach the use.
            if let Some(defs) = crate::reaching::reaching(body, id, n.start()) {
                if !defs.is_empty()
                    && defs
                        .iter()
                        .all(|d| matches!(d, crate::reaching::Def::Value(_)))
                {
                    return defs.iter().all(|d| match d {
                        crate::reaching::Def::Value(v) => is_zero_dim(v, body, scopes, depth + 1),
                        _ => false,
                    });
                }
            }
            let mut any = false;
            let mut all = true;
            crate::project::summary::for_each_own_stmt(body, &mut |s| match s {
                Stmt::Assign(a) if a.targets.iter().any(|t| helpers::name_of(t) == Some(id)) => {
                    any = true;
                    if a.targets.len() != 1 || !is_zero_dim(&a.value, body, scopes, depth + 1) {
                        all = false;
                    }
                }
                Stmt::Assign(a)
                    if a.targets.iter().any(|t| match t {
                        Expr::Tuple(tt) => tt.elts.iter().any(|e| helpers::name_of(e) == Some(id)),
                        _ => false,
                    }) =>
                {
                    all = false;
                }
                Stmt::AugAssign(a) if helpers::name_of(&a.target) == Some(id) => {
                    let keeps = matches!(
                        a.op,
                        Operator::Add | Operator::Sub | Operator::Mult | Operator::Div
                    ) && matches!(
                        &*a.value,
                        Expr::NumberLiteral(_) | Expr::Name(_) | Expr::Attribute(_)
                    );
                    if !keeps {
                        all = false;
                    }
                }
                Stmt::AnnAssign(a) if helpers::name_of(&a.target) == Some(id) => all = false,
                Stmt::For(f) if helpers::name_of(&f.target) == Some(id) => all = false,
                Stmt::With(w)
                    if w.items.iter().any(|i| {
                        i.optional_vars.as_deref().and_then(helpers::name_of) == Some(id)
                    }) =>
                {
                    all = false
                }
                _ => {}
            });
            any && all
        }
        _ => false,
    }
}

struct Extract<'x, 'b> {
    b: &'x Builder<'b>,
    params: &'x [&'x str],
    project_calls: &'x FxHashSet<TextRange>,
    /// Record the uses of parameters and locals (not only of module-level names).
    full: bool,
    /// Follow `self.<attr>`.
    self_attrs: bool,
    /// A method (parameter 0 is `self`).
    method: bool,
    /// The module body (function 0).
    module: bool,
    /// Followed names -> index in `values`.
    tracked: FxHashMap<String, usize>,
    /// Followed `self.<attr>` by attribute -> index in `values` (apart from the names, so
    /// that a visit of `self.x` looks it up without building the text `self.x`).
    tracked_attrs: FxHashMap<String, usize>,
    values: Vec<TrackedValue>,
    loops: Vec<LoopFact>,
    no_grad: u32,
    last_eval: Option<TextSize>,
    last_train: Option<TextSize>,
    saves: Vec<&'x ExprCall>,
    optimizers: Vec<OptimizerFact>,
    loaders: Vec<LoaderFact>,
    /// `x.attr.m(...)` on followed values `x`.
    attr_methods: Vec<AttrMethod>,
    project_arg_calls: Vec<&'x ExprCall>,
    /// Comprehension variables bound to `X.items()` values: var -> `X`.
    comprehension_vars: FxHashMap<String, String>,
}

impl<'x> Extract<'x, '_> {
    fn track(&mut self, name: &str, target: Target) -> usize {
        if let Some(&i) = self.tracked.get(name) {
            return i;
        }
        let i = self.values.len();
        self.values.push(TrackedValue {
            target,
            bound: Vec::new(),
            uses: Vec::new(),
        });
        self.tracked.insert(name.to_string(), i);
        i
    }

    fn self_attr_index(&mut self, attr: &str) -> usize {
        if let Some(&i) = self.tracked_attrs.get(attr) {
            return i;
        }
        let i = self.values.len();
        self.values.push(TrackedValue {
            target: Target::SelfAttr(attr.into()),
            bound: Vec::new(),
            uses: Vec::new(),
        });
        self.tracked_attrs.insert(attr.to_string(), i);
        i
    }

    /// The followed value an expression is, if any.
    fn value_index(&mut self, e: &Expr) -> Option<usize> {
        match e {
            Expr::Name(n) => self.tracked.get(n.id.as_str()).copied(),
            Expr::Attribute(a) if self.self_attrs && helpers::name_of(&a.value) == Some("self") => {
                Some(self.self_attr_index(a.attr.as_str()))
            }
            _ => None,
        }
    }

    fn is_self(&self, i: usize) -> bool {
        self.method
            && self.values[i].target == Target::Param(0, "".into())
            && self.params.first() == Some(&"self")
    }

    fn record(&mut self, i: usize, how: UseHow, range: TextRange) {
        // `self` itself: only what hands it to other code matters.
        if self.is_self(i)
            && matches!(
                how,
                UseHow::Method(_)
                    | UseHow::Attribute(_)
                    | UseHow::Called
                    | UseHow::Key(_)
                    | UseHow::KeyTested(_)
                    | UseHow::Tested
                    | UseHow::Operand
            )
        {
            return;
        }
        self.values[i].uses.push(ValueUse { how, range });
    }

    fn callee_name(&self, call: &ExprCall) -> Box<str> {
        if let Some(q) = self.b.scopes.resolve(&call.func) {
            return q.into();
        }
        helpers::dotted(&call.func)
            .unwrap_or_else(|| "?".into())
            .into()
    }

    fn is_tracked_callee(&self, call: &ExprCall) -> bool {
        if self.project_calls.contains(&call.range()) {
            return true;
        }
        // A call of a followed object (`criterion(out, y)` with `criterion = ProjectLoss()`).
        if let Expr::Name(n) = &*call.func {
            if self.tracked.contains_key(n.id.as_str()) {
                return true;
            }
        }
        let Some(q) = self.b.scopes.resolve(&call.func) else {
            return false;
        };
        matches!(
            qualified_call_kind(&q),
            Kind::Scheduler(_) | Kind::Optimizer(_) | Kind::DataLoader
        ) || crate::helpers::is_torch_load(&q)
            || matches!(
                q.as_str(),
                "torch.utils.data.DistributedSampler"
                    | "torch.utils.data.distributed.DistributedSampler"
            )
            || q.starts_with("torchvision.datasets.")
            || (q.starts_with("transformers.") && q.contains("schedule"))
    }

    fn is_wrapper(&self, call: &ExprCall) -> bool {
        let name = self
            .b
            .scopes
            .resolve(&call.func)
            .or_else(|| helpers::name_of(&call.func).map(str::to_string));
        name.is_some_and(|n| WRAPPERS.contains(&n.as_str()))
    }

    fn suite(&mut self, body: &'x [Stmt]) {
        for s in body {
            self.stmt(s);
        }
    }

    fn bind_call(&mut self, name: &str, call: &ExprCall, element: Option<u16>) {
        let callee = self.callee_name(call);
        let project = self.project_calls.contains(&call.range());
        let i = self.track(name, Target::Local(name.into()));
        self.values[i].bound.push(Binding {
            call: call.range(),
            element,
            callee,
            project,
        });
    }

    /// A followed local assigned something else: its bindings then say so (`<other>`).
    fn rebind_other(&mut self, name: &str, at: TextRange) {
        if let Some(&i) = self.tracked.get(name) {
            if matches!(self.values[i].target, Target::Local(_)) {
                self.values[i].bound.push(Binding {
                    call: at,
                    element: None,
                    callee: "<other>".into(),
                    project: false,
                });
            }
        }
    }

    /// Record a loop ([`LoopFact`]); its index.
    fn push_loop(&mut self, range: TextRange, body: &[Stmt]) -> u32 {
        let eval_before = match (self.last_eval, self.last_train) {
            (Some(e), Some(t)) => e > t,
            (Some(_), None) => true,
            _ => false,
        };
        self.loops.push(LoopFact {
            range,
            no_grad: self.no_grad > 0,
            eval_before,
            backward: calls_backward(body),
        });
        self.loops.len() as u32 - 1
    }

    fn stmt(&mut self, s: &'x Stmt) {
        match s {
            Stmt::Assign(a) => {
                self.optimizer_assign(&a.targets, &a.value);
                self.assign(&a.targets, &a.value);
            }
            Stmt::AnnAssign(a) => {
                if let Some(v) = &a.value {
                    let targets = std::slice::from_ref(&*a.target);
                    self.optimizer_assign(targets, v);
                    self.assign(targets, v);
                }
            }
            Stmt::AugAssign(a) => {
                if let Some(i) = self.value_index(&a.target) {
                    self.record(i, UseHow::Operand, a.target.range());
                }
                self.expr(&a.value, UseHow::Operand);
            }
            Stmt::For(f) => {
                let index = self.push_loop(f.range(), &f.body);
                self.iterated(&f.iter, index);
                self.suite(&f.body);
                self.suite(&f.orelse);
            }
            Stmt::While(w) => {
                self.expr(&w.test, UseHow::Tested);
                // A `while True:` epoch loop (`if self.finish_train: break`) holds the loops
                // it runs like a `for` does; nothing is iterated by it.
                self.push_loop(w.range(), &w.body);
                self.suite(&w.body);
                self.suite(&w.orelse);
            }
            Stmt::If(i) => {
                self.expr(&i.test, UseHow::Tested);
                self.suite(&i.body);
                for c in &i.elif_else_clauses {
                    if let Some(t) = &c.test {
                        self.expr(t, UseHow::Tested);
                    }
                    self.suite(&c.body);
                }
            }
            Stmt::With(w) => {
                let mut off = 0;
                for item in &w.items {
                    self.expr(&item.context_expr, UseHow::Escapes);
                    if self.grad_off(&item.context_expr) {
                        off += 1;
                    }
                }
                self.no_grad += off;
                self.suite(&w.body);
                self.no_grad -= off;
            }
            Stmt::Try(t) => {
                self.suite(&t.body);
                for h in &t.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    self.suite(&h.body);
                }
                self.suite(&t.orelse);
                self.suite(&t.finalbody);
            }
            Stmt::Return(r) => match r.value.as_deref() {
                Some(Expr::Tuple(t)) => {
                    for (k, e) in t.elts.iter().enumerate() {
                        self.expr(e, UseHow::Returned(Some(k as u16)));
                    }
                }
                Some(e) => self.expr(e, UseHow::Returned(None)),
                None => {}
            },
            Stmt::Expr(e) => self.expr(&e.value, UseHow::Operand),
            Stmt::Assert(a) => {
                self.expr(&a.test, UseHow::Tested);
                if let Some(m) = &a.msg {
                    self.expr(m, UseHow::Operand);
                }
            }
            // The module body's functions record their own uses of module-level names.
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) if self.module => {}
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => self.captured(s),
            Stmt::Global(g) => {
                for n in &g.names {
                    if let Some(&i) = self.tracked.get(n.as_str()) {
                        self.record(i, UseHow::Escapes, n.range());
                    }
                }
            }
            Stmt::Delete(d) => {
                for t in &d.targets {
                    self.expr(t, UseHow::Escapes);
                }
            }
            _ => {
                // Raise, match, ...: anything followed in them escapes.
                visitor::walk_stmt(&mut Escaping { x: self }, s);
            }
        }
    }

    fn grad_off(&self, e: &Expr) -> bool {
        let callee = match e {
            Expr::Call(c) => &*c.func,
            e => e,
        };
        self.b.scopes.resolve(callee).is_some_and(|q| {
            matches!(
                q.as_str(),
                "torch.no_grad"
                    | "torch.autograd.no_grad"
                    | "torch.inference_mode"
                    | "torch.autograd.inference_mode"
                    | "torch.autograd.grad_mode.no_grad"
                    | "torch.autograd.grad_mode.inference_mode"
            )
        })
    }

    /// Names used inside a nested function or class: captured, so they escape.
    fn captured(&mut self, s: &'x Stmt) {
        struct V<'v, 'x, 'b> {
            x: &'v mut Extract<'x, 'b>,
        }
        impl<'a> Visitor<'a> for V<'_, '_, '_> {
            fn visit_expr(&mut self, e: &'a Expr) {
                if let Expr::Name(n) = e {
                    if let Some(&i) = self.x.tracked.get(n.id.as_str()) {
                        self.x.record(i, UseHow::Escapes, e.range());
                    }
                }
                visitor::walk_expr(self, e);
            }
        }
        let mut v = V { x: self };
        visitor::walk_stmt(&mut v, s);
    }

    fn iterated(&mut self, iter: &'x Expr, index: u32) {
        if let Some(i) = self.value_index(iter) {
            self.record(i, UseHow::Iterated(index), iter.range());
            return;
        }
        if let Expr::Call(c) = iter {
            if self.is_wrapper(c) {
                for a in &c.arguments.args {
                    self.iterated(a, index);
                }
                for k in &c.arguments.keywords {
                    self.expr(&k.value, UseHow::Operand);
                }
                return;
            }
        }
        self.expr(iter, UseHow::Escapes);
    }

    fn assign(&mut self, targets: &'x [Expr], value: &'x Expr) {
        if let [target] = targets {
            match target {
                Expr::Name(n) => {
                    let name = n.id.as_str();
                    if let Some(i) = self.value_index(value) {
                        if self.full || self.tracked.contains_key(name) {
                            self.record(i, UseHow::Alias(name.into()), value.range());
                            self.track(name, Target::Local(name.into()));
                        } else {
                            self.record(i, UseHow::Escapes, value.range());
                        }
                        return;
                    }
                    if let Expr::Call(c) = value {
                        // `pbar = tqdm(enumerate(loader), total=len(loader))`: the name
                        // iterates the innermost wrapped value.
                        let mut calls = vec![c];
                        while let Some(Expr::Call(inner)) = calls
                            .last()
                            .filter(|w| self.is_wrapper(w))
                            .and_then(|w| w.arguments.args.first())
                        {
                            calls.push(inner);
                        }
                        let wrapped = calls
                            .iter()
                            .rev()
                            .find(|w| self.is_wrapper(w))
                            .and_then(|w| w.arguments.args.first());
                        if let Some(first) = wrapped {
                            if let Some(i) = self.value_index(first) {
                                if self.full {
                                    self.record(i, UseHow::Wrapped(name.into()), first.range());
                                    self.track(name, Target::Local(name.into()));
                                    let wrappers: Vec<&'x ExprCall> = calls
                                        .iter()
                                        .copied()
                                        .filter(|w| self.is_wrapper(w))
                                        .collect();
                                    for w in wrappers {
                                        for a in w.arguments.args.iter().skip(1) {
                                            self.expr(a, UseHow::Escapes);
                                        }
                                        for k in &w.arguments.keywords {
                                            self.expr(&k.value, UseHow::Operand);
                                        }
                                    }
                                    return;
                                }
                            }
                        }
                        if self.full && self.is_tracked_callee(c) {
                            self.bind_call(name, c, None);
                            self.expr(value, UseHow::Escapes);
                            return;
                        }
                    }
                    self.rebind_other(name, value.range());
                    self.expr(value, UseHow::Escapes);
                    return;
                }
                Expr::Tuple(_) | Expr::List(_) => {
                    let elts = match target {
                        Expr::Tuple(t) => &t.elts,
                        Expr::List(l) => &l.elts,
                        _ => unreachable!(),
                    };
                    if let Expr::Call(c) = value {
                        if self.full && self.is_tracked_callee(c) {
                            for (k, e) in elts.iter().enumerate() {
                                if let Expr::Name(n) = e {
                                    self.bind_call(n.id.as_str(), c, Some(k as u16));
                                }
                            }
                        }
                    }
                    if let Expr::Tuple(vt) = value {
                        if vt.elts.len() == elts.len() {
                            for (t, v) in elts.iter().zip(&vt.elts) {
                                self.assign(std::slice::from_ref(t), v);
                            }
                            return;
                        }
                    }
                    self.expr(value, UseHow::Escapes);
                    return;
                }
                Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self") => {
                    if let Some(i) = self.value_index(value) {
                        self.record(i, UseHow::StoredSelf(a.attr.as_str().into()), value.range());
                        return;
                    }
                    self.expr(value, UseHow::Escapes);
                    return;
                }
                _ => {}
            }
        }
        for t in targets {
            match t {
                Expr::Subscript(s) => {
                    self.expr(&s.value, UseHow::Escapes);
                    self.expr(&s.slice, UseHow::Operand);
                }
                Expr::Attribute(a) if helpers::name_of(&a.value) != Some("self") => {
                    self.expr(&a.value, UseHow::Escapes);
                }
                _ => {}
            }
        }
        self.expr(value, UseHow::Escapes);
    }

    /// Optimizers built here (`opt = Adam(m.parameters())`, dict literals and comprehensions
    /// of them) and DataLoaders / saves in the value.
    fn optimizer_assign(&mut self, targets: &'x [Expr], value: &'x Expr) {
        let [target] = targets else { return };
        let key = match target {
            Expr::Name(n) => Target::Local(n.id.as_str().into()),
            Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self") => {
                Target::SelfAttr(a.attr.as_str().into())
            }
            _ => return,
        };
        let base = match &key {
            Target::Local(n) => n.to_string(),
            _ => String::new(),
        };
        match value {
            Expr::Call(c) if self.is_optimizer_ctor(c) => {
                let modules = self.optimizer_params(c, &FxHashMap::default());
                self.optimizers.push(OptimizerFact {
                    target: key,
                    modules,
                    range: c.range(),
                });
            }
            Expr::Dict(d) if !base.is_empty() => {
                for item in &d.items {
                    let (Some(k), Expr::Call(c)) =
                        (item.key.as_ref().and_then(helpers::str_value), &item.value)
                    else {
                        continue;
                    };
                    if self.is_optimizer_ctor(c) {
                        let modules = self.optimizer_params(c, &FxHashMap::default());
                        self.optimizers.push(OptimizerFact {
                            target: Target::Local(format!("{base}[{k}]").into()),
                            modules,
                            range: c.range(),
                        });
                    }
                }
            }
            Expr::DictComp(dc) if !base.is_empty() => {
                let Expr::Call(c) = &*dc.value else { return };
                if !self.is_optimizer_ctor(c) {
                    return;
                }
                // `{k: Opt(v.parameters()) for k, v in X.items()}` with the key being `k`.
                let [g] = dc.generators.as_slice() else {
                    return;
                };
                let (Expr::Tuple(t), Expr::Call(items)) = (&g.target, &g.iter) else {
                    return;
                };
                let (Some(("items", src)), [Expr::Name(kv), Expr::Name(vv)]) =
                    (helpers::method_call(items), t.elts.as_slice())
                else {
                    return;
                };
                if dc.key.as_deref().and_then(helpers::name_of) != Some(kv.id.as_str()) {
                    return;
                }
                let Some(src) = helpers::dotted(src) else {
                    return;
                };
                let mut vars = FxHashMap::default();
                vars.insert(vv.id.to_string(), format!("{src}[*]"));
                self.comprehension_vars = vars.clone();
                let modules = self.optimizer_params(c, &vars);
                self.optimizers.push(OptimizerFact {
                    target: Target::Local(format!("{base}[*]").into()),
                    modules,
                    range: c.range(),
                });
            }
            _ => {}
        }
    }

    fn is_optimizer_ctor(&self, c: &ExprCall) -> bool {
        self.b
            .scopes
            .resolve(&c.func)
            .is_some_and(|q| matches!(qualified_call_kind(&q), Kind::Optimizer(_)))
    }

    /// The modules whose `.parameters()` an optimizer constructor takes.
    fn optimizer_params(&self, c: &ExprCall, vars: &FxHashMap<String, String>) -> Vec<Target> {
        let Some(arg) = helpers::argument(c, "params", 0) else {
            return Vec::new();
        };
        struct V<'v, 'x, 'b> {
            x: &'v Extract<'x, 'b>,
            vars: &'v FxHashMap<String, String>,
            out: Vec<Target>,
        }
        impl<'a> Visitor<'a> for V<'_, '_, '_> {
            fn visit_expr(&mut self, e: &'a Expr) {
                if let Expr::Call(c) = e {
                    if let Some(("parameters" | "named_parameters", recv)) = helpers::method_call(c)
                    {
                        if let Some(t) = self.x.module_target(recv, self.vars) {
                            if !self.out.contains(&t) {
                                self.out.push(t);
                            }
                        }
                        return;
                    }
                }
                visitor::walk_expr(self, e);
            }
        }
        let mut v = V {
            x: self,
            vars,
            out: Vec::new(),
        };
        v.visit_expr(arg);
        v.out
    }

    /// A module expression as a target of this function: a parameter, `self.<attr>`, a
    /// module-level or local name, `nets["D"]`, or a comprehension variable (`nets[*]`).
    fn module_target(&self, e: &Expr, vars: &FxHashMap<String, String>) -> Option<Target> {
        match e {
            Expr::Name(n) => {
                let id = n.id.as_str();
                if let Some(v) = vars.get(id) {
                    return Some(Target::Local(v.as_str().into()));
                }
                if let Some(i) = self.params.iter().position(|p| *p == id) {
                    return Some(Target::Param(i as u16, "".into()));
                }
                // A module-level name used in a function.
                if !self.module && !self.b.scopes.current().is_some_and(|s| s.binds_locally(id)) {
                    return Some(Target::Global(id.into()));
                }
                Some(Target::Local(id.into()))
            }
            Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self") => {
                Some(Target::SelfAttr(a.attr.as_str().into()))
            }
            Expr::Subscript(s) => {
                let base = helpers::dotted(&s.value)?;
                let key = helpers::str_value(&s.slice)?;
                Some(Target::Local(format!("{base}[{key}]").into()))
            }
            Expr::Attribute(_) => helpers::dotted(e).map(|d| Target::Local(d.into())),
            _ => None,
        }
    }

    /// Record the use `how` of `e` if it is a followed value, and the uses inside it.
    fn expr(&mut self, e: &'x Expr, how: UseHow) {
        if let Some(i) = self.value_index(e) {
            self.record(i, how, e.range());
            return;
        }
        match e {
            Expr::Name(_)
            | Expr::NumberLiteral(_)
            | Expr::StringLiteral(_)
            | Expr::BooleanLiteral(_)
            | Expr::NoneLiteral(_) => {}
            Expr::Attribute(a) => {
                if helpers::name_of(&a.value) == Some("self") && !self.self_attrs {
                    return;
                }
                // `loader.sampler.set_epoch(e)`: a method of an attribute of a followed value.
                if let UseHow::Method(m) = &how {
                    if self.value_index(&a.value).is_some() {
                        self.attr_methods.push(AttrMethod {
                            at: a.value.range(),
                            attr: a.attr.as_str().into(),
                            method: m.clone(),
                        });
                    }
                }
                self.expr(&a.value, UseHow::Attribute(a.attr.as_str().into()));
            }
            Expr::Call(c) => self.call(c),
            Expr::Subscript(s) => {
                let how = match helpers::str_value(&s.slice) {
                    Some(k) => UseHow::Key(k.into()),
                    None => UseHow::Escapes,
                };
                self.expr(&s.value, how);
                self.expr(&s.slice, UseHow::Operand);
            }
            Expr::BinOp(b) => {
                self.expr(&b.left, UseHow::Operand);
                self.expr(&b.right, UseHow::Operand);
            }
            Expr::UnaryOp(u) => self.expr(&u.operand, UseHow::Tested),
            Expr::BoolOp(b) => {
                for v in &b.values {
                    self.expr(v, UseHow::Tested);
                }
            }
            // `"model" in ckpt`: the code tests whether the key is there.
            Expr::Compare(c)
                if matches!(&*c.ops, [ast::CmpOp::In | ast::CmpOp::NotIn])
                    && helpers::str_value(&c.left).is_some() =>
            {
                let k = helpers::str_value(&c.left).unwrap_or_default();
                self.expr(&c.comparators[0], UseHow::KeyTested(k.into()));
            }
            Expr::Compare(c) => {
                self.expr(&c.left, UseHow::Tested);
                for v in &c.comparators {
                    self.expr(v, UseHow::Tested);
                }
            }
            Expr::If(i) => {
                self.expr(&i.test, UseHow::Tested);
                self.expr(&i.body, how.clone());
                self.expr(&i.orelse, how);
            }
            Expr::FString(_) => {
                // Formatting reads the interpolated values; calls in them are calls.
                struct V<'v, 'x, 'b> {
                    x: &'v mut Extract<'x, 'b>,
                }
                impl<'x> Visitor<'x> for V<'_, 'x, '_> {
                    fn visit_expr(&mut self, e: &'x Expr) {
                        if matches!(e, Expr::FString(_)) {
                            visitor::walk_expr(self, e);
                        } else {
                            self.x.expr(e, UseHow::Operand);
                        }
                    }
                }
                let mut v = V { x: self };
                visitor::walk_expr(&mut v, e);
            }
            Expr::Lambda(_)
            | Expr::ListComp(_)
            | Expr::SetComp(_)
            | Expr::DictComp(_)
            | Expr::Generator(_) => {
                // Closures and comprehensions: followed names in them escape.
                struct V<'v, 'x, 'b> {
                    x: &'v mut Extract<'x, 'b>,
                }
                impl<'a> Visitor<'a> for V<'_, '_, '_> {
                    fn visit_expr(&mut self, e: &'a Expr) {
                        if let Some(i) = self.x.value_index(e) {
                            self.x.record(i, UseHow::Escapes, e.range());
                            return;
                        }
                        visitor::walk_expr(self, e);
                    }
                }
                let mut v = V { x: self };
                visitor::walk_expr(&mut v, e);
            }
            Expr::Tuple(t) => {
                for x in &t.elts {
                    self.expr(x, UseHow::Escapes);
                }
            }
            Expr::List(t) => {
                for x in &t.elts {
                    self.expr(x, UseHow::Escapes);
                }
            }
            Expr::Set(t) => {
                for x in &t.elts {
                    self.expr(x, UseHow::Escapes);
                }
            }
            Expr::Dict(d) => {
                for item in &d.items {
                    if let Some(k) = &item.key {
                        self.expr(k, UseHow::Operand);
                    }
                    self.expr(&item.value, UseHow::Escapes);
                }
            }
            Expr::Starred(st) => self.expr(&st.value, UseHow::Escapes),
            Expr::Await(a) => self.expr(&a.value, UseHow::Escapes),
            Expr::Named(n) => self.expr(&n.value, UseHow::Escapes),
            Expr::Slice(sl) => {
                for x in [&sl.lower, &sl.upper, &sl.step].into_iter().flatten() {
                    self.expr(x, UseHow::Operand);
                }
            }
            _ => {
                // Anything else (yield, t-strings, ...): followed parts escape.
                visitor::walk_expr(&mut Escaping { x: self }, e);
            }
        }
    }

    fn call(&mut self, c: &'x ExprCall) {
        // Saves, loaders.
        let q = self.b.scopes.resolve(&c.func);
        if let Some(q) = q.as_deref() {
            if crate::helpers::is_torch_save(q) {
                self.saves.push(c);
            }
            if matches!(
                q,
                "torch.utils.data.DataLoader" | "torch.utils.data.dataloader.DataLoader"
            ) {
                self.loader(c);
            }
        }
        if self.project_calls.contains(&c.range()) && !c.arguments.is_empty() {
            self.project_arg_calls.push(c);
        }
        match &*c.func {
            Expr::Attribute(a) => {
                let m = a.attr.as_str();
                match m {
                    "eval" if c.arguments.is_empty() => self.last_eval = Some(c.start()),
                    "train" => match c.arguments.args.first().and_then(helpers::is_truthy) {
                        Some(false) => self.last_eval = Some(c.start()),
                        _ => self.last_train = Some(c.start()),
                    },
                    _ => {}
                }
                let how = match (m, c.arguments.args.first().and_then(helpers::str_value)) {
                    ("get", Some(k)) => UseHow::Key(k.into()),
                    _ => UseHow::Method(m.into()),
                };
                if helpers::name_of(&a.value) == Some("self") && !self.self_attrs {
                    // `self.method(...)`: `self` is not handed over.
                } else {
                    self.expr(&a.value, how);
                }
            }
            f => self.expr(f, UseHow::Called),
        }
        let callee = self.callee_name(c);
        let project = self.project_calls.contains(&c.range());
        for (i, a) in c.arguments.args.iter().enumerate() {
            match a {
                Expr::Starred(s) => self.expr(&s.value, UseHow::Escapes),
                a => self.expr(
                    a,
                    UseHow::Arg {
                        call: c.range(),
                        pos: ArgPos::Pos(i as u16),
                        callee: callee.clone(),
                        project,
                    },
                ),
            }
        }
        for k in &c.arguments.keywords {
            match &k.arg {
                Some(name) => self.expr(
                    &k.value,
                    UseHow::Arg {
                        call: c.range(),
                        pos: ArgPos::Kw(name.as_str().into()),
                        callee: callee.clone(),
                        project,
                    },
                ),
                None => self.expr(&k.value, UseHow::Escapes),
            }
        }
    }

    fn loader(&mut self, c: &ExprCall) {
        let kw = c.arguments.find_keyword("shuffle");
        let (arg, at) = match kw {
            Some(k) => (Some(&k.value), k.range()),
            None => match helpers::argument(c, "shuffle", 2) {
                Some(a) => (Some(a), a.range()),
                None => (None, c.range()),
            },
        };
        let shuffle = match arg {
            None => ShuffleArg::Absent,
            Some(a) => match helpers::literal(a) {
                Some(helpers::Literal::Bool(b)) => ShuffleArg::Literal(b, at),
                _ => match helpers::name_of(a)
                    .and_then(|n| self.params.iter().position(|p| *p == n))
                {
                    Some(i) => ShuffleArg::Param(i as u16, at),
                    None => ShuffleArg::Other,
                },
            },
        };
        let sampler = ["sampler", "batch_sampler"]
            .iter()
            .any(|k| helpers::keyword(c, k).is_some_and(|v| !matches!(v, Expr::NoneLiteral(_))))
            || helpers::argument(c, "sampler", 3)
                .is_some_and(|v| !matches!(v, Expr::NoneLiteral(_)));
        self.loaders.push(LoaderFact {
            call: c.range(),
            shuffle,
            sampler,
        });
    }
}

/// Does a loop body call `.backward(...)` (any receiver: `loss`, `scaler.scale(loss)`,
/// `accelerator`)?
fn calls_backward(body: &[Stmt]) -> bool {
    struct V {
        hit: bool,
    }
    impl<'a> Visitor<'a> for V {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            if self.hit || matches!(s, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
                return;
            }
            visitor::walk_stmt(self, s);
        }
        fn visit_expr(&mut self, e: &'a Expr) {
            if let Expr::Call(c) = e {
                if matches!(
                    helpers::method_call(c),
                    Some(("backward" | "manual_backward", _))
                ) {
                    self.hit = true;
                    return;
                }
            }
            visitor::walk_expr(self, e);
        }
    }
    let mut v = V { hit: false };
    v.visit_body(body);
    v.hit
}

/// Records every followed value met in the visited code as escaping (code the extractor does
/// not model).
struct Escaping<'v, 'x, 'b> {
    x: &'v mut Extract<'x, 'b>,
}

impl<'a> Visitor<'a> for Escaping<'_, '_, '_> {
    fn visit_expr(&mut self, e: &'a Expr) {
        if let Some(i) = self.x.value_index(e) {
            self.x.record(i, UseHow::Escapes, e.range());
            return;
        }
        visitor::walk_expr(self, e);
    }
}

/// Walks a whole file for [`StateDictLoads`]: per function (frame), the dotted names bound so
/// far and whether the last binding was a DataParallel/DDP wrapper.
struct StateDictLoadVisitor<'s, 'a> {
    scopes: &'s Scopes,
    frames: Vec<Vec<(String, bool)>>,
    /// The enclosing function's body, parameters and `def` start (the module: `None`).
    bodies: Vec<(&'a [Stmt], Vec<&'a str>, Option<TextSize>)>,
    out: StateDictLoads,
    paths: Vec<StateDictLoadPath>,
    bare: Vec<BareStateDictLoad>,
    /// Every name the file reads.
    read_names: FxHashSet<&'a str>,
    /// The file is a script (it has an `if __name__ == "__main__":` block).
    script: bool,
    /// Depth of enclosing classes.
    classes: u32,
    /// Per entry of `bodies`: a top-level function whose name the file never reads.
    unreferenced: Vec<bool>,
}

/// Does the module have an `if __name__ == "__main__":` block at top level?
pub(crate) fn has_main_guard(body: &[Stmt]) -> bool {
    body.iter().any(|s| match s {
        Stmt::If(i) => match &*i.test {
            Expr::Compare(c) => std::iter::once(&*c.left)
                .chain(c.comparators.iter())
                .any(|e| matches!(e, Expr::Name(n) if n.id.as_str() == "__name__")),
            _ => false,
        },
        _ => false,
    })
}

/// The names a module reads anywhere (loads of `Name` expressions).
fn names_read(body: &[Stmt]) -> FxHashSet<&str> {
    struct Reads<'a> {
        out: FxHashSet<&'a str>,
    }
    impl<'a> Visitor<'a> for Reads<'a> {
        fn visit_expr(&mut self, e: &'a Expr) {
            if let Expr::Name(n) = e {
                if n.ctx == ast::ExprContext::Load {
                    self.out.insert(n.id.as_str());
                }
            }
            visitor::walk_expr(self, e);
        }
    }
    let mut r = Reads {
        out: FxHashSet::default(),
    };
    r.visit_body(body);
    r.out
}

/// Methods that return the module they are called on (`DataParallel(m).to(device)`).
const MODULE_CHAIN: &[&str] = &[
    "to", "cuda", "cpu", "float", "half", "double", "train", "eval",
];

impl StateDictLoadVisitor<'_, '_> {
    /// Is `value` (through `.to()`/`.cuda()`... chains) a DataParallel/DDP construction?
    fn wraps(&self, mut value: &Expr) -> bool {
        loop {
            let Expr::Call(call) = value else {
                // `model = model.to(device)` after `model = nn.DataParallel(model)`: the
                // same object, still wrapped.
                return helpers::dotted(value).is_some_and(|name| {
                    self.frames.last().is_some_and(|frame| {
                        frame
                            .iter()
                            .rev()
                            .find(|(n, _)| *n == name)
                            .is_some_and(|(_, wrapped)| *wrapped)
                    })
                });
            };
            if let Some((m, recv)) = helpers::method_call(call) {
                if MODULE_CHAIN.contains(&m) {
                    value = recv;
                    continue;
                }
            }
            return self
                .scopes
                .resolve(&call.func)
                .is_some_and(|q| crate::classes::is_data_parallel_wrapper(&q));
        }
    }

    fn bind(&mut self, target: &Expr, wrapped: bool) {
        match target {
            Expr::Tuple(t) => t.elts.iter().for_each(|e| self.bind(e, false)),
            Expr::List(t) => t.elts.iter().for_each(|e| self.bind(e, false)),
            _ => {
                if let (Some(name), Some(frame)) = (helpers::dotted(target), self.frames.last_mut())
                {
                    frame.push((name, wrapped));
                }
            }
        }
    }

    fn load(&mut self, call: &ExprCall) {
        let Some(("load_state_dict", recv)) = helpers::method_call(call) else {
            return;
        };
        let Some(name) = helpers::dotted(recv) else {
            return;
        };
        let last = helpers::last_segment(&name).to_ascii_lowercase();
        if last.contains("optim")
            || last.contains("sched")
            || last.contains("scaler")
            || last == "opt"
        {
            return;
        }
        // A copy between in-memory models (`target.load_state_dict(online.state_dict())`).
        if let Some(Expr::Call(arg)) = call.arguments.args.first() {
            let copy = matches!(helpers::method_call(arg), Some(("state_dict", _)))
                || self
                    .scopes
                    .resolve(&arg.func)
                    .is_some_and(|q| q == "copy.deepcopy");
            if copy {
                return;
            }
        }
        // A dict of another source: the model's own `state_dict()` updated with downloaded
        // weights, a model-zoo download (`model_zoo.load_url(url)`): not a checkpoint the
        // project saved.
        if let (Some(arg), Some((body, _, _))) = (call.arguments.args.first(), self.bodies.last()) {
            if not_a_saved_checkpoint(arg, body, call.start(), self.scopes, 0) {
                return;
            }
        }
        let wrapped = self
            .frames
            .last()
            .and_then(|f| f.iter().rev().find(|(n, _)| *n == name))
            .is_some_and(|(_, w)| *w);
        let unreferenced = self.unreferenced.last().copied().unwrap_or(false);
        if wrapped {
            self.out.into_wrapper += 1;
        } else {
            self.out.into_other += 1;
            self.bare.push(BareStateDictLoad {
                def: self.bodies.last().and_then(|b| b.2),
                unreferenced,
            });
        }
        // `m.load_state_dict(torch.load(path, ...))` (or `torch.load(path)["model"]`): which
        // checkpoint goes into which kind of model.
        let mut arg = call.arguments.args.first();
        if let Some(Expr::Subscript(sub)) = arg {
            arg = Some(&sub.value);
        }
        let Some(Expr::Call(load)) = arg else { return };
        let is_load = self
            .scopes
            .resolve(&load.func)
            .is_some_and(|q| helpers::is_torch_load(&q));
        if !is_load {
            return;
        }
        let (Some(p), Some((body, params, def))) =
            (helpers::argument(load, "f", 0), self.bodies.last())
        else {
            return;
        };
        let path = crate::project::facts::path_shape(p, body, params, self.scopes, load.start());
        if matches!(path, PathShape::Unknown | PathShape::Download) {
            return;
        }
        self.paths.push(StateDictLoadPath {
            def: *def,
            path,
            at: load.start(),
            wrapped,
            unreferenced,
        });
    }
}

/// Is the argument of `m.load_state_dict(arg)` a dict that is not a checkpoint the project
/// saved: the model's own `state_dict()` (updated in place with pretrained weights), a
/// deep copy, a download (`model_zoo.load_url(url)`, `load_state_dict_from_url`), or a dict
/// comprehension over one of those? Names are followed to their last assignment before `at`.
fn not_a_saved_checkpoint(
    arg: &Expr,
    body: &[Stmt],
    at: TextSize,
    scopes: &Scopes,
    depth: u32,
) -> bool {
    if depth > 3 {
        return false;
    }
    match arg {
        Expr::Call(c) => {
            if matches!(helpers::method_call(c), Some(("state_dict", _))) {
                return true;
            }
            if crate::project::facts::is_download_call(c) {
                return true;
            }
            let q = scopes.resolve(&c.func);
            q.as_deref().is_some_and(|q| {
                q == "copy.deepcopy"
                    || matches!(
                        helpers::last_segment(q),
                        "load_url" | "load_state_dict_from_url"
                    )
            })
        }
        Expr::DictComp(d) => match &*d.value {
            Expr::Subscript(sub) => not_a_saved_checkpoint(&sub.value, body, at, scopes, depth + 1),
            _ => false,
        },
        Expr::Name(n) => {
            let id = n.id.as_str();
            let mut last: Option<&Expr> = None;
            // `sd.update(other)`: what goes into the dict after it is made.
            let mut updates: Vec<&Expr> = Vec::new();
            crate::project::summary::for_each_own_stmt(body, &mut |s| match s {
                Stmt::Assign(a)
                    if a.start() < at
                        && a.targets.iter().any(|t| helpers::name_of(t) == Some(id)) =>
                {
                    last = Some(&a.value);
                    updates.clear();
                }
                Stmt::Expr(e) if e.start() < at => {
                    if let Expr::Call(c) = &*e.value {
                        if let Some(("update", recv)) = helpers::method_call(c) {
                            if helpers::name_of(recv) == Some(id) {
                                updates.extend(c.arguments.args.first());
                            }
                        }
                    }
                }
                _ => {}
            });
            last.is_some_and(|v| not_a_saved_checkpoint(v, body, v.start(), scopes, depth + 1))
                && updates
                    .iter()
                    .all(|u| not_a_saved_checkpoint(u, body, u.start(), scopes, depth + 1))
        }
        _ => false,
    }
}

/// `name[n:]` (a slice from the literal `n` to the end)?
fn slices_from(e: &Expr, n: i64) -> bool {
    let Expr::Subscript(s) = e else { return false };
    let Expr::Slice(sl) = &*s.slice else {
        return false;
    };
    matches!(&*s.value, Expr::Name(_))
        && sl.upper.is_none()
        && sl.step.is_none()
        && sl
            .lower
            .as_deref()
            .and_then(helpers::int_value)
            .is_some_and(|v| v == n)
}

impl<'a> Visitor<'a> for StateDictLoadVisitor<'_, 'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(f) => {
                self.frames.push(Vec::new());
                let params = f.parameters.iter().map(|p| p.name().as_str()).collect();
                let top = self.bodies.len() == 1 && self.classes == 0;
                let unreferenced = top
                    && self.script
                    && f.decorator_list.is_empty()
                    && !self.read_names.contains(f.name.as_str());
                self.bodies.push((&f.body, params, Some(f.start())));
                self.unreferenced.push(unreferenced);
                visitor::walk_stmt(self, stmt);
                self.unreferenced.pop();
                self.bodies.pop();
                self.frames.pop();
            }
            Stmt::ClassDef(_) => {
                self.frames.push(Vec::new());
                self.classes += 1;
                visitor::walk_stmt(self, stmt);
                self.classes -= 1;
                self.frames.pop();
            }
            Stmt::Assign(a) => {
                self.visit_expr(&a.value);
                let wrapped = self.wraps(&a.value);
                for t in &a.targets {
                    self.bind(t, wrapped);
                }
            }
            Stmt::AnnAssign(a) => {
                if let Some(v) = &a.value {
                    self.visit_expr(v);
                    let wrapped = self.wraps(v);
                    self.bind(&a.target, wrapped);
                }
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Call(call) => {
                self.load(call);
                if self
                    .scopes
                    .resolve(&call.func)
                    .is_some_and(|q| q.ends_with(".consume_prefix_in_state_dict_if_present"))
                {
                    self.out.strips_module_prefix = true;
                }
            }
            // `{k[7:]: v for k, v in sd.items()}`: the keys lose the 7 bytes of `module.`.
            Expr::DictComp(d) if d.key.as_deref().is_some_and(|k| slices_from(k, 7)) => {
                self.out.strips_module_prefix = true
            }
            Expr::StringLiteral(s) => match s.value.to_str() {
                "module." => self.out.strips_module_prefix = true,
                "_orig_mod." => self.out.strips_compile_prefix = true,
                _ => {}
            },
            _ => {}
        }
        visitor::walk_expr(self, expr);
    }
}

/// Reads [`LaunchFacts`] and [`FileFacts::may_set_cuda_default`] from a file.
struct LaunchVisitor<'s> {
    scopes: &'s Scopes,
    /// The names bound locally in each enclosing function (not its parameters, not names
    /// declared `global` / `nonlocal`).
    frames: Vec<FxHashSet<String>>,
    launch: LaunchFacts,
    cuda_default: bool,
}

/// The names a function body binds by assignment, `for`, `with ... as`, or an import (nested
/// functions and classes left out), minus those it declares `global` / `nonlocal`.
fn function_locals(body: &[Stmt]) -> FxHashSet<String> {
    struct Binds {
        out: FxHashSet<String>,
        declared: FxHashSet<String>,
    }
    impl<'a> Visitor<'a> for Binds {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            match stmt {
                Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
                Stmt::Global(g) => self.declared.extend(g.names.iter().map(|n| n.to_string())),
                Stmt::Nonlocal(g) => self.declared.extend(g.names.iter().map(|n| n.to_string())),
                Stmt::Import(imp) => {
                    for a in &imp.names {
                        let bound = a.asname.as_ref().unwrap_or(&a.name).as_str();
                        self.out
                            .insert(bound.split('.').next().unwrap_or(bound).to_string());
                    }
                }
                Stmt::ImportFrom(imp) => {
                    for a in &imp.names {
                        self.out
                            .insert(a.asname.as_ref().unwrap_or(&a.name).to_string());
                    }
                }
                _ => visitor::walk_stmt(self, stmt),
            }
        }
        fn visit_expr(&mut self, expr: &'a Expr) {
            match expr {
                Expr::Name(n) if n.ctx.is_store() => {
                    self.out.insert(n.id.to_string());
                }
                Expr::Lambda(_) => {}
                _ => visitor::walk_expr(self, expr),
            }
        }
    }
    let mut b = Binds {
        out: FxHashSet::default(),
        declared: FxHashSet::default(),
    };
    b.visit_body(body);
    b.out.retain(|n| !b.declared.contains(n));
    b.out
}

/// Does `e` name `os.environ` (or a name for it: `environ`, `env = os.environ` is not
/// followed)?
fn is_environ(e: &Expr) -> bool {
    match e {
        Expr::Attribute(a) => a.attr.as_str() == "environ",
        Expr::Name(n) => n.id.as_str() == "environ",
        _ => false,
    }
}

/// The root name of an attribute chain (`self.args.local_rank` -> `self`).
fn chain_root(mut e: &Expr) -> Option<&str> {
    loop {
        match e {
            Expr::Attribute(a) => e = &a.value,
            Expr::Name(n) => return Some(n.id.as_str()),
            _ => return None,
        }
    }
}

/// Is `arg` of `set_default_tensor_type(arg)` a CPU tensor type, as a literal or a type
/// (`"torch.FloatTensor"`, `torch.DoubleTensor`)? Anything else (a CUDA type, a name, a
/// lookup) may make CUDA the default.
fn is_cpu_tensor_type(scopes: &Scopes, arg: &Expr) -> bool {
    let text = match helpers::str_value(arg) {
        Some(s) => s.to_string(),
        None => match scopes.resolve(arg) {
            Some(q) => q,
            None => return false,
        },
    };
    !text.contains("cuda") && text.starts_with("torch.") && text.ends_with("Tensor")
}

impl<'a> Visitor<'a> for LaunchVisitor<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if let Stmt::FunctionDef(f) = stmt {
            for d in &f.decorator_list {
                self.visit_expr(&d.expression);
            }
            self.visit_parameters(&f.parameters);
            self.frames.push(function_locals(&f.body));
            self.visit_body(&f.body);
            self.frames.pop();
            return;
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            // `os.environ["LOCAL_RANK"]` (read).
            Expr::Subscript(s)
                if s.ctx.is_load()
                    && is_environ(&s.value)
                    && helpers::str_value(&s.slice) == Some("LOCAL_RANK") =>
            {
                self.launch.reads_local_rank_env = true;
            }
            Expr::Call(call) => {
                let first = call.arguments.args.first().and_then(helpers::str_value);
                match &*call.func {
                    // `os.environ.get("LOCAL_RANK", ...)`, `os.getenv("LOCAL_RANK")`.
                    Expr::Attribute(a)
                        if first == Some("LOCAL_RANK")
                            && ((a.attr.as_str() == "get" && is_environ(&a.value))
                                || a.attr.as_str() == "getenv") =>
                    {
                        self.launch.reads_local_rank_env = true;
                    }
                    Expr::Name(n) if first == Some("LOCAL_RANK") && n.id.as_str() == "getenv" => {
                        self.launch.reads_local_rank_env = true;
                    }
                    _ => {}
                }
                let callee = match &*call.func {
                    Expr::Attribute(a) => Some(a.attr.as_str()),
                    Expr::Name(n) => Some(n.id.as_str()),
                    _ => None,
                };
                let cuda = match callee {
                    Some("set_default_tensor_type") => !helpers::argument(call, "t", 0)
                        .is_some_and(|a| is_cpu_tensor_type(self.scopes, a)),
                    Some("set_default_device") => {
                        helpers::argument(call, "device", 0).and_then(helpers::str_value)
                            != Some("cpu")
                    }
                    _ => false,
                };
                self.cuda_default |= cuda;
            }
            Expr::Attribute(a) if a.ctx.is_load() && a.attr.as_str() == "local_rank" => {
                self.launch.reads_local_rank_attr = true;
                let local = chain_root(&a.value).is_some_and(|root| {
                    root != "self" && self.frames.last().is_some_and(|f| f.contains(root))
                });
                if !local {
                    self.launch.reads_shared_local_rank_attr = true;
                }
            }
            _ => {}
        }
        visitor::walk_expr(self, expr);
    }
}
