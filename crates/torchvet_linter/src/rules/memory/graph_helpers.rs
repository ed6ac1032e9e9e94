//! Private helper of the memory rules: does a value still carry an autograd graph?
//!
//! A value is graph-carrying when it is a model call's output, a loss (criterion call,
//! `F.*_loss`), or something `.backward()` is called on, possibly through arithmetic,
//! indexing, `.loss`/`.logits` attributes and graph-keeping methods (`mean`, `sum`, `view`,
//! `to`, ...); `.item()`, `.detach()`, `.tolist()`, `float(...)`, `.argmax()`, comparisons,
//! `torch.tensor(...)` drop it. Names are followed to their last assignment before the use in
//! the analysed suite (a loop body). Candidate for the shared dataflow module.
use crate::checker::Checker;
use crate::rules::correctness::helpers::for_each_stmt;
use crate::rules::correctness::modes_helpers::{backward_target, calls_in};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use torchvet_semantic::helpers;
use torchvet_semantic::helpers::binds;
use torchvet_semantic::kinds::Kind;

/// Where a graph-carrying value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// A loss (criterion call, `F.*_loss`, or a value `.backward()` is called on).
    Loss,
    /// A model's output.
    ModelOutput,
}

/// The verdict on a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Graph {
    /// Carries a graph: the producing expression and its nature.
    Yes(TextRange, Source),
    /// Does not carry a graph (a Python number, a detached tensor...).
    No,
    /// Cannot tell.
    Unknown,
}

fn criterion_name(text: &str) -> bool {
    let last = text.rsplit('.').next().unwrap_or(text).to_ascii_lowercase();
    last.contains("criterion")
        || last.contains("loss_fn")
        || last.contains("loss_func")
        || last == "crit"
        || last == "lossfn"
}

fn functional_loss(q: &str) -> bool {
    let Some(f) = q.strip_prefix("torch.nn.functional.") else {
        return false;
    };
    f.ends_with("_loss") || f.contains("cross_entropy") || f == "kl_div"
}

/// Is `expr` graph-carrying, looking names up in `scope` before `before`?
pub(crate) fn graph_value(
    checker: &mut Checker,
    expr: &Expr,
    scope: &[Stmt],
    before: TextSize,
    depth: u8,
) -> Graph {
    if depth > 6 {
        return Graph::Unknown;
    }
    match expr {
        Expr::NumberLiteral(_) | Expr::BooleanLiteral(_) | Expr::StringLiteral(_) => Graph::No,
        Expr::Compare(_) | Expr::BoolOp(_) | Expr::FString(_) => Graph::No,
        Expr::Name(n) => name_value(checker, n.id.as_str(), scope, before, depth),
        Expr::UnaryOp(u) => graph_value(checker, &u.operand, scope, before, depth + 1),
        Expr::BinOp(b) => {
            let l = graph_value(checker, &b.left, scope, before, depth + 1);
            if matches!(l, Graph::Yes(..)) {
                return l;
            }
            let r = graph_value(checker, &b.right, scope, before, depth + 1);
            match (l, r) {
                (_, Graph::Yes(..)) => r,
                (Graph::No, Graph::No) => Graph::No,
                _ => Graph::Unknown,
            }
        }
        Expr::Subscript(s) => {
            // `d["loss"]` after the entry was stored again (`for k, v in d.items(): d[k] =
            // v.item()`): what that store put there.
            if let Some(name) = helpers::name_of(&s.value) {
                if let Some(st) =
                    torchvet_semantic::entries::last_entry_store(scope, name, &s.slice, before)
                {
                    return graph_value(checker, st.value, scope, st.at, depth + 1);
                }
            }
            graph_value(checker, &s.value, scope, before, depth + 1)
        }
        Expr::Attribute(a) => match a.attr.as_str() {
            "loss" | "logits" | "last_hidden_state" | "hidden_states" => {
                graph_value(checker, &a.value, scope, before, depth + 1)
            }
            a if torchvet_semantic::tensor_methods::attribute_without_graph(a) => Graph::No,
            _ => Graph::Unknown,
        },
        Expr::Call(call) => {
            if let Some((method, recv)) = helpers::method_call(call) {
                let effects = torchvet_semantic::tensor_methods::effects(method);
                if effects.drops_graph() {
                    return Graph::No;
                }
                if effects.keeps_graph() {
                    // `torch.mean(x)` style calls resolve; only follow tensor methods.
                    if checker.resolve(&call.func).is_none() {
                        return graph_value(checker, recv, scope, before, depth + 1);
                    }
                }
            }
            if let Some(q) = checker.resolve(&call.func) {
                if functional_loss(&q) {
                    return Graph::Yes(call.range(), Source::Loss);
                }
                if matches!(
                    q.as_str(),
                    "torch.tensor" | "torch.as_tensor" | "torch.from_numpy"
                ) || q.starts_with("numpy.")
                {
                    return Graph::No;
                }
                if returns_differentiated(checker, checker.project().and_then(|p| p.entity(&q))) {
                    return Graph::Yes(call.range(), Source::Loss);
                }
                return Graph::Unknown;
            }
            if let Expr::Name(n) = &*call.func {
                let local = checker.project().and_then(|p| p.local(n.id.as_str()));
                if returns_differentiated(checker, local) {
                    return Graph::Yes(call.range(), Source::Loss);
                }
            }
            if let Expr::Name(n) = &*call.func {
                if matches!(
                    n.id.as_str(),
                    "float" | "int" | "bool" | "len" | "round" | "str"
                ) && !checker
                    .scopes
                    .current()
                    .is_some_and(|s| s.binds_locally(n.id.as_str()))
                {
                    return Graph::No;
                }
            }
            let callee_text = checker.text(call.func.range());
            if criterion_name(callee_text) {
                return Graph::Yes(call.range(), Source::Loss);
            }
            if matches!(&*call.func, Expr::Name(_) | Expr::Attribute(_))
                && checker.kind_of(&call.func) == Kind::Module
            {
                let src = if callee_text.to_ascii_lowercase().contains("loss") {
                    Source::Loss
                } else {
                    Source::ModelOutput
                };
                return Graph::Yes(call.range(), src);
            }
            Graph::Unknown
        }
        _ => Graph::Unknown,
    }
}

/// A project function returning a loss it called `.backward()` on (a training-step helper
/// that returns its loss tensor).
fn returns_differentiated(
    checker: &Checker,
    e: Option<torchvet_semantic::project::Entity>,
) -> bool {
    match (checker.project(), e) {
        (Some(p), Some(torchvet_semantic::project::Entity::Function(g))) => {
            p.model.function(g).returns_differentiated
        }
        _ => false,
    }
}

/// The definition an assignment gives `name`: its value, or, when `name` is one element of
/// an unpacked tuple, that element's value when the right side is a tuple display of the same
/// length (`a, b = x, y`). An element unpacked from a call (`loss, per_class = criterion(...)`)
/// is opaque: what the callee returns in that position (a graph-carrying loss, a detached
/// NumPy array of scores, a count) is not known, and unknown means no finding.
fn element_def<'a>(a: &'a ruff_python_ast::StmtAssign, name: &str) -> Def<'a> {
    let at = a.range.start();
    for t in &a.targets {
        let elts = match t {
            Expr::Name(n) if n.id.as_str() == name => return Def::Value(&a.value, at),
            Expr::Tuple(t) => &t.elts,
            Expr::List(l) => &l.elts,
            _ => continue,
        };
        let Some(i) = elts.iter().position(|e| binds(e, name)) else {
            continue;
        };
        let values = match &*a.value {
            Expr::Tuple(t) => Some(&t.elts),
            Expr::List(l) => Some(&l.elts),
            _ => None,
        };
        return match (values, &elts[i]) {
            (Some(v), Expr::Name(_))
                if v.len() == elts.len()
                    && !elts.iter().any(|e| matches!(e, Expr::Starred(_)))
                    && !v.iter().any(|e| matches!(e, Expr::Starred(_))) =>
            {
                Def::Value(&v[i], at)
            }
            _ => Def::Opaque,
        };
    }
    Def::Opaque
}

enum Def<'a> {
    Value(&'a Expr, TextSize),
    Aug(&'a Expr, TextSize),
    Opaque,
}

fn name_value(
    checker: &mut Checker,
    name: &str,
    scope: &[Stmt],
    before: TextSize,
    depth: u8,
) -> Graph {
    // The assignments of `name` in the suite that end before the use, in source order.
    let mut defs: Vec<Def> = Vec::new();
    for_each_stmt(scope, &mut |st: &Stmt| {
        if st.range().end() > before && !matches!(st, Stmt::For(_) | Stmt::While(_)) {
            return;
        }
        match st {
            Stmt::Assign(a)
                if a.targets.iter().any(|t| binds(t, name)) && a.range.end() <= before =>
            {
                defs.push(element_def(a, name));
            }
            Stmt::AnnAssign(a) if binds(&a.target, name) && a.range.end() <= before => {
                if let Some(v) = &a.value {
                    defs.push(Def::Value(v, a.range.start()));
                }
            }
            Stmt::AugAssign(a) if binds(&a.target, name) && a.range.end() <= before => {
                defs.push(Def::Aug(&a.value, a.range.start()));
            }
            Stmt::For(f) if binds(&f.target, name) && f.range.start() < before => {
                defs.push(Def::Opaque)
            }
            Stmt::With(w)
                if w.range.start() < before
                    && w.items
                        .iter()
                        .any(|i| i.optional_vars.as_deref().is_some_and(|v| binds(v, name))) =>
            {
                defs.push(Def::Opaque)
            }
            _ => {}
        }
    });
    let mut verdict = Graph::Unknown;
    for def in defs.iter().rev() {
        match def {
            Def::Opaque => {
                verdict = Graph::Unknown;
                break;
            }
            Def::Value(v, at) => {
                verdict = graph_value(checker, v, scope, *at, depth + 1);
                break;
            }
            Def::Aug(v, at) => {
                let g = graph_value(checker, v, scope, *at, depth + 1);
                if matches!(g, Graph::Yes(..)) {
                    verdict = g;
                    break;
                }
            }
        }
    }
    if verdict != Graph::Unknown {
        return verdict;
    }
    // `name.backward()` in the suite: it is a loss with a graph.
    let mut found = None;
    for call in calls_in(scope) {
        if let Some(t) = backward_target(checker, call) {
            if helpers::name_of(t) == Some(name) {
                found = Some(call.range());
                break;
            }
        }
    }
    match found {
        Some(r) => Graph::Yes(r, Source::Loss),
        None => Graph::Unknown,
    }
}

/// Does any backward pass in `scope` differentiate an expression mentioning `name`
/// (`total.backward()`, `(total / n).backward()`, `scaler.scale(total).backward()`)?
pub(crate) fn backward_mentions(checker: &Checker, scope: &[Stmt], name: &str) -> bool {
    calls_in(scope).into_iter().any(|call| {
        backward_target(checker, call).is_some_and(|t| mentions_name(t, name))
            || (checker.resolves_to(&call.func, &["torch.autograd.grad"])
                && call.arguments.args.iter().any(|a| mentions_name(a, name)))
    })
}

/// Does an expression mention the bare name `name` anywhere?
pub(crate) fn mentions_name(expr: &Expr, name: &str) -> bool {
    use ruff_python_ast::visitor::{self, Visitor};
    struct F<'n> {
        name: &'n str,
        found: bool,
    }
    impl<'x> Visitor<'x> for F<'_> {
        fn visit_expr(&mut self, e: &'x Expr) {
            if self.found {
                return;
            }
            if let Expr::Name(n) = e {
                if n.id.as_str() == self.name {
                    self.found = true;
                    return;
                }
            }
            visitor::walk_expr(self, e);
        }
    }
    let mut f = F { name, found: false };
    f.visit_expr(expr);
    f.found
}

/// The names whose value depends on `name` in `scope`, transitively, through plain and
/// augmented assignments to names (`local_loss = 0.01 * (loss_s + loss_t)`, then
/// `join_loss = ... + local_loss`, then `loss = soft + join_loss`). `name` itself excluded.
pub(crate) fn dependents<'s>(scope: &'s [Stmt], name: &str) -> Vec<&'s str> {
    let mut edges: Vec<(&'s str, &'s Expr)> = Vec::new();
    for_each_stmt(scope, &mut |st: &'s Stmt| match st {
        Stmt::Assign(a) => {
            for t in &a.targets {
                if let Expr::Name(n) = t {
                    edges.push((n.id.as_str(), &a.value));
                }
            }
        }
        Stmt::AugAssign(a) => {
            if let Expr::Name(n) = &*a.target {
                edges.push((n.id.as_str(), &a.value));
            }
        }
        Stmt::AnnAssign(a) => {
            if let (Expr::Name(n), Some(v)) = (&*a.target, &a.value) {
                edges.push((n.id.as_str(), v));
            }
        }
        _ => {}
    });
    let mut out: Vec<&'s str> = Vec::new();
    loop {
        let mut changed = false;
        for (t, v) in &edges {
            if *t == name || out.contains(t) {
                continue;
            }
            if mentions_name(v, name) || out.iter().any(|d| mentions_name(v, d)) {
                out.push(t);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    out
}

/// Is `name`, or a name computed from it ([`dependents`]), differentiated in `scope`
/// (`loss_s += ...; local_loss = 0.01 * (loss_s + loss_t); ...; loss.backward()`)?
pub(crate) fn reaches_backward(checker: &Checker, scope: &[Stmt], name: &str) -> bool {
    backward_mentions(checker, scope, name)
        || dependents(scope, name)
            .into_iter()
            .any(|d| backward_mentions(checker, scope, d))
}
