use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::style::values::{self_assignments, with_frame, Bound, Env};
use ruff_python_ast::{Expr, ExprContext, Stmt};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `.data` on values that are evidently tensors or parameters: `p.data` where
    /// `p` iterates `model.parameters()` (or an optimizer's `group["params"]`), `x.grad.data`,
    /// `layer.weight.data`, `self.<param>.data`, and names bound to torch tensor factories.
    ///
    /// ## Why is this bad?
    /// `.data` returns a tensor that shares storage with the original but is invisible to
    /// autograd: changes made through it do not bump the version counter, so autograd cannot
    /// detect that a value it saved for the backward pass was overwritten and silently
    /// computes wrong gradients. `.detach()` shares storage too but keeps the version
    /// tracking (an illegal change raises instead of corrupting gradients), and parameter
    /// updates belong under `torch.no_grad()`.
    ///
    /// `dataset.data`, `batch.data`, `df.data` and other non-tensor `.data` attributes stay
    /// silent: only receivers with tensor evidence are reported.
    ///
    /// ## Example
    /// ```python
    /// for p in model.parameters():
    ///     p.data -= lr * p.grad.data
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// with torch.no_grad():
    ///     for p in model.parameters():
    ///         p -= lr * p.grad
    /// ```
    ///
    /// ## Fix safety
    /// For plain reads a display-only fix shows `.detach()` instead of `.data`. It is never
    /// applied automatically: with version tracking restored, code that relied on bypassing it
    /// raises at backward time. Writes and in-place calls get no fix (they need a
    /// `torch.no_grad()` block).
    ///
    /// ## References
    /// - [PyTorch 0.4.0 migration guide: what about .data?](https://pytorch.org/blog/pytorch-0_4_0-migration-guide/)
    /// - [torch.Tensor.detach](https://pytorch.org/docs/stable/generated/torch.Tensor.detach.html)
    /// - [pytorch/examples#767](https://github.com/pytorch/examples/pull/767)
    pub(crate) static TENSOR_DATA_ATTRIBUTE = {
        name: "tensor-data-attribute",
        code: "TV089",
        group: Style,
        severity: Info,
        title: "Tensor .data access (bypasses autograd version tracking)",
        autofix: Suggest,
        hooks: { expr: check_expr, expr_on: crate::registry::ExprKinds::ATTRIBUTE },
    };
}

/// Attributes of modules/tensors that are tensors.
fn is_tensor_attribute(attr: &str) -> bool {
    matches!(attr, "grad" | "weight" | "bias")
}

/// Torch calls whose result is a tensor or a parameter.
fn is_tensor_producer(q: &str) -> bool {
    if q == "torch.nn.Parameter" || q == "torch.nn.parameter.Parameter" {
        return true;
    }
    matches!(
        q.strip_prefix("torch."),
        Some(
            "tensor"
                | "as_tensor"
                | "from_numpy"
                | "zeros"
                | "ones"
                | "empty"
                | "full"
                | "rand"
                | "randn"
                | "randint"
                | "arange"
                | "linspace"
                | "eye"
                | "zeros_like"
                | "ones_like"
                | "empty_like"
                | "randn_like"
                | "rand_like"
        )
    )
}

/// An iterable of parameters: `m.parameters()`, `m.buffers()`, `group["params"]`,
/// `filter(f, m.parameters())`, `list(m.parameters())` (element index `None`), or
/// `m.named_parameters()` / `m.named_buffers()` (element index 1).
fn yields_parameters(iter: &Expr, idx: Option<usize>) -> bool {
    let Expr::Call(c) = iter else {
        return idx.is_none()
            && matches!(iter, Expr::Subscript(s) if helpers::str_value(&s.slice) == Some("params"));
    };
    match helpers::method_call(c) {
        Some(("parameters" | "buffers", _)) => idx.is_none(),
        Some(("named_parameters" | "named_buffers", _)) => idx == Some(1),
        _ => match helpers::name_of(&c.func) {
            Some("filter") => {
                idx.is_none()
                    && c.arguments
                        .args
                        .get(1)
                        .is_some_and(|a| yields_parameters(a, None))
            }
            Some("list" | "tuple" | "reversed") => c
                .arguments
                .args
                .first()
                .is_some_and(|a| yields_parameters(a, idx)),
            _ => false,
        },
    }
}

fn is_tensor(checker: &Checker, env: Env<'_>, expr: &Expr) -> bool {
    match expr {
        Expr::Attribute(a) => {
            if is_tensor_attribute(a.attr.as_str()) {
                return checker.resolve(expr).is_none();
            }
            // `self.<attr>` assigned a parameter/tensor in `__init__` of this module class.
            let (Some(class), Some(attr)) = (env.module_class, helpers::self_attribute(expr))
            else {
                return false;
            };
            let Some(init) = class.body.iter().find_map(|s| match s {
                Stmt::FunctionDef(f) if f.name.as_str() == "__init__" => Some(f),
                _ => None,
            }) else {
                return false;
            };
            let values = self_assignments(&init.body, attr);
            !values.is_empty()
                && values.iter().all(|v| {
                    matches!(v, Expr::Call(c) if checker.resolve(&c.func).is_some_and(|q| is_tensor_producer(&q)))
                })
        }
        Expr::Name(n) => {
            if checker.scopes.lookup(n.id.as_str()).is_some() {
                return false;
            }
            match checker.binding_at(n.id.as_str(), n.start()) {
                Some(Bound::ForIter(iter, idx) | Bound::CompIter(iter, idx)) => {
                    yields_parameters(iter, idx)
                }
                Some(Bound::Value(Expr::Call(c))) => checker
                    .resolve(&c.func)
                    .is_some_and(|q| is_tensor_producer(&q)),
                Some(Bound::Value(v @ Expr::Attribute(a))) => {
                    is_tensor_attribute(a.attr.as_str()) && checker.resolve(v).is_none()
                }
                _ => false,
            }
        }
        _ => false,
    }
}

fn check_expr(checker: &mut Checker, expr: &Expr) {
    let Expr::Attribute(attr) = expr else { return };
    if attr.attr.as_str() != "data" {
        return;
    }
    if !matches!(&*attr.value, Expr::Name(_) | Expr::Attribute(_)) {
        return;
    }
    if !with_frame_cheap(checker, &attr.value) {
        return;
    }
    let receiver = checker.text(attr.value.range());
    let parent = checker.parent_expr();
    let in_place_call = matches!(parent, Some(Expr::Attribute(p)) if p.attr.as_str().ends_with('_') && !p.attr.as_str().starts_with('_'));
    let written = !matches!(attr.ctx, ExprContext::Load)
        || matches!(parent, Some(Expr::Subscript(s)) if !matches!(s.ctx, ExprContext::Load));
    let msg = if written || in_place_call {
        format!("`{receiver}.data` is modified behind autograd's back (no version-counter bump): gradients that depend on `{receiver}` can silently be wrong; update `{receiver}` itself under `torch.no_grad()`")
    } else {
        format!("`{receiver}.data` bypasses autograd's version tracking: use `{receiver}.detach()`")
    };
    let dot_data = TextRange::new(attr.value.end(), attr.end());
    let diagnostic = checker.report(expr.range(), msg);
    if !(written || in_place_call) {
        diagnostic.set_fix(RawFix::display_only(
            "Use `.detach()`",
            vec![RawEdit::replace(dot_data, ".detach()")],
        ));
    }
}

/// Tensor evidence for the receiver: cheap structural checks first, the frame scan last.
fn with_frame_cheap(checker: &Checker, receiver: &Expr) -> bool {
    match receiver {
        Expr::Attribute(a) if is_tensor_attribute(a.attr.as_str()) => {
            checker.resolve(receiver).is_none()
        }
        Expr::Attribute(_) if helpers::self_attribute(receiver).is_none() => false,
        Expr::Attribute(_) if checker.module_method().is_none() => false,
        _ => with_frame(checker, |env| is_tensor(checker, env, receiver)),
    }
}
