use super::helpers::LocalKinds;
use crate::checker::Checker;
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use std::cell::RefCell;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `optimizer.step()` without a closure when `optimizer` was created by
    /// `torch.optim.LBFGS`.
    ///
    /// ## Why is this bad?
    /// L-BFGS evaluates the loss several times per step (line search and inner iterations), so
    /// its `step` takes a closure that clears the gradients, recomputes the loss, calls
    /// `backward()` and returns the loss. Without it the call fails with
    /// `TypeError: 'NoneType' object is not callable`.
    ///
    /// ## Example
    /// ```python
    /// optimizer = torch.optim.LBFGS(model.parameters())
    /// loss = criterion(model(x), y)
    /// loss.backward()
    /// optimizer.step()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// optimizer = torch.optim.LBFGS(model.parameters())
    ///
    /// def closure():
    ///     optimizer.zero_grad()
    ///     loss = criterion(model(x), y)
    ///     loss.backward()
    ///     return loss
    ///
    /// optimizer.step(closure)
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: the closure must recompute the loss from the surrounding code.
    ///
    /// ## References
    /// - [torch.optim.LBFGS](https://pytorch.org/docs/stable/generated/torch.optim.LBFGS.html)
    /// - [Taking an optimization step with a closure](https://pytorch.org/docs/stable/optim.html#optimizer-step-closure)
    /// - [neuromancer issue 244](https://github.com/pnnl/neuromancer/issues/244)
    pub(crate) static LBFGS_STEP_WITHOUT_CLOSURE = {
        name: "lbfgs-step-without-closure",
        code: "TV075",
        group: Correctness,
        severity: Critical,
        title: "torch.optim.LBFGS.step() called without a closure",
        autofix: No,
        hooks: { stmt: check_stmt, call: check_call, end: clear },
    };
}

thread_local! {
    static KINDS: RefCell<LocalKinds<TextRange>> = RefCell::new(LocalKinds::default());
}

fn classify(checker: &Checker, _kinds: &LocalKinds<TextRange>, value: &Expr) -> Option<TextRange> {
    let Expr::Call(call) = value else { return None };
    let q = checker.resolve(&call.func)?;
    matches!(q.as_str(), "torch.optim.LBFGS" | "torch.optim.lbfgs.LBFGS").then(|| value.range())
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    // The table only matters in files that can create such an object.
    if !checker.mentions("LBFGS") {
        return;
    }
    KINDS.with_borrow_mut(|k| k.observe(checker, stmt, classify));
}

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    let Some(("step", receiver)) = helpers::method_call(call) else {
        return;
    };
    if !call.arguments.args.is_empty()
        || helpers::keyword(call, "closure").is_some()
        || helpers::has_kwargs_splat(call)
    {
        return;
    }
    let Some(created) = KINDS.with_borrow(|k| k.get(checker, receiver)) else {
        return;
    };
    let text = checker.text(receiver.range());
    checker
        .report(
            call.range(),
            format!("`{text}` is an LBFGS optimizer: `step()` needs a closure that recomputes the loss (it re-evaluates it several times per step) and fails without one"),
        )
        .add_related(created, "the optimizer is created here");
}

fn clear(_checker: &mut Checker) {
    KINDS.with_borrow_mut(LocalKinds::clear);
}
