//! Train/eval and grad modes: which calls are training events (backward, optimizer step,
//! `model.eval()` / `model.train()`), which loops train, what a same-file function does for
//! training (one level of inlining), which values behave differently in train and eval mode,
//! and where autograd is off or evaluation runs. The mode rules (missing-eval-mode,
//! eval-without-no-grad, retain-graph-in-loop, sync-in-training-loop, ...) ask these.
//!
//! The queries read the place they are asked about through [`ModeSite`] (the linter's checker
//! implements it): the file, its name bindings at that point, the function and class being
//! visited, the project model, and a per-file [`ModeCache`].
//! - [`calls_in`]: every call of a suite (no nested defs/classes/lambdas), in source order;
//! - [`classify`]: what a call does for training ([`Event`]);
//! - [`local_function`]: the same-file function a call runs (`f(..)` at module level,
//!   `self.m(..)` in the enclosing class);
//! - [`summary`]: the events of a function body (cached per function);
//! - [`events_of`]: the events of a suite with one level of inlining (what a loop does).
use crate::helpers;
use crate::project::ProjectFile;
use crate::regions::loop_body;
use crate::{ModuleClasses, Scopes};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::rc::Rc;

/// The class a method being visited belongs to.
#[derive(Debug, Clone, Copy)]
pub struct EnclosingClass<'a> {
    /// Its definition.
    pub def: &'a ast::StmtClassDef,
    /// Derives from nn.Module (directly or through a class of this file).
    pub is_module: bool,
}

/// What the mode queries read of the place they are asked about (the linter's checker, at the
/// node being visited).
pub trait ModeSite<'a> {
    /// The file's text.
    fn source(&self) -> &'a str;
    /// The file's syntax tree.
    fn module(&self) -> &'a ast::ModModule;
    /// Name bindings in scope here.
    fn scopes(&self) -> &Scopes;
    /// The file's module classes.
    fn classes(&self) -> &ModuleClasses;
    /// The file's view of the project model, when the run built one.
    fn project(&self) -> Option<&ProjectFile>;
    /// The file's view of the project model, or a model of this file alone.
    fn project_or_file(&self) -> Option<&ProjectFile>;
    /// The function being visited.
    fn function(&self) -> Option<&'a ast::StmtFunctionDef>;
    /// The class the function being visited is a method of.
    fn method_of(&self) -> Option<EnclosingClass<'a>>;
    /// The loops of the function being visited, innermost last.
    fn loops(&self) -> &[&'a Stmt];
    /// The enclosing statements, outermost first.
    fn stmt_stack(&self) -> &[&'a Stmt];
    /// Is autograd disabled here (`no_grad` / `inference_mode`, not re-enabled)?
    fn in_no_grad(&self) -> bool;
    /// Inside `if __name__ == "__main__":`?
    fn in_main_guard(&self) -> bool;
    /// The per-file memo of these queries.
    fn mode_cache(&self) -> &ModeCache;
}

/// Source text of a range (empty when out of bounds).
fn source_text<'a>(cx: &impl ModeSite<'a>, range: TextRange) -> &'a str {
    cx.source()
        .get(range.start().to_usize()..range.end().to_usize())
        .unwrap_or("")
}

struct CallCollector<'a> {
    out: Vec<&'a ExprCall>,
    /// Do not descend into nested `for`/`while` statements.
    skip_loops: bool,
}

impl<'a> Visitor<'a> for CallCollector<'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
            Stmt::For(_) | Stmt::While(_) if self.skip_loops => {}
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Lambda(_) => {}
            Expr::Call(c) => {
                self.out.push(c);
                visitor::walk_expr(self, expr);
            }
            _ => visitor::walk_expr(self, expr),
        }
    }
}

/// Every call of a suite (not inside nested defs, classes or lambdas), by start offset.
pub fn calls_in(body: &[Stmt]) -> Vec<&ExprCall> {
    let mut out = helpers::own_calls(body);
    out.sort_by_key(|c| c.start());
    out
}

/// The calls of one iteration of a loop body: like [`calls_in`] but not inside nested loops.
pub fn calls_in_iteration(body: &[Stmt]) -> Vec<&ExprCall> {
    let mut out = Vec::new();
    helpers::for_each_own_call(body, true, &mut |c| out.push(c));
    out.sort_by_key(|c| c.start());
    out
}

/// The calls of one expression (including itself when it is a call).
pub fn calls_in_expr(expr: &Expr) -> Vec<&ExprCall> {
    let mut c = CallCollector {
        out: Vec::new(),
        skip_loops: false,
    };
    c.visit_expr(expr);
    c.out
}

/// What a call does for training.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// `loss.backward()`, `scaler.scale(loss).backward()`, `accelerator.backward(loss)`,
    /// `torch.autograd.backward(loss)`.
    Backward,
    /// `optimizer.step()` / `scaler.step(optimizer)`.
    OptStep,
    /// `X.eval()` / `X.train(False)`: the text of `X`.
    Eval(String),
    /// `X.train()` / `X.train(True)` / `X.train(mode)`: the text of `X`.
    Train(String),
    /// Anything else.
    Other,
}

/// The tensor a backward call differentiates (`loss` in every spelling), if the call is one
/// ([`crate::uses::backward_target`]).
pub fn backward_target<'x, 'a>(cx: &impl ModeSite<'x>, call: &'a ExprCall) -> Option<&'a Expr> {
    crate::uses::backward_target(cx.scopes(), call)
}

/// Is this call a backward pass?
pub fn is_backward<'x>(_cx: &impl ModeSite<'x>, call: &ExprCall) -> bool {
    // `loss.backward()`, `accelerator.backward(loss)` and `torch.autograd.backward(loss)` all
    // end in `.backward`.
    matches!(helpers::method_call(call), Some(("backward", _)))
}

/// Does this receiver text look like an optimizer (`opt`, `optimizer`, `self.optim_g`)?
fn optimizer_like(text: &str) -> bool {
    let last = text.rsplit('.').next().unwrap_or(text).to_ascii_lowercase();
    last.contains("opt") && !last.contains("sched")
}

/// Classify one call. Only looks at the call itself (no kinds: it is used on callee bodies).
pub fn classify<'x>(cx: &impl ModeSite<'x>, call: &ExprCall) -> Event {
    let Some((method, recv)) = helpers::method_call(call) else {
        return Event::Other;
    };
    if !matches!(method, "backward" | "step" | "eval" | "train") {
        return Event::Other;
    }
    if is_backward(cx, call) {
        return Event::Backward;
    }
    // The module a `.eval()` / `.train()` switches, through the methods that give it back
    // (`model.cuda().eval()`).
    let recv = if matches!(method, "eval" | "train") {
        crate::dataflow::module_chain(recv).0
    } else {
        recv
    };
    let text = source_text(cx, recv.range());
    match method {
        "step" => {
            let last = text.rsplit('.').next().unwrap_or(text).to_ascii_lowercase();
            // `scaler.step(optimizer)` or `optimizer.step()`.
            if optimizer_like(text)
                || (last.contains("scaler")
                    && call
                        .arguments
                        .args
                        .first()
                        .is_some_and(|a| optimizer_like(source_text(cx, a.range()))))
            {
                Event::OptStep
            } else {
                Event::Other
            }
        }
        "eval" if call.arguments.is_empty() => Event::Eval(text.to_string()),
        "train" => {
            let mode = call
                .arguments
                .args
                .first()
                .or_else(|| helpers::keyword(call, "mode"));
            match mode.and_then(helpers::is_truthy) {
                Some(false) => Event::Eval(text.to_string()),
                _ if call.arguments.args.len() + call.arguments.keywords.len() <= 1 => {
                    Event::Train(text.to_string())
                }
                _ => Event::Other,
            }
        }
        _ => Event::Other,
    }
}

/// The same-file function a call runs: `f(...)` for a module-level `def f` (not shadowed by an
/// import), or `self.m(...)` for a method `m` of the class the current function belongs to.
pub fn local_function<'a>(
    cx: &impl ModeSite<'a>,
    call: &ExprCall,
) -> Option<&'a ast::StmtFunctionDef> {
    match &*call.func {
        Expr::Name(n) => {
            let name = n.id.as_str();
            let body = &cx.module().body;
            let indices = cx.mode_cache().with(|c| {
                c.module_defs
                    .get_or_insert_with(|| {
                        let mut m: FxHashMap<String, Vec<usize>> = FxHashMap::default();
                        for (i, s) in body.iter().enumerate() {
                            if let Stmt::FunctionDef(f) = s {
                                m.entry(f.name.to_string()).or_default().push(i);
                            }
                        }
                        m
                    })
                    .get(name)
                    .cloned()
            })?;
            if cx.scopes().lookup(name).is_some() {
                return None;
            }
            let defs = indices.iter().filter_map(|&i| match body.get(i) {
                Some(Stmt::FunctionDef(f)) => Some(f),
                _ => None,
            });
            helpers::visible_def(defs, name, call.start(), cx.function().is_none())
        }
        Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self") => {
            let class = cx.method_of()?;
            class.def.body.iter().find_map(|s| match s {
                Stmt::FunctionDef(f) if f.name.as_str() == a.attr.as_str() => Some(f),
                _ => None,
            })
        }
        _ => None,
    }
}

/// What a function body does (its own calls only, no further inlining).
#[derive(Debug, Default, Clone)]
pub struct Summary {
    /// A backward call (its range).
    pub backward: Option<TextRange>,
    /// An optimizer step (its range).
    pub opt_step: Option<TextRange>,
    /// `X.eval()` calls: receiver text and call range.
    pub evals: Vec<(String, TextRange)>,
    /// `X.train()` calls: receiver text and call range.
    pub trains: Vec<(String, TextRange)>,
    /// Parameter names, in order (for mapping receivers to the caller's arguments).
    pub params: Vec<String>,
    /// `torch.enable_grad()` / `torch.autograd.grad` / `requires_grad_` used (gradient-based
    /// evaluation such as saliency or adversarial attacks).
    pub uses_grad: bool,
}

/// The per-file memo of the mode queries (function summaries, loop answers, module-level
/// `def`s, per-function name answers). One lives as long as the pass over one file (the
/// linter's checker holds it).
#[derive(Default)]
pub struct ModeCache(RefCell<Cache>);

impl ModeCache {
    fn with<R>(&self, f: impl FnOnce(&mut Cache) -> R) -> R {
        f(&mut self.0.borrow_mut())
    }
}

#[derive(Default)]
struct Cache {
    summaries: FxHashMap<u32, Rc<Summary>>,
    loop_backward: FxHashMap<u32, bool>,
    loop_training: FxHashMap<u32, bool>,
    /// Module-level `def`s by name (index into the module body).
    module_defs: Option<FxHashMap<String, Vec<usize>>>,
    /// Functions whose name says evaluation.
    eval_named: FxHashMap<u32, bool>,
    /// Functions only called for evaluation: an evaluation-named caller.
    evaluation_callers: FxHashMap<u32, Option<String>>,
}

/// Does this call use gradients explicitly (autograd.grad, enable_grad, requires_grad_)?
pub fn uses_grad<'x>(cx: &impl ModeSite<'x>, call: &ExprCall) -> bool {
    let last = match &*call.func {
        Expr::Attribute(a) => a.attr.as_str(),
        Expr::Name(n) => n.id.as_str(),
        _ => return false,
    };
    if last == "requires_grad_" {
        return true;
    }
    if !matches!(
        last,
        "grad" | "enable_grad" | "set_grad_enabled" | "jacobian" | "vjp"
    ) {
        return false;
    }
    cx.scopes().resolve(&call.func).is_some_and(|q| {
        matches!(
            q.as_str(),
            "torch.autograd.grad"
                | "torch.enable_grad"
                | "torch.autograd.enable_grad"
                | "torch.set_grad_enabled"
                | "torch.func.grad"
                | "torch.autograd.functional.jacobian"
                | "torch.autograd.functional.vjp"
        )
    })
}

fn summarize<'x>(cx: &impl ModeSite<'x>, f: &ast::StmtFunctionDef) -> Summary {
    let mut s = Summary {
        params: f.parameters.iter().map(|p| p.name().to_string()).collect(),
        ..Summary::default()
    };
    for call in calls_in(&f.body) {
        if uses_grad(cx, call) {
            s.uses_grad = true;
        }
        match classify(cx, call) {
            Event::Backward => {
                s.backward.get_or_insert(call.range());
            }
            Event::OptStep => {
                s.opt_step.get_or_insert(call.range());
            }
            Event::Eval(t) => s.evals.push((t, call.range())),
            Event::Train(t) => s.trains.push((t, call.range())),
            Event::Other => {}
        }
    }
    // Assignments `x.requires_grad = True` also mean gradient use.
    helpers::for_each_own_stmt(&f.body, &mut |st| {
        if let Stmt::Assign(a) = st {
            if a.targets
                .iter()
                .any(|t| matches!(t, Expr::Attribute(at) if at.attr.as_str() == "requires_grad"))
            {
                s.uses_grad = true;
            }
        }
    });
    s
}

/// The (cached) summary of a same-file function.
pub fn summary<'x>(cx: &impl ModeSite<'x>, f: &ast::StmtFunctionDef) -> Rc<Summary> {
    let start = f.range().start().to_u32();
    if let Some(s) = cx.mode_cache().with(|c| c.summaries.get(&start).cloned()) {
        return s;
    }
    let s = Rc::new(summarize(cx, f));
    cx.mode_cache().with(|c| {
        c.summaries.insert(start, s.clone());
    });
    s
}

/// Map a receiver text of a callee (`model`, `self.model`) to the caller's spelling: a
/// parameter becomes the argument passed for it; `self.x` stays `self.x` when the call is
/// `self.m(...)`; other names (module globals) stay as they are. `None` when unknown.
pub fn receiver_in_caller<'x>(
    cx: &impl ModeSite<'x>,
    call: &ExprCall,
    summary: &Summary,
    receiver: &str,
) -> Option<String> {
    let is_method_call =
        matches!(&*call.func, Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self"));
    let root = receiver.split('.').next().unwrap_or(receiver);
    if root == "self" {
        return is_method_call.then(|| receiver.to_string());
    }
    if let Some(idx) = summary.params.iter().position(|p| p == root) {
        // Skip `self` for method calls.
        let pos = if is_method_call && summary.params.first().map(String::as_str) == Some("self") {
            idx.checked_sub(1)?
        } else {
            idx
        };
        let arg = helpers::argument(call, root, pos)?;
        let text = source_text(cx, arg.range());
        return Some(format!("{text}{}", &receiver[root.len()..]));
    }
    Some(receiver.to_string())
}

/// One training event found in a suite.
#[derive(Debug, Clone)]
pub struct Found {
    /// What happens.
    pub event: Event,
}

/// The training events of a suite, with one level of same-file function inlining. Receivers
/// of inlined eval/train calls are translated to the caller's spelling.
pub fn events_of<'x>(cx: &impl ModeSite<'x>, body: &[Stmt]) -> Vec<Found> {
    events_of_calls(cx, calls_in(body))
}

/// [`events_of`] over a given list of calls.
pub fn events_of_calls<'x>(cx: &impl ModeSite<'x>, calls: Vec<&ExprCall>) -> Vec<Found> {
    let mut out = Vec::new();
    for call in calls {
        match classify(cx, call) {
            Event::Other => {}
            e => {
                out.push(Found { event: e });
                continue;
            }
        }
        let Some(f) = local_function(cx, call) else {
            continue;
        };
        let s = summary(cx, f);
        if s.backward.is_some() {
            out.push(Found {
                event: Event::Backward,
            });
        }
        if s.opt_step.is_some() {
            out.push(Found {
                event: Event::OptStep,
            });
        }
        for (t, _) in &s.evals {
            if let Some(t) = receiver_in_caller(cx, call, &s, t) {
                out.push(Found {
                    event: Event::Eval(t),
                });
            }
        }
        for (t, _) in &s.trains {
            // A train() whose receiver cannot be mapped still counts as a restore.
            let t = receiver_in_caller(cx, call, &s, t).unwrap_or_default();
            out.push(Found {
                event: Event::Train(t),
            });
        }
    }
    out
}

/// Is a suite a training loop body: a backward pass and an optimizer step (directly or in a
/// same-file function it calls)?
pub fn is_training(events: &[Found]) -> bool {
    events.iter().any(|f| f.event == Event::Backward)
        && events.iter().any(|f| f.event == Event::OptStep)
}

/// Does a loop statement's body contain a backward pass (directly, no inlining)? Cached per
/// loop.
pub fn loop_has_backward<'x>(cx: &impl ModeSite<'x>, loop_stmt: &Stmt) -> bool {
    let start = loop_stmt.range().start().to_u32();
    if let Some(b) = cx
        .mode_cache()
        .with(|c| c.loop_backward.get(&start).copied())
    {
        return b;
    }
    let b = has_backward(cx, loop_body(loop_stmt));
    cx.mode_cache().with(|c| {
        c.loop_backward.insert(start, b);
    });
    b
}

/// Is a loop a per-step training loop (backward + optimizer step in its own body, not only in
/// nested loops, with one level of same-file function inlining)? Cached per loop.
pub fn loop_is_training<'x>(cx: &impl ModeSite<'x>, loop_stmt: &Stmt) -> bool {
    let start = loop_stmt.range().start().to_u32();
    if let Some(b) = cx
        .mode_cache()
        .with(|c| c.loop_training.get(&start).copied())
    {
        return b;
    }
    let b = is_training(&events_of_calls(
        cx,
        calls_in_iteration(loop_body(loop_stmt)),
    ));
    cx.mode_cache().with(|c| {
        c.loop_training.insert(start, b);
    });
    b
}

/// Does the suite contain a backward pass (directly, no inlining)?
pub fn has_backward<'x>(cx: &impl ModeSite<'x>, body: &[Stmt]) -> bool {
    calls_in(body).into_iter().any(|c| is_backward(cx, c))
}

/// Does the current function's name say evaluation ([`crate::regions::is_eval_name`], cached per function)?
pub fn frame_is_eval_named<'x>(cx: &impl ModeSite<'x>) -> bool {
    let Some(f) = cx.function() else {
        return false;
    };
    let start = f.range().start().to_u32();
    if let Some(b) = cx.mode_cache().with(|c| c.eval_named.get(&start).copied()) {
        return b;
    }
    let b = crate::regions::is_eval_name(f.name.as_str());
    cx.mode_cache().with(|c| {
        c.eval_named.insert(start, b);
    });
    b
}

/// The evaluation-named function that the current function serves, when the project model
/// sees it called only for evaluation (see
/// [`crate::project::ProjectModel::evaluation_caller`]: `run_model(enc, dec, batch)`
/// called from `predict()` only), cached per function.
pub fn frame_evaluation_caller<'x>(cx: &impl ModeSite<'x>) -> Option<String> {
    let f = cx.function()?;
    let start = f.range().start();
    if let Some(b) = cx
        .mode_cache()
        .with(|c| c.evaluation_callers.get(&start.to_u32()).cloned())
    {
        return b;
    }
    let found = cx.project().and_then(|p| {
        let id = p.function_at(start)?;
        p.model.evaluation_caller(id).map(str::to_string)
    });
    cx.mode_cache().with(|c| {
        c.evaluation_callers.insert(start.to_u32(), found.clone());
    });
    found
}

/// Framework hooks whose grad/train mode the framework manages (Lightning, HF Trainer).
pub fn is_framework_hook(name: &str) -> bool {
    matches!(
        name,
        "validation_step"
            | "test_step"
            | "predict_step"
            | "training_step"
            | "prediction_step"
            | "evaluation_loop"
            | "prediction_loop"
    ) || name.starts_with("on_validation")
        || name.starts_with("on_test")
        || name.starts_with("on_predict")
}

/// The plain names a module-level statement binds to the object a module-level name holds
/// (`loaded_model = model`, `net = model.to(device)`: the same module, so `net.eval()`
/// switches `model` too). Module-level statements only, nested suites included.
pub fn module_aliases_of<'a>(cx: &impl ModeSite<'a>, name: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    helpers::for_each_own_stmt(&cx.module().body, &mut |st: &'a Stmt| {
        if let Stmt::Assign(a) = st {
            let (base, _) = crate::dataflow::module_chain(&a.value);
            if helpers::name_of(base) == Some(name) {
                for t in &a.targets {
                    if let Some(alias) = helpers::name_of(t).filter(|t| *t != name) {
                        out.push(alias);
                    }
                }
            }
        }
    });
    out
}

/// The values plainly assigned to a name (in the current function when it binds the name
/// there, else at module level; also the element of a tuple assigned to a tuple of names) or to `self.<attr>` (in the methods of the current class),
/// with the assignment statements' ranges, in source order.
pub fn assigned_values<'a>(cx: &impl ModeSite<'a>, target: &Expr) -> Vec<(&'a Expr, TextRange)> {
    let mut out = Vec::new();
    let mut collect = |body: &'a [Stmt], matches: &dyn Fn(&Expr) -> bool| {
        helpers::for_each_own_stmt(body, &mut |st: &'a Stmt| match st {
            Stmt::Assign(a) if a.targets.iter().any(matches) => {
                out.push((&*a.value, a.range));
            }
            // `net, head = Net(), Head()`: the element in the same position.
            Stmt::Assign(a) => {
                for t in &a.targets {
                    for (n, v) in helpers::paired_elements(t, &a.value).into_iter().flatten() {
                        if matches(n) {
                            out.push((v, a.range));
                        }
                    }
                }
            }
            Stmt::AnnAssign(a) if matches(&a.target) => {
                if let Some(v) = &a.value {
                    out.push((&**v, a.range));
                }
            }
            _ => {}
        });
    };
    match target {
        Expr::Name(n) => {
            let name = n.id.as_str();
            let local = cx
                .scopes()
                .current()
                .is_some_and(|s| s.kind == crate::ScopeKind::Function && s.binds_locally(name));
            let is_name = |e: &Expr| helpers::name_of(e) == Some(name);
            match cx.function() {
                Some(f) if local => collect(&f.body, &is_name),
                _ => collect(&cx.module().body, &is_name),
            }
        }
        Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self") => {
            let Some(class) = cx.method_of() else {
                return out;
            };
            let attr = a.attr.as_str();
            let is_attr = |e: &Expr| helpers::self_attribute(e) == Some(attr);
            for st in &class.def.body {
                if let Stmt::FunctionDef(f) = st {
                    collect(&f.body, &is_attr);
                }
            }
        }
        _ => {}
    }
    out
}

/// Does the module built by `call` behave differently in train and eval mode (has Dropout or
/// BatchNorm layers, directly, in an `nn.Sequential`, in a same-file class, or is a
/// pretrained torchvision/timm/Hugging Face model)? The layer family found.
pub fn mode_dependent<'x>(
    cx: &impl ModeSite<'x>,
    call: &ExprCall,
    depth: u8,
) -> Option<&'static str> {
    if depth > 2 {
        return None;
    }
    if let Some(q) = cx.scopes().resolve(&call.func) {
        if let Some(k) = crate::mode_layer_of_call(&q, call) {
            return Some(k);
        }
        if matches!(
            q.as_str(),
            "torch.nn.Sequential" | "torch.nn.ModuleList" | "torch.nn.ModuleDict"
        ) {
            return calls_in_args(call)
                .into_iter()
                .filter_map(|c| mode_dependent(cx, c, depth + 1))
                .reduce(crate::join_mode_layers);
        }
        // A class or builder of another file of the project.
        let e = cx.project()?.entity(&q)?;
        if let crate::project::Entity::Class(c) = e {
            if built_without_dropout(cx, c, call) {
                return None;
            }
        }
        return project_mode(cx, e.clone()).or_else(|| stored_argument_mode(cx, call, e, depth));
    }
    let Expr::Name(n) = &*call.func else {
        return None;
    };
    let class = cx.module().body.iter().find_map(|s| match s {
        Stmt::ClassDef(c) if c.name.as_str() == n.id.as_str() => Some(c),
        _ => None,
    });
    let Some(class) = class else {
        // A same-file builder function, or a name a star import brings.
        let e = cx.project()?.local_at(n.id.as_str(), call.start())?;
        return project_mode(cx, e.clone()).or_else(|| stored_argument_mode(cx, call, e, depth));
    };
    if !cx.classes().is_module(n.id.as_str()) {
        return None;
    }
    if let Some(p) = cx.project() {
        // The project model knows the class's layers, sub-modules and bases in every file.
        if let Some(c) = p.class_at(class.range.start()) {
            if built_without_dropout(cx, c, call) {
                return None;
            }
            return p.model.mode_layer(c).map(|(k, _)| k).or_else(|| {
                stored_argument_mode(cx, call, crate::project::Entity::Class(c), depth)
            });
        }
    }
    let mut found = None;
    for st in &class.body {
        let Stmt::FunctionDef(f) = st else { continue };
        for c in calls_in(&f.body) {
            let k = if let Some(q) = cx.scopes().resolve(&c.func) {
                crate::mode_layer_of_call(&q, c)
            } else if matches!(&*c.func, Expr::Name(m) if m.id.as_str() != n.id.as_str()) {
                mode_dependent(cx, c, depth + 1)
            } else {
                None
            };
            if let Some(k) = k {
                found = Some(found.map_or(k, |f| crate::join_mode_layers(f, k)));
            }
        }
    }
    found
}

/// Does the scope that binds `target` (a plain name) to the library model `call` builds give
/// that model a new head without train/eval-sensitive layers, where the library keeps all of
/// them (`model = models.vgg16(pretrained=True)` ... `model.classifier = nn.Linear(n, 2)`;
/// [`crate::library_mode_head`], [`crate::head_replaced_mode_free`])?
pub fn head_replaced_here<'x>(cx: &impl ModeSite<'x>, target: &Expr, call: &ExprCall) -> bool {
    let Expr::Name(n) = target else { return false };
    let Some(head) = cx
        .scopes()
        .resolve(&call.func)
        .and_then(|q| crate::library_mode_head(&q))
    else {
        return false;
    };
    let name = n.id.as_str();
    let local = cx
        .scopes()
        .current()
        .is_some_and(|s| s.kind == crate::ScopeKind::Function && s.binds_locally(name));
    let body = match cx.function() {
        Some(f) if local => &f.body[..],
        _ => &cx.module().body[..],
    };
    crate::head_replaced_mode_free(body, name, head, &|e| cx.scopes().resolve(e))
}

/// Does `call` build a module known to behave the same in train and eval mode, where
/// [`mode_dependent`] found no such layer (in the class, or in what the call hands to it): a
/// torch layer, a torch container of such calls, or a project class (by import, or of this
/// file) without Dropout/BatchNorm. An alternative like that (`if no_bn: net = DCGAN_G_nobn(...) else: net =
/// DCGAN_G(...)`) means the model may well not be sensitive.
pub fn constructs_mode_free<'x>(cx: &impl ModeSite<'x>, call: &ExprCall) -> bool {
    constructs_mode_free_in(cx, call, 0)
}

fn constructs_mode_free_in<'x>(cx: &impl ModeSite<'x>, call: &ExprCall, depth: u8) -> bool {
    if depth > 2 || mode_dependent(cx, call, 0).is_some() {
        return false;
    }
    let class = match cx.scopes().resolve(&call.func) {
        // A wrapper (`nn.DataParallel(model)`) is what it wraps.
        Some(q) if crate::classes::is_data_parallel_wrapper(&q) => return false,
        // A container holds what its arguments build: each must be known.
        Some(q)
            if matches!(
                q.as_str(),
                "torch.nn.Sequential" | "torch.nn.ModuleList" | "torch.nn.ModuleDict"
            ) =>
        {
            let mut args = call
                .arguments
                .args
                .iter()
                .chain(call.arguments.keywords.iter().map(|k| &k.value));
            return args.all(|a| match a {
                Expr::Call(c) => constructs_mode_free_in(cx, c, depth + 1),
                Expr::List(l) => l.elts.iter().all(
                    |e| matches!(e, Expr::Call(c) if constructs_mode_free_in(cx, c, depth + 1)),
                ),
                _ => false,
            });
        }
        Some(q) if q.starts_with("torch.nn.") => return crate::classes::is_module_base(&q),
        Some(q) => cx.project().and_then(|p| p.entity(&q)),
        None => match &*call.func {
            Expr::Name(n) => cx
                .project()
                .and_then(|p| p.local_at(n.id.as_str(), call.start())),
            _ => None,
        },
    };
    // (What the call hands to the constructor, [`mode_dependent`] has looked at.)
    match (class, cx.project()) {
        // (A class whose `nn.Module` base the model cannot see, through a third-party star
        // import, counts: nothing says it has such layers.)
        (Some(crate::project::Entity::Class(c)), Some(p)) => p.model.mode_layer(c).is_none(),
        _ => false,
    }
}

/// Does `call` build an instance of project class `c` whose only train/eval-sensitive layers
/// are Dropouts at the rate of an `__init__` parameter (see
/// [`crate::project::ProjectModel::dropout_rate`]) with a rate of literal 0: given
/// (`CausalAttention(d_in, d_out, ctx_len, 0.0)`, `dropout=0`) or left at a default of 0?
/// Such an instance computes the same in train and eval mode.
fn built_without_dropout<'x>(
    cx: &impl ModeSite<'x>,
    c: crate::project::ClassId,
    call: &ExprCall,
) -> bool {
    let Some(p) = cx.project() else {
        return false;
    };
    let Some(rate) = p.model.dropout_rate(c) else {
        return false;
    };
    let args = &call.arguments;
    if args.args.iter().any(Expr::is_starred_expr) || args.keywords.iter().any(|k| k.arg.is_none())
    {
        return false;
    }
    let given = args
        .find_keyword(&rate.name)
        .map(|k| &k.value)
        .or_else(|| args.args.get(usize::from(rate.position)));
    given.map_or(rate.default_zero, helpers::is_literal_zero)
}

/// The train/eval-sensitive layers of a sub-module that `call` hands to a project module
/// class which stores that `__init__` parameter whole on the instance (`SimCLR(encoder, 512)`
/// with `self.encoder = encoder`, and `encoder = torchvision.models.resnet18()`): the
/// instance runs it, so its layers are the instance's layers.
fn stored_argument_mode<'x>(
    cx: &impl ModeSite<'x>,
    call: &ExprCall,
    e: crate::project::Entity,
    depth: u8,
) -> Option<&'static str> {
    let crate::project::Entity::Class(c) = e else {
        return None;
    };
    let p = cx.project()?;
    // A `*args` splat shifts the positions: which parameter gets what is not known.
    if call.arguments.args.iter().any(Expr::is_starred_expr) {
        return None;
    }
    for (i, name) in p.model.init_params_stored(c) {
        let arg = call
            .arguments
            .find_keyword(name)
            .map(|k| &k.value)
            .or_else(|| call.arguments.args.get(i - 1));
        let found = match arg {
            Some(Expr::Call(a)) => mode_dependent(cx, a, depth + 1),
            Some(a @ Expr::Name(_)) => assigned_values(cx, a).into_iter().find_map(|(v, _)| {
                match crate::dataflow::module_chain(v).0 {
                    Expr::Call(b) => mode_dependent(cx, b, depth + 1),
                    _ => None,
                }
            }),
            _ => None,
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

/// The project class a call builds: a class of this file (`Net()`), an imported one
/// (`models.Net()`, `from .net import Net`), a name a star import brings.
pub fn project_class_built<'x>(
    cx: &impl ModeSite<'x>,
    call: &ExprCall,
) -> Option<crate::project::ClassId> {
    use crate::project::Entity;
    // A single file is its own project: its classes are classes of the model too.
    let p = cx.project_or_file()?;
    let e = match cx.scopes().resolve(&call.func) {
        Some(q) => p.entity(&q)?,
        None => {
            let Expr::Name(n) = &*call.func else {
                return None;
            };
            let own = cx.module().body.iter().find_map(|s| match s {
                Stmt::ClassDef(c) if c.name.as_str() == n.id.as_str() => Some(c.range.start()),
                _ => None,
            });
            match own {
                Some(start) => return p.class_at(start),
                None => p.local_at(n.id.as_str(), call.start())?,
            }
        }
    };
    match e {
        Entity::Class(c) => Some(c),
        _ => None,
    }
}

/// Is the name `name` handed, between offsets `from` and `at` of `body` (a module or
/// function body), to a call that may train it or change its mode: an argument of any call but the
/// builtins that only look at it ([`crate::project::facts::HARMLESS_CALLEES`]); with
/// `methods`, also the receiver of a method that does more than move, read or load it
/// (`model.apply(fn)`, `model.requires_grad_(False)`).
pub fn handed_between(
    body: &[Stmt],
    name: &str,
    from: TextSize,
    at: TextSize,
    methods: bool,
) -> bool {
    use crate::project::facts::HARMLESS_CALLEES;
    let mut handed = false;
    for st in body {
        if st.end() <= from || st.start() >= at {
            continue;
        }
        helpers::for_each_own_call(std::slice::from_ref(st), false, &mut |c: &ExprCall| {
            if handed || c.start() >= at || c.end() <= from {
                return;
            }
            if methods {
                if let Expr::Attribute(a) = &*c.func {
                    if helpers::name_of(&a.value) == Some(name)
                        && !crate::dataflow::method_keeps_mode(a.attr.as_str())
                    {
                        handed = true;
                        return;
                    }
                }
            }
            let harmless =
                helpers::dotted(&c.func).is_some_and(|q| HARMLESS_CALLEES.contains(&q.as_str()));
            handed = !harmless
                && c.arguments
                    .args
                    .iter()
                    .chain(c.arguments.keywords.iter().map(|k| &k.value))
                    .any(|a| {
                        helpers::name_of(a) == Some(name)
                            || matches!(a, Expr::Starred(st) if helpers::name_of(&st.value) == Some(name))
                    });
        });
    }
    handed
}

/// Did the statement `trained` (the epoch loop, `train(model, loader, opt)`) of the function
/// being visited, or of the module body, train the model a plain name holds, and was the
/// name left alone from there to `at`: bound only before the training (in that function when
/// it is a function's: not a parameter), not handed to a call that may switch its mode or
/// train it ([`handed_between`], methods included)? A forward pass at `at` then runs the
/// trained model in the mode the training left it: training mode.
pub fn trained_then_untouched<'x>(
    cx: &impl ModeSite<'x>,
    model: &Expr,
    trained: &Stmt,
    at: TextSize,
) -> bool {
    let Expr::Name(n) = model else {
        return false;
    };
    let name = n.id.as_str();
    if !helpers::any_expr_in_stmt(trained, |e| helpers::name_of(e) == Some(name)) {
        return false;
    }
    // Every binding that reaches the call was made before the training.
    let Some(defs) =
        crate::reaching::reaching_in_frame(cx.scopes(), cx.function(), cx.module(), name, at)
    else {
        return false;
    };
    if !defs.iter().all(|d| match d {
        crate::reaching::Def::Value(v) => {
            v.end() <= trained.start()
                && cx
                    .function()
                    .is_none_or(|f| f.range.contains_range(v.range()))
        }
        _ => false,
    }) {
        return false;
    }
    let body = match cx.function() {
        Some(f) => &f.body[..],
        None => &cx.module().body[..],
    };
    !handed_between(body, name, trained.end(), at, true)
}

/// Is a script's or notebook's model run here before anything trained or loaded it? It is
/// bound at module level to a new instance of a project class whose constructor loads no
/// weights (`model = LitSimpleLSTM(vocab_size, 128, 128, 2, 0.5)`), nothing between that
/// binding and this call trains or loads a model or hands this one to a call, and a later
/// module-level statement trains it (an optimizer over its parameters, `trainer.fit(model)`,
/// `train(model, loader)`). A forward pass of random weights before the training ("test the model's
/// forward method" on one batch) checks shapes: it evaluates nothing.
pub fn before_training<'x>(
    cx: &impl ModeSite<'x>,
    model: &Expr,
    at: ruff_text_size::TextSize,
) -> bool {
    if cx.function().is_some() {
        return false;
    }
    let (Expr::Name(n), Some(p)) = (model, cx.project()) else {
        return false;
    };
    let name = n.id.as_str();
    let Some(defs) = crate::reaching::reaching_in_frame(cx.scopes(), None, cx.module(), name, at)
    else {
        return false;
    };
    let mut bound_end = None;
    for d in &defs {
        let crate::reaching::Def::Value(v) = d else {
            return false;
        };
        let Expr::Call(c) = crate::dataflow::module_chain(v).0 else {
            return false;
        };
        match project_class_built(cx, c) {
            Some(cls) if !p.model.constructor_may_load_weights(cls) => {}
            _ => return false,
        }
        bound_end = bound_end.max(Some(v.end()));
    }
    let Some(from) = bound_end else {
        return false;
    };
    let src = cx.source();
    let Some(between) = src.get(from.to_usize()..at.to_usize()) else {
        return false;
    };
    const TRAINS_OR_LOADS: &[&str] = &[
        "backward",
        ".step(",
        "fit(",
        "train(",
        "load(",
        "load_state_dict",
        "from_pretrained",
    ];
    if TRAINS_OR_LOADS.iter().any(|w| between.contains(w)) {
        return false;
    }
    // Handed to a call in between (`train_model(model, loader)`): it may have been trained.
    if handed_between(&cx.module().body, name, from, at, false) {
        return false;
    }
    // Trained later: an optimizer over its parameters, or handed to a fit / train call
    // (`trainer.fit(model, datamodule=dm)`, `train(model, loader)`), or its own `fit`.
    let mut trained = false;
    for st in cx.module().body.iter().filter(|st| st.start() >= at) {
        helpers::for_each_own_call(std::slice::from_ref(st), false, &mut |c: &ExprCall| {
            let callee = match &*c.func {
                Expr::Attribute(a) => a.attr.as_str(),
                Expr::Name(f) => f.id.as_str(),
                _ => return,
            };
            let passes = c
                .arguments
                .args
                .iter()
                .chain(c.arguments.keywords.iter().map(|k| &k.value))
                .any(|a| {
                    helpers::name_of(a) == Some(name)
                        || matches!(a, Expr::Call(p) if matches!(helpers::method_call(p),
                            Some(("parameters", r)) if helpers::name_of(r) == Some(name)))
                });
            let own = matches!(&*c.func,
                Expr::Attribute(a) if helpers::name_of(&a.value) == Some(name));
            let lower = callee.to_ascii_lowercase();
            let trains = lower.contains("fit")
                || lower.contains("train")
                || lower.contains("optim")
                || matches!(callee, "SGD" | "Adam" | "AdamW" | "RMSprop" | "Adagrad");
            trained |= (passes && trains) || (own && callee == "fit");
        });
    }
    trained
}

/// Is an instance of project class `c` in eval mode already, as long as nothing switches it
/// with `train()`: its train/eval-sensitive layers all sit in sub-modules its constructor
/// puts in eval mode (a pretrained network loaded and frozen in `__init__`, a perceptual-loss
/// feature extractor)? See
/// [`crate::project::ProjectModel::mode_layer_if_never_trained`].
pub fn held_in_eval_by_constructor<'x>(cx: &impl ModeSite<'x>, c: crate::project::ClassId) -> bool {
    cx.project().is_some_and(|p| {
        p.model.mode_layer(c).is_some() && p.model.mode_layer_if_never_trained(c).is_none()
    })
}

/// The train/eval-sensitive layer family of what calling a project entity builds.
fn project_mode<'x>(cx: &impl ModeSite<'x>, e: crate::project::Entity) -> Option<&'static str> {
    use crate::project::Entity;
    let p = cx.project()?;
    let r = match e {
        Entity::Class(c) => return p.model.mode_layer(c).map(|(k, _)| k),
        e @ Entity::Function(_) => p.resolve_entity_call(e),
        _ => return None,
    };
    // A factory's class, or every class it may return.
    p.model.value_mode_layer(&r).map(|(k, _)| k)
}

fn calls_in_args(call: &ExprCall) -> Vec<&ExprCall> {
    call.arguments
        .args
        .iter()
        .chain(call.arguments.keywords.iter().map(|k| &k.value))
        .flat_map(calls_in_expr)
        .collect()
}

/// Does a callee's text name a grad-disabling helper (`smart_inference_mode()`,
/// `eval_mode(model)`, `torch_no_grad`)? Project wrappers around `no_grad` are common.
fn grad_off_like(text: &str) -> bool {
    text.contains("no_grad") || text.contains("inference_mode") || text.contains("eval_mode")
}

/// Autograd is (probably) off here: `cx.in_no_grad()`, or inside a `with` whose context
/// manager or a decorator of the current function looks like a project-specific no-grad
/// wrapper (`with eval_mode(model):`, `@smart_inference_mode()`).
pub fn grad_off_here<'x>(cx: &impl ModeSite<'x>) -> bool {
    if cx.in_no_grad() {
        return true;
    }
    let in_with = cx.stmt_stack().iter().any(|s| match s {
        Stmt::With(w) => w.items.iter().any(|i| {
            let callee = match &i.context_expr {
                Expr::Call(c) => &*c.func,
                e => e,
            };
            grad_off_like(source_text(cx, callee.range()))
        }),
        _ => false,
    });
    in_with
        || cx.function().is_some_and(|f| {
            f.decorator_list
                .iter()
                .any(|d| grad_off_like(source_text(cx, d.range())))
        })
}

/// Inside a method of a model class (an nn.Module subclass, or any class defining
/// `forward`): model internals, not a training or evaluation script.
pub fn in_model_class<'x>(cx: &impl ModeSite<'x>) -> bool {
    cx.method_of().is_some_and(|c| {
        c.is_module
            || c.def
                .body
                .iter()
                .any(|s| matches!(s, Stmt::FunctionDef(f) if f.name.as_str() == "forward"))
    })
}

/// Is the function being visited a method of a loss class (`ComputeLoss`, `YoloLoss`,
/// `ContrastiveCriterion`: named for it, module or not)? Its forward passes (target assignment
/// that decodes predictions with a helper module, IoU matching) belong to the training step
/// whose loss it computes: they are not evaluation. A class named for what drives training
/// with that loss (`ContrastiveLossTrainer`, `TripletLossLearner`) is the training loop
/// itself, whose validation methods evaluate.
pub fn in_loss_class<'x>(cx: &impl ModeSite<'x>) -> bool {
    cx.method_of().is_some_and(|c| {
        let name = c.def.name.as_str();
        (helpers::contains_ignore_ascii_case(name, "loss")
            || helpers::contains_ignore_ascii_case(name, "criterion"))
            && !["trainer", "learner", "runner", "engine", "solver"]
                .iter()
                .any(|driver| helpers::contains_ignore_ascii_case(name, driver))
    })
}

/// Is the call the whole of an expression statement (its result discarded)?
pub fn result_discarded<'x>(cx: &impl ModeSite<'x>, call: &ExprCall) -> bool {
    matches!(cx.stmt_stack().last().copied(), Some(Stmt::Expr(e)) if e.value.range() == call.range())
}

/// Is the call part of the value the statement being visited assigns to `self.<attr>`? The
/// output is kept on the object, where another method may train on it (a DQN agent's
/// `self.Q = self.policy_net(states).gather(1, a)`, differentiated by `update_policynet()`).
pub fn result_stored_on_self<'x>(cx: &impl ModeSite<'x>, call: &ExprCall) -> bool {
    cx.stmt_stack().last().is_some_and(|s| {
        helpers::self_assignments(std::slice::from_ref(*s))
            .iter()
            .any(|(_, v, _)| v.range().contains_range(call.range()))
    })
}

/// Does a caller differentiate what the function being visited returns (the project model's
/// [`crate::project::ProjectModel::result_differentiated`]: the returned loss
/// reaches a `.backward()` or `torch.autograd.grad(...)`)? Its forward passes are training,
/// not evaluation: they need their graph, and train mode is intended.
pub fn caller_differentiates_result<'x>(cx: &impl ModeSite<'x>) -> bool {
    let (Some(f), Some(p)) = (cx.function(), cx.project_or_file()) else {
        return false;
    };
    p.function_at(f.range.start())
        .is_some_and(|id| p.model.result_differentiated(id))
}

/// A one-batch self-test of a library module: under `if __name__ == "__main__":` of a file
/// that defines classes (the model, loss or decoder under test), in loops that each run at
/// most once (`for data in tqdm(train_loader): preds = net(images); print(preds.shape);
/// break`, see [`crate::regions::runs_at_most_once`]), none over held-out data.
/// Nothing is evaluated there: the single forward checks shapes, or feeds the training loss
/// the file defines.
pub fn one_batch_self_test<'x>(cx: &impl ModeSite<'x>) -> bool {
    use crate::regions::{iterates_eval_data, runs_at_most_once};
    let loops = &cx.loops();
    cx.in_main_guard()
        && !loops.is_empty()
        && loops.iter().all(|l| {
            runs_at_most_once(l) && !matches!(l, Stmt::For(f) if iterates_eval_data(&f.iter))
        })
        && cx
            .module()
            .body
            .iter()
            .any(|s| matches!(s, Stmt::ClassDef(_)))
}

/// A model called on a made-up input (a shape smoke test: `y = net(torch.randn(1, 3, 32,
/// 32))`, often in a loop over configurations under `if __name__ == "__main__":`, or
/// `encoder(str2tensor("hello"), encoder.init_hidden())` in a tutorial): no evaluation
/// data. The data is the first positional argument; the others (a recurrent state, a
/// configuration) do not make it real data. A call with no arguments at all runs no data
/// either (`model = SSSModel()` after the script rebound the class name to an instance).
pub fn smoke_test_call<'x>(cx: &impl ModeSite<'x>, call: &ruff_python_ast::ExprCall) -> bool {
    call.arguments.is_empty()
        || call
            .arguments
            .args
            .first()
            .is_some_and(|a| synthetic_input(cx, a))
}

/// A tensor made up on the spot, directly, indexed, or through a name assigned only from
/// one: a torch factory (`torch.randn(...)`, `torch.zeros(...)`, also scaled and shifted by
/// numbers: `torch.randn(128, 32) * 3 + 2`), a tensor of literals
/// (`torch.LongTensor([1, 2, 3])`), or a helper called on literals that name no file
/// (`str2tensor("hello")`, `make_batch(4, 32)`) or on made-up tensors.
pub fn synthetic_input<'x>(cx: &impl ModeSite<'x>, arg: &Expr) -> bool {
    fn made_up<'x>(cx: &impl ModeSite<'x>, e: &Expr, depth: u8) -> bool {
        match e {
            Expr::Subscript(s) => made_up(cx, &s.value, depth),
            Expr::Name(n) if depth < 3 => crate::reaching::reaching_in_frame(
                cx.scopes(),
                cx.function(),
                cx.module(),
                n.id.as_str(),
                e.start(),
            )
            .is_some_and(|defs| {
                defs.iter().all(|d| match d {
                    crate::reaching::Def::Value(v) => made_up(cx, v, depth + 1),
                    _ => false,
                })
            }),
            Expr::Call(c) => {
                if let Some(q) = cx.scopes().resolve(&c.func) {
                    if matches!(
                        q.as_str(),
                        "torch.randn"
                            | "torch.rand"
                            | "torch.randint"
                            | "torch.zeros"
                            | "torch.ones"
                            | "torch.empty"
                            | "torch.full"
                            | "torch.normal"
                            | "torch.arange"
                            | "torch.linspace"
                            | "torch.eye"
                    ) {
                        return true;
                    }
                    if matches!(
                        q.as_str(),
                        "torch.tensor"
                            | "torch.Tensor"
                            | "torch.LongTensor"
                            | "torch.FloatTensor"
                            | "torch.as_tensor"
                    ) {
                        return literal_arguments(c);
                    }
                    // A legacy `Variable(...)` wrapper keeps what it wraps.
                    if matches!(
                        q.as_str(),
                        "torch.autograd.Variable" | "torch.autograd.variable.Variable"
                    ) {
                        return c
                            .arguments
                            .args
                            .first()
                            .is_some_and(|a| made_up(cx, a, depth + 1));
                    }
                    if q.starts_with("torch.") {
                        return false;
                    }
                }
                // A move, cast or reshape of a made-up tensor (`torch.randn(1, 3, 32,
                // 32).cuda()`, `.to(device)`, `x.transpose(2, 1)`) is made up too.
                if let Some((method, recv)) = helpers::method_call(c) {
                    if matches!(
                        method,
                        "to" | "cuda"
                            | "cpu"
                            | "float"
                            | "half"
                            | "double"
                            | "unsqueeze"
                            | "reshape"
                            | "view"
                            | "repeat"
                            | "expand"
                            | "transpose"
                            | "permute"
                            | "contiguous"
                            | "flatten"
                            | "squeeze"
                    ) {
                        return made_up(cx, recv, depth + 1);
                    }
                }
                // A plain function called on literals only (a method call such as
                // `x.view(1, 1)` or `x.cuda(non_blocking=True)` keeps its receiver's data),
                // or on made-up tensors (`cuda_variable(torch.LongTensor([1, 2, 3]))`); a
                // torch layer built on the spot and applied to made-up tensors
                // (`Conv2d(3, 5, 3)(torch.randn(4, 3, 10, 10))`).
                let of_made_up = || {
                    !c.arguments.args.is_empty()
                        && c.arguments.args.iter().all(|a| made_up(cx, a, depth + 1))
                };
                match &*c.func {
                    Expr::Name(_) => {
                        !c.arguments.args.is_empty() && (literal_arguments(c) || of_made_up())
                    }
                    Expr::Call(inner) => {
                        of_made_up()
                            && cx
                                .scopes()
                                .resolve(&inner.func)
                                .is_some_and(|q| q.starts_with("torch.nn."))
                    }
                    _ => false,
                }
            }
            // Arithmetic on a made-up tensor with numbers or other made-up tensors
            // (`torch.randn(128, 32) * 3 + 2`: shifted and scaled noise for a demo plot).
            Expr::BinOp(b) => {
                let side =
                    |e: &Expr| matches!(e, Expr::NumberLiteral(_)) || made_up(cx, e, depth + 1);
                side(&b.left)
                    && side(&b.right)
                    && !(matches!(&*b.left, Expr::NumberLiteral(_))
                        && matches!(&*b.right, Expr::NumberLiteral(_)))
            }
            Expr::UnaryOp(u) => made_up(cx, &u.operand, depth),
            _ => false,
        }
    }
    made_up(cx, arg, 0)
}

/// Are a call's arguments all literals (numbers, strings that name no file, lists and tuples
/// of them), with at least one?
fn literal_arguments(call: &ruff_python_ast::ExprCall) -> bool {
    fn literal(e: &Expr) -> bool {
        match e {
            Expr::NumberLiteral(_) | Expr::BooleanLiteral(_) => true,
            Expr::UnaryOp(u) => literal(&u.operand),
            Expr::StringLiteral(s) => {
                let v = s.value.to_str();
                // A path or a file name is real data (`load_image("cat.jpg")`).
                !v.contains(['/', '\\'])
                    && !v.rsplit_once('.').is_some_and(|(_, ext)| {
                        !ext.is_empty() && ext.chars().all(|c| c.is_ascii_alphanumeric())
                    })
            }
            Expr::List(l) => l.elts.iter().all(literal),
            Expr::Tuple(t) => t.elts.iter().all(literal),
            _ => false,
        }
    }
    !call.arguments.is_empty()
        && call.arguments.args.iter().all(literal)
        && call.arguments.keywords.iter().all(|k| literal(&k.value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Scope, ScopeKind};

    /// A site at module level of one file.
    struct ModuleSite<'a> {
        text: &'a str,
        module: &'a ast::ModModule,
        scopes: Scopes,
        classes: ModuleClasses,
        cache: ModeCache,
    }

    impl<'a> ModuleSite<'a> {
        fn new(text: &'a str, module: &'a ast::ModModule) -> Self {
            let mut scopes = Scopes::default();
            let scope = Scope::collect(ScopeKind::Module, &module.body, None, &scopes);
            scopes.push(scope);
            let classes = ModuleClasses::compute(&module.body, &scopes);
            ModuleSite {
                text,
                module,
                scopes,
                classes,
                cache: ModeCache::default(),
            }
        }
    }

    impl<'a> ModeSite<'a> for ModuleSite<'a> {
        fn source(&self) -> &'a str {
            self.text
        }
        fn module(&self) -> &'a ast::ModModule {
            self.module
        }
        fn scopes(&self) -> &Scopes {
            &self.scopes
        }
        fn classes(&self) -> &ModuleClasses {
            &self.classes
        }
        fn project(&self) -> Option<&ProjectFile> {
            None
        }
        fn project_or_file(&self) -> Option<&ProjectFile> {
            None
        }
        fn function(&self) -> Option<&'a ast::StmtFunctionDef> {
            None
        }
        fn method_of(&self) -> Option<EnclosingClass<'a>> {
            None
        }
        fn loops(&self) -> &[&'a Stmt] {
            &[]
        }
        fn stmt_stack(&self) -> &[&'a Stmt] {
            &[]
        }
        fn in_no_grad(&self) -> bool {
            false
        }
        fn in_main_guard(&self) -> bool {
            false
        }
        fn mode_cache(&self) -> &ModeCache {
            &self.cache
        }
    }

    #[test]
    fn training_events_and_loops() {
        let src = "import torch\n\
def step(model, opt, loss):\n    loss.backward()\n    opt.step()\n    model.eval()\n\
for x in loader:\n    step(net, optimizer, crit(net(x)))\n\
for x in loader:\n    scaler.scale(loss).backward()\n    torch.autograd.backward(l2)\n    scaler.step(optim_g)\n    sched.step()\n    net.train(False)\n    net.train()\n\
for x in val_loader:\n    out = net(x)\n";
        let parsed = torchvet_python::parser::parse_module(src).expect("parses");
        let module = parsed.syntax();
        let site = ModuleSite::new(src, module);
        let loops: Vec<&Stmt> = module.body[2..].iter().collect();
        // One level of inlining: `step(...)` trains, and its `model.eval()` is the caller's
        // `net.eval()`.
        assert!(loop_is_training(&site, loops[0]));
        assert!(!loop_has_backward(&site, loops[0]));
        let events: Vec<Event> = events_of(&site, loop_body(loops[0]))
            .into_iter()
            .map(|f| f.event)
            .collect();
        assert!(events.contains(&Event::Eval("net".into())));
        // Direct events, in source order.
        let calls = calls_in(loop_body(loops[1]));
        let kinds: Vec<Event> = calls.iter().map(|c| classify(&site, c)).collect();
        assert_eq!(
            kinds,
            vec![
                Event::Backward,
                Event::Other,
                Event::Backward,
                Event::OptStep,
                Event::Other,
                Event::Eval("net".into()),
                Event::Train("net".into()),
            ]
        );
        let target = backward_target(&site, calls[0]).map(|e| source_text(&site, e.range()));
        assert_eq!(target, Some("loss"));
        let target = backward_target(&site, calls[2]).map(|e| source_text(&site, e.range()));
        assert_eq!(target, Some("l2"));
        assert!(loop_is_training(&site, loops[1]));
        assert!(!loop_is_training(&site, loops[2]));
        assert!(!loop_has_backward(&site, loops[2]));
    }

    #[test]
    fn made_up_inputs() {
        let src = "import torch\nx = torch.randn(1, 3, 32, 32)\nnet(x)\nnet(torch.zeros(2).cuda())\nnet(load_image('cat.jpg'))\nnet(str2tensor('hello'))\nnet(batch)\nnet(torch.randn(4, 2) * 3 + 2)\nnet()\nnet(batch * 2)\n";
        let parsed = torchvet_python::parser::parse_module(src).expect("parses");
        let module = parsed.syntax();
        let site = ModuleSite::new(src, module);
        let smoke: Vec<bool> = module.body[2..]
            .iter()
            .map(|s| match s {
                Stmt::Expr(e) => match &*e.value {
                    Expr::Call(c) => smoke_test_call(&site, c),
                    _ => false,
                },
                _ => false,
            })
            .collect();
        assert_eq!(
            smoke,
            vec![true, true, false, true, false, true, true, false]
        );
    }
}
