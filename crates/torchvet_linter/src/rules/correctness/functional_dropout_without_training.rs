use crate::checker::Checker;
use crate::fix::{add_keyword_argument, RawFix};
use ruff_python_ast::ExprCall;
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `F.dropout` (and `dropout1d/2d/3d`, `alpha_dropout`,
    /// `feature_alpha_dropout`) called in the `forward` of an `nn.Module` without `training=`.
    ///
    /// ## Why is this bad?
    /// The functional form does not know about the module's mode: `training` defaults to
    /// `True`, so dropout stays active after `model.eval()`. Evaluation and inference results
    /// are then noisy and systematically worse. `nn.Dropout` modules, or passing
    /// `training=self.training`, follow `train()`/`eval()`.
    ///
    /// ## Example
    /// ```python
    /// def forward(self, x):
    ///     return F.dropout(self.fc(x), p=0.5)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def forward(self, x):
    ///     return F.dropout(self.fc(x), p=0.5, training=self.training)
    /// ```
    ///
    /// ## Fix safety
    /// The fix adds `training=self.training`. Outputs in eval mode change (dropout turns off,
    /// as intended), so the fix is unsafe. An explicit `training=True` (Monte-Carlo dropout)
    /// is left alone.
    ///
    /// ## References
    /// - [torch.nn.functional.dropout](https://pytorch.org/docs/stable/generated/torch.nn.functional.dropout.html)
    /// - [pytorch issue 26338](https://github.com/pytorch/pytorch/issues/26338)
    pub(crate) static FUNCTIONAL_DROPOUT_WITHOUT_TRAINING = {
        name: "functional-dropout-without-training",
        code: "TV032",
        group: Correctness,
        severity: Critical,
        title: "F.dropout in Module.forward without training=self.training (stays active after eval())",
        autofix: Yes,
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let Some(q) = name else { return };
    let Some(func) = q.strip_prefix("torch.nn.functional.") else {
        return;
    };
    if !matches!(
        func,
        "dropout"
            | "dropout1d"
            | "dropout2d"
            | "dropout3d"
            | "alpha_dropout"
            | "feature_alpha_dropout"
    ) {
        return;
    }
    if !checker.in_module_method("forward") {
        return;
    }
    if helpers::keyword(call, "training").is_some()
        || helpers::has_kwargs_splat(call)
        || helpers::has_args_splat(call)
        || call.arguments.args.len() >= 3
    {
        return;
    }
    let self_name = checker
        .function()
        .and_then(|f| f.parameters.args.first())
        .map(|p| p.parameter.name.to_string());
    let text = checker.text(call.func.range());
    let diag = checker.report(
        call.range(),
        format!("`{text}` without `training=` is always in training mode: dropout stays active after `model.eval()`, so evaluation outputs are randomly dropped"),
    );
    if let Some(s) = self_name {
        diag.set_fix(RawFix::unsafe_edit(
            format!("Add `training={s}.training`"),
            vec![add_keyword_argument(
                call,
                &format!("training={s}.training"),
            )],
        ));
    }
}
