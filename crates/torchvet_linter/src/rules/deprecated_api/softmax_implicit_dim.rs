use super::helpers;
use crate::checker::Checker;
use crate::fix::{add_keyword_argument, RawEdit, RawFix};
use ruff_python_ast::ExprCall;
use ruff_text_size::{Ranged, TextLen};
use torchvet_semantic::helpers as sem;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `F.softmax`, `F.log_softmax`, `F.softmin`, `torch.softmax`,
    /// `torch.log_softmax` calls and `nn.Softmax()`, `nn.LogSoftmax()`, `nn.Softmin()`
    /// modules built without `dim` (or with `dim=None`). A call given a NumPy array
    /// (`F.softmax(out.cpu().numpy())`) is not reported: it fails at `input.dim()` before any
    /// axis is guessed, and `dim=` would not fix it.
    ///
    /// ## Why is this bad?
    /// Without `dim` torch guesses the axis from the input's rank (dim 0 for 0-, 1- and 3-D
    /// inputs, dim 1 otherwise) and warns. For a batch of sequences `(N, L, C)` that normalises
    /// over the batch: the probabilities are silently wrong. The functions in the `torch`
    /// namespace raise a `TypeError` instead. `torch.softmax(x, axis=-1)` is fine: the `torch`
    /// functions accept NumPy's `axis` as an alias of `dim`; `F.softmax` and `nn.Softmax`
    /// do not, and `axis=` there is reported as the `TypeError` it raises.
    ///
    /// ## Example
    /// ```python
    /// probs = F.softmax(logits)
    /// self.act = nn.LogSoftmax()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// probs = F.softmax(logits, dim=-1)
    /// self.act = nn.LogSoftmax(dim=-1)
    /// ```
    ///
    /// ## Fix safety
    /// The fix passes `dim=-1` (or replaces `dim=None`). That matches the legacy guess only
    /// when the input is 2-D (or 1-D), which the linter cannot see, so it is unsafe. Renaming
    /// `axis=` to `dim=` in `F.softmax(x, axis=...)` turns a call that raises into one that
    /// runs: unsafe too.
    ///
    /// ## References
    /// - [torch.nn.functional.softmax](https://pytorch.org/docs/stable/generated/torch.nn.functional.softmax.html)
    /// - [torch.nn.Softmax](https://pytorch.org/docs/stable/generated/torch.nn.Softmax.html)
    pub(crate) static SOFTMAX_IMPLICIT_DIM = {
        name: "softmax-implicit-dim",
        code: "TV054",
        group: DeprecatedApi,
        severity: Warning,
        title: "F.softmax/log_softmax/softmin or nn.Softmax/LogSoftmax without dim",
        autofix: Suggest,
        hooks: { call: check_call },
    };
}

/// The position of `dim` for the callee, and whether it is a module class.
fn dim_position(q: &str) -> Option<(usize, bool)> {
    Some(match q {
        "torch.nn.functional.softmax"
        | "torch.nn.functional.log_softmax"
        | "torch.nn.functional.softmin" => (1, false),
        "torch.softmax" | "torch.log_softmax" => (1, false),
        "torch.nn.Softmax" | "torch.nn.LogSoftmax" | "torch.nn.Softmin" => (0, true),
        "torch.nn.modules.activation.Softmax"
        | "torch.nn.modules.activation.LogSoftmax"
        | "torch.nn.modules.activation.Softmin" => (0, true),
        _ => return None,
    })
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let Some((position, is_module)) = name.and_then(dim_position) else {
        return;
    };
    if sem::has_args_splat(call) || sem::has_kwargs_splat(call) {
        return;
    }
    if let Some(axis) = call.arguments.find_keyword("axis") {
        // `torch.softmax(x, axis=-1)`: the torch namespace's C++ bindings accept NumPy's
        // `axis` as an alias of `dim`. The Python functions and modules of `torch.nn` do not.
        if name.is_some_and(|q| q.starts_with("torch.nn.")) && helpers::active(checker, 0, 3) {
            let callee = checker.text(call.func.range()).to_string();
            let name_range = ruff_text_size::TextRange::at(axis.start(), "axis".text_len());
            checker
                .report(
                    call.func.range(),
                    format!("`{callee}(...)` has no `axis` parameter (only the `torch.softmax`-style functions accept it as an alias of `dim`): this call raises TypeError; pass `dim=`"),
                )
                .set_fix(RawFix::unsafe_edit(
                    "Rename `axis=` to `dim=`",
                    vec![RawEdit::replace(name_range, "dim")],
                ));
        }
        return;
    }
    let dim = sem::argument(call, "dim", position);
    if dim.is_some_and(|d| !matches!(sem::literal(d), Some(sem::Literal::None))) {
        return;
    }
    if !helpers::active(checker, 0, 3) {
        return;
    }
    // A NumPy input (`F.softmax(out.cpu().numpy())`) raises at `input.dim()` before any axis
    // is guessed: passing `dim=` would not help, and the claim does not hold.
    if !is_module
        && call
            .arguments
            .args
            .first()
            .is_some_and(|x| sem::is_numpy_value(x, &|f| checker.resolve(f)))
    {
        return;
    }
    let edit = match dim {
        Some(d) => RawEdit::replace(d.range(), "-1"),
        None => add_keyword_argument(call, "dim=-1"),
    };
    let callee = checker.text(call.func.range()).to_string();
    let message = if is_module {
        format!("`{callee}()` without `dim`: the module guesses the axis from the input's rank (dim 0 for 1-D/3-D inputs), which normalises over the wrong axis for batched sequences; pass `dim=`")
    } else if name.is_some_and(|q| q.starts_with("torch.nn.")) {
        format!("`{callee}(...)` without `dim` guesses the axis from the input's rank (dim 0 for 1-D/3-D inputs) and warns; pass `dim=` explicitly")
    } else {
        format!("`{callee}(...)` without `dim` raises TypeError: pass `dim=`")
    };
    checker
        .report(call.func.range(), message)
        .set_fix(RawFix::unsafe_edit(
            "Pass `dim=-1` (check that the last axis is the class axis)",
            vec![edit],
        ));
}
