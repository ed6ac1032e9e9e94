use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `torch.no_grad()`, `torch.inference_mode()`, `torch.enable_grad()` and
    /// `torch.autocast(...)` called as a statement of their own.
    ///
    /// ## Why is this bad?
    /// These objects are context managers (or decorators): they change the grad mode only
    /// between `__enter__` and `__exit__`. Calling one and discarding the result does nothing,
    /// so the code that follows still records the autograd graph (and keeps activations alive)
    /// or still runs in full precision.
    ///
    /// ## Example
    /// ```python
    /// torch.no_grad()
    /// preds = model(x)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// with torch.no_grad():
    ///     preds = model(x)
    /// ```
    ///
    /// ## Fix safety
    /// For `no_grad()` and `enable_grad()` the fix replaces the call with
    /// `torch.set_grad_enabled(False)` / `torch.set_grad_enabled(True)`, the global switch the
    /// author probably meant. It changes behaviour for all following code of the thread (grad
    /// mode stays off until switched back), so it is unsafe. The other calls have no fix.
    ///
    /// ## References
    /// - [torch.no_grad](https://pytorch.org/docs/stable/generated/torch.no_grad.html)
    /// - [torch.set_grad_enabled](https://pytorch.org/docs/stable/generated/torch.set_grad_enabled.html)
    /// - [min-dalle PR 24](https://github.com/kuprel/min-dalle/pull/24)
    pub(crate) static NO_GRAD_CALL_WITHOUT_WITH = {
        name: "no-grad-call-without-with",
        code: "TV091",
        group: Correctness,
        severity: Warning,
        title: "torch.no_grad()/inference_mode()/enable_grad() called as a bare statement",
        autofix: Yes,
        hooks: { stmt: check_stmt },
    };
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::Expr(e) = stmt else { return };
    let Expr::Call(call) = &*e.value else { return };
    let Some(q) = checker.resolve(&call.func) else {
        return;
    };
    let (what, switch) = match q.as_str() {
        "torch.no_grad" | "torch.autograd.no_grad" | "torch.autograd.grad_mode.no_grad" => {
            ("gradient recording", Some("False"))
        }
        "torch.enable_grad"
        | "torch.autograd.enable_grad"
        | "torch.autograd.grad_mode.enable_grad" => ("gradient recording", Some("True")),
        "torch.inference_mode"
        | "torch.autograd.inference_mode"
        | "torch.autograd.grad_mode.inference_mode" => ("inference mode", None),
        "torch.autocast"
        | "torch.amp.autocast"
        | "torch.cuda.amp.autocast"
        | "torch.cpu.amp.autocast" => ("mixed precision", None),
        _ => return,
    };
    let text = checker.text(call.func.range());
    let args = if call.arguments.is_empty() { "" } else { "..." };
    // `torch.no_grad()` -> `torch.set_grad_enabled(False)` with the file's own spelling of torch.
    let fix = match (switch, &*call.func) {
        (Some(value), Expr::Attribute(a))
            if call.arguments.is_empty() && helpers::dotted(&a.value).is_some() =>
        {
            let prefix = checker.text(a.value.range());
            let replacement = format!("{prefix}.set_grad_enabled({value})");
            Some(RawFix::unsafe_edit(
                format!("Replace with `{replacement}`"),
                vec![RawEdit::replace(call.range(), replacement)],
            ))
        }
        _ => None,
    };
    let diag = checker.report(
        call.range(),
        format!("`{text}({args})` creates a context manager and discards it: {what} is not changed for the code that follows; use it in a `with` statement"),
    );
    if let Some(fix) = fix {
        diag.set_fix(fix);
    }
}
