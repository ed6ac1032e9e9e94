use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `model.load_state_dict(..., strict=False)` used as a statement, with the
    /// returned missing and unexpected keys thrown away.
    ///
    /// ## Why is this bad?
    /// With `strict=False`, keys that do not match are skipped without any message. A prefix
    /// mismatch (`module.` from DataParallel/DDP, `model.` from Lightning) makes every key
    /// mismatch, so nothing is loaded and the model keeps its random initialisation. The
    /// return value lists `missing_keys` and `unexpected_keys`: check or log it. A call whose
    /// result is kept, passed on (`print(...)`, `logger.info(...)`), or shown as the last line
    /// of a notebook cell is not reported.
    ///
    /// ## Example
    /// ```python
    /// model.load_state_dict(state, strict=False)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// result = model.load_state_dict(state, strict=False)
    /// assert not result.unexpected_keys, result
    /// ```
    ///
    /// ## Fix safety
    /// The fix (display only) binds the result to a name so it can be checked; what to check
    /// depends on which keys are expected to be missing, so it is never applied automatically.
    ///
    /// ## References
    /// - [nn.Module.load_state_dict](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.load_state_dict)
    /// - [pytorch issue 3805](https://github.com/pytorch/pytorch/issues/3805)
    /// - [pytorch issue 123510](https://github.com/pytorch/pytorch/issues/123510)
    pub(crate) static LOAD_STATE_DICT_STRICT_FALSE = {
        name: "load-state-dict-strict-false",
        code: "TV072",
        group: Correctness,
        severity: Info,
        title: "load_state_dict(strict=False) with the missing/unexpected keys ignored",
        autofix: Suggest,
        hooks: { stmt: check_stmt },
    };
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::Expr(e) = stmt else { return };
    let Expr::Call(call) = &*e.value else { return };
    let Some(("load_state_dict", receiver)) = helpers::method_call(call) else {
        return;
    };
    let Some(strict) = helpers::keyword(call, "strict") else {
        return;
    };
    if helpers::is_truthy(strict) != Some(false) {
        return;
    }
    // `torch.nn.Module.load_state_dict(self, ...)`-style calls through a module path are rare
    // and not about a model instance; skip receivers that are imports.
    if checker.resolve(receiver).is_some() {
        return;
    }
    // The last line of a notebook cell: Jupyter displays the missing/unexpected keys.
    if super::helpers::displayed_by_notebook(checker, stmt) {
        return;
    }
    let text = checker.text(receiver.range());
    checker
        .report(
            call.range(),
            format!("`{text}.load_state_dict(..., strict=False)` skips every key that does not match and its report of missing/unexpected keys is discarded: a prefix mismatch loads nothing, silently"),
        )
        .set_fix(RawFix::display_only(
            "Keep the result and check `missing_keys` / `unexpected_keys`",
            vec![RawEdit::insert(call.start(), "load_result = ")],
        ));
}
