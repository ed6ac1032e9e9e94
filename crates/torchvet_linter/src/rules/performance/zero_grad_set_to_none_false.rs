use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for gradients cleared by writing zeros: `optimizer.zero_grad(set_to_none=False)`,
    /// `model.zero_grad(False)`, and loops such as `for p in model.parameters(): p.grad.zero_()`.
    ///
    /// ## Why is this bad?
    /// Zeroing launches a memset kernel per parameter and keeps every gradient buffer
    /// allocated between steps. Setting gradients to `None` instead (the default of
    /// `zero_grad()` since torch 2.0) costs nothing, frees the memory until the next backward,
    /// and lets the next backward write gradients instead of accumulating into zeros.
    ///
    /// ## Example
    /// ```python
    /// optimizer.zero_grad(set_to_none=False)
    /// for p in model.parameters():
    ///     p.grad.zero_()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// optimizer.zero_grad()  # set_to_none=True is the default since torch 2.0
    /// for p in model.parameters():
    ///     p.grad = None
    /// ```
    ///
    /// ## Fix safety
    /// The fix turns `set_to_none=False` into `set_to_none=True` and `p.grad.zero_()` into
    /// `p.grad = None`. It is unsafe: code that reads `.grad` before the next backward now sees
    /// `None` instead of a zero tensor, and optimizers skip parameters whose gradient is `None`
    /// (a parameter that receives no gradient in a step is then not decayed or moved by
    /// momentum), which can change training.
    ///
    /// ## References
    /// - [Optimizer.zero_grad](https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html)
    /// - [Performance tuning guide: use parameter.grad = None](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html)
    pub(crate) static ZERO_GRAD_SET_TO_NONE_FALSE = {
        name: "zero-grad-set-to-none-false",
        code: "TV120",
        group: Performance,
        severity: Info,
        title: "zero_grad(set_to_none=False) or manual p.grad.zero_() (extra memset; default is None since 2.0)",
        autofix: Yes,
        torchfix: ["TOR402"],
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    let Some((method, receiver)) = helpers::method_call(call) else {
        return;
    };
    match method {
        "zero_grad" => check_zero_grad(checker, call),
        "zero_" => check_manual_zero(checker, call, receiver),
        _ => {}
    }
}

fn check_zero_grad(checker: &mut Checker, call: &ExprCall) {
    let Some(flag) = helpers::argument(call, "set_to_none", 0) else {
        return;
    };
    if !matches!(flag, Expr::BooleanLiteral(b) if !b.value) {
        return;
    }
    let text = checker.text(call.func.range());
    let written = if helpers::keyword(call, "set_to_none").is_some() {
        "set_to_none=False"
    } else {
        "False"
    };
    let fix = RawFix::unsafe_edit(
        "Use `set_to_none=True`",
        vec![RawEdit::replace(flag.range(), "True")],
    );
    checker
        .report(
            call.range(),
            format!(
                "`{text}({written})` fills every gradient with zeros (one memset per parameter) and keeps the buffers allocated; setting them to None is free"
            ),
        )
        .set_fix(fix);
}

/// `p.grad.zero_()` / `p.grad.data.zero_()` where `p` is the target of an enclosing
/// `for p in X.parameters():` loop of this function.
fn check_manual_zero(checker: &mut Checker, call: &ExprCall, receiver: &Expr) {
    if !call.arguments.is_empty() {
        return;
    }
    let grad = match receiver {
        Expr::Attribute(a) if a.attr.as_str() == "data" => &*a.value,
        e => e,
    };
    let Expr::Attribute(g) = grad else { return };
    if g.attr.as_str() != "grad" {
        return;
    }
    let Some(param) = helpers::name_of(&g.value) else {
        return;
    };
    // Custom optimizers implement `zero_grad` this way on purpose.
    if checker
        .function()
        .is_some_and(|f| f.name.as_str() == "zero_grad")
    {
        return;
    }
    let over_parameters = checker.frame().loops.iter().any(|l| {
        let Stmt::For(f) = l else { return false };
        helpers::name_of(&f.target) == Some(param)
            && matches!(&*f.iter, Expr::Call(c) if helpers::method_call(c).is_some_and(|(m, _)| m == "parameters"))
    });
    if !over_parameters {
        return;
    }
    // Offer `p.grad = None` when the call is the whole statement.
    let stmt_is_call =
        matches!(checker.current_stmt(), Some(Stmt::Expr(e)) if e.value.range() == call.range());
    let text = checker.text(call.range());
    let fix = stmt_is_call.then(|| {
        RawFix::unsafe_edit(
            format!("Replace with `{param}.grad = None`"),
            vec![RawEdit::replace(
                call.range(),
                format!("{param}.grad = None"),
            )],
        )
    });
    let d = checker.report(
        call.range(),
        format!("`{text}` zeroes each gradient with a memset kernel and keeps it allocated; `{param}.grad = None` is free"),
    );
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::performance::helpers::apply_fixes;

    #[test]
    fn fixes() {
        let src = "import torch\nopt.zero_grad(set_to_none=False)\nfor p in m.parameters():\n    p.grad.zero_()\n";
        let (n, out) = apply_fixes("zero-grad-set-to-none-false", src);
        assert_eq!(n, 2);
        assert_eq!(out, "import torch\nopt.zero_grad(set_to_none=True)\nfor p in m.parameters():\n    p.grad = None\n");
    }
}
