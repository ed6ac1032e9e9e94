use super::helpers;
use crate::checker::Checker;
use crate::fix::RawFix;
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::Ranged;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `volatile=` passed to `torch.autograd.Variable(...)` and for assignments
    /// `x.volatile = ...`.
    ///
    /// ## Why is this bad?
    /// `volatile=True` was the pre-0.4 way to run inference without recording a graph. Since
    /// torch 0.4 it has no effect (apart from a warning): inference code that relies on it
    /// records the whole autograd graph, using far more memory and time than intended.
    /// `torch.no_grad()` or `torch.inference_mode()` is the replacement.
    ///
    /// ## Example
    /// ```python
    /// x = Variable(img, volatile=True)
    /// out = model(x)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// with torch.no_grad():
    ///     out = model(img)
    /// ```
    ///
    /// ## Fix safety
    /// The suggested fix only removes the `volatile=` argument, which is ignored anyway; the
    /// inference still has to be wrapped in `torch.no_grad()` by hand, so the fix is display-only.
    ///
    /// ## References
    /// - [PyTorch 0.4.0 migration guide (volatile flag)](https://pytorch.org/blog/pytorch-0_4_0-migration-guide/)
    /// - [torch.no_grad](https://pytorch.org/docs/stable/generated/torch.no_grad.html)
    pub(crate) static VOLATILE_FLAG_REMOVED = {
        name: "volatile-flag-removed",
        code: "TV071",
        group: DeprecatedApi,
        severity: Warning,
        title: "Variable(x, volatile=True) no longer disables autograd (inference builds graphs)",
        autofix: Suggest,
        hooks: { call: check_call, stmt: check_assign },
    };
}

const MESSAGE: &str = "has had no effect since torch 0.4: autograd still records the graph here; run the inference under `torch.no_grad()` instead";

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if !matches!(
        name,
        Some("torch.autograd.Variable" | "torch.autograd.variable.Variable")
    ) {
        return;
    }
    let Some(kw) = call.arguments.find_keyword("volatile") else {
        return;
    };
    if !helpers::active(checker, 0, 4) {
        return;
    }
    // Under `torch.no_grad()` here, or in a function every caller runs without grad, the
    // graph is not recorded: the argument is dead, not a leak.
    let off = checker.in_no_grad()
        || checker
            .function()
            .is_some_and(|f| checker.called_only_without_grad(f.range.start()));
    let message = if off {
        "`volatile=` has had no effect since torch 0.4, and autograd is already off here (`torch.no_grad()`): the argument is dead; remove it".to_string()
    } else if !matches!(&kw.value, Expr::BooleanLiteral(b) if b.value) {
        format!("`volatile=` has had no effect since torch 0.4: whenever `{}` is meant to be true, autograd still records the graph; run that inference under `torch.no_grad()` instead", checker.text(kw.value.range()))
    } else {
        format!("`volatile=` {MESSAGE}")
    };
    let title = if off {
        "Remove `volatile=`"
    } else {
        "Remove `volatile=` and wrap the inference in `torch.no_grad()`"
    };
    let fix = helpers::delete_argument(checker, call, kw.range())
        .map(|e| RawFix::display_only(title, vec![e]));
    let d = checker.report(kw.range(), message);
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

fn check_assign(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::Assign(assign) = stmt else { return };
    for target in &assign.targets {
        let Expr::Attribute(a) = target else { continue };
        if a.attr.as_str() != "volatile" {
            continue;
        }
        // `self.volatile = ...` is an ordinary attribute of the user's own class.
        if matches!(&*a.value, Expr::Name(n) if n.id.as_str() == "self")
            || checker.resolve(&a.value).is_some()
        {
            continue;
        }
        if !helpers::active(checker, 0, 4) {
            return;
        }
        let text = checker.text(target.range()).to_string();
        checker.report(target.range(), format!("`{text} = ...` {MESSAGE}"));
    }
}
