//! Phase-1 facts about autograd across calls: where the result of each recorded call and the
//! value of each parameter go with respect to differentiation (a `.backward()`, a
//! `torch.autograd.grad(...)`, a `return`, an argument of another recorded call), and where a
//! function turns autograd off for the rest of the process (`torch.set_grad_enabled(False)` as
//! a statement of its body, or `torch.no_grad().__enter__()`). [`crate::project::ProjectModel::result_differentiated`] and
//! [`crate::project::ProjectModel::runs_without_grad`] follow them across call sites.
//!
//! Names are followed flow-insensitively through assignments (`x = f(...)`, `total += x`,
//! `losses["total"] = x`, `losses.append(x)`, `for x in xs`): a value reaches a sink when a
//! name derived from it is read there. A name used as an index (`log_probs[action]`) selects
//! elements and receives no gradient: it is not read as a value. That over-approximates where a value goes, which is
//! the safe direction for the rules that ask (they stay silent where a graph may be needed).
use super::SumCall;
use crate::bindings::{Scope, ScopeKind, Scopes};
use crate::helpers;
use crate::project::facts::ArgPos;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use thin_vec::ThinVec;

/// Where one value of a function goes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ValueSinks {
    /// It reaches `.backward()`, `torch.autograd.grad(...)` or `torch.autograd.backward(...)`
    /// in the function.
    pub differentiated: bool,
    /// It reaches a `return`.
    pub returned: bool,
    /// It reaches an argument (positional, as written, or by keyword) of a recorded call
    /// (index in [`super::FunctionSummary::calls`]).
    pub args: ThinVec<(u32, ArgPos)>,
}

impl ValueSinks {
    fn is_empty(&self) -> bool {
        !self.differentiated && !self.returned && self.args.is_empty()
    }
}

/// The autograd facts of one function.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct GradFlow {
    /// Per recorded call (same index as [`super::FunctionSummary::calls`]): where its result
    /// goes. Empty when no call's result goes anywhere tracked.
    pub results: ThinVec<ValueSinks>,
    /// Per parameter (same index as [`super::FunctionSummary::params`]): where its value goes.
    /// Empty when no parameter goes anywhere tracked.
    pub params: ThinVec<ValueSinks>,
    /// `torch.set_grad_enabled(False)` as an unconditional statement of the body (or of its
    /// `if __name__ == "__main__":` block), or a no-grad context entered by hand and never
    /// left (`torch.no_grad().__enter__()`): autograd is off for the rest of the process from
    /// there on.
    pub grad_disabled_at: Option<TextSize>,
    /// Where a `torch.set_grad_enabled(False)` statement of the body, possibly nested in
    /// loops, `with` blocks or branches (a demo script that turns autograd off at the top of
    /// each iteration), has autograd off: from that statement to the end of the suite that
    /// holds it. Calls there run without a graph. Empty for most functions.
    pub grad_disabled_spans: ThinVec<TextRange>,
    /// The body differentiates something: `.backward()`, `torch.autograd.grad(...)` or
    /// `torch.autograd.backward(...)`.
    pub differentiates: bool,
    /// Everything the function returns holds no autograd graph: Python numbers and lists
    /// (`.item()`, `.tolist()`, `int(...)`), NumPy arrays (`.numpy()`, `np.*(...)`, `random.*`
    /// and `math.*` results), detached tensors
    /// (`.detach()`), literals, or names bound only to such values (an RL agent's
    /// `get_action` returning `dist.sample().detach().item()`). What its callers do with the
    /// result differentiates nothing it computed.
    pub returns_graph_free: bool,
}

/// One flow of names: the names bound (roots, `targets` in [`Collect::targets`]) from the
/// names read in `value`.
struct Assign<'a> {
    targets: std::ops::Range<u32>,
    value: &'a Expr,
}

/// Collect the function's own assignments, differentiation sinks, returns, call expressions
/// and the names it reads (in one walk; the names an expression reads are then the names
/// within its range, since the walk skips lambdas and nested definitions as the sinks do).
struct Collect<'a, 's> {
    scopes: &'s Scopes,
    assigns: Vec<Assign<'a>>,
    /// Assignment targets (name ids), referred to by [`Assign::targets`].
    targets: Vec<u32>,
    diffs: Vec<&'a Expr>,
    returns: Vec<&'a Expr>,
    /// Every call expression of the body (outside lambdas and nested definitions, where the
    /// summary records calls).
    call_exprs: Vec<&'a ExprCall>,
    /// Every name read (load or store context, as an expression): where it starts, its id.
    names: Vec<(TextSize, u32)>,
    /// Name ids.
    ids: rustc_hash::FxHashMap<&'a str, u32>,
    /// Inside a subscript's index (`probs[a]`): the names there select elements, and no
    /// gradient flows to them, so they are not read as values.
    in_index: u32,
}

fn root_name(mut e: &Expr) -> Option<&str> {
    loop {
        match e {
            Expr::Name(n) => return Some(n.id.as_str()),
            Expr::Attribute(a) => e = &a.value,
            Expr::Subscript(s) => e = &s.value,
            Expr::Starred(s) => e = &s.value,
            _ => return None,
        }
    }
}

impl<'a> Collect<'a, '_> {
    fn id(&mut self, name: &'a str) -> u32 {
        let next = self.ids.len() as u32;
        *self.ids.entry(name).or_insert(next)
    }

    fn target_names(&mut self, t: &'a Expr) {
        match t {
            Expr::Tuple(t) => t.elts.iter().for_each(|e| self.target_names(e)),
            Expr::List(l) => l.elts.iter().for_each(|e| self.target_names(e)),
            e => {
                if let Some(n) = root_name(e) {
                    let id = self.id(n);
                    self.targets.push(id);
                }
            }
        }
    }

    /// An assignment of `value` to the names bound by `targets`.
    fn assign(&mut self, targets: &[&'a Expr], value: &'a Expr) {
        let from = self.targets.len() as u32;
        for t in targets {
            self.target_names(t);
        }
        self.assigns.push(Assign {
            targets: from..self.targets.len() as u32,
            value,
        });
    }

    /// Is the call `torch.autograd.grad` / `torch.autograd.backward` (however imported)?
    fn autograd_call(&self, c: &ExprCall) -> bool {
        // Either test needs a last attribute `grad` / `backward`, or a bare name bound to
        // one (`from torch.autograd import grad as g`).
        match &*c.func {
            Expr::Attribute(a) if matches!(a.attr.as_str(), "grad" | "backward") => {}
            Expr::Name(_) => {}
            _ => return false,
        }
        if let Some(q) = self.scopes.resolve(&c.func) {
            if matches!(
                q.as_str(),
                "torch.autograd.grad" | "torch.autograd.backward" | "torch.autograd.grad.grad"
            ) {
                return true;
            }
        }
        // As written: `<...>.autograd.grad` / `<...>.autograd.backward` (a bare name has no
        // dot, so only its resolution above counts).
        matches!(&*c.func, Expr::Attribute(_))
            && helpers::dotted(&c.func)
                .is_some_and(|d| d.ends_with("autograd.grad") || d.ends_with("autograd.backward"))
    }
}

impl<'a> Visitor<'a> for Collect<'a, '_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => return,
            Stmt::Assign(a) => {
                let targets: &'a [Expr] = &a.targets;
                let from = self.targets.len() as u32;
                for t in targets {
                    self.target_names(t);
                }
                self.assigns.push(Assign {
                    targets: from..self.targets.len() as u32,
                    value: &a.value,
                });
            }
            Stmt::AugAssign(a) => self.assign(&[&a.target], &a.value),
            Stmt::AnnAssign(a) => {
                if let Some(v) = &a.value {
                    self.assign(&[&a.target], v);
                }
            }
            Stmt::For(f) => self.assign(&[&f.target], &f.iter),
            Stmt::With(w) => {
                for item in &w.items {
                    if let Some(v) = &item.optional_vars {
                        self.assign(&[v], &item.context_expr);
                    }
                }
            }
            Stmt::Return(r) => {
                if let Some(v) = &r.value {
                    self.returns.push(v);
                }
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Lambda(_) => return,
            Expr::Name(n) if self.in_index == 0 => {
                let id = self.id(n.id.as_str());
                self.names.push((n.start(), id));
            }
            Expr::Subscript(sub) => {
                self.visit_expr(&sub.value);
                self.in_index += 1;
                self.visit_expr(&sub.slice);
                self.in_index -= 1;
                return;
            }
            Expr::Call(c) => {
                self.call_exprs.push(c);
                match helpers::method_call(c) {
                    // `loss.backward()`, `scaler.scale(loss).backward()`,
                    // `accelerator.backward(loss)`.
                    Some(("backward", recv)) => {
                        self.diffs.push(recv);
                        self.diffs.extend(c.arguments.args.iter());
                    }
                    // `losses.append(loss)`: the container now holds the value.
                    Some(("append" | "extend" | "add_" | "insert" | "update", recv)) => {
                        if let Some(root) = root_name(recv) {
                            let root = self.id(root);
                            for a in c.arguments.args.iter() {
                                let from = self.targets.len() as u32;
                                self.targets.push(root);
                                self.assigns.push(Assign {
                                    targets: from..from + 1,
                                    value: a,
                                });
                            }
                        }
                    }
                    _ => {}
                }
                if self.autograd_call(c) {
                    // The outputs differentiated: the first positional argument or
                    // `outputs=` / `tensors=`.
                    self.diffs.extend(c.arguments.args.first());
                    self.diffs.extend(
                        c.arguments
                            .keywords
                            .iter()
                            .filter(|k| {
                                k.arg
                                    .as_ref()
                                    .is_some_and(|a| matches!(a.as_str(), "outputs" | "tensors"))
                            })
                            .map(|k| &k.value),
                    );
                }
            }
            _ => {}
        }
        visitor::walk_expr(self, expr);
    }
}

/// `torch.set_grad_enabled(False)` as a statement, or a grad-disabling context entered by
/// hand and never left: `torch.no_grad().__enter__()` (also `inference_mode()`,
/// `set_grad_enabled(False)`).
fn disables_grad(scopes: &Scopes, s: &Stmt) -> bool {
    let Stmt::Expr(e) = s else { return false };
    let Expr::Call(c) = &*e.value else {
        return false;
    };
    if let Some(("__enter__", Expr::Call(ctx))) = helpers::method_call(c) {
        return c.arguments.is_empty()
            && ctx.arguments.keywords.is_empty()
            && scopes
                .resolve(&ctx.func)
                .is_some_and(|q| helpers::disables_grad(&q, ctx.arguments.args.first()));
    }
    let resolved = scopes.resolve(&c.func).is_some_and(|q| {
        matches!(
            q.as_str(),
            "torch.set_grad_enabled" | "torch.autograd.set_grad_enabled"
        )
    });
    resolved
        && c.arguments.keywords.is_empty()
        && matches!(c.arguments.args.first(), Some(Expr::BooleanLiteral(b)) if !b.value)
}

/// `torch.set_grad_enabled(True)` as a statement.
fn enables_grad(scopes: &Scopes, s: &Stmt) -> bool {
    let Stmt::Expr(e) = s else { return false };
    let Expr::Call(c) = &*e.value else {
        return false;
    };
    scopes.resolve(&c.func).is_some_and(|q| {
        matches!(
            q.as_str(),
            "torch.set_grad_enabled" | "torch.autograd.set_grad_enabled"
        )
    }) && !matches!(c.arguments.args.first(), Some(Expr::BooleanLiteral(b)) if !b.value)
}

fn is_main_guard(test: &Expr) -> bool {
    let Expr::Compare(c) = test else { return false };
    std::iter::once(&*c.left)
        .chain(c.comparators.iter())
        .any(|e| matches!(e, Expr::Name(n) if n.id.as_str() == "__name__"))
}

/// Where the body turns autograd off for the rest of the process: a
/// `torch.set_grad_enabled(False)` statement directly in it, or in its `if __name__ ==
/// "__main__":` block.
fn grad_disabled_at(scopes: &Scopes, body: &[Stmt]) -> Option<TextSize> {
    for s in body {
        if disables_grad(scopes, s) {
            return Some(s.start());
        }
        if let Stmt::If(i) = s {
            if is_main_guard(&i.test) {
                if let Some(at) = i.body.iter().find(|s| disables_grad(scopes, s)) {
                    return Some(at.start());
                }
            }
        }
    }
    None
}

/// The autograd facts of a function body with these parameters and recorded calls;
/// `grad_switch`: the file spells a statement that can turn autograd off (else there is none
/// to look for).
/// How many files [`file_grad_flows`] parsed again in this process (`TORCHVET_TIMING`).
static FILES_PARSED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many files had their autograd facts computed (each parsed once more) so far.
pub fn grad_flow_files() -> usize {
    FILES_PARSED.load(std::sync::atomic::Ordering::Relaxed)
}

/// The autograd facts of every function of a summarised file, in the summary's order,
/// from a new parse of its text (see [`super::FileSummary::grad_flow`]). The scopes around
/// each function are collected as the summary's builder collected them (the module's, with
/// its star-imported names, then each enclosing class and function). A function the parse
/// does not give back at its place (a summary made from another tree) goes nowhere.
pub(super) fn file_grad_flows(s: &super::FileSummary) -> Vec<GradFlow> {
    let Some(reparse) = &s.reparse else {
        return vec![GradFlow::default(); s.functions.len()];
    };
    FILES_PARSED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let parsed = reparse.parse();
    grad_flows_of_tree(s, parsed.syntax(), reparse.text())
}

/// [`file_grad_flows`] from a tree of the summary's text at hand (phase 1's, when the run
/// needs every file's facts: see [`super::set_eager_grad_flows`]).
pub(super) fn grad_flows_of_tree(
    s: &super::FileSummary,
    module: &ruff_python_ast::ModModule,
    text: &str,
) -> Vec<GradFlow> {
    let mut out = vec![GradFlow::default(); s.functions.len()];
    let text = text.as_bytes();
    // The only spellings `grad_disabled_at` and `grad_disabled_spans` look for.
    let grad_switch = memchr::memmem::find(text, b"set_grad_enabled").is_some()
        || memchr::memmem::find(text, b"__enter__").is_some();
    let mut scopes = Scopes::default();
    let mut module_scope = Scope::collect(ScopeKind::Module, &module.body, None, &scopes);
    for (name, q) in &s.star_names {
        module_scope.import_if_unbound(name, q);
    }
    scopes.push(module_scope);
    if let Some(g) = s.functions.first() {
        out[0] = grad_flow(&scopes, &module.body, &[], &g.calls, grad_switch);
    }
    let by_start: rustc_hash::FxHashMap<TextSize, usize> = s
        .functions
        .iter()
        .enumerate()
        .skip(1)
        .map(|(i, g)| (g.range.start(), i))
        .collect();
    struct Walk<'s> {
        s: &'s super::FileSummary,
        by_start: rustc_hash::FxHashMap<TextSize, usize>,
        grad_switch: bool,
        out: Vec<GradFlow>,
    }
    impl Walk<'_> {
        fn suite(&mut self, body: &[Stmt], scopes: &mut Scopes) {
            for st in body {
                match st {
                    Stmt::FunctionDef(f) => {
                        let scope = Scope::collect(
                            ScopeKind::Function,
                            &f.body,
                            Some(&f.parameters),
                            scopes,
                        );
                        scopes.push(scope);
                        if let Some(&i) = self.by_start.get(&f.range().start()) {
                            let g = &self.s.functions[i];
                            if &*g.name == f.name.as_str() && g.range == f.range() {
                                let params: Vec<&str> = g.params.iter().map(|p| &**p).collect();
                                self.out[i] =
                                    grad_flow(scopes, &f.body, &params, &g.calls, self.grad_switch);
                            }
                        }
                        self.suite(&f.body, scopes);
                        scopes.pop();
                    }
                    Stmt::ClassDef(c) => {
                        let scope = Scope::collect(ScopeKind::Class, &c.body, None, scopes);
                        scopes.push(scope);
                        self.suite(&c.body, scopes);
                        scopes.pop();
                    }
                    _ => {
                        for b in helpers::suites_of(st) {
                            self.suite(b, scopes);
                        }
                    }
                }
            }
        }
    }
    let mut w = Walk {
        s,
        by_start,
        grad_switch,
        out,
    };
    w.suite(&module.body, &mut scopes);
    w.out
}

pub(super) fn grad_flow(
    scopes: &Scopes,
    body: &[Stmt],
    params: &[&str],
    calls: &[SumCall],
    grad_switch: bool,
) -> GradFlow {
    let grad_disabled_at = grad_switch
        .then(|| grad_disabled_at(scopes, body))
        .flatten();
    let mut grad_disabled_spans = ThinVec::new();
    if let (true, Some(first), Some(last)) = (grad_switch, body.first(), body.last()) {
        let suite = TextRange::new(first.start(), last.end());
        grad_disabled_spans_in(scopes, body, suite, &mut grad_disabled_spans);
    }
    // Room for the lists by the body's length (code averages a name per ~30 bytes, a call
    // per ~150, an assignment per ~200): they are not copied while they grow.
    let len = match (body.first(), body.last()) {
        (Some(first), Some(last)) => (last.end() - first.start()).to_usize(),
        _ => 0,
    };
    let mut c = Collect {
        scopes,
        assigns: Vec::with_capacity(len / 128 + 4),
        targets: Vec::with_capacity(len / 128 + 4),
        diffs: Vec::new(),
        returns: Vec::new(),
        call_exprs: Vec::with_capacity(len / 96 + 4),
        names: Vec::with_capacity(len / 24 + 8),
        // Room for a typical body's names: the table is not rebuilt while it grows.
        ids: rustc_hash::FxHashMap::with_capacity_and_hasher(32, Default::default()),
        in_index: 0,
    };
    c.visit_body(body);
    let differentiates = !c.diffs.is_empty();
    let returns_graph_free = !c.returns.is_empty()
        && c.returns
            .iter()
            .all(|r| graph_free(scopes, r, &c, params, 0));
    // Nothing to follow without a differentiation, a return or a call; and a budget for
    // very long bodies (a huge notebook's module body): unknown is "goes nowhere".
    if (c.diffs.is_empty() && c.returns.is_empty() && calls.is_empty())
        || calls.len().saturating_mul(c.assigns.len()) > 400_000
    {
        return GradFlow {
            grad_disabled_at,
            grad_disabled_spans,
            differentiates,
            returns_graph_free,
            ..GradFlow::default()
        };
    }
    let Collect {
        assigns,
        targets,
        diffs,
        returns,
        mut call_exprs,
        mut names,
        ids,
        ..
    } = c;
    let n_ids = ids.len();
    // The names an expression reads: those that start within its range (the walk is in
    // source order but for assignment targets after their values: nearly sorted, which the
    // stable sort's run detection is quick on; the starts are distinct, so the order is the
    // same as any sort's).
    names.sort_by_key(|&(at, _)| at);
    let reads = |r: TextRange| -> &[(TextSize, u32)] {
        let from = names.partition_point(|&(at, _)| at < r.start());
        let to = from + names[from..].partition_point(|&(at, _)| at < r.end());
        &names[from..to]
    };
    // Name -> the names assigned from expressions that read it (CSR): the closure below is
    // a reachability walk over these edges.
    let mut edge_pairs: Vec<(u32, u32)> = Vec::new();
    for a in &assigns {
        let t = &targets[a.targets.start as usize..a.targets.end as usize];
        if t.is_empty() {
            continue;
        }
        for &(_, n) in reads(a.value.range()) {
            edge_pairs.extend(t.iter().map(|&t| (n, t)));
        }
    }
    let edges = Csr::new(n_ids, edge_pairs);
    // The recorded calls' expressions and their arguments (positional, then keywords by name).
    call_exprs.sort_by_key(|c| (c.start(), c.end()));
    call_exprs.dedup_by_key(|c| c.range());
    struct Arg<'a> {
        value: &'a Expr,
        keyword: Option<&'a str>,
        index: u16,
    }
    let mut args: Vec<Arg> = Vec::new();
    let mut args_of: Vec<std::ops::Range<u32>> = Vec::with_capacity(calls.len());
    for call in calls {
        let from = args.len() as u32;
        let at = call_exprs
            .partition_point(|c| (c.start(), c.end()) < (call.range.start(), call.range.end()));
        if let Some(expr) = call_exprs.get(at).filter(|c| c.range() == call.range) {
            args.extend(expr.arguments.args.iter().enumerate().map(|(i, a)| Arg {
                value: a,
                keyword: None,
                index: i as u16,
            }));
            args.extend(expr.arguments.keywords.iter().filter_map(|k| {
                Some(Arg {
                    value: &k.value,
                    keyword: Some(k.arg.as_ref()?.as_str()),
                    index: 0,
                })
            }));
        }
        args_of.push(from..args.len() as u32);
    }
    // The sinks that read each name (CSR): a differentiation, a return, or argument `k` (index
    // in `args`), with where that expression starts.
    const DIFF: u32 = u32::MAX;
    const RET: u32 = u32::MAX - 1;
    let mut sink_pairs: Vec<(u32, (u32, TextSize))> = Vec::new();
    for e in &diffs {
        sink_pairs.extend(
            reads(e.range())
                .iter()
                .map(|&(_, n)| (n, (DIFF, e.start()))),
        );
    }
    for e in &returns {
        sink_pairs.extend(reads(e.range()).iter().map(|&(_, n)| (n, (RET, e.start()))));
    }
    for (k, a) in args.iter().enumerate() {
        let at = a.value.start();
        sink_pairs.extend(
            reads(a.value.range())
                .iter()
                .map(|&(_, n)| (n, (k as u32, at))),
        );
    }
    // Within a name, by where the sink starts: a call's result skips those before the call.
    sink_pairs.sort_unstable_by_key(|&(n, (_, at))| (n, at));
    let by_name = Csr::new(n_ids, sink_pairs);
    // The sinks each recorded call sits in (its result flows into them directly): found per
    // sink from the calls sorted by position. `seed_assigns` / `seed_args`: (call, assignment
    // or argument), `seed_flags`: bit 0 differentiated, bit 1 returned.
    let mut order: Vec<(TextSize, TextSize, u32)> = calls
        .iter()
        .enumerate()
        .map(|(i, call)| (call.range.start(), call.range.end(), i as u32))
        .collect();
    order.sort();
    let within = |r: TextRange, f: &mut dyn FnMut(u32)| {
        let from = order.partition_point(|&(start, _, _)| start < r.start());
        for &(start, end, i) in &order[from..] {
            if start >= r.end() {
                break;
            }
            if end <= r.end() {
                f(i);
            }
        }
    };
    let mut seed_assigns: Vec<(u32, u32)> = Vec::new();
    let mut seed_args: Vec<(u32, u32)> = Vec::new();
    let mut seed_flags: Vec<u8> = vec![0; calls.len()];
    for (k, a) in assigns.iter().enumerate() {
        if !a.targets.is_empty() {
            within(a.value.range(), &mut |i| seed_assigns.push((i, k as u32)));
        }
    }
    for e in &diffs {
        within(e.range(), &mut |i| seed_flags[i as usize] |= 1);
    }
    for e in &returns {
        within(e.range(), &mut |i| seed_flags[i as usize] |= 2);
    }
    for (k, a) in args.iter().enumerate() {
        within(a.value.range(), &mut |i| seed_args.push((i, k as u32)));
    }
    seed_assigns.sort_unstable();
    seed_args.sort_unstable();
    // Argument `k` as the call and position it is recorded with.
    let call_of_arg: Vec<u32> = args_of
        .iter()
        .enumerate()
        .flat_map(|(ci, r)| std::iter::repeat_n(ci as u32, r.len()))
        .collect();
    let arg_pos = |k: u32| -> (u32, ArgPos) {
        let a = &args[k as usize];
        let pos = match a.keyword {
            None => ArgPos::Pos(a.index),
            Some(kw) => ArgPos::Kw(kw.into()),
        };
        (call_of_arg[k as usize], pos)
    };
    // Reused between values: the derived names (`mark` = `stamp` when derived), the walk's
    // stack and the arguments hit.
    let mut mark: Vec<u32> = vec![0; n_ids];
    let mut stamp = 0u32;
    let mut derived: Vec<u32> = Vec::new();
    let mut hits: Vec<u32> = Vec::new();
    // Where a value goes: `start` names derived from it, `flags` / `seed_args` the sinks
    // that contain it; after `after` (for a call's result, only sinks after the call count:
    // a name reused for another value earlier, `loss = step(...); loss.backward()` before
    // `loss = evaluate(...)`, is not this value), and never call `own` (a call's result
    // passed straight to itself is not a flow).
    let mut sinks_of = |start: &mut dyn Iterator<Item = u32>,
                        flags: u8,
                        seeded: &[(u32, u32)],
                        after: TextSize,
                        own: Option<u32>|
     -> ValueSinks {
        stamp += 1;
        derived.clear();
        for n in start {
            if mark[n as usize] != stamp {
                mark[n as usize] = stamp;
                derived.push(n);
            }
        }
        // The names derived from the value: reachability over the assignments.
        let mut i = 0;
        while i < derived.len() {
            let n = derived[i];
            i += 1;
            for &t in edges.get(n) {
                if mark[t as usize] != stamp {
                    mark[t as usize] = stamp;
                    derived.push(t);
                }
            }
        }
        let mut differentiated = flags & 1 != 0;
        let mut returned = flags & 2 != 0;
        hits.clear();
        hits.extend(seeded.iter().map(|&(_, k)| k));
        for &n in &derived {
            let sinks = by_name.get(n);
            let from = sinks.partition_point(|&(_, at)| at < after);
            for &(sink, _) in &sinks[from..] {
                match sink {
                    DIFF => differentiated = true,
                    RET => returned = true,
                    k => hits.push(k),
                }
            }
        }
        // Argument order is call order, then position within the call.
        hits.sort_unstable();
        hits.dedup();
        ValueSinks {
            differentiated,
            returned,
            args: hits
                .iter()
                .map(|&k| arg_pos(k))
                .filter(|(ci, _)| Some(*ci) != own)
                .collect(),
        }
    };
    let mut results: ThinVec<ValueSinks> = ThinVec::with_capacity(calls.len());
    let (mut sa, mut sg) = (0, 0);
    for (ci, call) in calls.iter().enumerate() {
        let ci = ci as u32;
        let a_to = sa + seed_assigns[sa..].partition_point(|&(i, _)| i == ci);
        let g_to = sg + seed_args[sg..].partition_point(|&(i, _)| i == ci);
        let mut start = seed_assigns[sa..a_to].iter().flat_map(|&(_, k)| {
            let r = &assigns[k as usize].targets;
            targets[r.start as usize..r.end as usize].iter().copied()
        });
        results.push(sinks_of(
            &mut start,
            seed_flags[ci as usize],
            &seed_args[sg..g_to],
            call.range.end(),
            Some(ci),
        ));
        sa = a_to;
        sg = g_to;
    }
    let mut params_out: ThinVec<ValueSinks> = params
        .iter()
        .map(|p| match ids.get(p) {
            Some(&id) => sinks_of(&mut std::iter::once(id), 0, &[], TextSize::new(0), None),
            None => ValueSinks::default(),
        })
        .collect();
    if results.iter().all(ValueSinks::is_empty) {
        results.clear();
    }
    if params_out.iter().all(ValueSinks::is_empty) {
        params_out.clear();
    }
    GradFlow {
        results,
        params: params_out,
        grad_disabled_at,
        grad_disabled_spans,
        differentiates,
        returns_graph_free,
    }
}

/// Does `e` hold no autograd graph (see [`GradFlow::returns_graph_free`])? A name counts when
/// every assignment to it in the body is such a value (parameters and other bindings never
/// are).
fn graph_free(scopes: &Scopes, e: &Expr, c: &Collect, params: &[&str], depth: u8) -> bool {
    match e {
        Expr::NumberLiteral(_)
        | Expr::BooleanLiteral(_)
        | Expr::NoneLiteral(_)
        | Expr::StringLiteral(_) => true,
        Expr::Tuple(t) => t
            .elts
            .iter()
            .all(|x| graph_free(scopes, x, c, params, depth)),
        // NumPy, `random` and `math` make no tensors (`np.random.randint(n)`).
        Expr::Call(call)
            if scopes.resolve(&call.func).is_some_and(|q| {
                ["numpy.", "random.", "math."]
                    .iter()
                    .any(|m| q.starts_with(m))
            }) =>
        {
            true
        }
        Expr::Call(call) => match helpers::method_call(call) {
            Some(("item" | "tolist" | "numpy" | "detach", _)) => true,
            Some(_) => false,
            None => {
                matches!(&*call.func, Expr::Name(n)
                    if matches!(n.id.as_str(), "int" | "float" | "bool" | "len" | "str")
                        && !scopes.is_bound(n.id.as_str()))
            }
        },
        Expr::Name(n) if depth < 4 && !params.contains(&n.id.as_str()) => {
            let name = n.id.as_str();
            let Some(&id) = c.ids.get(name) else {
                return false;
            };
            let mut bound = false;
            for a in &c.assigns {
                if !c.targets[a.targets.start as usize..a.targets.end as usize].contains(&id) {
                    continue;
                }
                bound = true;
                // Only `name = value` (not unpacking, `+=`, loops or `with`).
                if !graph_free(scopes, a.value, c, params, depth + 1) || a.targets.len() != 1 {
                    return false;
                }
            }
            bound
        }
        _ => false,
    }
}

/// The spans of [`GradFlow::grad_disabled_spans`] in one suite spanning `suite`: its own
/// first `torch.set_grad_enabled(False)` statement (up to the suite's end, or a later
/// `set_grad_enabled(True)`), and those of the suites nested in its compound statements
/// (loop, `with`, `if` and `try` bodies; not nested definitions), each limited to its own
/// suite: a disable in one `if` arm says nothing about the code after the `if`.
fn grad_disabled_spans_in(
    scopes: &Scopes,
    body: &[Stmt],
    suite: TextRange,
    out: &mut ThinVec<TextRange>,
) {
    for (i, s) in body.iter().enumerate() {
        if disables_grad(scopes, s) {
            // Up to a later `torch.set_grad_enabled(True)` of the same suite, if any.
            let end = body[i + 1..]
                .iter()
                .find(|t| enables_grad(scopes, t))
                .map_or(suite.end(), |t| t.start());
            out.push(TextRange::new(s.start(), end));
            return;
        }
        let mut inner: Vec<&[Stmt]> = Vec::new();
        match s {
            Stmt::For(f) => inner.extend([&f.body[..], &f.orelse[..]]),
            Stmt::While(w) => inner.extend([&w.body[..], &w.orelse[..]]),
            Stmt::With(w) => inner.push(&w.body),
            Stmt::If(i) => {
                inner.push(&i.body);
                inner.extend(i.elif_else_clauses.iter().map(|c| &c.body[..]));
            }
            Stmt::Try(t) => {
                inner.extend([&t.body[..], &t.orelse[..], &t.finalbody[..]]);
                inner.extend(t.handlers.iter().map(|h| {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                    &h.body[..]
                }));
            }
            _ => continue,
        }
        for suite in inner {
            if let (Some(first), Some(last)) = (suite.first(), suite.last()) {
                let span = TextRange::new(first.start(), last.end());
                grad_disabled_spans_in(scopes, suite, span, out);
            }
        }
    }
}

/// Adjacency lists by name id, in one array.
struct Csr<T> {
    offsets: Vec<u32>,
    items: Vec<T>,
}

impl<T: Copy> Csr<T> {
    /// The lists of `pairs` by key; within a list, the pairs keep their order when they come
    /// sorted by key.
    fn new(n: usize, mut pairs: Vec<(u32, T)>) -> Self {
        if !pairs.is_sorted_by_key(|&(k, _)| k) {
            pairs.sort_unstable_by_key(|&(k, _)| k);
        }
        let mut offsets = vec![0u32; n + 1];
        for &(k, _) in &pairs {
            offsets[k as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        Csr {
            offsets,
            items: pairs.into_iter().map(|(_, v)| v).collect(),
        }
    }

    fn get(&self, k: u32) -> &[T] {
        &self.items[self.offsets[k as usize] as usize..self.offsets[k as usize + 1] as usize]
    }
}
