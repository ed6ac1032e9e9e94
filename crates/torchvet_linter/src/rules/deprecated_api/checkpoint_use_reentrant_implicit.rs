use super::helpers;
use crate::checker::Checker;
use crate::fix::{add_keyword_argument, RawFix};
use ruff_python_ast::ExprCall;
use ruff_text_size::Ranged;
use torchvet_semantic::helpers as sem;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `torch.utils.checkpoint.checkpoint(...)` and `checkpoint_sequential(...)`
    /// calls that do not pass `use_reentrant=`.
    ///
    /// ## Why is this bad?
    /// Since torch 2.1 leaving `use_reentrant` implicit warns on every call, and the default is
    /// going to change from `True` to `False` (an error is planned in the meantime). The two
    /// implementations behave differently: the reentrant one does not support inputs that do
    /// not require grad (gradients silently become None), keyword arguments, or
    /// `torch.autograd.grad`. Choosing explicitly keeps the behaviour stable across upgrades.
    ///
    /// ## Example
    /// ```python
    /// from torch.utils.checkpoint import checkpoint
    /// y = checkpoint(block, x)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// y = checkpoint(block, x, use_reentrant=False)
    /// ```
    ///
    /// ## Fix safety
    /// The fix adds `use_reentrant=False`, the recommended implementation. It can change
    /// behaviour (different memory profile and semantics for inputs without grad), so it is
    /// unsafe; pass `use_reentrant=True` by hand to keep the legacy behaviour exactly.
    ///
    /// ## References
    /// - [torch.utils.checkpoint](https://pytorch.org/docs/stable/checkpoint.html)
    /// - [pytorch#100551](https://github.com/pytorch/pytorch/pull/100551)
    pub(crate) static CHECKPOINT_USE_REENTRANT_IMPLICIT = {
        name: "checkpoint-use-reentrant-implicit",
        code: "TV082",
        group: DeprecatedApi,
        severity: Warning,
        title: "torch.utils.checkpoint.checkpoint / checkpoint_sequential without explicit use_reentrant",
        autofix: Yes,
        torchfix: ["TOR003"],
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let Some(name) = name else { return };
    let func = match name {
        "torch.utils.checkpoint.checkpoint" => "checkpoint",
        "torch.utils.checkpoint.checkpoint_sequential" => "checkpoint_sequential",
        _ => return,
    };
    if call.arguments.find_keyword("use_reentrant").is_some() || sem::has_kwargs_splat(call) {
        return;
    }
    if !helpers::active(checker, 2, 1) {
        return;
    }
    let callee = checker.text(call.func.range()).to_string();
    checker
        .report(
            call.func.range(),
            format!("`{callee}(...)` without `use_reentrant=` warns since torch 2.1 and its default will change to False (different semantics): pass it explicitly"),
        )
        .set_fix(RawFix::unsafe_edit(
            format!("Pass `use_reentrant=False` to `{func}`"),
            vec![add_keyword_argument(call, "use_reentrant=False")],
        ));
}
