use super::helpers;
use crate::checker::Checker;
use crate::fix::{add_keyword_argument, RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers as sem;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `torch.stft(...)` and `tensor.stft(...)` calls that do not pass
    /// `return_complex=`.
    ///
    /// ## Why is this bad?
    /// For real input, torch 1.8 deprecated the old default (a real tensor with a trailing
    /// dimension of size 2) and torch 2.0 made the argument mandatory: the call raises
    /// `RuntimeError: stft requires the return_complex parameter be given for real inputs`.
    /// Code written for older torch stops at its first spectrogram.
    ///
    /// ## Example
    /// ```python
    /// spec = torch.stft(x, n_fft, hop, window=win)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// spec = torch.view_as_real(torch.stft(x, n_fft, hop, window=win, return_complex=True))
    /// ```
    ///
    /// ## Fix safety
    /// The fix passes `return_complex=True` and wraps the call in `torch.view_as_real(...)`,
    /// which reproduces the old real `(..., 2)` layout for real input. If the input is complex
    /// the old call already returned a complex tensor and the wrapper changes the result, and
    /// code is usually better off using the complex tensor directly, so the fix is unsafe.
    /// It is offered only when `torch` is imported.
    ///
    /// ## References
    /// - [torch.stft](https://pytorch.org/docs/stable/generated/torch.stft.html)
    /// - [pytorch#86724](https://github.com/pytorch/pytorch/pull/86724)
    pub(crate) static STFT_RETURN_COMPLEX_REQUIRED = {
        name: "stft-return-complex-required",
        code: "TV040",
        group: DeprecatedApi,
        severity: Critical,
        title: "torch.stft on real input without return_complex= (RuntimeError since 2.0)",
        autofix: Suggest,
        hooks: { call: check_call },
    };
}

/// The root name of an attribute / subscript / call chain.
fn root_name(mut expr: &Expr) -> Option<&str> {
    loop {
        expr = match expr {
            Expr::Attribute(a) => &a.value,
            Expr::Subscript(s) => &s.value,
            Expr::Call(c) => &c.func,
            Expr::Name(n) => return Some(n.id.as_str()),
            _ => return None,
        };
    }
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let function_form = matches!(name, Some("torch.stft" | "torch.functional.stft"));
    if !function_form {
        // `x.stft(n_fft, ...)` on a value (not a module, not `self.<something>`).
        let Some(("stft", receiver)) = sem::method_call(call) else {
            return;
        };
        if name.is_some()
            || checker.resolve(receiver).is_some()
            || root_name(receiver).is_none_or(|r| r == "self")
        {
            return;
        }
        if sem::argument(call, "n_fft", 0).is_none() {
            return;
        }
    }
    if call.arguments.find_keyword("return_complex").is_some() || sem::has_kwargs_splat(call) {
        return;
    }
    if !helpers::active(checker, 1, 8) {
        return;
    }
    let fix = helpers::torch_alias(checker).map(|t| {
        RawFix::unsafe_edit(
            format!("Pass `return_complex=True` and wrap in `{t}.view_as_real(...)` (the old real layout)"),
            vec![
                RawEdit::insert(call.start(), format!("{t}.view_as_real(")),
                add_keyword_argument(call, "return_complex=True"),
                RawEdit::insert(call.end(), ")"),
            ],
        )
    });
    let callee = checker.text(call.func.range()).to_string();
    let when = if checker.torch_at_least(2, 0) {
        "raises RuntimeError for real input on torch 2.0+"
    } else {
        "is deprecated for real input since torch 1.8 and an error from 2.0"
    };
    let d = checker.report(
        call.func.range(),
        format!("`{callee}(...)` without `return_complex=` {when}: pass `return_complex=True` (use `torch.view_as_real` for the old layout)"),
    );
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}
