use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{self as ast, Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `x.view(...)` / `x.reshape(...)` whose sizes are the sizes of `x` in another
    /// order: `b, c, h, w = x.shape` followed by `x.view(b, h, w, c)` (with `x` and the size
    /// names not reassigned in between), or `x.view(x.size(1), x.size(0))`.
    ///
    /// ## Why is this bad?
    /// `view` and `reshape` keep the elements in memory order and only re-cut them into a new
    /// shape; they do not move axes. Giving them the old sizes in another order produces a
    /// tensor of the intended shape whose contents are scrambled (channels mixed with pixels,
    /// batch items mixed together). Nothing fails; the model just learns from garbage. Moving
    /// axes is `permute` / `transpose`.
    ///
    /// This rule is in preview: it relies on local shape tracking, and code that relabels the
    /// sizes on purpose (a square image where `h == w`) would be reported.
    ///
    /// ## Example
    /// ```python
    /// b, c, h, w = x.shape
    /// y = x.view(b, h, w, c)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// y = x.permute(0, 2, 3, 1)
    /// ```
    ///
    /// ## Fix safety
    /// The fix replaces the call with `x.permute(...)` with the axis order the sizes imply. It
    /// is unsafe: it changes the values (that is the point), the result is no longer
    /// contiguous (a later `.view()` needs `.contiguous()` or `.reshape()`), and the author may
    /// have meant a different axis order.
    ///
    /// ## References
    /// - [torch.Tensor.view](https://pytorch.org/docs/stable/generated/torch.Tensor.view.html)
    /// - [torch.permute](https://pytorch.org/docs/stable/generated/torch.permute.html)
    /// - [A Recipe for Training Neural Networks](https://karpathy.github.io/2019/04/25/recipe/)
    pub(crate) static VIEW_USED_AS_TRANSPOSE = {
        name: "view-used-as-transpose",
        code: "TV024",
        group: Correctness,
        severity: Warning,
        title: "view()/reshape() used to swap/reorder axes (scrambles data; use permute)",
        autofix: Suggest,
        preview: true,
        hooks: { call: check_call },
    };
}

/// The suites of a compound statement.
fn suites(stmt: &Stmt) -> Vec<&[Stmt]> {
    match stmt {
        Stmt::FunctionDef(f) => vec![&f.body[..]],
        Stmt::If(i) => {
            let mut v = vec![&i.body[..]];
            v.extend(i.elif_else_clauses.iter().map(|c| &c.body[..]));
            v
        }
        Stmt::For(f) => vec![&f.body[..], &f.orelse[..]],
        Stmt::While(w) => vec![&w.body[..], &w.orelse[..]],
        Stmt::With(w) => vec![&w.body[..]],
        Stmt::Try(t) => {
            let mut v = vec![&t.body[..]];
            v.extend(t.handlers.iter().map(|h| {
                let ast::ExceptHandler::ExceptHandler(h) = h;
                &h.body[..]
            }));
            v.push(&t.orelse[..]);
            v.push(&t.finalbody[..]);
            v
        }
        Stmt::Match(m) => m.cases.iter().map(|c| &c.body[..]).collect(),
        _ => Vec::new(),
    }
}

/// Does `stmt` (anywhere inside, not in nested defs) bind one of `names`?
fn assigns_any(stmt: &Stmt, names: &[&str]) -> bool {
    fn target_binds(t: &Expr, names: &[&str]) -> bool {
        match t {
            Expr::Name(n) => names.contains(&n.id.as_str()),
            Expr::Tuple(t) => t.elts.iter().any(|e| target_binds(e, names)),
            Expr::List(l) => l.elts.iter().any(|e| target_binds(e, names)),
            Expr::Starred(s) => target_binds(&s.value, names),
            _ => false,
        }
    }
    match stmt {
        Stmt::Assign(a) => a.targets.iter().any(|t| target_binds(t, names)),
        Stmt::AnnAssign(a) => target_binds(&a.target, names),
        Stmt::AugAssign(a) => target_binds(&a.target, names),
        Stmt::For(f) if target_binds(&f.target, names) => true,
        Stmt::With(w)
            if w.items.iter().any(|i| {
                i.optional_vars
                    .as_deref()
                    .is_some_and(|v| target_binds(v, names))
            }) =>
        {
            true
        }
        Stmt::FunctionDef(f) => names.contains(&f.name.as_str()),
        Stmt::ClassDef(c) => names.contains(&c.name.as_str()),
        Stmt::Delete(d) => d.targets.iter().any(|t| target_binds(t, names)),
        s => suites(s)
            .into_iter()
            .any(|body| body.iter().any(|st| assigns_any(st, names))),
    }
}

/// `b, c, h, w = x.shape` / `x.size()` / `x.shape[:4]`? Returns the size names.
fn shape_unpack<'s>(stmt: &'s Stmt, x: &str) -> Option<Vec<&'s str>> {
    let Stmt::Assign(a) = stmt else { return None };
    let [Expr::Tuple(t)] = &a.targets[..] else {
        return None;
    };
    let source = match &*a.value {
        Expr::Subscript(s) if matches!(&*s.slice, Expr::Slice(_)) => &*s.value,
        e => e,
    };
    let recv = match source {
        Expr::Attribute(at) if at.attr.as_str() == "shape" => &*at.value,
        Expr::Call(c) if c.arguments.is_empty() => match helpers::method_call(c) {
            Some(("size", r)) => r,
            _ => return None,
        },
        _ => return None,
    };
    if helpers::name_of(recv) != Some(x) {
        return None;
    }
    t.elts.iter().map(helpers::name_of).collect()
}

/// The sizes of `x` named before the current statement, if `x` and those names keep their
/// values up to it.
fn unpacked_sizes<'a>(
    checker: &Checker<'a>,
    x: &str,
    args: &[&str],
) -> Option<(Vec<&'a str>, TextRange)> {
    let stack = checker.stmt_stack();
    let current = *stack.last()?;
    let mut watched: Vec<&str> = args.to_vec();
    watched.push(x);
    // Walk outwards: the statements before the current one in each enclosing suite.
    let mut child = current;
    let mut loops: Vec<&'a Stmt> = Vec::new();
    let levels: Vec<Option<&'a Stmt>> = stack[..stack.len() - 1]
        .iter()
        .rev()
        .map(|s| Some(*s))
        .chain(std::iter::once(None))
        .collect();
    for parent in levels {
        let body: &'a [Stmt] = match parent {
            Some(p) => suites(p)
                .into_iter()
                .find(|b| b.iter().any(|s| std::ptr::eq(s, child)))?,
            None => match checker.function() {
                Some(_) => return None,
                None => &checker.module().body[..],
            },
        };
        let idx = body.iter().position(|s| std::ptr::eq(s, child))?;
        for stmt in body[..idx].iter().rev() {
            if let Some(names) = shape_unpack(stmt, x) {
                // A loop between the unpack and the use must not rebind the names.
                if loops.iter().any(|l| assigns_any(l, &watched)) {
                    return None;
                }
                return Some((names, stmt.range()));
            }
            if assigns_any(stmt, &watched) {
                return None;
            }
        }
        match parent {
            Some(p @ (Stmt::For(_) | Stmt::While(_))) => loops.push(p),
            Some(Stmt::FunctionDef(_)) | Some(Stmt::ClassDef(_)) => return None,
            _ => {}
        }
        child = parent?;
    }
    None
}

fn report(
    checker: &mut Checker,
    call: &ExprCall,
    method: &str,
    x: &str,
    perm: &[usize],
    unpack: Option<TextRange>,
) {
    let order: Vec<String> = perm.iter().map(usize::to_string).collect();
    let order = order.join(", ");
    let recv = helpers::method_call(call).map_or(x, |(_, r)| checker.text(r.range()));
    let fix_text = format!("{recv}.permute({order})");
    let diag = checker.report(
        call.range(),
        format!(
            "`{recv}.{method}(...)` passes `{x}`'s own sizes in another order: {method} keeps memory order, so the result has the new shape but scrambled contents; to move axes use `{fix_text}`"
        ),
    );
    if let Some(r) = unpack {
        diag.add_related(r, format!("where the sizes of `{x}` are named"));
    }
    diag.set_fix(RawFix::unsafe_edit(
        format!("Use `{fix_text}`"),
        vec![RawEdit::replace(call.range(), fix_text)],
    ));
}

/// The name whose shape `recv` has: `x` itself, or `x` through element-wise steps that keep
/// the shape (`(x / 255.).float()`, `x.to(device)`, `-x`, `x * 2`).
fn shape_source(recv: &Expr) -> Option<&str> {
    match recv {
        Expr::Name(n) => Some(n.id.as_str()),
        Expr::Call(c) => match helpers::method_call(c)? {
            (m, r) if torchvet_semantic::tensor_methods::effects(m).keeps_shape() => {
                shape_source(r)
            }
            _ => None,
        },
        Expr::BinOp(b) => match (&*b.left, &*b.right) {
            (Expr::NumberLiteral(_), e) | (e, Expr::NumberLiteral(_)) => shape_source(e),
            _ => None,
        },
        Expr::UnaryOp(u) => shape_source(&u.operand),
        _ => None,
    }
}

/// `x.size(i)` / `x.shape[i]` with a literal `i >= 0`.
fn size_index(e: &Expr, x: &str) -> Option<usize> {
    let (recv, idx) = match e {
        Expr::Call(c) => match helpers::method_call(c) {
            Some(("size", r)) if c.arguments.args.len() == 1 => (r, &c.arguments.args[0]),
            _ => return None,
        },
        Expr::Subscript(s) => match &*s.value {
            Expr::Attribute(a) if a.attr.as_str() == "shape" => (&*a.value, &*s.slice),
            _ => return None,
        },
        _ => return None,
    };
    if helpers::name_of(recv) != Some(x) {
        return None;
    }
    usize::try_from(helpers::int_value(idx)?).ok()
}

fn is_permutation(perm: &[usize]) -> bool {
    let mut seen = vec![false; perm.len()];
    for &p in perm {
        match seen.get_mut(p) {
            Some(s) if !*s => *s = true,
            _ => return false,
        }
    }
    perm.iter().enumerate().any(|(i, &p)| i != p)
}

fn check_call(checker: &mut Checker, call: &ExprCall, _q: Option<&str>) {
    let Some((method, recv)) = helpers::method_call(call) else {
        return;
    };
    if !matches!(method, "view" | "reshape") || !call.arguments.keywords.is_empty() {
        return;
    }
    let Some(x) = shape_source(recv) else {
        return;
    };
    let args: &[Expr] = match &call.arguments.args[..] {
        [Expr::Tuple(t)] => &t.elts,
        a => a,
    };
    if args.len() < 2 {
        return;
    }
    // `x.view(x.size(1), x.size(0))`
    if let Some(perm) = args
        .iter()
        .map(|a| size_index(a, x))
        .collect::<Option<Vec<usize>>>()
    {
        if is_permutation(&perm) {
            report(checker, call, method, x, &perm, None);
        }
        return;
    }
    // `b, c, h, w = x.shape` ... `x.view(b, h, w, c)`
    let Some(names) = args
        .iter()
        .map(helpers::name_of)
        .collect::<Option<Vec<&str>>>()
    else {
        return;
    };
    let Some((sizes, unpack)) = unpacked_sizes(checker, x, &names) else {
        return;
    };
    if sizes.len() != names.len() || sizes.contains(&"_") {
        return;
    }
    let Some(perm) = names
        .iter()
        .map(|n| sizes.iter().position(|s| s == n))
        .collect::<Option<Vec<usize>>>()
    else {
        return;
    };
    if is_permutation(&perm) {
        report(checker, call, method, x, &perm, Some(unpack));
    }
}
