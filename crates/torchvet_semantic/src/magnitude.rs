//! Facts about the values a tensor can hold, for the dataflow of [`crate::dataflow`]:
//! whether its entries are bounded by a magnitude the code itself fixes
//! ([`Prop::LiteralBounded`]: no data reaches them) and whether they are whole numbers
//! ([`Prop::IntegerValued`]), and whether an expression's result is rounded to whole numbers
//! by what consumes it ([`rounded_by_consumer`]).
//!
//! These answer the questions numerical-stability rules ask before they claim a loss of
//! precision: `log(sigmoid(x))` cannot underflow when `x` is `torch.rand(10, 10)` or a
//! tensor of literals `+-10`; `log(1 + x)` loses no digits when `x` is a whole number (it is
//! `0` or at least `1` in magnitude); `exp(x) - 1` passed to `torch.round` cannot change the
//! rounded result by losing the low digits of a small `x`.
use crate::dataflow::{Certainty, Fact, Prop, Value};
use crate::helpers::{self, Literal};
use ruff_python_ast::{self as ast, Expr, ExprCall, Operator};
use ruff_text_size::{Ranged, TextRange};

/// Bounds are kept as whole numbers (rounded up); anything larger saturates and is useless.
fn to_bound(m: f64) -> Option<u32> {
    if !m.is_finite() || m < 0.0 {
        return None;
    }
    let c = m.ceil();
    (c < f64::from(u32::MAX)).then_some(c as u32)
}

fn number(e: &Expr) -> Option<f64> {
    match helpers::literal(e)? {
        Literal::Int(i) => Some(i as f64),
        Literal::Float(f) => Some(f),
        Literal::Bool(b) => Some(f64::from(u8::from(b))),
        _ => None,
    }
}

/// A whole-number literal: `3`, `True`, and `1.0` (a float with no fraction).
fn whole(e: &Expr) -> bool {
    match helpers::literal(e) {
        Some(Literal::Int(_) | Literal::Bool(_)) => true,
        Some(Literal::Float(f)) => f.is_finite() && f.fract() == 0.0,
        _ => false,
    }
}

/// The largest magnitude of a (nested) list/tuple of number literals, and whether they are
/// all whole numbers; `None` when anything else appears.
fn literal_data(e: &Expr) -> Option<(f64, bool)> {
    match e {
        Expr::List(ast::ExprList { elts, .. }) | Expr::Tuple(ast::ExprTuple { elts, .. }) => {
            if elts.is_empty() {
                return None;
            }
            let mut m = 0.0f64;
            let mut ints = true;
            for el in elts {
                let (a, i) = literal_data(el)?;
                m = m.max(a);
                ints &= i;
            }
            Some((m, ints))
        }
        _ => number(e).map(|n| (n.abs(), whole(e))),
    }
}

fn bounded(origin: TextRange, op: &'static str, bound: f64) -> Option<Fact> {
    let mut f = crate::dataflow::new_fact(Prop::LiteralBounded, origin, op);
    f.bound = Some(to_bound(bound)?);
    Some(f)
}

fn integer(origin: TextRange, op: &'static str) -> Fact {
    crate::dataflow::new_fact(Prop::IntegerValued, origin, op)
}

/// Size arguments of a factory (`torch.rand(10, 10)`, `torch.rand((3, 4))`, `torch.rand(n)`):
/// anything but a `dtype`/`device`-like keyword is fine; the values do not depend on them.
/// A `generator=` or `out=` changes nothing either.
fn no_data_keywords(call: &ExprCall) -> bool {
    !helpers::has_kwargs_splat(call)
        && call.arguments.keywords.iter().all(|k| {
            k.arg.as_ref().is_some_and(|a| {
                matches!(
                    a.as_str(),
                    "dtype"
                        | "device"
                        | "requires_grad"
                        | "generator"
                        | "size"
                        | "layout"
                        | "pin_memory"
                )
            })
        })
}

/// The value facts of a call of the qualified function `q` that builds a tensor from
/// literals, a literal range or a random factory.
pub(crate) fn factory_facts(q: &str, call: &ExprCall) -> Vec<Fact> {
    let here = call.range();
    let args = &call.arguments.args;
    let mut out = Vec::new();
    let int_dtype = helpers::keyword(call, "dtype")
        .and_then(helpers::dotted)
        .is_some_and(|d| {
            matches!(
                helpers::last_segment(&d),
                "long" | "int" | "int64" | "int32" | "int16" | "int8" | "uint8" | "short"
            )
        });
    match q {
        "torch.tensor" | "torch.as_tensor" | "torch.FloatTensor" | "torch.LongTensor"
        | "torch.Tensor" | "torch.DoubleTensor" => {
            if let Some((m, ints)) = args.first().and_then(literal_data) {
                if args.len() == 1 && no_data_keywords(call) {
                    out.extend(bounded(here, "tensor literal", m));
                    if ints || int_dtype {
                        out.push(integer(here, "tensor literal"));
                    }
                }
            }
        }
        "torch.arange" | "torch.range" | "torch.linspace" => {
            let ends: Option<Vec<f64>> = args.iter().map(number).collect();
            if let Some(ends) = ends.filter(|e| !e.is_empty() && no_data_keywords(call)) {
                let n = if q == "torch.linspace" {
                    2
                } else {
                    ends.len().min(2)
                };
                let m = ends.iter().take(n).fold(0.0f64, |a, b| a.max(b.abs()));
                out.extend(bounded(here, "literal range", m));
                if q != "torch.linspace" && args.iter().all(whole) {
                    out.push(integer(here, "integer range"));
                }
            }
        }
        "torch.rand" | "torch.rand_like" if no_data_keywords(call) => {
            out.extend(bounded(here, "torch.rand", 1.0));
        }
        // Standard normal draws: beyond 10 has probability ~1e-23 per entry.
        "torch.randn" | "torch.randn_like" if no_data_keywords(call) => {
            out.extend(bounded(here, "torch.randn", 10.0));
        }
        "torch.zeros" | "torch.ones" | "torch.zeros_like" | "torch.ones_like" => {
            out.extend(bounded(here, "constant factory", 1.0));
            out.push(integer(here, "constant factory"));
        }
        "torch.full" | "torch.full_like" => {
            if let Some(v) = helpers::argument(call, "fill_value", 1) {
                if let Some(n) = number(v) {
                    out.extend(bounded(here, "constant factory", n.abs()));
                    if whole(v) {
                        out.push(integer(here, "constant factory"));
                    }
                }
            }
        }
        "torch.randint" | "torch.randint_like" | "torch.randperm" => {
            out.push(integer(here, "random integers"));
            if q == "torch.randint" && args.len() >= 2 {
                let lo = number(&args[0]);
                let hi = number(&args[1]);
                let sized = matches!(args[1], Expr::Tuple(_) | Expr::List(_));
                let m = match (lo, hi, sized) {
                    (Some(h), _, true) => Some(h.abs()),
                    (Some(l), Some(h), false) => Some(l.abs().max(h.abs())),
                    _ => None,
                };
                if let Some(m) = m {
                    out.extend(bounded(here, "torch.randint", m));
                }
            }
        }
        "torch.round" | "torch.floor" | "torch.ceil" | "torch.trunc" | "torch.fix" => {
            out.push(integer(here, helpers::last_segment(q_static(q))));
        }
        _ => {}
    }
    if int_dtype && !out.iter().any(|f| f.prop == Prop::IntegerValued) {
        out.push(integer(here, "integer dtype"));
    }
    out
}

fn q_static(q: &str) -> &'static str {
    match helpers::last_segment(q) {
        "round" => "round",
        "floor" => "floor",
        "ceil" => "ceil",
        "trunc" => "trunc",
        _ => "fix",
    }
}

/// The value facts of `recv.method(...)` given the receiver's.
pub(crate) fn method_facts(method: &str, recv: &Value, call: &ExprCall) -> Vec<Fact> {
    let here = call.range();
    let mut out = Vec::new();
    let keep = crate::tensor_methods::effects(method).keeps_values();
    if let Some(b) = recv.get(Prop::LiteralBounded) {
        if keep || matches!(method, "abs" | "neg" | "relu") {
            out.push(b.clone());
        } else if matches!(method, "sigmoid" | "tanh" | "sign" | "softmax") {
            let mut f = b.clone();
            f.bound = Some(1);
            out.push(f);
        }
    }
    if let Some(i) = recv.get(Prop::IntegerValued) {
        if keep
            || matches!(
                method,
                "abs"
                    | "neg"
                    | "relu"
                    | "sign"
                    | "sum"
                    | "cumsum"
                    | "max"
                    | "min"
                    | "amax"
                    | "amin"
                    | "prod"
            )
        {
            out.push(i.clone());
        }
    }
    if matches!(
        method,
        "round" | "floor" | "ceil" | "trunc" | "long" | "int" | "short" | "byte" | "char" | "bool"
    ) && !out.iter().any(|f| f.prop == Prop::IntegerValued)
    {
        // `x.round(decimals=2)` keeps fractions.
        if method != "round" || call.arguments.is_empty() {
            out.push(integer(here, "integer rounding"));
        }
    }
    out.extend(count_method_facts(method, recv, call, &out));
    out.extend(shifted_method_facts(method, recv));
    if method == "amax" || (method == "max" && call.arguments.is_empty()) {
        out.push(crate::dataflow::new_fact(Prop::MaxValue, here, "maximum"));
    }
    out
}

/// The value facts of `left <op> right` given both sides'.
pub(crate) fn binop_facts(
    op: Operator,
    l: &Value,
    r: &Value,
    left: &Expr,
    right: &Expr,
) -> Vec<Fact> {
    let mut out = Vec::new();
    let side_bound = |v: &Value, e: &Expr| -> Option<(f64, Certainty, TextRange)> {
        if let Some(n) = number(e) {
            return Some((n.abs(), Certainty::Definite, e.range()));
        }
        let f = v.get(Prop::LiteralBounded)?;
        Some((f64::from(f.bound?), f.certainty, f.origin))
    };
    if let (Some((a, ca, oa)), Some((b, cb, ob))) = (side_bound(l, left), side_bound(r, right)) {
        let m = match op {
            Operator::Add | Operator::Sub => Some(a + b),
            Operator::Mult => Some(a * b),
            Operator::Div => number(right)
                .filter(|d| d.abs() >= 1e-300)
                .map(|d| a / d.abs()),
            _ => None,
        };
        // Two literals are not a tensor; some side must be one.
        let origin = if number(left).is_none() { oa } else { ob };
        if number(left).is_none() || number(right).is_none() {
            if let Some(mut f) = m.and_then(|m| bounded(origin, "literal arithmetic", m)) {
                if ca == Certainty::Maybe || cb == Certainty::Maybe {
                    f.certainty = Certainty::Maybe;
                }
                out.push(f);
            }
        }
    }
    let side_int = |v: &Value, e: &Expr| -> Option<Certainty> {
        if whole(e) {
            return Some(Certainty::Definite);
        }
        v.get(Prop::IntegerValued).map(|f| f.certainty)
    };
    if matches!(
        op,
        Operator::Add | Operator::Sub | Operator::Mult | Operator::FloorDiv | Operator::Mod
    ) && (number(left).is_none() || number(right).is_none())
    {
        if let (Some(ca), Some(cb)) = (side_int(l, left), side_int(r, right)) {
            let from = l.get(Prop::IntegerValued).or(r.get(Prop::IntegerValued));
            if let Some(from) = from {
                let mut f = from.clone();
                if ca == Certainty::Maybe || cb == Certainty::Maybe {
                    f.certainty = Certainty::Maybe;
                }
                out.push(f);
            }
        }
    }
    out.extend(shifted_binop_facts(op, l, r, left, right));
    out
}

/// The largest magnitude the entries of `v` can have, when the code fixes one on every path
/// ([`Prop::LiteralBounded`], definite).
pub fn magnitude_bound(v: &Value) -> Option<u32> {
    v.definite(Prop::LiteralBounded).and_then(|f| f.bound)
}

/// Does `v` hold whole numbers on every path ([`Prop::IntegerValued`], definite)?
pub fn integer_valued(v: &Value) -> bool {
    v.definite(Prop::IntegerValued).is_some()
}

/// Is the result of the innermost expression of `stack` (enclosing expressions, outermost
/// first, the expression itself last) rounded to a whole number by what consumes it:
/// `torch.round(e)`, `e.round()`, `torch.floor` / `ceil` / `trunc`, `.int()` / `.long()`,
/// Python `round(e)` / `int(e)` / `math.floor(e)` / `math.ceil(e)`, possibly through a
/// `torch.clamp` / `.clamp()` in between? `resolve` gives the qualified name of a callee.
pub fn rounded_by_consumer(stack: &[&Expr], resolve: &dyn Fn(&Expr) -> Option<String>) -> bool {
    let Some(mut i) = stack.len().checked_sub(1) else {
        return false;
    };
    while i > 0 {
        let child = stack[i];
        let parent = stack[i - 1];
        match parent {
            Expr::Call(c)
                if c.arguments
                    .args
                    .first()
                    .is_some_and(|a| a.range() == child.range()) =>
            {
                let q = resolve(&c.func);
                let name = match (&q, &*c.func) {
                    (Some(q), _) => q.as_str(),
                    (None, Expr::Name(n)) => n.id.as_str(),
                    _ => return false,
                };
                match name {
                    "torch.round" | "torch.floor" | "torch.ceil" | "torch.trunc" | "torch.fix"
                    | "math.floor" | "math.ceil" | "math.trunc" | "numpy.round" | "numpy.floor"
                    | "numpy.ceil" | "numpy.rint" | "int" => {
                        return c.arguments.args.len() == 1 && c.arguments.keywords.is_empty()
                    }
                    "round" => return c.arguments.args.len() == 1,
                    "torch.clamp" | "torch.clip" => i -= 1,
                    _ => return false,
                }
            }
            Expr::Attribute(a) if a.value.range() == child.range() => {
                let Some(Expr::Call(c)) = i.checked_sub(2).map(|j| stack[j]) else {
                    return false;
                };
                if c.func.range() != parent.range() {
                    return false;
                }
                match a.attr.as_str() {
                    "round" | "floor" | "ceil" | "trunc" | "fix" | "int" | "long" | "short"
                    | "round_" | "floor_" | "ceil_" | "trunc_" => return c.arguments.is_empty(),
                    "clamp" | "clip" | "clamp_" | "clip_" => i -= 2,
                    _ => return false,
                }
            }
            _ => return false,
        }
    }
    false
}

/// Sizes and counts are whole numbers: `len(x)`, `int(x)`, `x.shape` / `x.shape[0]`,
/// `x.ndim` (the value facts of the expression at `here`).
pub(crate) fn size_facts(here: TextRange) -> Vec<Fact> {
    vec![integer(here, "size")]
}

/// A comparison (`x > 0`, `labels == k`) holds booleans: 0 or 1, whole numbers (their
/// `.sum()` counts).
pub(crate) fn compare_facts(here: TextRange) -> Vec<Fact> {
    vec![integer(here, "comparison")]
}

/// Counting functions, whose results are whole numbers whatever their dtype: node degrees
/// (`torch_geometric.utils.degree`), `torch.bincount`, `torch.count_nonzero`, `torch.numel`,
/// index results (`torch.argmax`, `torch.nonzero`, ...); and the reductions and joins that keep
/// whole numbers whole (`torch.sum`, `torch.sparse.sum`, `torch.cumsum`, `torch.abs`,
/// `torch.cat` / `torch.stack` of whole-number tensors, also of a list comprehension).
/// `eval` gives the value of an argument.
pub(crate) fn count_facts(q: &str, call: &ExprCall, eval: &dyn Fn(&Expr) -> Value) -> Vec<Fact> {
    let here = call.range();
    let arg0 = call
        .arguments
        .args
        .first()
        .filter(|a| !matches!(a, Expr::Starred(_)));
    match q {
        "torch_geometric.utils.degree"
        | "torch_geometric.utils.degree.degree"
        | "torch.bincount"
        | "torch.count_nonzero"
        | "torch.numel"
        | "torch.argmax"
        | "torch.argmin"
        | "torch.argsort"
        | "torch.nonzero"
        | "torch.argwhere"
        | "torch.searchsorted"
        | "torch.bucketize" => vec![integer(here, "count")],
        "torch.sum" | "torch.sparse.sum" | "torch.cumsum" | "torch.abs" | "torch.neg"
        | "torch.relu" | "torch.clamp" | "torch.clip" | "torch.max" | "torch.min" => {
            // `torch.clamp(x, 0.5)` may make a whole number a fraction.
            let bounds_whole = call
                .arguments
                .args
                .iter()
                .skip(1)
                .chain(call.arguments.keywords.iter().map(|k| &k.value))
                .all(|b| {
                    !matches!(q, "torch.clamp" | "torch.clip")
                        || whole(b)
                        || b.is_none_literal_expr()
                });
            match arg0 {
                Some(a) if bounds_whole && integer_valued(&eval(a)) => {
                    vec![integer(here, "whole-number reduction")]
                }
                _ => Vec::new(),
            }
        }
        "torch.cat" | "torch.concat" | "torch.concatenate" | "torch.stack" | "torch.hstack"
        | "torch.vstack" => {
            let whole_parts = match arg0 {
                Some(
                    Expr::List(ast::ExprList { elts, .. })
                    | Expr::Tuple(ast::ExprTuple { elts, .. }),
                ) => {
                    !elts.is_empty()
                        && elts
                            .iter()
                            .all(|e| !matches!(e, Expr::Starred(_)) && integer_valued(&eval(e)))
                }
                Some(Expr::ListComp(lc)) => integer_valued(&eval(&lc.elt)),
                Some(Expr::Generator(g)) => integer_valued(&eval(&g.elt)),
                _ => false,
            };
            if whole_parts {
                vec![integer(here, "whole-number join")]
            } else {
                Vec::new()
            }
        }
        _ => Vec::new(),
    }
}

/// Methods that count, whatever the receiver: node degrees of a graph (DGL's
/// `g.in_degrees()` / `out_degrees()`), the 0/1 entries of an unweighted adjacency matrix
/// (`g.adjacency_matrix()`, `g.adj()`), sizes and counts (`numel`, `size`, `count_nonzero`,
/// `bincount`), index results (`argmax`, `nonzero`, ...); `to_dense()` keeps the entries.
fn count_method_facts(method: &str, recv: &Value, call: &ExprCall, so_far: &[Fact]) -> Vec<Fact> {
    if so_far.iter().any(|f| f.prop == Prop::IntegerValued) {
        return Vec::new();
    }
    let here = call.range();
    match method {
        "in_degrees" | "out_degrees" | "numel" | "nelement" | "size" | "dim" | "count_nonzero"
        | "bincount" | "argmax" | "argmin" | "argsort" | "nonzero" | "argwhere" => {
            vec![integer(here, "count")]
        }
        "adjacency_matrix" | "adj" if unweighted_adjacency(call) => {
            vec![integer(here, "adjacency matrix")]
        }
        "to_dense" | "coalesce" => recv.get(Prop::IntegerValued).cloned().into_iter().collect(),
        _ => Vec::new(),
    }
}

/// `g.adjacency_matrix(transpose=True)` / `g.adj()` with no edge weights named
/// (`eweight_name=`, `weight=`) and no arguments but literals: entries count edges.
fn unweighted_adjacency(call: &ExprCall) -> bool {
    call.arguments
        .args
        .iter()
        .all(|a| helpers::literal(a).is_some())
        && call.arguments.keywords.iter().all(|k| {
            k.arg.as_ref().is_some_and(|a| {
                !matches!(a.as_str(), "eweight_name" | "weight" | "edge_weight")
                    || k.value.is_none_literal_expr()
            })
        })
}

/// Is `e` the maximum of `of` over some dimension, as written to shift by it:
/// `of.max(1)[0]`, `of.max(dim=-1, keepdim=True).values`, `of.amax(-1, keepdim=True)`,
/// `torch.max(of, 1)[0]`, `of.max()`, possibly followed by `.view(...)` / `.unsqueeze(...)` /
/// `.detach()` / `.reshape(...)` / `.expand_as(...)`?
fn max_of(e: &Expr, of: &Expr) -> bool {
    use ast::comparable::ComparableExpr;
    let same = |x: &Expr| ComparableExpr::from(x) == ComparableExpr::from(of);
    match e {
        Expr::Call(c) => match &*c.func {
            Expr::Attribute(a) => match a.attr.as_str() {
                "view" | "unsqueeze" | "detach" | "reshape" | "expand_as" | "expand"
                | "view_as" | "reshape_as" => max_of(&a.value, of),
                "amax" => same(&a.value),
                // `.max()` with no dim is a scalar; with a dim a (values, indices) pair.
                "max" => c.arguments.is_empty() && same(&a.value),
                _ => false,
            },
            _ => false,
        },
        Expr::Subscript(sub) if helpers::int_value(&sub.slice) == Some(0) => {
            max_pair(&sub.value, of)
        }
        Expr::Attribute(a) if a.attr.as_str() == "values" => max_pair(&a.value, of),
        _ => false,
    }
}

/// `of.max(dim, ...)` / `torch.max(of, dim, ...)`: a (values, indices) pair.
fn max_pair(e: &Expr, of: &Expr) -> bool {
    use ast::comparable::ComparableExpr;
    let Expr::Call(c) = e else { return false };
    if c.arguments.is_empty() {
        return false;
    }
    match &*c.func {
        Expr::Attribute(a) if a.attr.as_str() == "max" => {
            if helpers::dotted(&a.value).as_deref() == Some("torch") {
                c.arguments
                    .args
                    .first()
                    .is_some_and(|x| ComparableExpr::from(x) == ComparableExpr::from(of))
                    && c.arguments.args.len() + c.arguments.keywords.len() >= 2
            } else {
                ComparableExpr::from(&*a.value) == ComparableExpr::from(of)
            }
        }
        _ => false,
    }
}

/// `s - s.max(1, keepdim=True)[0]` is shifted by its own maximum; a shifted value stays so
/// scaled by a positive literal (`(s - m) / T`) and after a further subtraction (the
/// positive column masked out: `d = shifted - disable_pos`).
fn shifted_binop_facts(op: Operator, l: &Value, r: &Value, left: &Expr, right: &Expr) -> Vec<Fact> {
    let positive = |e: &Expr| number(e).is_some_and(|n| n > 0.0);
    match op {
        // `s - s.max(1, keepdim=True)[0]`, or `s - m` with `m` a maximum kept in a variable
        // (`m, _ = torch.max(s, 1, keepdim=True)`; which tensor's maximum it is, a name does
        // not tell: as lenient as the inline `exp(a - b)`).
        Operator::Sub
            if max_of(right, left)
                || (matches!(right, Expr::Name(_)) && r.get(Prop::MaxValue).is_some()) =>
        {
            vec![crate::dataflow::new_fact(
                Prop::ShiftedByMax,
                right.range(),
                "minus its maximum",
            )]
        }
        Operator::Sub => l.get(Prop::ShiftedByMax).cloned().into_iter().collect(),
        Operator::Div if positive(right) => {
            l.get(Prop::ShiftedByMax).cloned().into_iter().collect()
        }
        Operator::Mult if positive(right) => {
            l.get(Prop::ShiftedByMax).cloned().into_iter().collect()
        }
        Operator::Mult if positive(left) => {
            r.get(Prop::ShiftedByMax).cloned().into_iter().collect()
        }
        _ => Vec::new(),
    }
}

/// Moves, casts, views and copies keep a shift by the maximum, and a maximum; `x.amax(...)`
/// and `x.max()` are one.
fn shifted_method_facts(method: &str, recv: &Value) -> Vec<Fact> {
    if crate::tensor_methods::effects(method).keeps_values() || method == "to_dense" {
        [Prop::ShiftedByMax, Prop::MaxValue]
            .iter()
            .filter_map(|p| recv.get(*p).cloned())
            .collect()
    } else {
        Vec::new()
    }
}

/// Was `v` shifted by its own maximum on every path ([`Prop::ShiftedByMax`], definite), so
/// that `exp(v)` cannot overflow?
pub fn shifted_by_max(v: &Value) -> bool {
    v.definite(Prop::ShiftedByMax).is_some()
}

/// The value of a Python scalar expression the code fixes: number literals and names whose
/// value `name` gives (a parameter left at its literal default, say), combined with `+ - * /
/// **` and unary minus, possibly wrapped in `torch.tensor(...)` / `torch.as_tensor(...)` /
/// `float(...)` (the callee's qualified name from `resolve`). `None` when anything else
/// appears.
pub fn scalar_constant(
    e: &Expr,
    name: &dyn Fn(&Expr) -> Option<f64>,
    resolve: &dyn Fn(&Expr) -> Option<String>,
) -> Option<f64> {
    fn go(
        e: &Expr,
        name: &dyn Fn(&Expr) -> Option<f64>,
        resolve: &dyn Fn(&Expr) -> Option<String>,
        depth: u32,
    ) -> Option<f64> {
        if depth > 16 {
            return None;
        }
        if let Some(n) = number(e) {
            return Some(n);
        }
        let v = match e {
            Expr::Name(_) => name(e)?,
            Expr::UnaryOp(u) if u.op == ast::UnaryOp::USub => {
                -go(&u.operand, name, resolve, depth + 1)?
            }
            Expr::UnaryOp(u) if u.op == ast::UnaryOp::UAdd => {
                go(&u.operand, name, resolve, depth + 1)?
            }
            Expr::BinOp(b) => {
                let l = go(&b.left, name, resolve, depth + 1)?;
                let r = go(&b.right, name, resolve, depth + 1)?;
                match b.op {
                    Operator::Add => l + r,
                    Operator::Sub => l - r,
                    Operator::Mult => l * r,
                    Operator::Div if r != 0.0 => l / r,
                    Operator::Pow => l.powf(r),
                    _ => return None,
                }
            }
            Expr::Call(c) if c.arguments.args.len() == 1 => {
                let wraps = match resolve(&c.func).as_deref() {
                    Some("torch.tensor" | "torch.as_tensor") => no_data_keywords(c),
                    None => {
                        helpers::name_of(&c.func) == Some("float")
                            && c.arguments.keywords.is_empty()
                    }
                    _ => false,
                };
                if !wraps {
                    return None;
                }
                go(&c.arguments.args[0], name, resolve, depth + 1)?
            }
            _ => return None,
        };
        v.is_finite().then_some(v)
    }
    go(e, name, resolve, 0)
}
