//! Phase-1 facts about autograd across calls: where the result of each recorded call and the
//! value of each parameter go with respect to differentiation (a `.backward()`, a
//! `torch.autograd.grad(...)`, a `return`, an argument of another recorded call), and where a
//! function turns autograd off for the rest of the process (`torch.set_grad_enabled(False)` as
//! a statement of its body, or `torch.no_grad().__enter__()`). [`crate::project::ProjectModel::result_differentiated`] and
//! [`crate::project::ProjectModel::runs_without_grad`] follow them across call sites.
//!
//! Names are followed flow-insensitively through assignments (`x = f(...)`, `total += x`,
//! `losses["total"] = x`, `losses.append(x)`, `for x in xs`): a value reaches a sink when a
//! name derived from it is read there. That over-approximates where a value goes, which is
//! the safe direction for the rules that ask (they stay silent where a graph may be needed).
use super::SumCall;
use crate::bindings::Scopes;
use crate::helpers;
use crate::project::facts::ArgPos;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use rustc_hash::FxHashSet;

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
    pub args: Vec<(u32, ArgPos)>,
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
    pub results: Vec<ValueSinks>,
    /// Per parameter (same index as [`super::FunctionSummary::params`]): where its value goes.
    /// Empty when no parameter goes anywhere tracked.
    pub params: Vec<ValueSinks>,
    /// `torch.set_grad_enabled(False)` as an unconditional statement of the body (or of its
    /// `if __name__ == "__main__":` block), or a no-grad context entered by hand and never
    /// left (`torch.no_grad().__enter__()`): autograd is off for the rest of the process from
    /// there on.
    pub grad_disabled_at: Option<TextSize>,
}

/// An expression and the names it reads.
type ReadExpr<'a> = (&'a Expr, FxHashSet<&'a str>);

/// One flow of names: the names bound (roots) from the names read in `value`.
struct Assign<'a> {
    targets: Vec<&'a str>,
    value: &'a Expr,
}

/// Collect the function's own assignments, differentiation sinks and returns.
struct Collect<'a, 's> {
    scopes: &'s Scopes,
    assigns: Vec<Assign<'a>>,
    diffs: Vec<&'a Expr>,
    returns: Vec<&'a Expr>,
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

fn target_names<'a>(t: &'a Expr, out: &mut Vec<&'a str>) {
    match t {
        Expr::Tuple(t) => t.elts.iter().for_each(|e| target_names(e, out)),
        Expr::List(l) => l.elts.iter().for_each(|e| target_names(e, out)),
        e => out.extend(root_name(e)),
    }
}

impl<'a> Collect<'a, '_> {
    /// Is the call `torch.autograd.grad` / `torch.autograd.backward` (however imported)?
    fn autograd_call(&self, c: &ExprCall) -> bool {
        if let Some(q) = self.scopes.resolve(&c.func) {
            if matches!(
                q.as_str(),
                "torch.autograd.grad" | "torch.autograd.backward" | "torch.autograd.grad.grad"
            ) {
                return true;
            }
        }
        helpers::dotted(&c.func)
            .is_some_and(|d| d.ends_with("autograd.grad") || d.ends_with("autograd.backward"))
    }
}

impl<'a> Visitor<'a> for Collect<'a, '_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => return,
            Stmt::Assign(a) => {
                let mut targets = Vec::new();
                a.targets.iter().for_each(|t| target_names(t, &mut targets));
                self.assigns.push(Assign {
                    targets,
                    value: &a.value,
                });
            }
            Stmt::AugAssign(a) => {
                let mut targets = Vec::new();
                target_names(&a.target, &mut targets);
                self.assigns.push(Assign {
                    targets,
                    value: &a.value,
                });
            }
            Stmt::AnnAssign(a) => {
                if let Some(v) = &a.value {
                    let mut targets = Vec::new();
                    target_names(&a.target, &mut targets);
                    self.assigns.push(Assign { targets, value: v });
                }
            }
            Stmt::For(f) => {
                let mut targets = Vec::new();
                target_names(&f.target, &mut targets);
                self.assigns.push(Assign {
                    targets,
                    value: &f.iter,
                });
            }
            Stmt::With(w) => {
                for item in &w.items {
                    if let Some(v) = &item.optional_vars {
                        let mut targets = Vec::new();
                        target_names(v, &mut targets);
                        self.assigns.push(Assign {
                            targets,
                            value: &item.context_expr,
                        });
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
            Expr::Call(c) => {
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
                            for a in c.arguments.args.iter() {
                                self.assigns.push(Assign {
                                    targets: vec![root],
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

/// The names an expression reads (outside lambdas).
fn reads<'a>(e: &'a Expr, out: &mut FxHashSet<&'a str>) {
    struct R<'o, 'a>(&'o mut FxHashSet<&'a str>);
    impl<'a> Visitor<'a> for R<'_, 'a> {
        fn visit_expr(&mut self, e: &'a Expr) {
            match e {
                Expr::Name(n) => {
                    self.0.insert(n.id.as_str());
                }
                Expr::Lambda(_) => {}
                _ => visitor::walk_expr(self, e),
            }
        }
    }
    R(out).visit_expr(e);
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

/// The autograd facts of a function body with these parameters and recorded calls.
pub(super) fn grad_flow(
    scopes: &Scopes,
    body: &[Stmt],
    params: &[&str],
    calls: &[SumCall],
) -> GradFlow {
    let grad_disabled_at = grad_disabled_at(scopes, body);
    let mut c = Collect {
        scopes,
        assigns: Vec::new(),
        diffs: Vec::new(),
        returns: Vec::new(),
    };
    c.visit_body(body);
    // Nothing to follow without a differentiation, a return or a call; and a budget for
    // very long bodies (a huge notebook's module body): unknown is "goes nowhere".
    if (c.diffs.is_empty() && c.returns.is_empty() && calls.is_empty())
        || calls.len().saturating_mul(c.assigns.len()) > 400_000
    {
        return GradFlow {
            grad_disabled_at,
            ..GradFlow::default()
        };
    }
    // Read sets, computed once.
    fn read_set(e: &Expr) -> FxHashSet<&str> {
        let mut r = FxHashSet::default();
        reads(e, &mut r);
        r
    }
    // Name -> the names assigned from expressions that read it: the closure below is a
    // reachability walk over these edges (a fixpoint over every assignment per value was
    // quadratic in long bodies).
    let mut edges: rustc_hash::FxHashMap<&str, Vec<&str>> = rustc_hash::FxHashMap::default();
    for a in &c.assigns {
        for n in read_set(a.value) {
            edges
                .entry(n)
                .or_default()
                .extend(a.targets.iter().copied());
        }
    }
    let diff_reads: Vec<(&Expr, FxHashSet<&str>)> =
        c.diffs.iter().map(|e| (*e, read_set(e))).collect();
    let return_reads: Vec<(&Expr, FxHashSet<&str>)> =
        c.returns.iter().map(|e| (*e, read_set(e))).collect();
    let by_range = calls_by_range(body);
    let call_args: Vec<Vec<(ArgPos, ReadExpr)>> = calls
        .iter()
        .map(|call| {
            by_range
                .get(&call.range)
                .copied()
                .map(|expr| {
                    let positional = expr
                        .arguments
                        .args
                        .iter()
                        .enumerate()
                        .map(|(i, a)| (ArgPos::Pos(i as u16), (a, read_set(a))));
                    let keywords = expr.arguments.keywords.iter().filter_map(|k| {
                        let name = k.arg.as_ref()?;
                        Some((
                            ArgPos::Kw(name.as_str().into()),
                            (&k.value, read_set(&k.value)),
                        ))
                    });
                    positional.chain(keywords).collect()
                })
                .unwrap_or_default()
        })
        .collect();
    // The sinks that read each name: a differentiation, a return, or argument `ai` of call
    // `ci`, with where that expression starts.
    #[derive(Clone, Copy)]
    enum Sink {
        Diff,
        Ret,
        Arg(usize, usize),
    }
    let mut by_name: rustc_hash::FxHashMap<&str, Vec<(Sink, TextSize)>> =
        rustc_hash::FxHashMap::default();
    for (e, r) in &diff_reads {
        for &n in r {
            by_name.entry(n).or_default().push((Sink::Diff, e.start()));
        }
    }
    for (e, r) in &return_reads {
        for &n in r {
            by_name.entry(n).or_default().push((Sink::Ret, e.start()));
        }
    }
    for (ci, args) in call_args.iter().enumerate() {
        for (ai, (_, (e, r))) in args.iter().enumerate() {
            for &n in r {
                by_name
                    .entry(n)
                    .or_default()
                    .push((Sink::Arg(ci, ai), e.start()));
            }
        }
    }
    // `after`: for a call's result, only sinks after the call count (a name reused for another
    // value earlier, `loss = step(...); loss.backward()` before `loss = evaluate(...)`, is not
    // this value).
    // The sinks each recorded call sits in (its result flows into them directly): found per
    // sink from the calls sorted by position, instead of testing every sink for every call.
    #[derive(Default, Clone)]
    struct Seeds {
        assigns: Vec<usize>,
        diff: bool,
        ret: bool,
        args: Vec<(usize, usize)>,
    }
    let mut order: Vec<(TextSize, TextSize, usize)> = calls
        .iter()
        .enumerate()
        .map(|(i, call)| (call.range.start(), call.range.end(), i))
        .collect();
    order.sort_unstable();
    let within = |r: TextRange, f: &mut dyn FnMut(usize)| {
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
    let mut seeds: Vec<Seeds> = vec![Seeds::default(); calls.len()];
    for (k, a) in c.assigns.iter().enumerate() {
        within(a.value.range(), &mut |i| seeds[i].assigns.push(k));
    }
    for (e, _) in &diff_reads {
        within(e.range(), &mut |i| seeds[i].diff = true);
    }
    for (e, _) in &return_reads {
        within(e.range(), &mut |i| seeds[i].ret = true);
    }
    for (ci, args) in call_args.iter().enumerate() {
        for (ai, (_, (e, _))) in args.iter().enumerate() {
            within(e.range(), &mut |i| seeds[i].args.push((ci, ai)));
        }
    }
    let no_seeds = Seeds::default();
    let sinks_of = |seed: &Seeds, names: FxHashSet<&str>, after: TextSize| -> ValueSinks {
        // The names derived from the value: reachability over the assignments.
        let mut derived = names;
        for &k in &seed.assigns {
            derived.extend(c.assigns[k].targets.iter().copied());
        }
        let mut stack: Vec<&str> = derived.iter().copied().collect();
        while let Some(n) = stack.pop() {
            for &t in edges.get(n).map(Vec::as_slice).unwrap_or_default() {
                if derived.insert(t) {
                    stack.push(t);
                }
            }
        }
        // A sink is hit when it contains the value itself (`seed`) or, after `after`, reads a
        // derived name (looked up by name rather than by scanning every sink).
        let mut differentiated = seed.diff;
        let mut returned = seed.ret;
        let mut hits: Vec<(usize, usize)> = seed.args.clone();
        for n in &derived {
            for &(sink, start) in by_name.get(n).map(Vec::as_slice).unwrap_or_default() {
                if start < after {
                    continue;
                }
                match sink {
                    Sink::Diff => differentiated = true,
                    Sink::Ret => returned = true,
                    Sink::Arg(ci, ai) => hits.push((ci, ai)),
                }
            }
        }
        hits.sort_unstable();
        hits.dedup();
        ValueSinks {
            differentiated,
            returned,
            args: hits
                .into_iter()
                .map(|(ci, ai)| (ci as u32, call_args[ci][ai].0.clone()))
                .collect(),
        }
    };
    let mut results: Vec<ValueSinks> = calls
        .iter()
        .zip(&seeds)
        .map(|(call, seed)| sinks_of(seed, FxHashSet::default(), call.range.end()))
        .collect();
    // A call's result passed straight to itself is not a flow.
    for (ci, r) in results.iter_mut().enumerate() {
        r.args.retain(|(k, _)| *k as usize != ci);
    }
    let mut params_out: Vec<ValueSinks> = params
        .iter()
        .map(|p| {
            let mut names = FxHashSet::default();
            names.insert(*p);
            sinks_of(&no_seeds, names, TextSize::new(0))
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
    }
}

/// Every call expression of the body, by its range (one walk, instead of a search from the
/// top of the body for each recorded call).
fn calls_by_range(body: &[Stmt]) -> rustc_hash::FxHashMap<TextRange, &ExprCall> {
    struct F<'a> {
        out: rustc_hash::FxHashMap<TextRange, &'a ExprCall>,
    }
    impl<'a> Visitor<'a> for F<'a> {
        fn visit_expr(&mut self, e: &'a Expr) {
            if let Expr::Call(c) = e {
                self.out.entry(c.range()).or_insert(c);
            }
            visitor::walk_expr(self, e);
        }
    }
    let mut f = F {
        out: rustc_hash::FxHashMap::default(),
    };
    f.visit_body(body);
    f.out
}
