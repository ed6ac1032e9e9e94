use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::Ranged;
use torchvet_semantic::dataflow::Prop;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `loss.backward()` (also `scaler.scale(loss).backward()`,
    /// `accelerator.backward(loss)` and `torch.autograd.backward(loss)`) without a gradient
    /// argument, where `loss` comes from a loss built with `reduction='none'` (a loss object
    /// or an `F.*` loss call) and was not reduced with `.mean()`, `.sum()` or indexing since.
    ///
    /// ## Why is this bad?
    /// `backward()` without `gradient=` works only on a scalar. An unreduced loss has one value
    /// per sample (or per element), so the call raises `RuntimeError: grad can be implicitly
    /// created only for scalar outputs` at the first training step. Multiplying by weights
    /// or a mask does not reduce it.
    ///
    /// This rule is in preview: following values across helper functions is limited, and a
    /// reduction done by code it cannot see would make it wrong.
    ///
    /// ## Example
    /// ```python
    /// crit = nn.MSELoss(reduction='none')
    /// crit(p, y).backward()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// crit(p, y).mean().backward()
    /// ```
    ///
    /// ## Fix safety
    /// The fix inserts `.mean()` before `.backward()`. It is unsafe: `mean` is the default
    /// reduction, but the author may have meant `sum` or a weighted average; review it.
    ///
    /// ## References
    /// - [torch.Tensor.backward](https://pytorch.org/docs/stable/generated/torch.Tensor.backward.html)
    /// - [WisconsinAIVision/MaskPoint#7](https://github.com/WisconsinAIVision/MaskPoint/issues/7)
    pub(crate) static BACKWARD_ON_NON_SCALAR = {
        name: "backward-on-non-scalar",
        code: "TV027",
        group: Correctness,
        severity: Critical,
        title: "backward() on a non-scalar tensor without gradient= (e.g. a reduction='none' loss)",
        autofix: Suggest,
        preview: true,
        hooks: { call: check_call },
    };
}

fn is_atom(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Name(_) | Expr::Attribute(_) | Expr::Call(_) | Expr::Subscript(_)
    )
}

fn check_call(checker: &mut Checker, call: &ExprCall, q: Option<&str>) {
    // The tensor that gets differentiated, and whether the fix can append `.mean()` to it.
    let target: &Expr = match &*call.func {
        Expr::Attribute(a) if a.attr.as_str() == "backward" => {
            if q == Some("torch.autograd.backward") {
                if call.arguments.args.len() != 1
                    || helpers::keyword(call, "grad_tensors").is_some()
                {
                    return;
                }
                &call.arguments.args[0]
            } else if call.arguments.is_empty() {
                &a.value
            } else if call.arguments.args.len() == 1
                && call.arguments.keywords.is_empty()
                && checker.text(a.value.range()).ends_with("accelerator")
            {
                &call.arguments.args[0]
            } else {
                return;
            }
        }
        _ => return,
    };
    if !checker.mentions("none") && !checker.mentions("reduce") {
        return;
    }
    let v = checker.taint_of(target);
    let Some(f) = v.definite(Prop::ReducedNone).cloned() else {
        return;
    };
    let name = super::taint_helpers::short(checker.text(target.range()));
    // `scaler.scale(loss).backward()`: reduce the loss inside `scale(...)`.
    let target = match target {
        Expr::Call(c)
            if matches!(helpers::method_call(c), Some(("scale", _)))
                && c.arguments.args.len() == 1
                && c.arguments.keywords.is_empty() =>
        {
            &c.arguments.args[0]
        }
        t => t,
    };
    let text = checker.text(target.range());
    let replacement = if is_atom(target) {
        format!("{text}.mean()")
    } else {
        format!("({text}).mean()")
    };
    let diag = checker.report(
        call.range(),
        format!(
            "`{name}` is an unreduced loss (built with reduction='none'): backward() without a gradient raises \"grad can be implicitly created only for scalar outputs\"; reduce it first (e.g. `.mean()`)"
        ),
    );
    diag.add_related(f.origin, "the loss built with reduction='none'");
    diag.set_fix(RawFix::unsafe_edit(
        "Reduce with `.mean()` before backward()",
        vec![RawEdit::replace(target.range(), replacement)],
    ));
}
