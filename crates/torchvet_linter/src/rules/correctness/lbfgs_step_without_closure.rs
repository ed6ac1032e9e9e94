use crate::checker::Checker;
use ruff_python_ast::ExprCall;
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::Kind;

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
        hooks: { call: check_call },
    };
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
    if !matches!(checker.kind_of(receiver), Kind::Optimizer(n) if n == "LBFGS") {
        return;
    }
    let created = checker.kind_origin(receiver);
    let text = checker.text(receiver.range());
    checker
        .report(
            call.range(),
            format!("`{text}` is an LBFGS optimizer: `step()` needs a closure that recomputes the loss (it re-evaluates it several times per step) and fails without one"),
        )
        .add_related_opt(created, "the optimizer is created here");
}
