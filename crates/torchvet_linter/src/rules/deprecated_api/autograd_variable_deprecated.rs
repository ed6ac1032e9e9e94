use super::helpers;
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers as sem;

crate::declare_rule! {
    /// ## What it does
    /// Checks for calls of `torch.autograd.Variable(...)` (however it is imported).
    ///
    /// ## Why is this bad?
    /// Since torch 0.4 `Variable` and `Tensor` are the same thing: the wrapper does nothing
    /// useful any more except detach its argument from the graph, which is rarely what old code
    /// meant. `requires_grad=True` belongs on the factory call (`torch.randn(3,
    /// requires_grad=True)`) or on `tensor.requires_grad_()`.
    ///
    /// ## Example
    /// ```python
    /// x = Variable(torch.randn(3), requires_grad=True)
    /// images = Variable(images)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// x = torch.randn(3, requires_grad=True)
    /// images = images
    /// ```
    ///
    /// ## Fix safety
    /// `Variable(x)` becomes `x` and `Variable(x, requires_grad=True)` becomes
    /// `x.requires_grad_()`. That is exact when `x` is a fresh tensor from a torch factory
    /// (`torch.randn(...)`, `torch.from_numpy(...)`, ...): safe. Otherwise `Variable` returned a
    /// detached alias and the plain `x` may still carry autograd history, so the fix is unsafe.
    /// Calls with `volatile=`, other keywords or `*args` get no fix.
    ///
    /// ## References
    /// - [PyTorch 0.4.0 migration guide](https://pytorch.org/blog/pytorch-0_4_0-migration-guide/)
    /// - [Autograd mechanics](https://pytorch.org/docs/stable/notes/autograd.html)
    pub(crate) static AUTOGRAD_VARIABLE_DEPRECATED = {
        name: "autograd-variable-deprecated",
        code: "TV113",
        group: DeprecatedApi,
        severity: Info,
        title: "torch.autograd.Variable(...) wrapper is deprecated (Variable merged into Tensor)",
        autofix: Yes,
        hooks: { call: check_call },
    };
}

const FACTORIES: &[&str] = &[
    "tensor",
    "from_numpy",
    "zeros",
    "ones",
    "empty",
    "full",
    "rand",
    "randn",
    "randint",
    "arange",
    "linspace",
    "eye",
    "zeros_like",
    "ones_like",
    "rand_like",
    "randn_like",
    "empty_like",
    "full_like",
    "as_tensor",
    "FloatTensor",
    "LongTensor",
    "Tensor",
    "stack",
    "cat",
];

fn is_fresh_tensor(checker: &Checker, expr: &Expr) -> bool {
    let Expr::Call(c) = expr else { return false };
    checker
        .resolve(&c.func)
        .and_then(|q| q.strip_prefix("torch.").map(|s| FACTORIES.contains(&s)))
        .unwrap_or(false)
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if !matches!(
        name,
        Some("torch.autograd.Variable" | "torch.autograd.variable.Variable")
    ) || !helpers::active(checker, 0, 4)
    {
        return;
    }
    let callee = checker.text(call.func.range()).to_string();
    let fix = fix(checker, call);
    let d = checker.report(
        call.func.range(),
        format!("`{callee}(...)` is a deprecated no-op wrapper since torch 0.4 (it only detaches its argument): use the tensor itself"),
    );
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

fn fix(checker: &Checker, call: &ExprCall) -> Option<RawFix> {
    if sem::has_args_splat(call) || sem::has_kwargs_splat(call) {
        return None;
    }
    let [arg] = &*call.arguments.args else {
        return None;
    };
    let requires_grad = match call.arguments.keywords.as_slice() {
        [] => false,
        [k] if k
            .arg
            .as_ref()
            .is_some_and(|a| a.as_str() == "requires_grad") =>
        {
            sem::is_truthy(&k.value)?
        }
        _ => return None,
    };
    if checker.text(call.range()).contains('#') {
        return None;
    }
    let new = if requires_grad {
        format!("{}.requires_grad_()", helpers::as_receiver(checker, arg))
    } else {
        checker.text(arg.range()).to_string()
    };
    let edits = vec![RawEdit::replace(call.range(), new.clone())];
    Some(if is_fresh_tensor(checker, arg) {
        RawFix::safe(format!("Replace with `{new}`"), edits)
    } else {
        RawFix::unsafe_edit(
            format!("Replace with `{new}` (no longer detached from the graph)"),
            edits,
        )
    })
}
