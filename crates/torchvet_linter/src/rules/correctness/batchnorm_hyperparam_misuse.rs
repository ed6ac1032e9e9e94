use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::ExprCall;
use ruff_text_size::Ranged;
use torchvet_semantic::helpers::{self, Literal};

crate::declare_rule! {
    /// ## What it does
    /// Checks for `nn.BatchNorm1d/2d/3d` and `nn.SyncBatchNorm` created with a momentum in
    /// TensorFlow's convention (`momentum=0.99`), or with a large float as second positional
    /// argument (`BatchNorm2d(c, 0.8)`), which lands in `eps`.
    ///
    /// ## Why is this bad?
    /// PyTorch's momentum is the weight of the *new* batch statistic (default 0.1); Keras and
    /// TensorFlow use the weight of the *old* running value (default 0.99). `momentum=0.99`
    /// makes running statistics follow the last batch almost exactly, so evaluation is noisy.
    /// The second positional parameter of BatchNorm is `eps`, not momentum: `eps=0.8` adds 0.8
    /// to every variance and flattens the normalisation.
    ///
    /// The momentum is not reported when the same call passes `track_running_stats=False`:
    /// there are no running statistics then, batch statistics are used in training and in
    /// evaluation, and momentum is never read (TensorFlow ports often keep the value anyway).
    ///
    /// ## Example
    /// ```python
    /// nn.BatchNorm2d(c, momentum=0.99)
    /// nn.BatchNorm2d(c, 0.8)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// nn.BatchNorm2d(c, momentum=0.01)
    /// nn.BatchNorm2d(c, momentum=0.2)
    /// ```
    ///
    /// ## Fix safety
    /// The fix (unsafe) converts the value: `momentum=1 - m`, or the positional float `m` to
    /// `momentum=1 - m` (the Keras meaning). Whether that was the intent cannot be known for
    /// sure, and the trained statistics change.
    ///
    /// ## References
    /// - [torch.nn.BatchNorm2d](https://pytorch.org/docs/stable/generated/torch.nn.BatchNorm2d.html)
    /// - [torchvision issue 8250](https://github.com/pytorch/vision/issues/8250)
    /// - [deeplab-pytorch issue 79](https://github.com/kazuto1011/deeplab-pytorch/issues/79)
    pub(crate) static BATCHNORM_HYPERPARAM_MISUSE = {
        name: "batchnorm-hyperparam-misuse",
        code: "TV079",
        group: Correctness,
        severity: Warning,
        title: "BatchNorm momentum in TensorFlow convention, or a positional float landing in eps",
        autofix: Suggest,
        hooks: { call: check_call },
    };
}

fn number(e: &ruff_python_ast::Expr) -> Option<f64> {
    match helpers::literal(e)? {
        Literal::Float(f) => Some(f),
        #[allow(clippy::cast_precision_loss)]
        Literal::Int(i) => Some(i as f64),
        _ => None,
    }
}

fn one_minus(m: f64) -> String {
    let v = ((1.0 - m) * 1e9).round() / 1e9;
    format!("{v}")
}

/// Does the layer keep running statistics (the only thing momentum weighs)? Not when the call
/// passes `track_running_stats=False` (keyword, or fifth positional) as a literal.
fn tracks_running_stats(call: &ExprCall) -> bool {
    !matches!(
        helpers::argument(call, "track_running_stats", 4).and_then(helpers::literal),
        Some(Literal::Bool(false))
    )
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let Some(q) = name else { return };
    let class = match q {
        "torch.nn.BatchNorm1d"
        | "torch.nn.BatchNorm2d"
        | "torch.nn.BatchNorm3d"
        | "torch.nn.SyncBatchNorm" => helpers::last_segment(q),
        _ => return,
    };
    if helpers::has_args_splat(call) {
        return;
    }
    // momentum: keyword, or third positional; never read without running statistics.
    if let Some(m) = helpers::argument(call, "momentum", 2).filter(|_| tracks_running_stats(call)) {
        if let Some(v) = number(m) {
            if v > 0.5 && v < 1.0 {
                let text = checker.text(m.range());
                let new = one_minus(v);
                checker
                    .report(
                        m.range(),
                        format!("`{class}` momentum={text} looks like the TensorFlow convention: in PyTorch momentum is the weight of the new batch (default 0.1), so running statistics follow the last batch almost exactly; use momentum={new}"),
                    )
                    .set_fix(RawFix::unsafe_edit(
                        format!("Use momentum={new}"),
                        vec![RawEdit::replace(m.range(), new)],
                    ));
                return;
            }
        }
    }
    // eps given positionally with a value no one means as eps.
    if helpers::keyword(call, "eps").is_none() {
        if let Some(eps) = call.arguments.args.get(1) {
            if let Some(v) = number(eps) {
                if (0.05..1.0).contains(&v) {
                    let text = checker.text(eps.range());
                    let diag = checker.report(
                        eps.range(),
                        format!("the second positional argument of `{class}` is eps, not momentum: eps={text} is added to every variance and flattens the normalisation; pass momentum= by keyword"),
                    );
                    if call.arguments.args.len() == 2
                        && helpers::keyword(call, "momentum").is_none()
                    {
                        let new = one_minus(v);
                        diag.set_fix(RawFix::unsafe_edit(
                            format!("Pass `momentum={new}` (Keras momentum {text})"),
                            vec![RawEdit::replace(eps.range(), format!("momentum={new}"))],
                        ));
                    }
                }
            }
        }
    }
}
