use super::helpers::{self, bindings};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Operator, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers as sem;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `loss.data[0]` and `loss[0]` where `loss` is a reduced (0-dimensional)
    /// tensor: the result of a loss module or loss function with the default reduction,
    /// `torch.mean(x)` / `torch.sum(x)`, or (for `.data[0]`) `x.mean()` / `x.sum()`, directly
    /// or through a variable assigned from one; also the builtin `sum` of such losses (over
    /// a comprehension of loss calls, a list literal, or a local list filled only by
    /// `losses.append(...)`), and such a loss divided by a count (`sum(losses) /
    /// args.iterations`, `/ len(losses)`, `/ x.size(0)`); a product stays silent, since a
    /// weight may be a vector. A loop's or comprehension's variable over such a list counts
    /// too (`[l.data[0] for l in losses]`). The loss may also come from a project
    /// function, in this file or another (`loss = classification_loss(out, y)` whose body
    /// returns `F.nll_loss(...)`), or from a project loss module whose `forward` returns one
    /// or a tuple of them (`loss_l, loss_c = criterion(out, targets)`). A loss module
    /// passed as an argument counts when every call site passes one that reduces
    /// (`evaluate(model, nn.MSELoss(size_average=False))`: the legacy `size_average=False`
    /// sums, still a 0-dim tensor; a criterion chosen in `if`/`else` between such losses, or
    /// a project loss class whose `forward` returns a reduced loss); a site that passes
    /// `reduction='none'` keeps it silent.
    ///
    /// ## Why is this bad?
    /// Before torch 0.4 losses were 1-element vectors and `loss.data[0]` read the number.
    /// Since 0.4 they are 0-dimensional tensors, and indexing them raises `IndexError: invalid
    /// index of a 0-dim tensor. Use tensor.item()`. Old training loops crash at their first
    /// logging step.
    ///
    /// ## Example
    /// ```python
    /// loss = criterion(output, target)
    /// running_loss += loss.data[0]
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// loss = criterion(output, target)
    /// running_loss += loss.item()
    /// ```
    ///
    /// ## Fix safety
    /// The fix replaces the indexing with `.item()`, which returns the Python number the old
    /// code read; the indexing can only raise on a 0-dimensional tensor, so the fix is safe.
    ///
    /// ## References
    /// - [PyTorch 0.4.0 migration guide (0-dimensional tensors)](https://pytorch.org/blog/pytorch-0_4_0-migration-guide/)
    /// - [torch.Tensor.item](https://pytorch.org/docs/stable/generated/torch.Tensor.item.html)
    pub(crate) static TENSOR_DATA_ZERO_INDEX = {
        name: "tensor-data-zero-index",
        code: "TV041",
        group: DeprecatedApi,
        severity: Critical,
        title: "loss.data[0] / loss[0] on a 0-dim tensor (IndexError: invalid index of a 0-dim tensor)",
        autofix: Yes,
        hooks: { stmt: check_assign, expr: check_subscript, expr_on: crate::registry::ExprKinds::SUBSCRIPT, end: bindings::clear },
    };
}

/// A 0-dim tensor from a torch loss / reduction.
const REDUCED_TORCH: u8 = 1;
/// A loss module instance with the default reduction.
const LOSS_MODULE: u8 = 2;
/// A 0-dim value from a `.mean()` / `.sum()` method call (receiver type unknown).
const REDUCED_METHOD: u8 = 3;

const FUNCTIONAL: &[&str] = &[
    "cross_entropy",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
];

/// Does the call keep the default (mean/sum) reduction?
fn reduces(call: &ExprCall) -> bool {
    if sem::has_kwargs_splat(call) {
        return false;
    }
    if let Some(r) = call.arguments.find_keyword("reduction") {
        return matches!(sem::str_value(&r.value), Some("mean" | "sum"));
    }
    if let Some(r) = call.arguments.find_keyword("reduce") {
        return sem::is_truthy(&r.value) == Some(true);
    }
    true
}

fn classify(checker: &Checker, expr: &Expr) -> Option<u8> {
    match expr {
        Expr::Call(call) => classify_call(checker, call),
        Expr::Name(_) | Expr::Attribute(_) => {
            bindings::kind_of(checker, expr).filter(|&k| k != LOSS_MODULE)
        }
        Expr::BinOp(b)
            if matches!(
                b.op,
                Operator::Add | Operator::Sub | Operator::Mult | Operator::Div
            ) =>
        {
            // A call of a project function that returns a 0-dim tensor
            // (`loss = ce + 0.25 * mmd_loss(a, b)` with `mmd_loss` returning `torch.mean(..)`)
            // is a reduced operand as well: the project model knows what it returns.
            let side = |e: &Expr| match e {
                Expr::NumberLiteral(_) => Some(None),
                Expr::Call(_) => classify(checker, e)
                    .or_else(|| project_zero_dim(checker, e).then_some(REDUCED_TORCH))
                    .map(Some),
                e => classify(checker, e).map(Some),
            };
            // A reduced loss divided by a count (`sum(losses) / args.iterations`,
            // `total / len(batches)`) stays 0-dim: a divisor the file does not show to be a
            // reduced tensor is taken for a number. A product is not: a weight may be a vector.
            let divisor = |e: &Expr| match side(e) {
                Some(k) => Some(k),
                None if b.op == Operator::Div && sem::may_be_count(e, &checker.scopes) => {
                    Some(None)
                }
                None => None,
            };
            let (l, r) = (side(&b.left)?, divisor(&b.right)?);
            match (l, r) {
                (Some(REDUCED_METHOD), _) | (_, Some(REDUCED_METHOD)) => Some(REDUCED_METHOD),
                (Some(k), _) | (_, Some(k)) => Some(k),
                (None, None) => None,
            }
        }
        _ => None,
    }
}

/// Could the callee's last name be a loss or a reduction (cheap filter before resolving)?
fn maybe_loss_or_reduction(name: &str) -> bool {
    name.ends_with("Loss")
        || name.ends_with("_loss")
        || FUNCTIONAL.contains(&name)
        || matches!(name, "mean" | "sum")
}

fn classify_call(checker: &Checker, call: &ExprCall) -> Option<u8> {
    // The builtin `sum` of reduced losses is one (`loss = sum(losses)` after
    // `losses.append(res.abs().mean())` in the loop).
    if let Some(elements) = sem::summed_elements(call, checker.scope_body(), &checker.scopes) {
        return elements_kind(checker, &elements);
    }
    let last = match &*call.func {
        Expr::Name(n) => Some(n.id.as_str()),
        Expr::Attribute(a) => Some(a.attr.as_str()),
        _ => None,
    };
    let resolved = if last.is_some_and(maybe_loss_or_reduction) {
        checker.resolve(&call.func)
    } else {
        None
    };
    if let Some(q) = resolved {
        if q.starts_with("torch.nn.functional.") {
            return (torchvet_semantic::is_functional_loss(&q) && reduces(call))
                .then_some(REDUCED_TORCH);
        }
        if q.starts_with("torch.nn.") {
            return torchvet_semantic::loss_call_reduces(&q, call).then_some(LOSS_MODULE);
        }
        if matches!(q.as_str(), "torch.mean" | "torch.sum")
            && call.arguments.args.len() == 1
            && call.arguments.keywords.is_empty()
        {
            return Some(REDUCED_TORCH);
        }
        return None;
    }
    // `criterion(out, y)` with `criterion = nn.XLoss()`; `nn.XLoss()(out, y)`.
    let callee_kind = match &*call.func {
        Expr::Call(inner) => classify_call(checker, inner),
        Expr::Name(_) => bindings::kind_of(checker, &call.func),
        Expr::Attribute(a) if sem::name_of(&a.value) == Some("self") => {
            bindings::kind_of(checker, &call.func)
        }
        _ => None,
    };
    if callee_kind == Some(LOSS_MODULE) {
        return Some(REDUCED_TORCH);
    }
    // `criterion(out, y)` with `criterion` a parameter every call site passes a reducing
    // loss module to (`evaluate(model, nn.MSELoss(size_average=False))`), or a
    // `self.<attr>` the class sets to one: the project model knows.
    if callee_kind.is_none() && matches!(&*call.func, Expr::Name(_) | Expr::Attribute(_)) {
        if let (Some(r), Some(p)) = (checker.value_resolved(&call.func), checker.project()) {
            if p.model.call_gives_zero_dim(&r) {
                return Some(REDUCED_TORCH);
            }
        }
    }
    match sem::method_call(call) {
        Some(("mean" | "sum", _)) if call.arguments.is_empty() => Some(REDUCED_METHOD),
        _ => None,
    }
}

/// A loop's or comprehension's variable over a local list of reduced losses (`for l in
/// losses:` / `[l.data[0] for l in losses]` after `losses.append(criterion(out, y))`): the
/// kind the list's elements share, as the builtin `sum` of it is read.
fn element_of_summed(checker: &Checker, e: &Expr) -> Option<u8> {
    let Expr::Name(n) = e else { return None };
    let name = n.id.as_str();
    // The innermost comprehension or `for` statement of the function that binds the name
    // (`for l in losses`, `for i, l in enumerate(losses)`).
    let comprehension = checker.expr_stack().iter().rev().find_map(|x| {
        let generators = match x {
            Expr::ListComp(c) => &c.generators,
            Expr::SetComp(c) => &c.generators,
            Expr::Generator(g) => &g.generators,
            Expr::DictComp(d) => &d.generators,
            _ => return None,
        };
        generators
            .iter()
            .find_map(|g| sem::loop_element_source(&g.target, &g.iter, name))
            .map(|iter| (iter, x.start()))
    });
    let (iter, at) = match comprehension {
        Some(found) => found,
        None => checker.frame().loops.iter().rev().find_map(|l| match l {
            // A loop that binds the name again in its body is not followed.
            Stmt::For(f)
                if !sem::any_expr_in(
                    &f.body,
                    |x| matches!(x, Expr::Name(m) if m.id.as_str() == name && m.ctx.is_store()),
                ) =>
            {
                sem::loop_element_source(&f.target, &f.iter, name).map(|iter| (iter, f.start()))
            }
            _ => None,
        })?,
    };
    let list = sem::name_of(iter)?;
    let values = sem::appended_values(checker.scope_body(), list, at)?;
    elements_kind(checker, &values)
}

/// The kind every one of these values has (a method reduction among them makes the whole
/// one); `None` when one is not reduced or there are none.
fn elements_kind(checker: &Checker, elements: &[&Expr]) -> Option<u8> {
    if elements.is_empty() {
        return None;
    }
    let mut kind = REDUCED_TORCH;
    for e in elements {
        match classify(checker, e) {
            Some(REDUCED_TORCH) => {}
            Some(REDUCED_METHOD) => kind = REDUCED_METHOD,
            _ if project_zero_dim(checker, e) => {}
            _ => return None,
        }
    }
    Some(kind)
}

fn check_assign(checker: &mut Checker, stmt: &Stmt) {
    if !matches!(stmt, Stmt::Assign(_) | Stmt::AnnAssign(_)) {
        return;
    }
    bindings::record(checker, stmt, classify);
}

fn check_subscript(checker: &mut Checker, expr: &Expr) {
    let Expr::Subscript(sub) = expr else { return };
    if sem::int_value(&sub.slice) != Some(0) || matches!(&*sub.slice, Expr::BooleanLiteral(_)) {
        return;
    }
    let (tensor, via_data) = match &*sub.value {
        Expr::Attribute(a) if a.attr.as_str() == "data" => (&*a.value, true),
        v => (v, false),
    };
    let kind = classify(checker, tensor).or_else(|| element_of_summed(checker, tensor));
    let hit = match kind {
        Some(REDUCED_TORCH) => true,
        Some(REDUCED_METHOD) => via_data,
        None => project_zero_dim(checker, tensor),
        _ => false,
    };
    if !hit || !helpers::active(checker, 0, 5) {
        return;
    }
    let text = checker.text(expr.range()).to_string();
    let receiver = helpers::as_receiver(checker, tensor);
    checker
        .report(
            expr.range(),
            format!("`{text}` indexes a 0-dim tensor (a reduced loss): IndexError since torch 0.5; use `{receiver}.item()`"),
        )
        .set_fix(RawFix::safe(
            format!("Replace with `{receiver}.item()`"),
            vec![RawEdit::replace(expr.range(), format!("{receiver}.item()"))],
        ));
}

/// A 0-dim tensor from the project: a call of a project function that returns one (in any
/// file), or a name bound from such a call, from an element of a tuple such a function (or a
/// project loss module's `forward`) returns, or from a call of a project loss module.
fn project_zero_dim(checker: &Checker, tensor: &Expr) -> bool {
    use torchvet_semantic::project::facts::ZeroDim;
    use torchvet_semantic::project::Entity;
    // Only projects (or files) that define functions can return losses from them.
    if !checker.mentions("def ") && checker.project().is_none() {
        return false;
    }
    let Some(p) = checker.project_or_file() else {
        return false;
    };
    let Some(func) = crate::rules::facts::current_function(checker, p) else {
        return false;
    };
    let element_of = |z: ZeroDim, element: Option<u16>| match (z, element) {
        (ZeroDim::Whole, None) => true,
        (ZeroDim::Elements(v), Some(k)) => v.get(k as usize).copied().unwrap_or(false),
        _ => false,
    };
    let entity_zero_dim = |q: &str| -> ZeroDim {
        match p.entity(q).or_else(|| p.local(q)) {
            Some(Entity::Function(g)) => p.model.returns_zero_dim(g),
            _ => ZeroDim::No,
        }
    };
    match tensor {
        Expr::Call(c) => {
            let q = checker
                .resolve(&c.func)
                .or_else(|| sem::name_of(&c.func).map(str::to_string));
            q.is_some_and(|q| entity_zero_dim(&q) == ZeroDim::Whole)
        }
        Expr::Name(n) => {
            let Some((at, bindings)) = p.model.bindings_of(func, n.id.as_str()) else {
                return false;
            };
            !bindings.is_empty()
                && bindings.iter().all(|b| {
                    if b.project {
                        let Some(call) = p
                            .model
                            .function(at)
                            .calls
                            .iter()
                            .find(|c| c.range == b.call)
                        else {
                            return false;
                        };
                        let z = match p.model.callee_entity(at, &call.callee) {
                            Some(Entity::Function(g)) => p.model.returns_zero_dim(g),
                            _ => ZeroDim::No,
                        };
                        return element_of(z, b.element);
                    }
                    // `criterion(out, y)` with `criterion = ProjectLoss()`.
                    match p.model.bindings_of(at, &b.callee) {
                        Some((cat, cb)) => {
                            cb.iter().all(|inst| {
                                inst.project && inst.element.is_none() && {
                                    let call = p
                                        .model
                                        .function(cat)
                                        .calls
                                        .iter()
                                        .find(|c| c.range == inst.call);
                                    match call.and_then(|c| p.model.callee_entity(cat, &c.callee)) {
                                        Some(Entity::Class(cls)) => {
                                            element_of(p.model.forward_zero_dim(cls), b.element)
                                        }
                                        _ => false,
                                    }
                                }
                            }) && !cb.is_empty()
                        }
                        None => false,
                    }
                })
        }
        _ => false,
    }
}
