use super::rank_helpers::for_each_call;
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::facts::{current_function, site};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use std::cell::RefCell;
use torchvet_semantic::helpers;
use torchvet_semantic::project::facts::{EpochReach, Fate, LoopRole};
use torchvet_semantic::project::{FuncId, ProjectFile, Target};

crate::declare_rule! {
    /// ## What it does
    /// Checks for a `DistributedSampler` that shuffles (the default) and is iterated in an
    /// epoch loop of the same function (or class) without any `set_epoch(...)` call in the
    /// file.
    ///
    /// ## Why is this bad?
    /// `DistributedSampler` draws its permutation from `seed + epoch`, and the epoch is only
    /// changed by `sampler.set_epoch(epoch)`. Without the call every epoch uses the permutation
    /// of epoch 0: each rank sees the same samples in the same order every epoch, which removes
    /// the benefit of shuffling and usually costs accuracy. Nothing warns about it.
    ///
    /// Samplers created with `shuffle=False` (evaluation) need no `set_epoch`. The project
    /// model follows the sampler wherever it goes: into the DataLoader built on it, through
    /// returns, parameters of project functions (in any file) and `self.<attr>` in every
    /// method of the class. A `set_epoch` reaching it (`sampler.set_epoch(e)`,
    /// `loader.sampler.set_epoch(e)`, `self.train_data.sampler.set_epoch(e)`) silences the
    /// rule; when the model follows a sampler built in a loader factory everywhere, finds no
    /// `set_epoch`, and a training loop iterates it, the rule reports it even if other
    /// samplers of the project (in other files) are reseeded.
    /// When the sampler goes somewhere the model cannot follow (code outside the project, a
    /// container, a bare `loader.sampler` read), any `set_epoch` call in the project silences
    /// the rule for a sampler built in a loader factory; when the epoch loop is in the
    /// sampler's own file, any `set_epoch` call in that file does. It also stays silent when
    /// no epoch loop over the sampler's loader is visible.
    ///
    /// ## Example
    /// ```python
    /// sampler = DistributedSampler(train_set)
    /// loader = DataLoader(train_set, batch_size=32, sampler=sampler)
    /// for epoch in range(epochs):
    ///     for x, y in loader:
    ///         train_step(x, y)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// sampler = DistributedSampler(train_set)
    /// loader = DataLoader(train_set, batch_size=32, sampler=sampler)
    /// for epoch in range(epochs):
    ///     sampler.set_epoch(epoch)
    ///     for x, y in loader:
    ///         train_step(x, y)
    /// ```
    ///
    /// ## Fix safety
    /// When the epoch loop is a `for` loop with a named loop variable, the fix inserts
    /// `sampler.set_epoch(epoch)` (or `loader.sampler.set_epoch(epoch)` for a sampler created
    /// inline) as the first statement of the loop, guarded by `if sampler is not None:` when
    /// the sampler is created conditionally. It is safe: it only gives the sampler the epoch
    /// number it is designed to receive, and changes nothing else. No fix is offered when the
    /// sampler's name is bound more than once, or the loop has no usable loop variable.
    ///
    /// ## References
    /// - [DistributedSampler](https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler)
    /// - [pytorch/pytorch#31771](https://github.com/pytorch/pytorch/issues/31771)
    /// - [kan-bayashi/ParallelWaveGAN#177](https://github.com/kan-bayashi/ParallelWaveGAN/issues/177)
    pub(crate) static DISTRIBUTED_SAMPLER_WITHOUT_SET_EPOCH = {
        name: "distributed-sampler-without-set-epoch",
        code: "TV050",
        group: Distributed,
        severity: Warning,
        title: "DistributedSampler(shuffle=True) never receives set_epoch(epoch): same order every epoch",
        autofix: Yes,
        hooks: { call: check_call, end: check_end },
    };
}

const SAMPLER: &[&str] = &[
    "torch.utils.data.DistributedSampler",
    "torch.utils.data.distributed.DistributedSampler",
];

/// A finding waiting for the end of the file (a `set_epoch` may come later).
struct Pending {
    range: TextRange,
    message: String,
    loop_range: TextRange,
    fix: Option<RawFix>,
    /// What the project model says about this sampler (see [`Reach`]).
    reach: Reach,
}

/// Whether `set_epoch` reaches one sampler, as the project model follows it, and whether one
/// of the loops iterating it trains.
#[derive(Clone, Copy)]
struct Reach {
    epoch: EpochReach,
    trains: bool,
}

impl Reach {
    const UNKNOWN: Reach = Reach {
        epoch: EpochReach::Unknown,
        trains: false,
    };

    /// Report, given whether the file (or project) calls `set_epoch` somewhere? A sampler
    /// the model follows everywhere decides by itself: set somewhere, silent; never set and
    /// iterated by a training loop, reported even when other samplers get `set_epoch`.
    /// Otherwise any `set_epoch` call silences.
    fn reports(self, any_set_epoch: bool) -> bool {
        match self.epoch {
            EpochReach::Set => false,
            EpochReach::Never => !any_set_epoch || self.trains,
            EpochReach::Unknown => !any_set_epoch,
        }
    }
}

/// Ask the project model where the sampler goes: `fates` are those of the sampler itself
/// (`loader` false) or of a DataLoader built on it.
fn reach_of(p: &ProjectFile, fates: &[Fate], loader: bool) -> Reach {
    let r = p.model.sampler_epochs(fates, loader);
    Reach {
        epoch: r.reach,
        trains: r
            .loops
            .iter()
            .any(|&(f, i)| p.model.loop_role(f, i) == LoopRole::Train),
    }
}

/// [`reach_of`] for the sampler bound by `binding` in the current function.
fn binding_reach(checker: &Checker, binding: &Binding) -> Reach {
    let Some(p) = checker.project_or_file() else {
        return Reach::UNKNOWN;
    };
    let Some(func) = current_function(checker, p) else {
        return Reach::UNKNOWN;
    };
    let (root, loader) = match binding.access.strip_suffix(".sampler") {
        Some(root) => (root, true),
        None => (binding.access.as_str(), false),
    };
    let target = match root.strip_prefix("self.") {
        Some(attr) if checker.frame().method_of.is_some() => Target::SelfAttr(attr.into()),
        Some(_) => return Reach::UNKNOWN,
        None if !root.contains('.') => Target::Local(root.into()),
        None => return Reach::UNKNOWN,
    };
    reach_of(p, &p.model.fates(func, &target), loader)
}

thread_local! {
    static PENDING: RefCell<Vec<Pending>> = const { RefCell::new(Vec::new()) };
}

/// How the sampler is reachable after its creation.
struct Binding<'a> {
    /// Source text of the expression holding the sampler (`sampler`, `self.train_sampler`,
    /// `loader.sampler`).
    access: String,
    /// Names whose iteration draws from the sampler (the sampler itself, loaders built on it).
    tracked: Vec<String>,
    /// May hold `None` (`DistributedSampler(ds) if distributed else None`).
    nullable: bool,
    /// The assignment statement.
    stmt: &'a Stmt,
}

fn single_target(stmt: &Stmt) -> Option<(&Expr, &Expr)> {
    match stmt {
        Stmt::Assign(a) if a.targets.len() == 1 => Some((&a.targets[0], &a.value)),
        Stmt::AnnAssign(a) => a.value.as_deref().map(|v| (&*a.target, v)),
        _ => None,
    }
}

fn is_access(e: &Expr) -> bool {
    match e {
        Expr::Name(_) => true,
        Expr::Attribute(a) => helpers::name_of(&a.value) == Some("self"),
        _ => false,
    }
}

fn binding<'a>(checker: &Checker<'a>, call: &ExprCall) -> Option<Binding<'a>> {
    let stmt = checker.current_stmt()?;
    let (target, value) = single_target(stmt)?;
    if !is_access(target) {
        return None;
    }
    let target_text = checker.text(target.range()).to_string();
    let range = call.range();
    match value {
        Expr::Call(c) if c.range() == range => Some(Binding {
            access: target_text.clone(),
            tracked: vec![target_text],
            nullable: false,
            stmt,
        }),
        Expr::If(i)
            if (i.body.range() == range && i.orelse.is_none_literal_expr())
                || (i.orelse.range() == range && i.body.is_none_literal_expr()) =>
        {
            Some(Binding {
                access: target_text.clone(),
                tracked: vec![target_text],
                nullable: true,
                stmt,
            })
        }
        // loader = DataLoader(ds, sampler=DistributedSampler(ds))
        Expr::Call(c)
            if helpers::keyword(c, "sampler").is_some_and(|s| s.range() == range)
                && checker.resolve(&c.func).is_some_and(|q| {
                    matches!(
                        q.as_str(),
                        "torch.utils.data.DataLoader" | "torch.utils.data.dataloader.DataLoader"
                    )
                }) =>
        {
            Some(Binding {
                access: format!("{target_text}.sampler"),
                tracked: vec![target_text],
                nullable: false,
                stmt,
            })
        }
        _ => None,
    }
}

/// Is the expression one of the tracked names (by source text)?
fn is_tracked(checker: &Checker, e: &Expr, tracked: &[String]) -> bool {
    is_access(e) && tracked.iter().any(|t| t == checker.text(e.range()))
}

/// Does the expression mention a tracked name anywhere?
fn mentions(checker: &Checker, e: &Expr, tracked: &[String]) -> bool {
    struct M<'c, 'a> {
        checker: &'c Checker<'a>,
        tracked: &'c [String],
        found: bool,
    }
    impl<'x> Visitor<'x> for M<'_, '_> {
        fn visit_expr(&mut self, expr: &'x Expr) {
            if self.found {
                return;
            }
            if is_tracked(self.checker, expr, self.tracked) {
                self.found = true;
                return;
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut m = M {
        checker,
        tracked,
        found: false,
    };
    m.visit_expr(e);
    m.found
}

/// Names derived from tracked ones: targets of `x = Call(..., tracked, ...)` (loaders built on
/// the sampler, batch samplers, iterators), in source order.
fn derive(checker: &Checker, body: &[Stmt], tracked: &mut Vec<String>) {
    fn walk(checker: &Checker, body: &[Stmt], tracked: &mut Vec<String>) {
        for stmt in body {
            if let Some((target, Expr::Call(c))) = single_target(stmt) {
                // An argument that is a tracked name, or picks one (`ds if deepspeed else dl`).
                let handed = |a: &Expr| match a {
                    Expr::If(i) => {
                        is_tracked(checker, &i.body, tracked)
                            || is_tracked(checker, &i.orelse, tracked)
                    }
                    a => is_tracked(checker, a, tracked),
                };
                let passes = helpers::name_of(&c.func) != Some("len")
                    && (c.arguments.args.iter().any(handed)
                        || c.arguments.keywords.iter().any(|k| handed(&k.value)));
                // `x = wrap(loader)`, or `model, opt, loader = backend.distribute(..., loader)`:
                // each name the call's result is unpacked into.
                let targets: Vec<&Expr> = match target {
                    Expr::Tuple(t) => t.elts.iter().collect(),
                    t => vec![t],
                };
                for target in targets {
                    if passes && is_access(target) {
                        let t = checker.text(target.range()).to_string();
                        if !tracked.contains(&t) {
                            tracked.push(t);
                        }
                    }
                }
            }
            if !matches!(stmt, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
                for b in super::rank_helpers::child_blocks(stmt) {
                    walk(checker, b, tracked);
                }
            }
        }
    }
    walk(checker, body, tracked);
}

/// Does this statement use a tracked name: iterate over it or pass it to a call?
fn uses(checker: &Checker, stmt: &Stmt, tracked: &[String]) -> bool {
    if let Stmt::For(f) = stmt {
        if mentions(checker, &f.iter, tracked) {
            return true;
        }
    }
    let mut found = false;
    for_each_call(std::slice::from_ref(stmt), &mut |c| {
        if found || helpers::name_of(&c.func) == Some("len") {
            return;
        }
        found = c
            .arguments
            .args
            .iter()
            .any(|a| is_tracked(checker, a, tracked))
            || c.arguments
                .keywords
                .iter()
                .any(|k| is_tracked(checker, &k.value, tracked));
    });
    found
}

/// The epoch loop: the innermost loop (not iterating a tracked name itself) around the first
/// use of a tracked name in `body`.
fn epoch_loop<'b>(checker: &Checker, body: &'b [Stmt], tracked: &[String]) -> Option<&'b Stmt> {
    fn walk<'b>(
        checker: &Checker,
        body: &'b [Stmt],
        tracked: &[String],
        outer: Option<&'b Stmt>,
    ) -> Option<Option<&'b Stmt>> {
        for stmt in body {
            match stmt {
                Stmt::FunctionDef(_) | Stmt::ClassDef(_) => continue,
                Stmt::For(f) if !mentions(checker, &f.iter, tracked) => {
                    if let Some(r) = walk(checker, &f.body, tracked, Some(stmt)) {
                        return Some(r);
                    }
                }
                Stmt::While(w) if !mentions(checker, &w.test, tracked) => {
                    if let Some(r) = walk(checker, &w.body, tracked, Some(stmt)) {
                        return Some(r);
                    }
                }
                Stmt::For(_) | Stmt::While(_) => {
                    if outer.is_some() && uses(checker, stmt, tracked) {
                        return Some(outer);
                    }
                }
                _ => {
                    let blocks = super::rank_helpers::child_blocks(stmt);
                    if blocks.is_empty() {
                        if outer.is_some() && uses(checker, stmt, tracked) {
                            return Some(outer);
                        }
                        continue;
                    }
                    // Compound statement: its header may use the name too (`with x(loader)`).
                    for b in blocks {
                        if let Some(r) = walk(checker, b, tracked, outer) {
                            return Some(r);
                        }
                    }
                }
            }
        }
        None
    }
    walk(checker, body, tracked, None).flatten()
}

/// How many assignments bind `text` in these bodies?
fn count_bindings(checker: &Checker, bodies: &[&[Stmt]], text: &str) -> usize {
    fn walk(checker: &Checker, body: &[Stmt], text: &str, n: &mut usize) {
        for stmt in body {
            match stmt {
                Stmt::Assign(a) => {
                    *n += a
                        .targets
                        .iter()
                        .filter(|t| checker.text(t.range()) == text)
                        .count();
                }
                Stmt::AnnAssign(a) if checker.text(a.target.range()) == text => *n += 1,
                Stmt::For(f) if checker.text(f.target.range()) == text => *n += 1,
                _ => {}
            }
            if !matches!(stmt, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
                for b in super::rank_helpers::child_blocks(stmt) {
                    walk(checker, b, text, n);
                }
            }
        }
    }
    let mut n = 0;
    for b in bodies {
        walk(checker, b, text, &mut n);
    }
    n
}

/// Indentation of the line a statement starts on, when only whitespace precedes it.
fn indent_of(checker: &Checker, stmt: &Stmt) -> Option<String> {
    crate::fix::own_line_indent(checker, stmt.start()).map(str::to_string)
}

fn fix_for(checker: &Checker, b: &Binding, lp: &Stmt) -> Option<RawFix> {
    let Stmt::For(f) = lp else { return None };
    let var = helpers::name_of(&f.target)?;
    if var == "_" {
        return None;
    }
    let first = f.body.first()?;
    let indent = indent_of(checker, first)?;
    let header_line = checker.source.line_index.line_of(lp.start());
    if checker.source.line_index.line_of(first.start()) == header_line {
        return None;
    }
    let s = &b.access;
    let newline = crate::fix::newline(checker);
    let content = if b.nullable {
        let unit = if indent.contains('\t') { "\t" } else { "    " };
        format!("if {s} is not None:{newline}{indent}{unit}{s}.set_epoch({var}){newline}{indent}")
    } else {
        format!("{s}.set_epoch({var}){newline}{indent}")
    };
    Some(RawFix::safe(
        format!("Call `{s}.set_epoch({var})` at the start of each epoch"),
        vec![RawEdit::insert(first.start(), content)],
    ))
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if !name.is_some_and(|q| SAMPLER.contains(&q)) {
        return;
    }
    // shuffle: absent (default True) or literally true; anything else stays silent.
    match helpers::argument(call, "shuffle", 3) {
        Some(v) if helpers::is_truthy(v) != Some(true) => return,
        None if helpers::has_kwargs_splat(call) || helpers::has_args_splat(call) => return,
        _ => {}
    }
    let Some(binding) = binding(checker, call) else {
        // `return DataLoader(ds, sampler=DistributedSampler(ds))`: a loader factory.
        if let Some((element, at, loader)) = returned_directly(checker, call) {
            if let Some(found) = elsewhere_of_returns(checker, vec![(element, at)], loader) {
                let access = checker.text(call.range()).to_string();
                report_elsewhere(checker, call, &access, &found);
            }
        }
        return;
    };
    // Where the epoch loop may be: this function (or the module), and for `self.x` the other
    // methods of the class.
    let mut bodies: Vec<&[Stmt]> = Vec::new();
    match checker.function() {
        Some(f) => bodies.push(&f.body),
        None => bodies.push(&checker.module().body),
    }
    if binding.access.starts_with("self.") {
        if let Some(class) = checker.frame().method_of {
            for s in &class.def.body {
                if let Stmt::FunctionDef(m) = s {
                    if checker.function().is_none_or(|f| f.range() != m.range()) {
                        bodies.push(&m.body);
                    }
                }
            }
        }
    }
    let mut tracked = binding.tracked.clone();
    for b in &bodies {
        derive(checker, b, &mut tracked);
    }
    let Some(lp) = bodies.iter().find_map(|b| epoch_loop(checker, b, &tracked)) else {
        // A loader factory: the epoch loop is where the returned loader is used.
        if let Some(found) = epoch_loop_elsewhere(checker, &binding, &tracked) {
            report_elsewhere(checker, call, &binding.access, &found);
        }
        return;
    };
    // The creation must not be inside the epoch loop (a fresh sampler per epoch would still
    // repeat the order, but that shape is rare and ambiguous).
    if lp.range().contains_range(binding.stmt.range()) {
        return;
    }
    let root = binding
        .access
        .strip_suffix(".sampler")
        .unwrap_or(&binding.access);
    let reach = binding_reach(checker, &binding);
    if matches!(reach.epoch, EpochReach::Set) {
        return;
    }
    if escapes(checker, &bodies, root) || epochs_set_by_wrapper(checker, &bodies, &tracked) {
        return;
    }
    let fix = (count_bindings(checker, &bodies, root) == 1)
        .then(|| fix_for(checker, &binding, lp))
        .flatten();
    let loop_desc = match lp {
        Stmt::For(f) => format!("`for {} in ...`", checker.text(f.target.range())),
        _ => "`while`".to_string(),
    };
    let message = format!(
        "`{}` is a shuffling DistributedSampler but never receives `set_epoch(epoch)`: it reseeds from the epoch number, so every epoch of the {loop_desc} loop visits the data in the same order",
        binding.access
    );
    PENDING.with_borrow_mut(|p| {
        p.push(Pending {
            range: call.range(),
            message,
            loop_range: loop_header(lp),
            fix,
            reach,
        });
    });
}

/// A training loop over the loader of a sampler built in a loader factory, repeated by an
/// epoch loop: in the function that iterates it, or around the call of that function.
struct Elsewhere {
    /// The function whose loop iterates the loader, and that loop.
    inner: (FuncId, TextRange),
    /// The epoch loop around it.
    outer: (FuncId, TextRange),
}

/// The sampler (or a loader built on it) is returned by this function, no file of the project
/// calls `set_epoch`, and every place the returned loader is iterated in a loop is a training
/// loop repeated by an outer (epoch) loop. Framework hooks (`train_dataloader`) and values
/// the facts cannot follow keep the rule silent.
fn epoch_loop_elsewhere(
    checker: &Checker,
    binding: &Binding,
    tracked: &[String],
) -> Option<Elsewhere> {
    let f = checker.function()?;
    // The returned expressions that carry the sampler: `return loader`, `return
    // DataLoader(ds, sampler=sampler)`, or one element of a returned tuple.
    let carries = |e: &Expr| {
        is_tracked(checker, e, tracked)
            || matches!(e, Expr::Call(c) if c.arguments.args.iter().chain(c.arguments.keywords.iter().map(|k| &k.value)).any(|a| is_tracked(checker, a, tracked)))
    };
    let mut returns: Vec<(Option<u16>, TextRange)> = Vec::new();
    collect_returns(&f.body, &mut |value| match value {
        Expr::Tuple(t) => {
            for (i, e) in t.elts.iter().enumerate() {
                if carries(e) {
                    returns.push((Some(i as u16), e.range()));
                }
            }
        }
        e if carries(e) => returns.push((None, e.range())),
        _ => {}
    });
    if returns.is_empty() {
        // Not returned: the loaders built here on it go where the project model follows
        // them (`Trainer(data_loader=loader).run()`, whose methods iterate
        // `self.data_loader` once per pass of their epoch loop).
        let p = checker.project_or_file()?;
        let func = current_function(checker, p)?;
        let loaders: Vec<Vec<Fate>> = tracked
            .iter()
            .filter(|t| **t != binding.access && !t.contains('.'))
            .map(|t| p.model.fates(func, &Target::Local(t.as_str().into())))
            .collect();
        if loaders.is_empty() {
            return None;
        }
        return elsewhere_of(checker, loaders, true);
    }
    // Returned itself, or a loader (or batch sampler) built on it.
    let sampler_itself = returns.len() == 1
        && checker.text(returns[0].1) == binding.access
        && !binding.access.ends_with(".sampler");
    elsewhere_of_returns(checker, returns, !sampler_itself)
}

/// The sampler built in a `return` statement: `return DistributedSampler(ds)`, `return
/// DataLoader(ds, sampler=DistributedSampler(ds))`, or such a loader as one element of a
/// returned tuple. The element, the returned expression, and whether it is a loader.
fn returned_directly(checker: &Checker, call: &ExprCall) -> Option<(Option<u16>, TextRange, bool)> {
    let Stmt::Return(r) = checker.current_stmt()? else {
        return None;
    };
    let value = r.value.as_deref()?;
    let range = call.range();
    let carries = |e: &Expr| match e {
        Expr::Call(c) if c.range() == range => true,
        Expr::Call(c) => {
            helpers::keyword(c, "sampler").is_some_and(|s| s.range() == range)
                && checker.resolve(&c.func).is_some_and(|q| {
                    matches!(
                        q.as_str(),
                        "torch.utils.data.DataLoader" | "torch.utils.data.dataloader.DataLoader"
                    )
                })
        }
        _ => false,
    };
    let found = match value {
        Expr::Tuple(t) => t
            .elts
            .iter()
            .position(carries)
            .map(|i| (Some(i as u16), t.elts[i].range())),
        e => carries(e).then(|| (None, e.range())),
    }?;
    Some((found.0, found.1, found.1 != range))
}

/// [`epoch_loop_elsewhere`] for the returned expressions that carry the sampler (`loader`:
/// they are loaders built on it, not the sampler itself).
fn elsewhere_of_returns(
    checker: &Checker,
    returns: Vec<(Option<u16>, TextRange)>,
    loader: bool,
) -> Option<Elsewhere> {
    let p = checker.project_or_file()?;
    let func = current_function(checker, p)?;
    let fates: Vec<Vec<Fate>> = returns
        .iter()
        .map(|&(element, at)| p.model.fates_of_return(func, element, at))
        .collect();
    elsewhere_of(checker, fates, loader)
}

/// Where the sampler's (or its loaders', with `loader`) `fates` lead: every loop over it a
/// training loop repeated by an epoch loop, and nothing calls `set_epoch` on it.
fn elsewhere_of(checker: &Checker, fates: Vec<Vec<Fate>>, loader: bool) -> Option<Elsewhere> {
    let p = checker.project_or_file()?;
    let all: Vec<Fate> = fates.iter().flatten().cloned().collect();
    if !reach_of(p, &all, loader).reports(p.model.any_set_epoch()) {
        return None;
    }
    let mut found = None;
    for fates in fates {
        for fate in fates {
            match fate {
                Fate::Loop { func: g, index, .. } => {
                    if p.model.loop_role(g, index) != LoopRole::Train {
                        return None;
                    }
                    let inner = p.model.facts(g).loops.get(index as usize)?.range;
                    found.get_or_insert(Elsewhere {
                        inner: (g, inner),
                        outer: outer_loop(p, g, inner)?,
                    });
                }
                Fate::Framework { .. } => return None,
                _ => {}
            }
        }
    }
    found
}

/// The loop around `inner` in `g`, or around a call of `g` in one of its callers.
fn outer_loop(p: &ProjectFile, g: FuncId, inner: TextRange) -> Option<(FuncId, TextRange)> {
    let around = |f: FuncId, r: TextRange| {
        p.model
            .facts(f)
            .loops
            .iter()
            .find(|l| l.range != r && l.range.contains_range(r))
            .map(|l| (f, l.range))
    };
    around(g, inner).or_else(|| {
        p.model
            .callers(g)
            .iter()
            .find_map(|&(c, i)| around(c, p.model.function(c).calls.get(i)?.range))
    })
}

fn collect_returns<'a>(body: &'a [Stmt], f: &mut impl FnMut(&'a Expr)) {
    helpers::for_each_own_stmt(body, &mut |stmt| {
        if let Stmt::Return(r) = stmt {
            if let Some(v) = &r.value {
                f(v);
            }
        }
    });
}

fn report_elsewhere(checker: &mut Checker, call: &ExprCall, access: &str, found: &Elsewhere) {
    let Some(p) = checker.project_or_file().cloned() else {
        return;
    };
    let place = |(f, r): (FuncId, TextRange)| site(&p, f.file, r);
    let owner = p.model.function(found.inner.0).name.to_string();
    let nobody = if p.model.any_set_epoch() {
        "nothing calls `set_epoch(epoch)` on it (other samplers of the project get theirs)"
    } else {
        "no file of the project calls `set_epoch(epoch)`"
    };
    let message = format!(
        "`{access}` is a shuffling DistributedSampler but {nobody}: its loader is iterated for training in `{owner}` ({}) once per pass of the epoch loop at {}, so every epoch visits the data in the same order",
        place(found.inner),
        place(found.outer),
    );
    let d = checker.report(call.range(), message);
    for ((f, r), note) in [
        (found.outer, "the epoch loop that should call `set_epoch`"),
        (found.inner, "the training loop over this sampler's loader"),
    ] {
        if f.file == p.file {
            d.add_related(r, note);
        } else {
            d.add_remote(&p, f.file, r, note);
        }
    }
}

/// Is the sampler handed to a project function (`train(..., sampler=s)`), not a torch API?
/// That function may call `set_epoch` (often in another file): stay silent.
fn escapes(checker: &Checker, bodies: &[&[Stmt]], root: &str) -> bool {
    let mut found = false;
    for body in bodies {
        crate::rules::distributed::rank_helpers::for_each_call(body, &mut |c| {
            let passes = c
                .arguments
                .args
                .iter()
                .chain(c.arguments.keywords.iter().map(|k| &k.value))
                .any(|a| helpers::dotted(a).as_deref() == Some(root));
            if !passes {
                return;
            }
            // torch's own wrappers (DataLoader, BatchSampler) never call set_epoch.
            let q = checker.resolve(&c.func).unwrap_or_default();
            let torch_api = q.starts_with("torch.")
                || helpers::name_of(&c.func).is_some_and(|n| n.ends_with("DataLoader"));
            found |= !torch_api;
        });
    }
    found
}

/// The sampler or a loader built on it is handed to a wrapper whose loader sets the epoch on
/// the sampler at every pass: accelerate's `accelerator.prepare(...)` and
/// `prepare_data_loader(...)` (its `DataLoaderShard` calls `set_epoch` with its own
/// iteration count when iterated), Lightning Fabric's `fabric.setup_dataloaders(...)`.
fn epochs_set_by_wrapper(checker: &Checker, bodies: &[&[Stmt]], tracked: &[String]) -> bool {
    let mut found = false;
    for body in bodies {
        crate::rules::distributed::rank_helpers::for_each_call(body, &mut |c| {
            if found {
                return;
            }
            let hands_on = c
                .arguments
                .args
                .iter()
                .chain(c.arguments.keywords.iter().map(|k| &k.value))
                .any(|a| is_tracked(checker, a, tracked));
            if !hands_on {
                return;
            }
            let q = checker.resolve(&c.func).unwrap_or_default();
            found = q.starts_with("accelerate.")
                || q.starts_with("lightning.fabric.")
                || match &*c.func {
                    Expr::Attribute(a) => match a.attr.as_str() {
                        "prepare" | "prepare_data_loader" => checker.mentions("accelerate"),
                        "setup_dataloaders" => {
                            checker.mentions("lightning") || checker.mentions("Fabric")
                        }
                        _ => false,
                    },
                    _ => false,
                };
        });
    }
    found
}

/// The header of a loop (`for epoch in range(n)`), for the secondary location.
fn loop_header(lp: &Stmt) -> TextRange {
    match lp {
        Stmt::For(f) => TextRange::new(f.start(), f.iter.end()),
        Stmt::While(w) => TextRange::new(w.start(), w.test.end()),
        s => s.range(),
    }
}

fn check_end(checker: &mut Checker) {
    let pending = PENDING.with_borrow_mut(std::mem::take);
    if pending.is_empty() {
        return;
    }
    let any_set_epoch = !checker.facts.method_calls_of("set_epoch").is_empty();
    for p in pending {
        // The epoch loop is in this file: any `set_epoch` here silences (and the fix, which
        // adds one, converges).
        if any_set_epoch || matches!(p.reach.epoch, EpochReach::Set) {
            continue;
        }
        let d = checker.report(p.range, p.message);
        d.add_related(p.loop_range, "the epoch loop that should call `set_epoch`");
        if let Some(fix) = p.fix {
            d.set_fix(fix);
        }
    }
}

#[cfg(test)]
mod tests {

    fn count(src: &str) -> usize {
        crate::test_support::count_findings("distributed-sampler-without-set-epoch", src)
    }

    const BASE: &str = concat!(
        "from torch.utils.data import DataLoader, DistributedSampler\n",
        "def main(ds, epochs):\n",
        "    sampler = DistributedSampler(ds)\n",
        "    loader = DataLoader(ds, sampler=sampler)\n",
        "    for epoch in range(epochs):\n",
        "        for b in loader:\n",
        "            pass\n",
    );

    #[test]
    fn a_set_epoch_anywhere_in_the_file_silences() {
        assert_eq!(count(BASE), 1);
        assert_eq!(
            count(&format!(
                "{BASE}def helper(loader, e):\n    loader.sampler.set_epoch(e)\n"
            )),
            0
        );
    }

    #[test]
    fn a_sampler_created_in_the_epoch_loop_is_left_alone() {
        let src = concat!(
            "from torch.utils.data import DataLoader, DistributedSampler\n",
            "def main(ds, epochs):\n",
            "    for epoch in range(epochs):\n",
            "        sampler = DistributedSampler(ds)\n",
            "        loader = DataLoader(ds, sampler=sampler)\n",
            "        for b in loader:\n",
            "            pass\n",
        );
        assert_eq!(count(src), 0);
    }
}
